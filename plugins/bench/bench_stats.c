/* Result statistics: counters, spans, latency percentiles, JSON. */
#include "plugins/bench/bench_stats.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/bench/bench_util.h"

const int bench_percentiles[BENCH_NPCT] = {50, 66, 75, 80, 90, 95, 98, 99, 100};

void bench_stats_init(struct bench_stats *s, size_t max_latencies)
{
    memset(s, 0, sizeof(*s));
    s->maxlat = max_latencies;
}

void bench_stats_free(struct bench_stats *s)
{
    free(s->lat);
    s->lat = NULL;
    s->nlat = s->caplat = 0;
}

void bench_span_add(struct bench_span *sp, double us)
{
    if (us < 0)
        us = 0;
    if (sp->n == 0 || us < sp->min_us)
        sp->min_us = us;
    if (us > sp->max_us)
        sp->max_us = us;
    sp->sum_us += us;
    sp->n++;
}

void bench_stats_complete(struct bench_stats *s, int status, double us)
{
    s->complete++;
    int cls = status / 100;
    s->status[cls >= 1 && cls <= 5 ? cls : 0]++;
    if (s->nlat >= s->maxlat)
        return;
    if (s->nlat == s->caplat) {
        size_t cap = s->caplat ? s->caplat * 2 : 4096;
        if (cap > s->maxlat)
            cap = s->maxlat;
        s->lat = tlsbox_xrealloc(s->lat, cap * sizeof(*s->lat));
        s->caplat = cap;
    }
    s->sorted = false;
    s->lat[s->nlat++] = us < 0 ? 0 : us > 4e9 ? 4000000000u : (uint32_t)us;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

double bench_stats_percentile(struct bench_stats *s, int pct)
{
    if (s->nlat == 0)
        return 0;
    if (!s->sorted) {
        qsort(s->lat, s->nlat, sizeof(*s->lat), cmp_u32);
        s->sorted = true;
    }
    /* Nearest rank, as ab: the smallest value with at least pct% at or below. */
    size_t rank = (size_t)((double)pct / 100.0 * (double)s->nlat + 0.999999);
    if (rank < 1)
        rank = 1;
    if (rank > s->nlat)
        rank = s->nlat;
    return s->lat[rank - 1] / 1000.0;
}

static json_t *span_json(const struct bench_span *sp)
{
    if (sp->n == 0)
        return json_null();
    return json_pack("{s:f,s:f,s:f,s:I}", "mean", sp->sum_us / sp->n / 1000.0, "min",
                     sp->min_us / 1000.0, "max", sp->max_us / 1000.0, "n", (json_int_t)sp->n);
}

static json_t *tls_json(const struct bench_stats *s)
{
    if (!s->protocol[0])
        return json_null();
    return json_pack("{s:s,s:s,s:s,s:s,s:s}", "protocol", s->protocol, "cipher", s->cipher, "group",
                     s->group, "alpn", s->alpn, "signature", s->sign);
}

json_t *bench_stats_json(struct bench_stats *s)
{
    double el = s->elapsed_s > 0 ? s->elapsed_s : 0;
    /* No answer, no latency: null, as the spans, not percentiles of 0 ms. */
    json_t *lat = s->nlat ? json_object() : json_null();
    for (int i = 0; s->nlat && i < BENCH_NPCT; i++) {
        char k[8];
        snprintf(k, sizeof(k), "%d", bench_percentiles[i]);
        json_object_set_new(lat, k, json_real(bench_stats_percentile(s, bench_percentiles[i])));
    }
    json_t *st = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "1xx", (json_int_t)s->status[1], "2xx",
                           (json_int_t)s->status[2], "3xx", (json_int_t)s->status[3], "4xx",
                           (json_int_t)s->status[4], "5xx", (json_int_t)s->status[5], "other",
                           (json_int_t)s->status[0]);
    json_t *j = json_pack(
        "{s:I,s:I,s:o,s:f,s:f,s:I,s:I,s:f,s:I,s:I,s:o,s:o,s:o,s:o,s:{s:I,s:I},s:o,s:f,s:b,s:b,s:b}",
        "complete", (json_int_t)s->complete, "failed", (json_int_t)s->failed, "status", st, "rps",
        el > 0 ? s->complete / el : 0.0, "transfer_kbps", el > 0 ? s->bytes / 1024.0 / el : 0.0,
        "bytes", (json_int_t)s->bytes, "body_bytes", (json_int_t)s->body, "elapsed_s", el,
        "connections", (json_int_t)s->connections, "connections_failed", (json_int_t)s->conn_failed,
        "connect_ms", span_json(&s->connect), "handshake_ms", span_json(&s->handshake), "ttfb_ms",
        span_json(&s->ttfb), "latency_ms", lat, "handshakes", "full", (json_int_t)s->hs_full,
        "resumed", (json_int_t)s->hs_resumed, "tls", tls_json(s), "client_cpu_s", s->client_cpu_s,
        "cancelled", s->cancelled, "time_limited", s->time_limited, "request_limited",
        s->request_limited);
    json_object_set_new(j, "retried", json_integer(s->retried));
    json_object_set_new(j, "not_sent", json_integer(s->not_sent));
    return j;
}
