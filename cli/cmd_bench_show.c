/* tlsboxctl bench: run options from the command line, and stored runs
 * printed for people (the ab/h2load layout, the report's ratio table). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cmd_bench.h"

static void usage(const char *what)
{
    if (strcmp(what, "report") == 0)
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl bench report [-n REQUESTS] [-c CONNECTIONS] "
                        "[--path PATH] [--detach]\n");
    else
        fprintf(stderr,
                "tlsboxctl: usage: tlsboxctl bench %s [-s http|https-new|https-resume|h1|h2] "
                "[-c CONNECTIONS] [-n REQUESTS | -d SECONDS] [-m STREAMS] [--tls 1.2|1.3] "
                "[--key ecdsa|rsa] [--cipher aes128gcm|aes256gcm|chacha20] "
                "[--group x25519|p256|p384|ffdhe2048] [--url URL | --path PATH] "
                "[--timeout SECONDS] [--detach]%s\n",
                what,
                strcmp(what, "ab") == 0
                    ? " (--preset NAME | --priority STRING | --set KEY=VALUE...)"
                      " [--keep better|always|never]"
                    : "");
}

/* A positive integer option value, or -1. */
static long long int_arg(const char *opt, const char *v)
{
    char *end = NULL;
    errno = 0;
    long long x = v ? strtoll(v, &end, 10) : -1;
    /* ERANGE: strtoll's LLONG_MAX is not the number typed. */
    if (!v || *end || x <= 0 || errno == ERANGE) {
        fprintf(stderr, "tlsboxctl: %s needs a positive integer, not '%s'\n", opt, v ? v : "");
        return -1;
    }
    return x;
}

static const struct {
    const char *opt, *alias, *key;
    bool integer, report, ab_only;
} run_opts[] = {
    {"--scenario", "-s", "scenario", false, false, false},
    {"--concurrency", "-c", "concurrency", true, true, false},
    {"--requests", "-n", "requests", true, true, false},
    {"--duration", "-d", "duration", true, false, false},
    {"--streams", "-m", "streams", true, true, false},
    {"--tls", NULL, "tls", false, false, false},
    {"--key", NULL, "key", false, false, false},
    {"--cipher", NULL, "cipher", false, false, false},
    {"--group", NULL, "group", false, false, false},
    {"--url", NULL, "url", false, false, false},
    {"--path", NULL, "path", false, true, false},
    {"--timeout", NULL, "timeout", true, true, false},
    {"--keep", NULL, "keep", false, false, true},
};

/* --preset, --priority, --set KEY=VALUE: the A/B candidate. */
static int candidate_arg(json_t *body, const char *opt, const char *v)
{
    json_t *cand = json_object_get(body, "candidate");
    if (!cand) {
        cand = json_object();
        json_object_set_new(body, "candidate", cand);
    }
    if (strcmp(opt, "--preset") == 0 || strcmp(opt, "--priority") == 0) {
        json_object_set_new(cand, opt + 2, json_string(v));
        return 0;
    }
    const char *eq = strchr(v, '=');
    if (!eq || eq == v) {
        fprintf(stderr, "tlsboxctl: --set needs KEY=VALUE, not '%s'\n", v);
        return -1;
    }
    json_t *fields = json_object_get(cand, "fields");
    if (!fields) {
        fields = json_object();
        json_object_set_new(cand, "fields", fields);
    }
    char *k = strndup(v, (size_t)(eq - v));
    json_t *val = json_loads(eq + 1, JSON_DECODE_ANY, NULL);
    json_object_set_new(fields, k, val ? val : json_string(eq + 1));
    free(k);
    return 0;
}

int bench_parse_run_args(int argc, char **argv, json_t *body, bool *detach, const char *what)
{
    bool report = strcmp(what, "report") == 0, ab = strcmp(what, "ab") == 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--detach") == 0) {
            *detach = true;
            continue;
        }
        if (ab && (strcmp(a, "--preset") == 0 || strcmp(a, "--priority") == 0 ||
                   strcmp(a, "--set") == 0)) {
            if (!v || candidate_arg(body, a, v) < 0)
                return usage(what), -1;
            i++;
            continue;
        }
        size_t k, n = sizeof(run_opts) / sizeof(run_opts[0]);
        for (k = 0; k < n; k++)
            if (strcmp(a, run_opts[k].opt) == 0 ||
                (run_opts[k].alias && strcmp(a, run_opts[k].alias) == 0))
                break;
        if (k == n || (report && !run_opts[k].report) || (!ab && run_opts[k].ab_only) || !v) {
            fprintf(stderr, "tlsboxctl: bench %s: unknown option or missing value: %s\n", what, a);
            return usage(what), -1;
        }
        if (run_opts[k].integer) {
            long long x = int_arg(a, v);
            if (x < 0)
                return usage(what), -1;
            json_object_set_new(body, run_opts[k].key, json_integer(x));
        } else {
            json_object_set_new(body, run_opts[k].key, json_string(v));
        }
        i++;
    }
    if (ab && !json_object_get(body, "candidate")) {
        fprintf(stderr, "tlsboxctl: bench ab needs a candidate: --preset, --priority or --set\n");
        return usage(what), -1;
    }
    return 0;
}

static double num(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    return json_number_value(v);
}

static const char *str(json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get(o, a);
    if (b)
        v = json_object_get(v, b);
    const char *s = json_string_value(v);
    return s ? s : "-";
}

static void show_span(const char *label, json_t *sp)
{
    if (json_is_object(sp))
        printf("  %-14s mean %.2f  min %.2f  max %.2f\n", label, num(sp, "mean", NULL),
               num(sp, "min", NULL), num(sp, "max", NULL));
}

/*
 * The answers by status class: 2xx to 5xx always, then every other bucket
 * the result has (1xx, "other": an h2 :status outside 100-599, or one a
 * newer daemon adds) when it counted any; they used to be left out, and
 * the classes shown did not add up to "complete".
 */
static void show_status(json_t *st)
{
    static const char *const named[] = {"2xx", "3xx", "4xx", "5xx", "1xx", "other"};
    for (size_t i = 0; i < 6; i++)
        if (i < 4 || num(st, named[i], NULL) > 0)
            printf("%s%s %.0f", i ? ", " : "", named[i], num(st, named[i], NULL));
    const char *k;
    json_t *v;
    json_object_foreach(st, k, v)
    {
        size_t i = 0;
        while (i < 6 && strcmp(k, named[i]) != 0)
            i++;
        if (i == 6 && json_number_value(v) > 0)
            printf(", %s %.0f", k, json_number_value(v));
    }
}

/* One result in the ab/h2load layout. */
static void show_result(json_t *r)
{
    json_t *o = json_object_get(r, "options");
    printf("%s: %s %s, %.0f connections", str(r, "name", NULL), str(o, "scenario", NULL),
           str(o, "url", NULL), num(o, "concurrency", NULL));
    if (strcmp(str(o, "scenario", NULL), "h2") == 0)
        printf(" x %.0f streams", num(o, "streams", NULL));
    printf("\n");
    if (json_object_get(r, "error")) {
        printf("  not run: %s\n", str(r, "error", NULL));
        return;
    }
    printf("  %-14s %.0f complete, %.0f failed (", "requests", num(r, "complete", NULL),
           num(r, "failed", NULL));
    show_status(json_object_get(r, "status"));
    printf(")%s\n", json_is_true(json_object_get(r, "cancelled")) ? " CANCELLED"
                    : json_is_true(json_object_get(r, "time_limited"))
                        ? " (stopped at the time limit)"
                    : json_is_true(json_object_get(r, "request_limited"))
                        ? " (stopped at the request limit, bench.max_requests)"
                        : "");
    if (num(r, "retried", NULL) > 0)
        printf("  %-14s %.0f (h2 streams the server refused unprocessed: GOAWAY, REFUSED_STREAM)\n",
               "retried", num(r, "retried", NULL));
    if (num(r, "not_sent", NULL) > 0)
        printf("  %-14s %.0f (h2 streams the server refused unprocessed after the run stopped "
               "sending: neither answered nor sent again)\n",
               "not sent", num(r, "not_sent", NULL));
    printf("  %-14s %.1f   transfer %.1f KiB/s   elapsed %.2f s\n", "req/s", num(r, "rps", NULL),
           num(r, "transfer_kbps", NULL), num(r, "elapsed_s", NULL));
    show_span("connect ms", json_object_get(r, "connect_ms"));
    show_span("handshake ms", json_object_get(r, "handshake_ms"));
    show_span("TTFB ms", json_object_get(r, "ttfb_ms"));
    printf("  %-14s", "latency ms");
    const char *pcts[] = {"50", "66", "75", "80", "90", "95", "98", "99", "100"};
    if (!json_is_object(json_object_get(r, "latency_ms")))
        printf(" - (nothing answered)");
    for (size_t i = 0; i < 9 && json_is_object(json_object_get(r, "latency_ms")); i++)
        printf(" %s%%:%.2f", pcts[i], num(r, "latency_ms", pcts[i]));
    printf("\n");
    json_t *tls = json_object_get(r, "tls");
    printf("  %-14s %.0f full, %.0f resumed", "handshakes", num(r, "handshakes", "full"),
           num(r, "handshakes", "resumed"));
    if (json_is_object(tls))
        printf("; %s %s %s %s %s", str(tls, "protocol", NULL), str(tls, "cipher", NULL),
               str(tls, "group", NULL), str(tls, "alpn", NULL), str(tls, "signature", NULL));
    printf("\n");
    json_t *s = json_object_get(r, "server");
    if (json_is_object(s)) {
        printf("  %-14s %.1f us CPU/request", "server", num(s, "cpu_us_per_request", NULL));
        if (json_is_number(json_object_get(s, "cpu_us_per_handshake")))
            printf(", %.1f us CPU/connection", num(s, "cpu_us_per_handshake", NULL));
        printf("; counted %.0f full + %.0f resumed handshakes\n", num(s, "handshakes", "full"),
               num(s, "handshakes", "resumed"));
    }
    printf("  %-14s %.3f s CPU\n", "client", num(r, "client_cpu_s", NULL));
    json_t *c = json_object_get(r, "ceiling");
    if (json_is_number(json_object_get(c, "ratio")))
        printf("  %-14s %.0f handshakes/s per server core of a ceiling of %.0f (%.0f%%)\n",
               "ceiling", num(c, "achieved_per_core", NULL), num(c, "ceiling_per_core", NULL),
               100 * num(c, "ratio", NULL));
    else if (json_is_object(c))
        printf("  %-14s %s\n", "ceiling", str(c, "note", NULL));
    printf("  %-14s %s\n", "pinning", str(r, "pinning", "note"));
}

static void show_ceiling(json_t *c)
{
    const char *k;
    json_t *v;
    printf("crypto ceiling of one core:\n");
    json_object_foreach(json_object_get(c, "signatures_per_s"), k, v)
        printf("  %-22s %10.0f signatures/s\n", k, json_number_value(v));
    json_object_foreach(json_object_get(c, "key_exchanges_per_s"), k, v)
        printf("  %-22s %10.0f key exchanges/s\n", k, json_number_value(v));
    json_object_foreach(json_object_get(c, "aead_mb_per_s"), k, v)
        printf("  %-22s %10.1f MB/s\n", k, json_number_value(v));
    printf("most full TLS 1.3 handshakes/s per core (signature + key exchange):\n");
    json_object_foreach(json_object_get(c, "handshakes_per_core"), k, v)
        printf("  %-22s %10.0f\n", k, json_number_value(v));
}

static void show_report(json_t *table)
{
    size_t i;
    json_t *row;
    printf("\n| question | a | req/s | b | req/s | a/b |\n|---|---|---:|---|---:|---:|\n");
    json_array_foreach(table, i, row)
    {
        printf("| %s | %s | ", str(row, "question", NULL), str(row, "a", NULL));
        json_is_number(json_object_get(row, "a_rps")) ? printf("%.1f", num(row, "a_rps", NULL))
                                                      : printf("-");
        printf(" | %s | ", str(row, "b", NULL));
        json_is_number(json_object_get(row, "b_rps")) ? printf("%.1f", num(row, "b_rps", NULL))
                                                      : printf("-");
        if (json_is_number(json_object_get(row, "ratio")))
            printf(" | x%.2f |\n", num(row, "ratio", NULL));
        else
            printf(" | - (%s) |\n", str(row, "note", NULL));
    }
}

void bench_show_run(json_t *run)
{
    json_t *m = json_object_get(run, "machine"), *info = json_object_get(run, "info");
    printf("bench %s #%lld: %s", str(run, "kind", NULL),
           (long long)json_integer_value(json_object_get(run, "id")), str(run, "state", NULL));
    if (json_is_string(json_object_get(run, "error")))
        printf(" (%s)", str(run, "error", NULL));
    printf("\nmachine: %s, %.0f cores, governor %s, kernel %s, AES instructions %s\n",
           str(m, "cpu_model", NULL), num(m, "cores", NULL), str(m, "governor", NULL),
           str(m, "kernel", NULL), json_is_true(json_object_get(m, "aes")) ? "yes" : "no");
    if (json_object_get(info, "temp_before_mc"))
        printf("temperature: %.1f C before, %.1f C after\n",
               num(info, "temp_before_mc", NULL) / 1000, num(info, "temp_after_mc", NULL) / 1000);
    if (json_object_get(info, "throttled_before"))
        printf("throttled flags: %s before, %s after\n", str(info, "throttled_before", NULL),
               str(info, "throttled_after", NULL));
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(run, "results"), i, row)
    {
        json_t *r = json_object_get(row, "result");
        if (strcmp(str(run, "kind", NULL), "ceiling") == 0)
            show_ceiling(r);
        else
            show_result(r);
    }
    if (json_object_get(info, "report"))
        show_report(json_object_get(info, "report"));
    json_t *d = json_object_get(info, "difference");
    if (json_is_object(d))
        printf("\nA/B: B/A req/s x%.3f, p50 latency x%.3f, server CPU/request x%.3f; kept %s\n",
               num(d, "rps_ratio", NULL), num(d, "p50_ratio", NULL),
               num(d, "cpu_per_request_ratio", NULL), str(info, "kept", NULL));
}

void bench_show_list(struct ctl *c, json_t *runs)
{
    (void)c;
    size_t i, k;
    json_t *r, *x;
    printf("%-5s %-8s %-10s %-20s %s\n", "ID", "KIND", "STATE", "STARTED (UTC)", "RESULTS");
    json_array_foreach(runs, i, r)
    {
        time_t t = (time_t)json_integer_value(json_object_get(r, "started_at"));
        char when[32];
        printf("%-5lld %-8s %-10s %-20s", (long long)json_integer_value(json_object_get(r, "id")),
               str(r, "kind", NULL), str(r, "state", NULL), ctl_utc(t, when, sizeof when));
        json_array_foreach(json_object_get(r, "results"), k, x)
        {
            if (strcmp(str(r, "kind", NULL), "ceiling") == 0)
                printf(" measured");
            else
                printf(" %s %.0f/s%s", str(x, "name", NULL), num(x, "rps", NULL),
                       num(x, "failed", NULL) > 0 ? " (failures)" : "");
        }
        printf("\n");
    }
}

void bench_show_compare(struct ctl *c, json_t *cmp)
{
    (void)c;
    printf("run #%lld (B) against run #%lld (A)%s\n",
           (long long)json_integer_value(json_object_get(cmp, "b")),
           (long long)json_integer_value(json_object_get(cmp, "a")),
           json_is_true(json_object_get(cmp, "machines_differ")) ? " -- on different machines"
                                                                 : "");
    printf("| step | A req/s | B req/s | B/A req/s | B/A p50 | B/A p99 | B/A CPU/request |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(cmp, "rows"), i, r)
    {
        printf("| %s | %.1f | %.1f |", str(r, "name", NULL), num(r, "a_rps", NULL),
               num(r, "b_rps", NULL));
        const char *keys[] = {"rps_ratio", "p50_ratio", "p99_ratio", "cpu_per_request_ratio"};
        for (int k = 0; k < 4; k++)
            json_is_number(json_object_get(r, keys[k])) ? printf(" %.3f |", num(r, keys[k], NULL))
                                                        : printf(" - |");
        printf("\n");
    }
}
