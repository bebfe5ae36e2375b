/*
 * dns-01 over RFC 2136 UPDATE signed with RFC 8945 TSIG, a TXT query and
 * a CNAME chain, over TCP to one server.  See acme_dns.h for the contract.
 *
 * This file: the server's address, the transport (connect, send, receive,
 * each within the timeout), one exchange, and the public calls.  The wire
 * format is in acme_dns_wire.c, TSIG in acme_dns_tsig.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include <tlsbox/xalloc.h>

#include "plugins/acme/acme_dns.h"
#include "plugins/acme/acme_dns_int.h"

#define DNS_TYPE_SOA 6
#define DNS_TYPE_CNAME 5
#define DNS_TYPE_TXT 16
#define DNS_CLASS_IN 1
#define DNS_CLASS_NONE 254
#define DNS_OPCODE_QUERY 0
#define DNS_OPCODE_UPDATE 5
#define DNS_RCODE_NOERROR 0
#define DNS_RCODE_NXDOMAIN 3
#define DNS_TIMEOUT_DEFAULT_MS 10000
#define DNS_STOP_DEFAULT_MS 2000
/* How often a wait looks at conf->stop. */
#define DNS_STOP_POLL_MS 100
/* Longer CNAME chains are refused (resolvers stop at 8 to 16 too). */
#define DNS_CNAME_HOPS_MAX 8

/* ---- transport -------------------------------------------------------------------- */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static char *duration_text(unsigned ms)
{
    return ms % 1000 ? tlsbox_xasprintf("%u ms", ms) : tlsbox_xasprintf("%u s", ms / 1000);
}

static const char *errno_text(int err, char *buf, size_t size)
{
    return strerror_r(err, buf, size);
}

static bool stopping(const struct acme_dns_conf *c)
{
    return c->stop && atomic_load(c->stop);
}

static unsigned stop_ms(const struct acme_dns_conf *c)
{
    return c->stop_ms ? c->stop_ms : DNS_STOP_DEFAULT_MS;
}

/*
 * Wait for @p events on @p fd until *@p deadline: 0 ready, -ETIMEDOUT,
 * -errno.  Once c->stop is seen true, *@p deadline is brought forward to
 * stop_ms from then (a later step on it keeps that limit).
 */
static int wait_fd(const struct acme_dns_conf *c, int fd, short events, uint64_t *deadline)
{
    for (;;) {
        uint64_t now = now_ms();
        if (stopping(c) && *deadline > now + stop_ms(c))
            *deadline = now + stop_ms(c);
        if (now >= *deadline)
            return -ETIMEDOUT;
        struct pollfd p = {.fd = fd, .events = events};
        uint64_t left = *deadline - now, slice = c->stop ? DNS_STOP_POLL_MS : 60000;
        int n = poll(&p, 1, (int)(left > slice ? slice : left));
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -errno;
    }
}

/*
 * Split "host", "host:port", "v4:port", "[v6]:port", "[v6]" or a bare IPv6
 * address (two colons or more: no port) into @p host and @p port.
 */
static int server_split(const char *server, char *host, size_t hcap, char port[6])
{
    const char *h = server, *colon = strrchr(server, ':');
    size_t hlen;
    if (*server == '[') {
        const char *close = strchr(server, ']');
        if (!close || (close[1] && close[1] != ':'))
            return -EINVAL;
        h = server + 1;
        hlen = (size_t)(close - h);
        colon = close[1] == ':' ? close + 1 : NULL;
    } else if (colon && strchr(server, ':') != colon) {
        hlen = strlen(server);
        colon = NULL;
    } else {
        hlen = colon ? (size_t)(colon - server) : strlen(server);
    }
    if (hlen == 0 || hlen >= hcap)
        return -EINVAL;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    if (!colon) {
        strcpy(port, "53");
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (colon[1] < '0' || colon[1] > '9' || *end || errno || p == 0 || p > 65535)
        return -EINVAL;
    snprintf(port, 6, "%lu", p);
    return 0;
}

/* Connect one address within the timeout: a connected socket or -errno. */
static int connect_one(const struct acme_dns_conf *c, const struct addrinfo *ai,
                       unsigned timeout_ms)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        uint64_t deadline = now_ms() + timeout_ms;
        rc = errno == EINPROGRESS ? wait_fd(c, fd, POLLOUT, &deadline) : -errno;
        int soerr = 0;
        socklen_t slen = sizeof(soerr);
        if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &slen) == 0 && soerr)
            rc = -soerr;
    }
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}

/* Connect to the server, trying each of its addresses in turn. */
static int server_connect(const struct acme_dns_conf *c, unsigned timeout_ms, char **why)
{
    const char *server = c->server;
    char host[256], port[6];
    if (!server || server_split(server, host, sizeof(host), port) < 0) {
        *why = tlsbox_xstrdup("the server is not host, host:port, IPv6 or [IPv6]:port");
        return -EINVAL;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0) {
        *why = tlsbox_xasprintf("cannot resolve %s: %s", host, gai_strerror(gai));
        return -ENOENT;
    }
    int fd = -EHOSTUNREACH;
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = connect_one(c, ai, timeout_ms);
        if (fd >= 0 || (fd == -ETIMEDOUT && stopping(c)))
            break;
    }
    freeaddrinfo(res);
    if (fd == -ETIMEDOUT) {
        char *d = duration_text(stopping(c) ? stop_ms(c) : timeout_ms);
        *why = tlsbox_xasprintf("cannot connect: no answer in %s%s", d,
                                stopping(c) ? " (stopping)" : "");
        free(d);
    } else if (fd < 0) {
        char buf[128];
        *why = tlsbox_xasprintf("cannot connect: %s", errno_text(-fd, buf, sizeof(buf)));
    }
    return fd;
}

static int send_all(const struct acme_dns_conf *c, int fd, const unsigned char *p, size_t len,
                    uint64_t deadline)
{
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -errno;
        int rc = wait_fd(c, fd, POLLOUT, &deadline);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Exactly @p len bytes: 0, -ETIMEDOUT, -ECONNRESET when closed early, -errno. */
static int recv_exact(const struct acme_dns_conf *c, int fd, unsigned char *p, size_t len,
                      uint64_t *deadline)
{
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0)
            return -ECONNRESET;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -errno;
        int rc = wait_fd(c, fd, POLLIN, deadline);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static char *io_error_text(const struct acme_dns_conf *c, const char *what, int rc,
                           unsigned timeout_ms)
{
    char buf[128];
    if (rc == -ETIMEDOUT) {
        char *d = duration_text(stopping(c) ? stop_ms(c) : timeout_ms);
        char *s = tlsbox_xasprintf("no answer in %s%s", d, stopping(c) ? " (stopping)" : "");
        free(d);
        return s;
    }
    if (rc == -ECONNRESET)
        return tlsbox_xstrdup("the server closed the connection before answering");
    return tlsbox_xasprintf("%s: %s", what, errno_text(-rc, buf, sizeof(buf)));
}

/* Send @p msg with its 2-byte length (RFC 7766 section 8), read the answer. */
static int dns_exchange(const struct acme_dns_conf *c, const struct dns_w *msg, unsigned char **ans,
                        size_t *ans_len, char **why)
{
    unsigned timeout_ms = c->timeout_ms ? c->timeout_ms : DNS_TIMEOUT_DEFAULT_MS;
    int fd = server_connect(c, timeout_ms, why);
    if (fd < 0)
        return fd;
    struct dns_w out = {0};
    acme_dns_w_u16(&out, (unsigned)msg->len);
    acme_dns_w_put(&out, msg->p, msg->len);
    int rc = send_all(c, fd, out.p, out.len, now_ms() + timeout_ms);
    free(out.p);
    if (rc < 0) {
        *why = io_error_text(c, "cannot send", rc, timeout_ms);
        goto out;
    }
    uint64_t deadline = now_ms() + timeout_ms;
    unsigned char lenbuf[2];
    rc = recv_exact(c, fd, lenbuf, 2, &deadline);
    if (rc < 0) {
        *why = io_error_text(c, "cannot receive", rc, timeout_ms);
        goto out;
    }
    *ans_len = acme_dns_get_u16(lenbuf);
    *ans = tlsbox_xmalloc(*ans_len);
    rc = recv_exact(c, fd, *ans, *ans_len, &deadline);
    if (rc < 0) {
        *why = io_error_text(c, "cannot receive", rc, timeout_ms);
        free(*ans);
        *ans = NULL;
    }
out:
    close(fd);
    return rc;
}

/* ---- the update ------------------------------------------------------------------------ */

struct update_req {
    unsigned char zone[DNS_NAME_MAX], fqdn[DNS_NAME_MAX];
    size_t zone_len, fqdn_len, value_len;
};

/* Everything that can be refused before a byte is sent. */
static int update_check_args(const struct acme_dns_conf *c, const char *fqdn, const char *value,
                             unsigned ttl, struct update_req *u, char **why)
{
    int n = c->zone ? acme_dns_name_wire(c->zone, u->zone, sizeof(u->zone)) : -EINVAL;
    if (n < 0) {
        *why = tlsbox_xasprintf("the zone \"%s\" is not a domain name", c->zone ? c->zone : "");
        return -EINVAL;
    }
    u->zone_len = (size_t)n;
    n = fqdn ? acme_dns_name_wire(fqdn, u->fqdn, sizeof(u->fqdn)) : -EINVAL;
    if (n < 0) {
        *why = tlsbox_xstrdup("not a domain name");
        return -EINVAL;
    }
    u->fqdn_len = (size_t)n;
    if (!acme_dns_name_under(u->fqdn, u->fqdn_len, u->zone, u->zone_len)) {
        *why = tlsbox_xasprintf("the name is not in zone %s", c->zone);
        return -EINVAL;
    }
    u->value_len = value ? strlen(value) : 256;
    if (u->value_len > 255) {
        *why = tlsbox_xasprintf("the TXT value is missing or longer than 255 bytes");
        return -EINVAL;
    }
    /* RFC 2181 section 8: a TTL has 31 bits. */
    if (ttl > 0x7fffffffu) {
        *why = tlsbox_xasprintf("the TTL %u is over 2^31-1", ttl);
        return -EINVAL;
    }
    return 0;
}

static uint16_t dns_new_id(void)
{
    uint16_t id = 0;
    /* A guessable ID only matters off-path; the TSIG MAC protects the rest. */
    if (gnutls_rnd(GNUTLS_RND_NONCE, &id, sizeof(id)) < 0)
        id = (uint16_t)(now_ms() ^ (uint64_t)getpid());
    return id;
}

/* RFC 2136 section 2: the zone, no prerequisites, one RR to add or delete. */
static void update_build(struct dns_w *w, uint16_t id, const struct update_req *u, bool add,
                         const char *value, unsigned ttl)
{
    acme_dns_w_header(w, id, DNS_OPCODE_UPDATE, 1, 0, 1);
    acme_dns_w_put(w, u->zone, u->zone_len);
    acme_dns_w_u16(w, DNS_TYPE_SOA);
    acme_dns_w_u16(w, DNS_CLASS_IN);
    acme_dns_w_put(w, u->fqdn, u->fqdn_len);
    acme_dns_w_u16(w, DNS_TYPE_TXT);
    /* Class NONE with TTL 0 deletes exactly this RR (RFC 2136 2.5.4). */
    acme_dns_w_u16(w, add ? DNS_CLASS_IN : DNS_CLASS_NONE);
    acme_dns_w_u32(w, add ? ttl : 0);
    acme_dns_w_u16(w, (unsigned)u->value_len + 1);
    unsigned char slen = (unsigned char)u->value_len;
    acme_dns_w_put(w, &slen, 1);
    acme_dns_w_put(w, value, u->value_len);
}

static int update_check_answer(const struct tsig_key *k, const unsigned char *req_mac, uint16_t id,
                               const unsigned char *m, size_t len, char **why)
{
    struct dns_answer a;
    int rc = acme_dns_answer_walk(&a, m, len, NULL, NULL, why);
    if (rc < 0)
        return rc;
    rc = acme_dns_answer_matches(&a, id, DNS_OPCODE_UPDATE, why);
    if (rc < 0)
        return rc;
    if (!a.has_tsig) {
        /* An unsigned refusal cannot make things worse; an unsigned success could be forged. */
        if (acme_dns_answer_rcode(&a) != DNS_RCODE_NOERROR)
            return acme_dns_rcode_error(acme_dns_answer_rcode(&a), why);
        *why = tlsbox_xstrdup("the answer is not signed (NOERROR without TSIG)");
        return -EPROTO;
    }
    if (a.tsig.error != 0)
        return acme_dns_tsig_error(&a, why);
    rc = acme_dns_tsig_verify(k, req_mac, &a, why);
    if (rc < 0)
        return rc;
    if (acme_dns_answer_rcode(&a) != DNS_RCODE_NOERROR)
        return acme_dns_rcode_error(acme_dns_answer_rcode(&a), why);
    return 0;
}

/* Sign, send and check; @p k and @p u are ready. */
static int update_run(const struct acme_dns_conf *c, const struct tsig_key *k,
                      const struct update_req *u, bool add, const char *value, unsigned ttl,
                      char **why)
{
    uint16_t id = dns_new_id();
    struct dns_w msg = {0};
    unsigned char req_mac[TSIG_MAC_MAX], *ans = NULL;
    size_t ans_len = 0;
    update_build(&msg, id, u, add, value, ttl);
    int rc = acme_dns_tsig_sign(k, &msg, req_mac, why);
    if (rc == 0)
        rc = dns_exchange(c, &msg, &ans, &ans_len, why);
    if (rc == 0)
        rc = update_check_answer(k, req_mac, id, ans, ans_len, why);
    free(msg.p);
    free(ans);
    return rc;
}

int acme_dns_update(const struct acme_dns_conf *c, bool add, const char *fqdn, const char *value,
                    unsigned ttl, char **err)
{
    struct update_req u;
    struct tsig_key k;
    char *why = NULL;
    int rc;
    memset(&k, 0, sizeof(k));
    if (!c) {
        why = tlsbox_xstrdup("no configuration");
        rc = -EINVAL;
        goto out;
    }
    rc = update_check_args(c, fqdn, value, ttl, &u, &why);
    if (rc == 0)
        rc = acme_dns_tsig_key_load(c, &k, &why);
    if (rc == 0)
        rc = update_run(c, &k, &u, add, value, ttl, &why);
out:
    acme_dns_tsig_key_wipe(&k);
    if (rc < 0 && err)
        *err = tlsbox_xasprintf("DNS update of %s at %s: %s", fqdn ? fqdn : "(no name)",
                                c && c->server ? c->server : "(no server)", why);
    free(why);
    return rc;
}

/* ---- the TXT query ------------------------------------------------------------------- */

struct txt_match {
    const unsigned char *fqdn;
    size_t fqdn_len;
    const char *value;
    size_t value_len;
    bool found;
};

/* Whether one of the character-strings of a TXT rdata is the value. */
static bool txt_rdata_has(const unsigned char *p, size_t len, const char *value, size_t vlen)
{
    size_t i = 0;
    while (i < len) {
        size_t n = p[i];
        if (n > len - i - 1)
            return false;
        if (n == vlen && memcmp(p + i + 1, value, vlen) == 0)
            return true;
        i += n + 1;
    }
    return false;
}

static void on_txt_rr(void *arg, unsigned section, const struct dns_rr *rr)
{
    struct txt_match *t = arg;
    if (section == 1 && rr->type == DNS_TYPE_TXT && rr->rclass == DNS_CLASS_IN &&
        acme_dns_name_eq(rr->owner, rr->owner_len, t->fqdn, t->fqdn_len) &&
        txt_rdata_has(rr->rdata, rr->rdlen, t->value, t->value_len))
        t->found = true;
}

/*
 * Ask c->server for @p type at the wire name @p name (@p len bytes), with RD
 * when @p recurse, and hand every RR of the answer to @p fn with @p arg.
 * Returns 0 for NOERROR and NXDOMAIN (then the answer holds no record of
 * the name), or -errno with *why.
 */
static int dns_ask(const struct acme_dns_conf *c, const unsigned char *name, size_t len,
                   unsigned type, bool recurse, dns_rr_fn *fn, void *arg, char **why)
{
    uint16_t id = dns_new_id();
    struct dns_w msg = {0};
    unsigned char *ans = NULL;
    size_t ans_len = 0;
    acme_dns_w_header(&msg, id, DNS_OPCODE_QUERY, 1, 0, 0);
    if (recurse)
        msg.p[2] |= 0x01; /* RD */
    acme_dns_w_put(&msg, name, len);
    acme_dns_w_u16(&msg, type);
    acme_dns_w_u16(&msg, DNS_CLASS_IN);
    int rc = dns_exchange(c, &msg, &ans, &ans_len, why);
    free(msg.p);
    if (rc < 0)
        return rc;
    struct dns_answer a;
    rc = acme_dns_answer_walk(&a, ans, ans_len, fn, arg, why);
    if (rc == 0)
        rc = acme_dns_answer_matches(&a, id, DNS_OPCODE_QUERY, why);
    unsigned rcode = rc == 0 ? acme_dns_answer_rcode(&a) : DNS_RCODE_NOERROR;
    if (rcode != DNS_RCODE_NOERROR && rcode != DNS_RCODE_NXDOMAIN)
        rc = acme_dns_rcode_error(rcode, why);
    free(ans);
    return rc;
}

static int txt_query(const struct acme_dns_conf *c, const struct txt_match *t, char **why)
{
    struct txt_match m = *t;
    /* RD=0: an authoritative server answers from its own data. */
    int rc = dns_ask(c, t->fqdn, t->fqdn_len, DNS_TYPE_TXT, false, on_txt_rr, &m, why);
    return rc < 0 ? rc : m.found ? 1 : 0;
}

int acme_dns_txt_has(const struct acme_dns_conf *c, const char *fqdn, const char *value, char **err)
{
    unsigned char wire[DNS_NAME_MAX];
    char *why = NULL;
    int rc = fqdn ? acme_dns_name_wire(fqdn, wire, sizeof(wire)) : -EINVAL;
    if (rc < 0 || !c || !value) {
        why = tlsbox_xstrdup(!c ? "no configuration" : !value ? "no value" : "not a domain name");
        rc = -EINVAL;
    } else {
        struct txt_match t = {wire, (size_t)rc, value, strlen(value), false};
        rc = txt_query(c, &t, &why);
    }
    if (rc < 0 && err)
        *err = tlsbox_xasprintf("DNS query for TXT %s at %s: %s", fqdn ? fqdn : "(no name)",
                                c && c->server ? c->server : "(no server)", why);
    free(why);
    return rc;
}

/* ---- the CNAME chain -------------------------------------------------------------------- */

struct cname_find {
    const unsigned char *owner;
    size_t owner_len;
    unsigned char target[DNS_NAME_MAX];
    size_t target_len;
    int found; /* 1 found, -EPROTO a malformed CNAME */
};

static void on_cname_rr(void *arg, unsigned section, const struct dns_rr *rr)
{
    struct cname_find *f = arg;
    if (section != 1 || f->found || rr->type != DNS_TYPE_CNAME || rr->rclass != DNS_CLASS_IN ||
        !acme_dns_name_eq(rr->owner, rr->owner_len, f->owner, f->owner_len))
        return;
    f->found = acme_dns_rdata_name(rr, f->target, &f->target_len) < 0 ? -EPROTO : 1;
}

/*
 * One question, CNAME @p name with RD (a resolver follows delegations to the
 * name's zone): 1 with the target in *f, 0 when @p name is no CNAME
 * (NXDOMAIN or no CNAME record), or -errno with *why.
 */
static int cname_query(const struct acme_dns_conf *c, const unsigned char *name, size_t len,
                       struct cname_find *f, char **why)
{
    *f = (struct cname_find){.owner = name, .owner_len = len};
    int rc = dns_ask(c, name, len, DNS_TYPE_CNAME, true, on_cname_rr, f, why);
    if (rc == 0 && f->found < 0) {
        *why = tlsbox_xstrdup("a malformed CNAME record");
        return -EPROTO;
    }
    return rc < 0 ? rc : f->found;
}

int acme_dns_cname_follow(const struct acme_dns_conf *c, const char *fqdn, char **target,
                          char **err)
{
    unsigned char name[DNS_NAME_MAX];
    char *why = NULL;
    int rc = fqdn ? acme_dns_name_wire(fqdn, name, sizeof(name)) : -EINVAL;
    size_t len = rc > 0 ? (size_t)rc : 0;
    int hops = 0;
    if (rc < 0 || !c || !c->server) {
        why = tlsbox_xstrdup(!c || !c->server ? "no server" : "not a domain name");
        rc = -EINVAL;
    }
    while (rc >= 0) {
        struct cname_find f;
        rc = cname_query(c, name, len, &f, &why);
        if (rc <= 0)
            break;
        if (++hops > DNS_CNAME_HOPS_MAX) {
            why = tlsbox_xasprintf("a chain of more than %d CNAMEs (a loop?)", DNS_CNAME_HOPS_MAX);
            rc = -ELOOP;
            break;
        }
        memcpy(name, f.target, f.target_len);
        len = f.target_len;
    }
    if (rc == 0 && hops > 0) {
        char text[DNS_NAME_MAX + 1];
        if (acme_dns_name_text(name, len, text, sizeof(text)) == 0) {
            *target = tlsbox_xstrdup(text);
            rc = 1;
        } else {
            why = tlsbox_xstrdup("a CNAME to a name with characters a host name cannot have");
            rc = -EPROTO;
        }
    }
    if (rc < 0 && err)
        *err = tlsbox_xasprintf("DNS query for CNAME %s at %s: %s", fqdn ? fqdn : "(no name)",
                                c && c->server ? c->server : "(no server)", why);
    free(why);
    return rc;
}

char *acme_dns_system_resolver(const char *path)
{
    FILE *f = fopen(path, "re");
    char line[512], *found = NULL;
    if (!f)
        return NULL;
    while (!found && fgets(line, sizeof(line), f)) {
        char addr[128];
        /* "nameserver ADDRESS", as resolv.conf(5) writes it; the rest is ignored. */
        if (sscanf(line, " nameserver %127s", addr) == 1)
            found = tlsbox_xstrdup(addr);
    }
    fclose(f);
    return found;
}
