/* Unit tests of the bench plugin's pure parts: percentiles as ab computes
 * them, run options (limits, targets, TLS priority), CSV export. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/x509.h>

#include "plugins/bench/bench_addr.h"
#include "plugins/bench/bench_conn.h"
#include "plugins/bench/bench_export.h"
#include "plugins/bench/bench_opts.h"
#include "plugins/bench/bench_stats.h"
#include "tests/tap.h"

static const struct bench_limits lim = {.max_requests = 5000,
                                        .max_duration_ms = 30000,
                                        .max_concurrency = 50,
                                        .max_streams = 100,
                                        .allow_public = false};
static const struct bench_local local = {
    .https_port = 8443, .http_port = 8080, .addr = "127.0.0.1"};

static void test_percentiles(void)
{
    struct bench_stats s;
    bench_stats_init(&s, 1000);
    /* 100 answers of 1..100 ms, added in reverse. */
    for (int i = 100; i >= 1; i--)
        bench_stats_complete(&s, 200, i * 1000.0);
    is_int((int)bench_stats_percentile(&s, 50), 50, "p50 of 1..100 ms is 50 ms (nearest rank)");
    is_int((int)bench_stats_percentile(&s, 66), 66, "p66 is 66 ms");
    is_int((int)bench_stats_percentile(&s, 99), 99, "p99 is 99 ms");
    is_int((int)bench_stats_percentile(&s, 100), 100, "p100 is the slowest");
    bench_stats_complete(&s, 404, 500.0);
    is_int((int)bench_stats_percentile(&s, 100), 100, "adding one resorts");
    is_int((int)s.status[4], 1, "a 404 counts as 4xx");
    is_int((int)s.complete, 101, "101 complete");
    json_t *j = bench_stats_json(&s);
    ok(json_number_value(json_object_get(json_object_get(j, "latency_ms"), "50")) == 50.0,
       "JSON latency_ms.50 is 50");
    json_decref(j);
    bench_stats_free(&s);

    bench_stats_init(&s, 10);
    for (int i = 0; i < 20; i++)
        bench_stats_complete(&s, 200, 1000.0);
    is_int((int)s.nlat, 10, "latencies are kept up to the bound");
    is_int((int)s.complete, 20, "but every answer is counted");
    bench_stats_free(&s);

    /* Nothing answered (a dead target): no latency, not 0 ms. */
    bench_stats_init(&s, 10);
    s.failed = 20;
    s.elapsed_s = 3;
    j = bench_stats_json(&s);
    ok(json_is_null(json_object_get(j, "latency_ms")),
       "nothing answered: JSON latency_ms is null, not percentiles of 0 ms");
    json_t *run =
        json_pack("{s:i,s:s,s:s,s:i,s:[{s:i,s:s,s:O}]}", "id", 8, "kind", "run", "state", "done",
                  "started_at", 1, "results", "seq", 1, "name", "h1", "result", j);
    char *csv = bench_export_csv(run);
    like(csv, "\n8,run,done,1,1,h1,,,0,0,0,20,0,0.00,0.00,0.000,0.000,,,,,,,,,,0,0,",
         "CSV: nothing answered leaves the latency percentiles empty");
    free(csv);
    json_decref(run);
    json_decref(j);
    bench_stats_free(&s);
}

static int parse(const char *json, struct bench_opts *o, char **err)
{
    json_t *j = json_loads(json, 0, NULL);
    int r = bench_opts_parse(j, &lim, &local, o, err);
    json_decref(j);
    return r;
}

static void refused(const char *json, const char *needle)
{
    struct bench_opts o;
    char *err = NULL;
    int r = parse(json, &o, &err);
    ok(r == -EINVAL && err && strstr(err, needle), "%s refused: %s", json, err ? err : "(none)");
    free(err);
}

static void test_opts(void)
{
    struct bench_opts o;
    char *err = NULL;
    is_int(parse("{\"scenario\":\"h2\",\"requests\":100,\"path\":\"/f\"}", &o, &err), 0,
           "local h2 run accepted");
    is_str(o.url, "https://127.0.0.1:8443/f", "local target is the site's HTTPS port");
    ok(o.local && o.loopback && o.tls, "local, loopback, TLS");
    is_int(o.streams, 10, "10 streams by default");
    is_str(o.priority, "NORMAL", "no TLS option: NORMAL");
    is_int(parse("{\"scenario\":\"http\"}", &o, &err), 0, "http accepted");
    is_str(o.url, "http://127.0.0.1:8080/", "http goes to the plain port");
    is_int((int)o.requests, 1000, "1000 requests by default");
    is_int(parse("{\"scenario\":\"h1\",\"duration\":5,\"tls\":\"1.2\",\"cipher\":\"chacha20\","
                 "\"key\":\"rsa\",\"group\":\"x25519\",\"url\":\"https://[::1]:9443/x?y\"}",
                 &o, &err),
           0, "a URL with IPv6 and TLS options accepted");
    is_str(o.host, "::1", "host ::1");
    is_str(o.authority, "[::1]:9443", "Host / :authority [::1]:9443 (brackets and port)");
    is_str(o.path, "/x?y", "path with query kept");
    ok(o.requests == 0 && o.duration_ms == 5000, "by time: 5 s");
    like(o.priority, "+VERS-TLS1.2", "priority: TLS 1.2");
    like(o.priority, "+CHACHA20-POLY1305", "priority: ChaCha20");
    like(o.priority, "+SIGN-RSA-PSS-RSAE-SHA256", "priority: RSA signatures");
    like(o.priority, "+GROUP-X25519", "priority: X25519");
    is_int(parse("{\"scenario\":\"h2\",\"requests\":10,\"url\":\"https://10.1.2.3/\"}", &o, &err),
           0, "a private address is allowed");
    ok(!o.loopback && !o.local, "but it is neither loopback nor local");
    is_str(o.authority, "10.1.2.3", "no port in the url: none in the Host");
    is_int(parse("{\"scenario\":\"h1\",\"path\":\"/f\"}", &o, &err), 0, "local h1 run");
    is_str(o.authority, "localhost", "the local site is asked for as localhost");

    refused("{\"requests\":5001}",
            "requests 5001 is out of range: 1..5000 (limit bench.max_requests)");
    refused("{\"duration\":31}", "duration 31 is out of range: 1..30");
    refused("{\"concurrency\":51}", "concurrency 51 is out of range");
    refused("{\"requests\":10,\"duration\":2}", "not both");
    refused("{\"scenario\":\"h3\"}", "scenario \"h3\" is not one of");
    refused("{\"cipher\":\"rc4\"}", "cipher \"rc4\" is not one of");
    refused("{\"cipher\":\"aes256gcm|chacha20\"}", "cipher \"aes256gcm|chacha20\" is not one of");
    refused("{\"tls\":\"any|1.2\"}", "tls \"any|1.2\" is not one of");
    refused("{\"url\":\"https://192.0.2.1/\"}", "public address");
    refused("{\"url\":\"https://example.org/\"}", "not an IP address");
    refused("{\"url\":\"ftp://127.0.0.1/\"}", "must start with http:// or https://");
    refused("{\"url\":\"https://127.0.0.1:99999/\"}", "bad port");
    refused("{\"url\":\"https://me@127.0.0.1/\"}", "user info (\"name@\") is not supported");
    refused("{\"scenario\":\"h2\",\"url\":\"http://127.0.0.1/\"}", "needs an https:// url");
    refused("{\"scenario\":\"http\",\"url\":\"https://127.0.0.1/\"}", "needs an http:// url");
    refused("{\"path\":\"no-slash\"}", "must start with /");
    refused("{\"requests\":\"10\"}", "\"requests\" must be an integer");
    refused("{\"url\":5}", "\"url\" must be a string");
    refused("{\"path\":[\"/x\"]}", "\"path\" must be a string");
    refused("{\"url\":\"https://127.0.0.1/\",\"path\":\"/big\"}", "not both");

    /* Paths that do not fit are refused, not cut to another path. */
    char body[2200], a[1100];
    memset(a, 'a', sizeof(a) - 1);
    a[sizeof(a) - 1] = '\0';
    snprintf(body, sizeof(body), "{\"url\":\"https://127.0.0.1:8443/%s\"}", a);
    is_int(parse(body, &o, &err), -EINVAL, "a url with a path of 1100 characters is refused");
    like(err ? err : "", "the path of url \"/aaa", "naming the path");
    like(err ? err : "", "is 1100 characters long: at most 1023", "and the lengths");
    free(err);
    snprintf(body, sizeof(body), "{\"path\":\"/%s\"}", a);
    is_int(parse(body, &o, &err), -EINVAL, "a path of 1100 characters is refused");
    like(err ? err : "", "is 1100 characters long: at most 1023", "saying so: %s", err);
    free(err);
    a[1022] = '\0';
    snprintf(body, sizeof(body), "{\"url\":\"https://127.0.0.1:8443/%s\"}", a);
    is_int(parse(body, &o, &err), 0, "a path of 1023 characters accepted");
    is_int((int)strlen(o.path), 1023, "and kept whole");
}

/* Defaults are held to the limits as given values are: an admin's
 * bench.max_requests=100 bounds every run, not only those naming a count. */
static void test_default_limits(void)
{
    const struct bench_limits small = {.max_requests = 100,
                                       .max_duration_ms = 30000,
                                       .max_concurrency = 2,
                                       .max_streams = 1,
                                       .allow_public = false};
    struct bench_opts o;
    char *err = NULL;
    struct {
        const char *json, *want;
    } cases[] = {
        {"{\"scenario\":\"h2\"}",
         "bench: concurrency 10 (the default) is out of range: 1..2 (limit "
         "bench.max_concurrency): give \"concurrency\" of at most 2"},
        {"{\"scenario\":\"h2\",\"concurrency\":2}",
         "bench: streams 10 (the default) is out of range: 1..1 (limit bench.max_streams): give "
         "\"streams\" of at most 1"},
        {"{\"scenario\":\"h2\",\"concurrency\":2,\"streams\":1}",
         "bench: requests 1000 (the default) is out of range: 1..100 (limit bench.max_requests): "
         "give \"requests\" of at most 100"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *j = json_loads(cases[i].json, 0, NULL);
        is_int(bench_opts_parse(j, &small, &local, &o, &err), -EINVAL,
               "%s at the small limits: refused", cases[i].json);
        is_str(err, cases[i].want, "  naming the default and the limit");
        free(err);
        err = NULL;
        json_decref(j);
    }
    json_t *j = json_loads("{\"scenario\":\"h2\",\"requests\":50,\"concurrency\":2,\"streams\":1}",
                           0, NULL);
    is_int(bench_opts_parse(j, &small, &local, &o, &err), 0, "within every limit: accepted");
    ok(o.requests == 50 && o.concurrency == 2 && o.streams == 1, "  as given");
    json_decref(j);
}

/* Where a run on the local site connects, by site.bind. */
static void test_local_addr(void)
{
    static const struct {
        const char *bind, *addr;
    } cases[] = {
        {"0.0.0.0,::", "127.0.0.1"},
        {"::", "::1"},
        {"::1", "::1"},
        {"127.0.0.2", "127.0.0.2"},
        {"192.168.1.10", "192.168.1.10"},
        {"2001:db8::1", "2001:db8::1"},
        {"[2001:db8::1], ::1", "::1"},
        {"192.168.1.10, 127.0.0.1", "127.0.0.1"},
        {"[fd00::7]", "fd00::7"},
        {"", "127.0.0.1"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char out[64];
        bench_local_addr(cases[i].bind, out, sizeof(out));
        is_str(out, cases[i].addr, "site.bind \"%s\": a local run connects there", cases[i].bind);
    }
}

static void test_csv(void)
{
    json_t *run = json_loads(
        "{\"id\":7,\"kind\":\"run\",\"state\":\"done\",\"started_at\":1,\"results\":[{\"seq\":1,"
        "\"name\":\"a,b\",\"result\":{\"complete\":10,\"failed\":1,\"retried\":3,\"not_sent\":2,"
        "\"rps\":123.456,\"time_limited\":true,"
        "\"options\":{\"scenario\":\"h2\",\"url\":\"https://x/\"},\"tls\":{\"cipher\":\"C\"}}}]}",
        0, NULL);
    char *csv = bench_export_csv(run);
    like(csv, "\n7,run,done,1,1,\"a,b\",h2,https://x/,", "CSV: a comma in a name is quoted");
    like(csv, ",complete,failed,retried,rps,", "CSV: the header names the retried column");
    like(csv, ",10,1,3,123.46,", "CSV: complete, failed, retried, req/s");
    like(csv, ",server_cpu_us_per_request,ceiling_ratio,not_sent,time_limited,request_limited\n",
         "CSV: not_sent, then how the run was cut short, last");
    like(csv, ",0.00,0.000,2,1,0\n",
         "CSV: the run's not_sent; stopped at bench.max_duration, not bench.max_requests");
    free(csv);
    json_decref(run);
}

/* h2 requests the server refused unprocessed (GOAWAY, REFUSED_STREAM) are
 * given back to be sent again: "retried" counts those sent again, and those
 * a timed run had stopped sending before it could are "not_sent", not
 * retried.  Every request taken ends complete, failed, retried or not sent. */
static void test_refused(void)
{
    struct bench_opts o = {.requests = 0, .duration_ms = 1000, .max_requests = 100};
    struct bench_stats st = {0};
    struct bench_gen g = {.o = &o, .st = &st};
    struct bench_conn c = {.g = &g};
    long taken = 0;
    for (int i = 0; i < 4; i++)
        taken += bench_gen_take(&g);
    ok(bench_gen_retry(&c), "a refused request is given back while the run sends");
    taken += bench_gen_take(&g);
    is_int(st.retried, 1, "sent again: retried 1");
    g.stop_issuing = true; /* the run's duration is over */
    ok(bench_gen_retry(&c) && bench_gen_retry(&c), "two more refused after it stopped sending");
    ok(!bench_gen_can_take(&g), "the run takes no request any more");
    bench_gen_failed(&c, 2); /* the two still in flight get no answer */
    bench_gen_end(&g);
    is_int(st.retried, 1, "the two never sent again are not counted as retried");
    is_int(st.not_sent, 2, "they are counted as not sent");
    is_int(st.complete + st.failed + st.retried + st.not_sent, taken,
           "complete + failed + retried + not sent = the %ld requests taken", taken);
    json_t *j = bench_stats_json(&st);
    is_int(json_integer_value(json_object_get(j, "retried")), 1, "JSON: retried 1");
    is_int(json_integer_value(json_object_get(j, "not_sent")), 2, "JSON: not_sent 2");
    json_decref(j);
}

/* @p json against the site @p site: 0 or -EINVAL with the message in
 * @p err (caller frees). */
static int parse_site(const char *json, const struct bench_local *site, char **err)
{
    /* Public targets allowed: this host's own address may be any. */
    struct bench_limits lim_any = lim;
    lim_any.allow_public = true;
    struct bench_opts o;
    json_t *j = json_loads(json, 0, NULL);
    *err = NULL;
    int r = bench_opts_parse(j, &lim_any, site, &o, err);
    json_decref(j);
    return r;
}

/* @p r and @p err (freed here) are a refusal with the message @p msg. */
static void is_refused(int r, char *err, const char *msg, const char *what)
{
    is_int(r, -EINVAL, "%s: refused", what);
    is_str(err, msg, "%s: the message names both numbers and the setting", what);
    free(err);
}

/* Against a running site taking 16 connections per address. */
static int parse_ip16(const char *json, char **err)
{
    static const struct bench_local local16 = {.https_port = 8443,
                                               .http_port = 8080,
                                               .addr = "127.0.0.1",
                                               .max_conns_per_ip = 16,
                                               .in_effect = true};
    return parse_site(json, &local16, err);
}

/* Against a running site taking 12 connections in all, 256 per address,
 * with 20 stored for its next start. */
static int parse_all12(const char *json, char **err)
{
    static const struct bench_local local12 = {.https_port = 8443,
                                               .http_port = 8080,
                                               .addr = "127.0.0.1",
                                               .max_conns_per_ip = 256,
                                               .max_conns = 12,
                                               .in_effect = true,
                                               .max_conns_setting = 12,
                                               .max_conns_stored = 20,
                                               .max_conns_files = 1000};
    return parse_site(json, &local12, err);
}

/* The messages when the limit in effect is not the stored one, and when
 * only the stored settings are known. */
static void test_site_room_why(void)
{
    static const struct bench_local files = {.https_port = 8443,
                                             .addr = "127.0.0.1",
                                             .max_conns = 30,
                                             .in_effect = true,
                                             .max_conns_setting = 10000,
                                             .max_conns_stored = 10000,
                                             .max_conns_files = 30};
    static const struct bench_local stored = {
        .https_port = 8443, .addr = "127.0.0.1", .max_conns = 12};
    static const struct bench_local lower = {.https_port = 8443,
                                             .addr = "127.0.0.1",
                                             .max_conns = 12,
                                             .in_effect = true,
                                             .max_conns_setting = 12,
                                             .max_conns_stored = 4,
                                             .max_conns_files = 1000};
    char *err = NULL;
    int r = parse_site("{\"scenario\":\"h2\",\"concurrency\":31}", &files, &err);
    is_refused(r, err,
               "bench: concurrency 31 exceeds site.max_connections 30 in effect (tlsboxd's "
               "open file limit leaves room for 30; the site runs with site.max_connections "
               "10000): this box's site closes the connections past 30 at once, which would "
               "count as failed requests; lower the concurrency or raise tlsboxd's open file "
               "limit (LimitNOFILE) and restart it",
               "past the open file limit's room");
    const char *c13 = "{\"scenario\":\"h2\",\"concurrency\":13}";
    r = parse_site(c13, &stored, &err);
    is_refused(r, err,
               "bench: concurrency 13 exceeds site.max_connections 12 as stored: this box's site "
               "closes the connections past 12 at once, which would count as failed requests; "
               "lower the concurrency or raise the limit with: tlsboxctl set "
               "site.max_connections 13 (it takes effect when tlsboxd restarts)",
               "the running site unknown: the stored limit, said so");
    r = parse_site(c13, &lower, &err);
    is_refused(r, err,
               "bench: concurrency 13 exceeds site.max_connections 12 in effect (4 stored, "
               "applied when tlsboxd restarts): this box's site closes the connections past 12 "
               "at once, which would count as failed requests; lower the concurrency or raise "
               "the limit with: tlsboxctl set site.max_connections 13 (it takes effect when "
               "tlsboxd restarts)",
               "4 stored, 12 in effect: 13 refused, the stored 4 named");
    is_int(parse_site("{\"scenario\":\"h2\",\"concurrency\":10}", &lower, &err), 0,
           "4 stored, 12 in effect: 10 connections accepted");
    free(err);
}

static void test_site_room(void)
{
    char *err = NULL;
    int r = parse_all12("{\"scenario\":\"h2\",\"concurrency\":13}", &err);
    is_refused(r, err,
               "bench: concurrency 13 exceeds site.max_connections 12 in effect (20 stored, "
               "applied when tlsboxd restarts): this box's site closes the connections past 12 "
               "at once, which would count as failed requests; lower the concurrency or restart "
               "tlsboxd to apply the stored 20",
               "13 connections to the local site at site.max_connections 12 in effect");
    r = parse_all12("{\"scenario\":\"h2\",\"concurrency\":21}", &err);
    is_refused(r, err,
               "bench: concurrency 21 exceeds site.max_connections 12 in effect (20 stored, "
               "applied when tlsboxd restarts): this box's site closes the connections past 12 "
               "at once, which would count as failed requests; lower the concurrency or raise "
               "the limit with: tlsboxctl set site.max_connections 21 (it takes effect when "
               "tlsboxd restarts)",
               "21, past the stored 20 too: raise it");
    static const struct {
        const char *json;
        int want;
        const char *what;
    } cases[] = {
        {"{\"scenario\":\"h2\",\"concurrency\":12}", 0, "12 connections accepted"},
        {"{\"scenario\":\"h1\",\"concurrency\":20,\"url\":\"https://[::1]:8443/\"}", -EINVAL,
         "a url to the site's port on IPv6 loopback too"},
        {"{\"scenario\":\"http\",\"concurrency\":20,\"url\":\"http://localhost:8080/\"}", -EINVAL,
         "and to its plain port by the name localhost"},
        {"{\"scenario\":\"h2\",\"concurrency\":40,\"url\":\"https://127.0.0.1:9000/\"}", 0,
         "another port on loopback is another server: accepted"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        is_int(parse_all12(cases[i].json, &err), cases[i].want, "%s", cases[i].what);
        free(err);
    }
}

static void test_site_ip_room(void)
{
    char *err = NULL;
    int r = parse_ip16("{\"scenario\":\"h2\",\"concurrency\":17}", &err);
    is_refused(r, err,
               "bench: concurrency 17 exceeds site.max_connections_per_ip 16 in effect: this "
               "box's site closes the connections past 16 from one address, which would count "
               "as failed requests; lower the concurrency or raise the limit with: tlsboxctl "
               "set site.max_connections_per_ip 17",
               "17 connections to the local site at site.max_connections_per_ip 16");
    is_int(parse_ip16("{\"scenario\":\"http\",\"concurrency\":20,\"url\":"
                      "\"http://127.0.0.1:8080/\"}",
                      &err),
           -EINVAL, "a url to the site's plain port on loopback too");
    free(err);
    is_int(parse_ip16("{\"scenario\":\"h2\",\"concurrency\":16}", &err), 0,
           "16 connections accepted");
    free(err);
    is_int(parse_ip16("{\"scenario\":\"h2\",\"concurrency\":40,\"requests\":10}", &err), 0,
           "40 asked for 10 requests: 10 connections, accepted");
    free(err);
    is_int(parse_ip16("{\"scenario\":\"h2\",\"concurrency\":40,\"url\":"
                      "\"https://127.0.0.1:9000/\"}",
                      &err),
           0, "another port on loopback is another server: accepted");
    free(err);
    is_int(parse_ip16("{\"scenario\":\"h2\",\"concurrency\":40,\"url\":"
                      "\"https://10.1.2.3:8443/\"}",
                      &err),
           0, "the site's port on an address of another host: accepted");
    free(err);

    /* This host's own IPv4 address other than loopback, if it has one. */
    struct ifaddrs *ifs = NULL, *i;
    char own[INET_ADDRSTRLEN] = "";
    if (getifaddrs(&ifs) == 0)
        for (i = ifs; i && !own[0]; i = i->ifa_next)
            if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
                const struct in_addr *a = &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr;
                /* Not loopback, nor link-local (never a target). */
                if ((ntohl(a->s_addr) >> 24) != 127 && (ntohl(a->s_addr) >> 16) != 0xa9fe)
                    inet_ntop(AF_INET, a, own, sizeof(own));
            }
    freeifaddrs(ifs);
    if (!own[0]) {
        ok(1, "# SKIP no IPv4 address besides loopback here");
        return;
    }
    char *json = NULL;
    if (asprintf(&json, "{\"scenario\":\"h2\",\"concurrency\":17,\"url\":\"https://%s:8443/\"}",
                 own) < 0)
        abort();
    is_int(parse_ip16(json, &err), -EINVAL,
           "a url to this host's own address %s, site port: refused", own);
    free(err);
    free(json);
}

/* Fill the socket @p fd until it takes no more (at most @p cap bytes):
 * the bytes written. */
static size_t fill_socket(int fd, size_t cap)
{
    static char chunk[16384];
    size_t total = 0;
    memset(chunk, 'x', sizeof(chunk));
    while (total < cap) {
        ssize_t w = send(fd, chunk, sizeof(chunk), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w <= 0)
            break;
        total += (size_t)w;
    }
    return total;
}

/* A server streaming a body faster than bench reads it: one epoll wake
 * reads at most BENCH_READ_BUDGET (256 KiB) of it and leaves the rest in the
 * socket for the next turn, so the connection cannot hold the generator's
 * thread (the other connections, the clock, a cancel) for as long as the
 * body lasts. */
static void test_read_budget(void)
{
    struct bench_opts o = {.scenario = BENCH_SC_H1, .requests = 1, .max_requests = 1};
    struct bench_stats st = {0};
    struct bench_gen g = {.o = &o, .st = &st, .epfd = epoll_create1(0)};
    struct bench_conn c = {.g = &g, .state = CONN_ACTIVE, .h1_busy = true, .remaining = -1};
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0)
        abort();
    int sz = 4 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    c.fd = sv[1];
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Length: 1000000000000\r\n\r\n";
    if (send(sv[0], head, sizeof(head) - 1, 0) != (ssize_t)sizeof(head) - 1)
        abort();
    size_t sent = sizeof(head) - 1 + fill_socket(sv[0], 4u << 20);
    ok(sent > 2 * 256 * 1024, "the server has %zu bytes waiting (more than two wakes' worth)",
       sent);
    bench_conn_on_event(&c, EPOLLIN);
    int left = 0;
    ioctl(sv[1], FIONREAD, &left);
    is_int((long)st.bytes, 256 * 1024, "one wake read 256 KiB (%zu were there)", sent);
    ok(left > 0 && (size_t)left == sent - st.bytes,
       "the rest (%d bytes) stays in the socket for the next turn", left);
    ok(c.h1_busy && !st.complete && !st.failed, "the answer is still in progress: not counted");
    bench_conn_on_event(&c, EPOLLIN);
    is_int((long)st.bytes, 2 * 256 * 1024, "the next wake reads 256 KiB more");
    close(sv[0]);
    close(sv[1]);
    close(g.epfd);
}

/* A self-signed P-256 certificate and its key, for a TLS server in a test. */
static gnutls_certificate_credentials_t test_server_cred(void)
{
    gnutls_x509_privkey_t key;
    gnutls_x509_crt_t crt;
    gnutls_certificate_credentials_t cred;
    if (gnutls_x509_privkey_init(&key) < 0 ||
        gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
                                     GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0) < 0 ||
        gnutls_x509_crt_init(&crt) < 0 || gnutls_x509_crt_set_version(crt, 3) < 0 ||
        gnutls_x509_crt_set_serial(crt, "\x01", 1) < 0 ||
        gnutls_x509_crt_set_activation_time(crt, time(NULL) - 60) < 0 ||
        gnutls_x509_crt_set_expiration_time(crt, time(NULL) + 3600) < 0 ||
        gnutls_x509_crt_set_key(crt, key) < 0 ||
        gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0) < 0 ||
        gnutls_certificate_allocate_credentials(&cred) < 0 ||
        gnutls_certificate_set_x509_key(cred, &crt, 1, key) < 0)
        abort();
    gnutls_x509_crt_deinit(crt);
    gnutls_x509_privkey_deinit(key);
    return cred;
}

/* A non-blocking TLS session on @p fd with default priorities. */
static gnutls_session_t test_session(unsigned flags, int fd, gnutls_certificate_credentials_t cred)
{
    gnutls_session_t s;
    if (gnutls_init(&s, flags | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL) < 0 ||
        gnutls_set_default_priority(s) < 0 ||
        gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred) < 0)
        abort();
    gnutls_transport_set_int(s, fd);
    return s;
}

/* Both ends' handshakes, in turns (bounded): true when both are done. */
static bool test_handshake(gnutls_session_t a, gnutls_session_t b)
{
    int ra = GNUTLS_E_AGAIN, rb = GNUTLS_E_AGAIN;
    for (int i = 0; i < 100 && (ra != 0 || rb != 0); i++) {
        if (ra != 0)
            ra = gnutls_handshake(a);
        if (rb != 0)
            rb = gnutls_handshake(b);
        if ((ra < 0 && gnutls_error_is_fatal(ra)) || (rb < 0 && gnutls_error_is_fatal(rb)))
            return false;
    }
    return ra == 0 && rb == 0;
}

/* The read budget can end a wake in the middle of a TLS record: GnuTLS then
 * holds the rest, which epoll cannot report.  The connection says so
 * (more_in, served on the loop's next turn); its next wake reads it.  Here
 * the answer's last record is the one cut, so nothing is left in the socket
 * to wake the connection: forgotten, the answer would wait for --timeout. */
static void test_read_budget_tls(void)
{
    struct bench_opts o = {.scenario = BENCH_SC_H1, .requests = 1, .max_requests = 1, .tls = true};
    struct bench_stats st = {0};
    struct bench_gen g = {.o = &o, .st = &st, .epfd = epoll_create1(0), .issued = 1};
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0)
        abort();
    int sz = 4 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    gnutls_certificate_credentials_t scred = test_server_cred(), ccred;
    gnutls_certificate_allocate_credentials(&ccred);
    gnutls_session_t srv = test_session(GNUTLS_SERVER, sv[0], scred);
    struct bench_conn c = {.g = &g, .state = CONN_ACTIVE, .h1_busy = true, .remaining = -1};
    c.fd = sv[1];
    c.tls = test_session(GNUTLS_CLIENT, sv[1], ccred);
    ok(test_handshake(c.tls, srv), "TLS handshake over a socket pair");
    /* 27 records of 10,000 bytes after the head: the 256 KiB budget ends
     * inside the last one. */
    static char body[10000];
    memset(body, 'b', sizeof(body));
    static const char head[] = "HTTP/1.1 200 OK\r\nContent-Length: 270000\r\n\r\n";
    bool sent = gnutls_record_send(srv, head, sizeof(head) - 1) == (ssize_t)sizeof(head) - 1;
    for (int i = 0; i < 27; i++)
        sent &= gnutls_record_send(srv, body, sizeof(body)) == (ssize_t)sizeof(body);
    ok(sent, "the server sent the head and 27 records of 10,000 bytes");
    struct epoll_event ev = {.events = EPOLLIN};
    epoll_ctl(g.epfd, EPOLL_CTL_ADD, sv[1], &ev);

    bench_conn_on_event(&c, EPOLLIN);
    is_int((long)st.bytes, 256 * 1024, "one wake read 256 KiB of the %zu",
           sizeof(head) - 1 + 270000);
    ok(c.more_in && st.complete == 0, "the rest of the last record waits in GnuTLS: more_in");
    is_int(epoll_wait(g.epfd, &ev, 1, 0), 0, "the socket is empty: epoll would not wake it");
    bench_conn_on_event(&c, EPOLLIN); /* the loop's next turn */
    ok(st.complete == 1 && st.failed == 0 && st.status[2] == 1 && st.body == 270000,
       "the next turn reads the rest: the answer is complete (%ld complete, %llu body bytes)",
       st.complete, (unsigned long long)st.body);
    ok(!c.more_in, "and nothing more waits");
    bench_conn_close(&c); /* no-op if the answer ended the connection */
    gnutls_deinit(srv);
    gnutls_certificate_free_credentials(scred);
    gnutls_certificate_free_credentials(ccred);
    close(sv[0]);
    close(g.epfd);
    free(c.out);
}

/* The class of @p text (an IPv4 or IPv6 address), -1 if it does not parse. */
static int addr_kind(const char *text, char *why, size_t cap)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, text, &a4->sin_addr) == 1)
        ss.ss_family = AF_INET;
    else if (inet_pton(AF_INET6, text, &a6->sin6_addr) == 1)
        ss.ss_family = AF_INET6;
    else
        return -1;
    struct bench_addr_class ac;
    bench_addr_classify((const struct sockaddr *)&ss, &ac);
    snprintf(why, cap, "%s", ac.why);
    return (int)ac.kind;
}

/* Which targets bench may load, address by address. */
static void test_addr_classes(void)
{
    enum {
        LO = BENCH_ADDR_LOOPBACK,
        PRIV = BENCH_ADDR_PRIVATE,
        PUB = BENCH_ADDR_PUBLIC,
        LL = BENCH_ADDR_LINK_LOCAL,
        BAD = BENCH_ADDR_UNUSABLE
    };
    static const struct {
        const char *addr;
        int kind;
        const char *why;
    } t[] = {
        {"127.0.0.1", LO, "127.0.0.0/8"},
        {"127.255.255.254", LO, "127.0.0.0/8"},
        {"10.1.2.3", PRIV, "10.0.0.0/8"},
        {"172.16.0.1", PRIV, "172.16.0.0/12"},
        {"172.31.255.255", PRIV, "172.16.0.0/12"},
        {"172.32.0.1", PUB, ""},
        {"192.168.1.1", PRIV, "192.168.0.0/16"},
        {"169.254.169.254", LL, "169.254.0.0/16, link-local"},
        {"169.254.0.1", LL, "169.254.0.0/16"},
        {"169.253.255.255", PUB, ""},
        {"0.0.0.0", BAD, "0.0.0.0/8"},
        {"0.1.2.3", BAD, "0.0.0.0/8"},
        {"100.64.0.1", PUB, "100.64.0.0/10, shared address space of carrier-grade NAT"},
        {"100.127.255.255", PUB, "100.64.0.0/10"},
        {"100.128.0.1", PUB, ""},
        {"192.0.2.1", PUB, ""},
        {"8.8.8.8", PUB, ""},
        {"224.0.0.1", BAD, "224.0.0.0/4, multicast"},
        {"255.255.255.255", BAD, "240.0.0.0/4"},
        {"::1", LO, "::1/128"},
        {"::", BAD, "::/128, unspecified"},
        {"fe80::1", LL, "fe80::/10, link-local"},
        {"febf::1", LL, "fe80::/10"},
        {"fec0::1", PUB, ""},
        {"fc00::1", PRIV, "fc00::/7"},
        {"fd12:3456::1", PRIV, "fc00::/7"},
        {"ff02::1", BAD, "ff00::/8, multicast"},
        {"2001:db8::1", PUB, ""},
        {"::ffff:127.0.0.1", LO, "::ffff:0:0/96 (IPv4-mapped) holding 127.0.0.0/8"},
        {"::ffff:10.0.0.1", PRIV, "holding 10.0.0.0/8"},
        {"::ffff:8.8.8.8", PUB, "::ffff:0:0/96 (IPv4-mapped) holding a public address"},
        {"::ffff:169.254.169.254", LL, "(IPv4-mapped) holding 169.254.0.0/16, link-local"},
        {"::ffff:0.0.0.0", BAD, "holding 0.0.0.0/8"},
        {"64:ff9b::8.8.8.8", PUB, "64:ff9b::/96 (NAT64) holding a public address"},
        {"64:ff9b::10.0.0.1", PUB, "64:ff9b::/96 (NAT64) holding 10.0.0.0/8"},
        {"64:ff9b::127.0.0.1", PUB, "(NAT64) holding 127.0.0.0/8"},
        {"64:ff9b::169.254.169.254", LL, "64:ff9b::/96 (NAT64) holding 169.254.0.0/16"},
        {"64:ff9b:1::a9fe:a9fe", BAD, "local-use NAT64: the IPv4 address behind it cannot be"},
        {"2002:a9fe:a9fe::1", LL, "2002::/16 (6to4) holding 169.254.0.0/16"},
        {"2002:0a00:0001::1", PUB, "2002::/16 (6to4) holding 10.0.0.0/8"},
        {"2002:0808:0808::1", PUB, "(6to4) holding a public address"},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        char why[160];
        int k = addr_kind(t[i].addr, why, sizeof(why));
        ok(k == t[i].kind && (t[i].why[0] ? strstr(why, t[i].why) != NULL : why[0] == '\0'),
           "%s: class %d (want %d), \"%s\"", t[i].addr, k, t[i].kind, why);
    }
}

/* What a run asks for, by url: link-local refused even with public targets
 * allowed, saying which range; the others as their class says. */
static void test_addr_targets(void)
{
    struct bench_limits any = lim;
    any.allow_public = true;
    static const struct {
        const char *url;
        bool allow_public;
        const char *refusal; /* NULL: accepted */
    } t[] = {
        {"https://169.254.169.254/", false,
         "bench: target 169.254.169.254 is a link-local address (169.254.0.0/16, link-local): "
         "bench never loads link-local addresses"},
        {"https://169.254.169.254/", true, "whatever bench.allow_public_targets says"},
        /* The same address written as one number: the check is on the address. */
        {"http://2852039166/latest/meta-data/", true,
         "target 2852039166 is a link-local address (169.254.0.0/16"},
        {"https://[fe80::1]/", true, "target fe80::1 is a link-local address (fe80::/10"},
        {"https://[::ffff:169.254.169.254]/", true, "(IPv4-mapped) holding 169.254.0.0/16"},
        {"https://[64:ff9b::a9fe:a9fe]/", true, "(NAT64) holding 169.254.0.0/16"},
        {"https://0.0.0.0:8443/", true, "target 0.0.0.0 is not an address a server answers on"},
        {"https://224.0.0.1/", true, "not an address a server answers on (224.0.0.0/4"},
        {"https://100.64.0.1/", false,
         "target 100.64.0.1 is a public address (100.64.0.0/10, shared address space of "
         "carrier-grade NAT, not a private network): bench loads only loopback"},
        {"https://[::ffff:8.8.8.8]/", false, "is a public address (::ffff:0:0/96"},
        {"https://[64:ff9b::10.0.0.1]/", false, "is a public address (64:ff9b::/96 (NAT64)"},
        {"https://100.64.0.1/", true, NULL},
        {"https://[::ffff:10.1.2.3]/", false, NULL},
        {"https://[fd00::5]/", false, NULL},
        {"https://192.168.7.7/", false, NULL},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        char body[256];
        snprintf(body, sizeof(body), "{\"scenario\":\"h1\",\"url\":\"%s\"}", t[i].url);
        json_t *j = json_loads(body, 0, NULL);
        struct bench_opts o;
        char *err = NULL;
        int r = bench_opts_parse(j, t[i].allow_public ? &any : &lim, &local, &o, &err);
        json_decref(j);
        if (t[i].refusal)
            ok(r == -EINVAL && err && strstr(err, t[i].refusal), "%s (public %s): refused: %s",
               t[i].url, t[i].allow_public ? "allowed" : "not allowed", err ? err : "(none)");
        else
            ok(r == 0, "%s (public %s): accepted %s", t[i].url,
               t[i].allow_public ? "allowed" : "not allowed", err ? err : "");
        free(err);
    }
    struct bench_opts o;
    char *err = NULL;
    json_t *j = json_loads("{\"url\":\"https://[::ffff:127.0.0.1]:9443/\"}", 0, NULL);
    is_int(bench_opts_parse(j, &lim, &local, &o, &err), 0, "an IPv4-mapped loopback url");
    ok(o.loopback, "is loopback");
    json_decref(j);
    free(err);
}

int main(void)
{
    test_percentiles();
    test_opts();
    test_default_limits();
    test_local_addr();
    test_site_ip_room();
    test_site_room();
    test_site_room_why();
    test_csv();
    test_refused();
    test_read_budget();
    test_read_budget_tls();
    test_addr_classes();
    test_addr_targets();
    return done_testing();
}
