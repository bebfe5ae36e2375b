/* Run options: parsing, limits, target, TLS priority string. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "plugins/bench/bench_opts.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdarg.h>
#include <gnutls/gnutls.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/bench/bench_addr.h"
#include "plugins/bench/bench_util.h"

static int refuse(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int refuse(char **err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *m = NULL;
    if (vasprintf(&m, fmt, ap) < 0)
        abort();
    va_end(ap);
    *err = m;
    return -EINVAL;
}

/* An integer field within [lo, hi] ("what" names the limit in the message).
 * Absent, @p dflt, which must be within the limit too: a box that sets
 * bench.max_requests=100 means every run, not only those that name a count
 * (refused, as a report whose default count is over it is). */
static int get_int(json_t *j, const char *key, long dflt, long lo, long hi, const char *what,
                   long *out, char **err)
{
    json_t *v = json_object_get(j, key);
    if (!v) {
        if (dflt > hi)
            return refuse(err,
                          "bench: %s %ld (the default) is out of range: %ld..%ld%s%s%s: give "
                          "\"%s\" of at most %ld",
                          key, dflt, lo, hi, what ? " (limit " : "", what ? what : "",
                          what ? ")" : "", key, hi);
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v))
        return refuse(err, "bench: \"%s\" must be an integer", key);
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return refuse(err, "bench: %s %lld is out of range: %ld..%ld%s%s%s", key, x, lo, hi,
                      what ? " (limit " : "", what ? what : "", what ? ")" : "");
    *out = (long)x;
    return 0;
}

/* A string field that must be one of "a|b|c". */
static int get_choice(json_t *j, const char *key, const char *choices, char *dst, size_t cap,
                      char **err)
{
    json_t *v = json_object_get(j, key);
    const char *s = v ? json_string_value(v) : "any";
    if (!s)
        return refuse(err, "bench: \"%s\" must be a string, one of %s", key, choices);
    char *list = bench_xasprintf("|%s|", choices), *pat = bench_xasprintf("|%s|", s);
    /* One choice: "aes256gcm|chacha20" is in the list too, and would select neither. */
    bool ok = strstr(list, pat) != NULL && !strchr(s, '|') && strlen(s) < cap;
    free(list);
    free(pat);
    if (!ok)
        return refuse(err, "bench: %s \"%s\" is not one of %s", key, s, choices);
    bench_strlcpy(dst, s, cap);
    return 0;
}

/* A path or url too long for its field in bench_opts: refused rather than
 * cut, which would load another path than the one shown. */
static int too_long(char **err, const char *what, const char *s, size_t cap)
{
    return refuse(err, "bench: %s \"%.60s...\" is %zu characters long: at most %zu", what, s,
                  strlen(s), cap - 1);
}

/*
 * May bench load the address @p o->addr (the url's @p host)?  Loopback and
 * private networks always; public addresses with bench.allow_public_targets;
 * link-local ones never: 169.254.169.254 is the cloud metadata service, and
 * the rest of the segment is routers and printers, not servers one runs a
 * benchmark against.  Nor anything that is not a unicast destination.
 */
static int target_allowed(struct bench_opts *o, const char *host, const struct bench_limits *lim,
                          char **err)
{
    struct bench_addr_class ac;
    bench_addr_classify((const struct sockaddr *)&o->addr, &ac);
    o->loopback = ac.kind == BENCH_ADDR_LOOPBACK;
    switch (ac.kind) {
    case BENCH_ADDR_LOOPBACK:
    case BENCH_ADDR_PRIVATE:
        return 0;
    case BENCH_ADDR_PUBLIC:
        if (lim->allow_public)
            return 0;
        return refuse(err,
                      "bench: target %s is a public address%s%s%s: bench loads only loopback "
                      "and private networks (set bench.allow_public_targets=true to load a "
                      "server you run elsewhere)",
                      host, ac.why[0] ? " (" : "", ac.why, ac.why[0] ? ")" : "");
    case BENCH_ADDR_LINK_LOCAL:
        return refuse(err,
                      "bench: target %s is a link-local address (%s): bench never loads "
                      "link-local addresses, where cloud metadata services (169.254.169.254) "
                      "and the local segment's devices answer, whatever "
                      "bench.allow_public_targets says",
                      host, ac.why);
    default:
        return refuse(err,
                      "bench: target %s is not an address a server answers on (%s): give the "
                      "server's unicast address (127.0.0.1 for this host)",
                      host, ac.why);
    }
}

static int resolve(struct bench_opts *o, const char *host, int port, const struct bench_limits *lim,
                   char **err)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST}, *res = NULL;
    char ps[8];
    snprintf(ps, sizeof(ps), "%d", port);
    const char *h = strcmp(host, "localhost") == 0 ? "127.0.0.1" : host;
    if (getaddrinfo(h, ps, &hints, &res) != 0 || !res)
        return refuse(err,
                      "bench: target host \"%s\" is not an IP address or localhost (bench does "
                      "not look names up: give the address)",
                      host);
    memcpy(&o->addr, res->ai_addr, res->ai_addrlen);
    o->addrlen = res->ai_addrlen;
    freeaddrinfo(res);
    return target_allowed(o, host, lim, err);
}

/* "http[s]://host[:port][/path]" with host an address ("[v6]") or localhost. */
static int parse_url(struct bench_opts *o, const char *url, const struct bench_limits *lim,
                     char **err)
{
    const char *p;
    int port;
    if (strncmp(url, "https://", 8) == 0) {
        o->tls = true;
        p = url + 8;
        port = 443;
    } else if (strncmp(url, "http://", 7) == 0) {
        o->tls = false;
        p = url + 7;
        port = 80;
    } else {
        return refuse(err, "bench: url \"%s\" must start with http:// or https://", url);
    }
    char host[256];
    size_t hl;
    const char *rest;
    if (*p == '[') {
        const char *e = strchr(p, ']');
        if (!e || (size_t)(e - p - 1) >= sizeof(host))
            return refuse(err, "bench: url \"%s\": bad [IPv6] host", url);
        hl = (size_t)(e - p - 1);
        memcpy(host, p + 1, hl);
        rest = e + 1;
    } else {
        hl = strcspn(p, ":/");
        if (hl == 0 || hl >= sizeof(host))
            return refuse(err, "bench: url \"%s\" has no host", url);
        memcpy(host, p, hl);
        rest = p + hl;
    }
    host[hl] = '\0';
    if (memchr(host, '@', hl))
        return refuse(err, "bench: url \"%s\": user info (\"name@\") is not supported", url);
    bool v6 = *p == '[', has_port = *rest == ':';
    if (*rest == ':') {
        char *end;
        long v = strtol(rest + 1, &end, 10);
        if (v < 1 || v > 65535 || (end && *end && *end != '/'))
            return refuse(err, "bench: url \"%s\": bad port", url);
        port = (int)v;
        rest = end;
    }
    if (*rest && *rest != '/')
        return refuse(err, "bench: url \"%s\": bad host or port", url);
    if (strlen(url) >= sizeof(o->url))
        return too_long(err, "url", url, sizeof(o->url));
    if (strlen(rest) >= sizeof(o->path))
        return too_long(err, "the path of url", rest, sizeof(o->path));
    bench_strlcpy(o->path, *rest ? rest : "/", sizeof(o->path));
    bench_strlcpy(o->host, host, sizeof(o->host));
    /* The Host a browser would send for this url (RFC 9110 7.2): an IPv6
     * address in brackets, the port when the url names one. */
    int an =
        snprintf(o->authority, sizeof(o->authority), "%s%s%s", v6 ? "[" : "", host, v6 ? "]" : "");
    if (has_port) /* an <= 257: the host is at most 255 bytes */
        snprintf(o->authority + an, sizeof(o->authority) - (size_t)an, ":%d", port);
    if (strpbrk(o->path, " \r\n\t"))
        return refuse(err, "bench: url \"%s\": the path has white space", url);
    bench_strlcpy(o->url, url, sizeof(o->url));
    o->local = false;
    return resolve(o, host, port, lim, err);
}

static int local_target(struct bench_opts *o, const char *path, const struct bench_local *local,
                        const struct bench_limits *lim, char **err)
{
    /* With no site plugin the stored site.* ports are served by nothing: a
     * run there would only collect connection errors, so refuse it up front. */
    if (local->no_site)
        return refuse(err, "bench: the local site is not served: the site plugin is not loaded "
                           "(GET site/limits has no route); give a url to bench another server");
    int port = o->tls ? local->https_port : local->http_port;
    if (port <= 0)
        return refuse(err,
                      "bench: the local site has no %s port (site plugin not running, or "
                      "site.%s_port is 0): give a url",
                      o->tls ? "HTTPS" : "plain HTTP", o->tls ? "https" : "http");
    if (strlen(path) >= sizeof(o->path))
        return too_long(err, "path", path, sizeof(o->path));
    if (path[0] != '/' || strpbrk(path, " \r\n\t"))
        return refuse(err, "bench: path \"%s\" must start with / and have no white space", path);
    bench_strlcpy(o->host, "localhost", sizeof(o->host));
    bench_strlcpy(o->authority, "localhost", sizeof(o->authority));
    bench_strlcpy(o->path, path, sizeof(o->path));
    bool v6 = strchr(local->addr, ':') != NULL;
    snprintf(o->url, sizeof(o->url), "%s://%s%s%s:%d%s", o->tls ? "https" : "http", v6 ? "[" : "",
             local->addr, v6 ? "]" : "", port, path);
    o->local = true;
    return resolve(o, local->addr, port, lim, err);
}

static int parse_load(json_t *j, const struct bench_limits *lim, struct bench_opts *o, char **err)
{
    long v;
    if (get_int(j, "concurrency", 10, 1, lim->max_concurrency, "bench.max_concurrency", &v, err))
        return -EINVAL;
    o->concurrency = (int)v;
    if (get_int(j, "streams", 10, 1, lim->max_streams, "bench.max_streams", &v, err))
        return -EINVAL;
    o->streams = o->scenario == BENCH_SC_H2 ? (int)v : 1;
    if (json_object_get(j, "requests") && json_object_get(j, "duration"))
        return refuse(err, "bench: give \"requests\" or \"duration\", not both");
    if (get_int(j, "requests", json_object_get(j, "duration") ? 0 : 1000, 1, lim->max_requests,
                "bench.max_requests", &o->requests, err))
        return -EINVAL;
    if (get_int(j, "duration", 0, 1, lim->max_duration_ms / 1000, "bench.max_duration", &v, err))
        return -EINVAL;
    o->duration_ms = v * 1000;
    if (get_int(j, "timeout", 10, 1, 60, NULL, &v, err))
        return -EINVAL;
    o->timeout_ms = v * 1000;
    o->max_ms = lim->max_duration_ms;
    o->max_requests = lim->max_requests;
    if (o->requests > 0 && o->requests < o->concurrency)
        o->concurrency = (int)o->requests;
    return 0;
}

/* Is @p ss one of this host's own addresses (any interface's)? */
static bool addr_is_own(const struct sockaddr_storage *ss)
{
    struct ifaddrs *ifs = NULL;
    bool own = false;
    if (getifaddrs(&ifs) < 0)
        return false;
    for (struct ifaddrs *i = ifs; i && !own; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != ss->ss_family)
            continue;
        if (ss->ss_family == AF_INET)
            own = ((const struct sockaddr_in *)ss)->sin_addr.s_addr ==
                  ((const struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr;
        else
            own =
                IN6_ARE_ADDR_EQUAL(&((const struct sockaddr_in6 *)ss)->sin6_addr,
                                   &((const struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr);
    }
    freeifaddrs(ifs);
    return own;
}

/* What to do about a run of @p c connections past the site's limit in all. */
static const char *room_remedy(const struct bench_local *l, int c, char *buf, size_t cap)
{
    if (l->in_effect && l->max_conns_files > 0 && l->max_conns_files < c)
        return "lower the concurrency or raise tlsboxd's open file limit (LimitNOFILE) and "
               "restart it";
    if (l->in_effect && l->max_conns_stored >= c && l->max_conns_stored != l->max_conns_setting)
        snprintf(buf, cap, "lower the concurrency or restart tlsboxd to apply the stored %d",
                 l->max_conns_stored);
    else
        snprintf(buf, cap,
                 "lower the concurrency or raise the limit with: tlsboxctl set "
                 "site.max_connections %d (it takes effect when tlsboxd restarts)",
                 c);
    return buf;
}

/* Why the site's limit in all is not the stored site.max_connections. */
static void room_why(const struct bench_local *l, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    if (!l->in_effect)
        return;
    if (l->max_conns < l->max_conns_setting)
        n = (size_t)snprintf(buf, cap,
                             " (tlsboxd's open file limit leaves room for %d; the site runs "
                             "with site.max_connections %d)",
                             l->max_conns, l->max_conns_setting);
    if (l->max_conns_stored > 0 && l->max_conns_stored != l->max_conns_setting && n < cap)
        snprintf(buf + n, cap - n, " (%d stored, applied when tlsboxd restarts)",
                 l->max_conns_stored);
}

/*
 * The box's own site, by path or by a url to this host and a site port,
 * takes at most site.max_connections_per_ip connections from one address,
 * and site.max_connections in all, and closes the rest at once: a run with
 * more would count those as failed without saying why, so it is refused, as
 * runs past bench's own limits are.  The limits are those the running site
 * enforces, which the message names, with the stored value when it differs.
 */
static int site_room(const struct bench_opts *o, const struct bench_local *local, char **err)
{
    bool per_ip = local->max_conns_per_ip > 0 && o->concurrency > local->max_conns_per_ip;
    bool all = local->max_conns > 0 && o->concurrency > local->max_conns;
    if (!per_ip && !all)
        return 0;
    int port =
        ntohs(o->addr.ss_family == AF_INET ? ((const struct sockaddr_in *)&o->addr)->sin_port
                                           : ((const struct sockaddr_in6 *)&o->addr)->sin6_port);
    bool site_port = port == (o->tls ? local->https_port : local->http_port);
    if (!o->local && !(site_port && (o->loopback || addr_is_own(&o->addr))))
        return 0;
    const char *how = local->in_effect ? "in effect" : "as stored";
    if (per_ip)
        return refuse(err,
                      "bench: concurrency %d exceeds site.max_connections_per_ip %d %s: this "
                      "box's site closes the connections past %d from one address, which would "
                      "count as failed requests; lower the concurrency or raise the limit with: "
                      "tlsboxctl set site.max_connections_per_ip %d",
                      o->concurrency, local->max_conns_per_ip, how, local->max_conns_per_ip,
                      o->concurrency);
    char why[192], remedy[192];
    room_why(local, why, sizeof(why));
    return refuse(err,
                  "bench: concurrency %d exceeds site.max_connections %d %s%s: this box's site "
                  "closes the connections past %d at once, which would count as failed "
                  "requests; %s",
                  o->concurrency, local->max_conns, how, why, local->max_conns,
                  room_remedy(local, o->concurrency, remedy, sizeof(remedy)));
}

int bench_opts_parse(json_t *j, const struct bench_limits *lim, const struct bench_local *local,
                     struct bench_opts *o, char **err)
{
    memset(o, 0, sizeof(*o));
    *err = NULL;
    if (!json_is_object(j))
        return refuse(err, "bench: options must be a JSON object");
    json_t *sv = json_object_get(j, "scenario");
    const char *sc = sv ? json_string_value(sv) : "https-new";
    int s = bench_scenario_parse(sc);
    if (s < 0)
        return refuse(err, "bench: scenario \"%s\" is not one of http|https-new|https-resume|h1|h2",
                      sc ? sc : "(not a string)");
    o->scenario = (enum bench_scenario)s;
    o->tls = o->scenario != BENCH_SC_HTTP;
    if (parse_load(j, lim, o, err) < 0)
        return -EINVAL;
    if (get_choice(j, "tls", "any|1.2|1.3", o->tls_version, sizeof(o->tls_version), err) ||
        get_choice(j, "key", "any|ecdsa|rsa", o->key_type, sizeof(o->key_type), err) ||
        get_choice(j, "cipher", "any|aes128gcm|aes256gcm|chacha20", o->cipher, sizeof(o->cipher),
                   err) ||
        get_choice(j, "group", "any|x25519|p256|p384|ffdhe2048", o->group, sizeof(o->group), err))
        return -EINVAL;
    /* Neither is ever dropped: a url that is not a string would load the
     * local site, a path next to a url would not be loaded. */
    json_t *uv = json_object_get(j, "url"), *pv = json_object_get(j, "path");
    if ((uv && !json_is_string(uv)) || (pv && !json_is_string(pv)))
        return refuse(err, "bench: \"%s\" must be a string",
                      uv && !json_is_string(uv) ? "url" : "path");
    if (uv && pv)
        return refuse(err, "bench: give \"url\" (with its path) or \"path\" (on the local site), "
                           "not both");
    const char *url = json_string_value(uv), *path = json_string_value(pv);
    int r = url && *url ? parse_url(o, url, lim, err)
                        : local_target(o, path ? path : "/", local, lim, err);
    if (r < 0)
        return r;
    if (o->scenario == BENCH_SC_HTTP && o->tls)
        return refuse(err, "bench: scenario http needs an http:// url");
    if (o->scenario != BENCH_SC_HTTP && o->scenario != BENCH_SC_H1 && !o->tls)
        return refuse(err, "bench: scenario %s needs an https:// url", sc);
    if (site_room(o, local, err) < 0)
        return -EINVAL;
    return o->tls ? bench_opts_priority(o, err) : 0;
}

int bench_opts_priority(struct bench_opts *o, char **err)
{
    static const struct {
        const char *name, *prio;
    } parts[] = {
        {"1.2", ":-VERS-ALL:+VERS-TLS1.2"},
        {"1.3", ":-VERS-ALL:+VERS-TLS1.3"},
        {"ecdsa", ":-SIGN-ALL:+SIGN-ECDSA-SECP256R1-SHA256:+SIGN-ECDSA-SECP384R1-SHA384:"
                  "+SIGN-ECDSA-SHA256:+SIGN-ECDSA-SHA384:+SIGN-ECDSA-SHA512"},
        {"rsa", ":-SIGN-ALL:+SIGN-RSA-PSS-RSAE-SHA256:+SIGN-RSA-PSS-RSAE-SHA384:"
                "+SIGN-RSA-SHA256:+SIGN-RSA-SHA384"},
        {"aes128gcm", ":-CIPHER-ALL:+AES-128-GCM"},
        {"aes256gcm", ":-CIPHER-ALL:+AES-256-GCM"},
        {"chacha20", ":-CIPHER-ALL:+CHACHA20-POLY1305"},
        {"x25519", ":-GROUP-ALL:+GROUP-X25519"},
        {"p256", ":-GROUP-ALL:+GROUP-SECP256R1"},
        {"p384", ":-GROUP-ALL:+GROUP-SECP384R1"},
        {"ffdhe2048", ":-GROUP-ALL:+GROUP-FFDHE2048"},
    };
    const char *sel[4] = {o->tls_version, o->key_type, o->cipher, o->group};
    char prio[512] = "NORMAL";
    for (int i = 0; i < 4; i++)
        for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++)
            if (strcmp(sel[i], parts[k].name) == 0)
                strncat(prio, parts[k].prio, sizeof(prio) - strlen(prio) - 1);
    /* ChaCha20 and AES-256 need their MAC entry in TLS 1.2 too: NORMAL has them. */
    bench_strlcpy(o->priority, prio, sizeof(o->priority));
    gnutls_priority_t p;
    const char *pos = NULL;
    int r = gnutls_priority_init(&p, o->priority, &pos);
    if (r < 0)
        return refuse(err, "bench: GnuTLS refuses the priority \"%s\": %s", o->priority,
                      gnutls_strerror(r));
    gnutls_priority_deinit(p);
    return 0;
}

json_t *bench_opts_json(const struct bench_opts *o)
{
    json_t *j =
        json_pack("{s:s,s:s,s:b,s:i,s:I,s:I,s:i,s:s,s:s,s:s,s:s}", "scenario",
                  bench_scenario_name(o->scenario), "url", o->url, "local", o->local, "concurrency",
                  o->concurrency, "requests", (json_int_t)o->requests, "duration_s",
                  (json_int_t)(o->duration_ms / 1000), "streams", o->streams, "tls",
                  o->tls ? o->tls_version : "none", "key", o->tls ? o->key_type : "none", "cipher",
                  o->tls ? o->cipher : "none", "group", o->tls ? o->group : "none");
    return j;
}

void bench_local_addr(const char *bind, char *out, size_t cap)
{
    char first[64] = "", v4[64] = "", v6[64] = "";
    for (const char *p = bind; *p;) {
        size_t n = strcspn(p, ",");
        const char *s = p, *e = p + n;
        p = *e ? e + 1 : e;
        while (s < e && *s == ' ')
            s++;
        while (e > s && e[-1] == ' ')
            e--;
        if (e - s >= 2 && *s == '[' && e[-1] == ']')
            s++, e--;
        char item[64];
        if (s == e || (size_t)(e - s) >= sizeof(item))
            continue;
        memcpy(item, s, (size_t)(e - s));
        item[e - s] = '\0';
        if (!first[0])
            bench_strlcpy(first, item, sizeof(first));
        if (!v4[0] && (strcmp(item, "0.0.0.0") == 0 || strncmp(item, "127.", 4) == 0))
            bench_strlcpy(v4, strcmp(item, "0.0.0.0") == 0 ? "127.0.0.1" : item, sizeof(v4));
        if (!v6[0] && (strcmp(item, "::") == 0 || strcmp(item, "::1") == 0))
            bench_strlcpy(v6, "::1", sizeof(v6));
    }
    bench_strlcpy(out, v4[0] ? v4 : v6[0] ? v6 : first[0] ? first : "127.0.0.1", cap);
}
