/* metrics: exact sums under contention, gauges, histograms, names,
 * Prometheus text and JSON. */
#include <math.h>
#include <pthread.h>
#include <time.h>

#include "core/metrics.h"
#include "tests/tap.h"
#include "tests/unit/metrics_bad_names.h"

#define THREADS 4
#define PER_THREAD 1000000

static struct tlsbox_metric *c_shared, *g_shared, *h_shared;

static void *hammer(void *arg)
{
    for (int i = 0; i < PER_THREAD; i++) {
        metrics_add(c_shared, 1);
        metrics_add(g_shared, (i & 1) ? 1 : -1);
        if (i % 100 == 0)
            metrics_observe(h_shared, 0.003); /* 10000 per thread, bucket 0.005 */
    }
    return NULL;
}

static double elapsed_s(const struct timespec *a)
{
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

/* Compare rendered text with @p want line by line, reporting the first mismatch. */
static void text_is(const char *got, const char *want, const char *what)
{
    int line = 1;
    const char *g = got, *w = want;
    while (*g && *w) {
        const char *ge = strchr(g, '\n'), *we = strchr(w, '\n');
        size_t gl = ge ? (size_t)(ge - g) : strlen(g), wl = we ? (size_t)(we - w) : strlen(w);
        if (gl != wl || memcmp(g, w, gl) != 0) {
            ok(0, "%s: line %d", what, line);
            diag("  got  '%.*s'", (int)gl, g);
            diag("  want '%.*s'", (int)wl, w);
            return;
        }
        g += gl + (ge ? 1 : 0);
        w += wl + (we ? 1 : 0);
        line++;
    }
    if (!ok(*g == '\0' && *w == '\0', "%s: %d lines match", what, line - 1))
        diag("  got rest '%s', want rest '%s'", g, w);
}

int main(void)
{
    /* ---- contention ---- */
    c_shared = metrics_register(NULL, "t_ops_total", TLSBOX_METRIC_COUNTER, "ops", NULL, 0);
    g_shared = metrics_register(NULL, "t_level", TLSBOX_METRIC_GAUGE, "level", NULL, 0);
    h_shared = metrics_register(NULL, "t_latency_seconds", TLSBOX_METRIC_HISTOGRAM, "lat", NULL, 0);
    ok(c_shared && g_shared && h_shared, "counter, gauge, histogram registered");
    pthread_t th[THREADS];
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, hammer, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    double secs = elapsed_s(&t0);
    is_int(metrics_value(c_shared), (long long)THREADS * PER_THREAD,
           "%d threads x %d increments sum exactly", THREADS, PER_THREAD);
    is_int(metrics_value(g_shared), 0, "gauge +1/-1 from %d threads nets 0", THREADS);
    is_int(metrics_value(h_shared), THREADS * PER_THREAD / 100, "histogram count exact");
    diag("%d x %d counter+gauge updates in %.3f s (%.1f ns per update per thread)", THREADS,
         PER_THREAD, secs, secs / PER_THREAD / 2 * 1e9);

    /* ---- registration ---- */
    ok(metrics_register(NULL, "t_ops_total", TLSBOX_METRIC_COUNTER, NULL, NULL, 0) == c_shared,
       "registering the same name again returns the same series");
    ok(metrics_register(NULL, "t_ops_total", TLSBOX_METRIC_GAUGE, NULL, NULL, 0) == NULL,
       "same name with another type refused");
    ok(metrics_register(NULL, "t_ops_total{a=\"1\"}", TLSBOX_METRIC_GAUGE, NULL, NULL, 0) == NULL,
       "a series of a family with another type refused");
    ok(metrics_find("t_level") == g_shared, "metrics_find by name");
    ok(metrics_find("t_nope") == NULL, "metrics_find unknown: NULL");

    /* The host call metric_retire: a plugin retires its own series only.
     * Two owners (opaque here: only their addresses count). */
    struct tlsbox_plugin *pa = (struct tlsbox_plugin *)&c_shared,
                         *pb = (struct tlsbox_plugin *)&g_shared;
    struct tlsbox_metric *owned =
        metrics_register(pa, "t_owned{cert=\"x\"}", TLSBOX_METRIC_GAUGE, "owned", NULL, 0);
    metrics_retire_owned(pb, owned);
    ok(metrics_find("t_owned{cert=\"x\"}") == owned, "another plugin's retire: the series stays");
    metrics_retire_owned(NULL, owned);
    ok(metrics_find("t_owned{cert=\"x\"}") == owned, "nor the core's through the host call");
    metrics_retire_owned(pa, owned);
    ok(metrics_find("t_owned{cert=\"x\"}") == NULL, "its owner's retire: gone");
    metrics_retire_owned(pa, NULL);
    int refused = 0;
    for (size_t i = 0; i < METRICS_BAD_NAMES; i++) {
        struct tlsbox_metric *m =
            metrics_register(NULL, metrics_bad_names[i], TLSBOX_METRIC_COUNTER, NULL, NULL, 0);
        if (!m)
            refused++;
        else
            diag("  accepted bad name '%s'", metrics_bad_names[i]);
    }
    is_int(refused, (int)(METRICS_BAD_NAMES), "every bad name refused");
    ok(metrics_register(NULL, "h{le=\"1\"}", TLSBOX_METRIC_HISTOGRAM, NULL, NULL, 0) == NULL,
       "label le refused on a histogram");
    double unsorted[] = {1, 0.5};
    ok(metrics_register(NULL, "h_bad", TLSBOX_METRIC_HISTOGRAM, NULL, unsorted, 2) == NULL,
       "descending buckets refused");
    ok(metrics_register(NULL, "ns:sub_total{a=\"x\\\"y\",b_2=\"\\\\\"}", TLSBOX_METRIC_COUNTER,
                        NULL, NULL, 0) != NULL,
       "colons, escaped quotes and backslashes accepted");
    ok(metrics_register(NULL, "x", (enum tlsbox_metric_type)7, NULL, NULL, 0) == NULL,
       "unknown type refused");

    /* ---- semantics ---- */
    metrics_free_all();
    struct tlsbox_metric *c =
        metrics_register(NULL, "c_total", TLSBOX_METRIC_COUNTER, NULL, NULL, 0);
    struct tlsbox_metric *g = metrics_register(NULL, "g", TLSBOX_METRIC_GAUGE, NULL, NULL, 0);
    metrics_add(c, 5);
    metrics_add(c, -3);
    metrics_set(c, 100);
    is_int(metrics_value(c), 5, "counter ignores negative adds and set");
    metrics_add(g, 7);
    metrics_set(g, 42);
    is_int(metrics_value(g), 42, "gauge reads what was set after adds");
    metrics_add(g, -50);
    is_int(metrics_value(g), -8, "gauge add after set (may go negative)");
    metrics_set(g, 3);
    is_int(metrics_value(g), 3, "set again");
    metrics_add(NULL, 1);
    metrics_set(NULL, 1);
    metrics_observe(NULL, 1);
    ok(metrics_value(NULL) == 0, "NULL metric: updates are no-ops");

    /* ---- Prometheus text, line by line ---- */
    metrics_free_all();
    c = metrics_register(NULL, "tlsbox_req_total{code=\"200\"}", TLSBOX_METRIC_COUNTER,
                         "Requests.\nBy code \\ class", NULL, 0);
    struct tlsbox_metric *g2 =
        metrics_register(NULL, "tlsbox_temp", TLSBOX_METRIC_GAUGE, "Temp", NULL, 0);
    struct tlsbox_metric *c404 = metrics_register(NULL, "tlsbox_req_total{code=\"404\"}",
                                                  TLSBOX_METRIC_COUNTER, "ignored", NULL, 0);
    double b[] = {0.1, 0.5, 1};
    struct tlsbox_metric *h = metrics_register(NULL, "tlsbox_lat_seconds{kind=\"full\"}",
                                               TLSBOX_METRIC_HISTOGRAM, "Latency", b, 3);
    struct tlsbox_metric *h2 =
        metrics_register(NULL, "tlsbox_plain_seconds", TLSBOX_METRIC_HISTOGRAM, NULL, b, 3);
    metrics_add(c, 3);
    metrics_add(c404, 1);
    metrics_set(g2, -5);
    metrics_observe(h, 0.05);
    metrics_observe(h, 0.1); /* le is inclusive */
    metrics_observe(h, 0.7);
    metrics_observe(h, 3);
    metrics_observe(h, NAN); /* dropped */
    metrics_observe(h2, 0.25);
    char *text = metrics_render_prometheus();
    text_is(text,
            "# HELP tlsbox_req_total Requests.\\nBy code \\\\ class\n"
            "# TYPE tlsbox_req_total counter\n"
            "tlsbox_req_total{code=\"200\"} 3\n"
            "tlsbox_req_total{code=\"404\"} 1\n"
            "# HELP tlsbox_temp Temp\n"
            "# TYPE tlsbox_temp gauge\n"
            "tlsbox_temp -5\n"
            "# HELP tlsbox_lat_seconds Latency\n"
            "# TYPE tlsbox_lat_seconds histogram\n"
            "tlsbox_lat_seconds_bucket{kind=\"full\",le=\"0.1\"} 2\n"
            "tlsbox_lat_seconds_bucket{kind=\"full\",le=\"0.5\"} 2\n"
            "tlsbox_lat_seconds_bucket{kind=\"full\",le=\"1\"} 3\n"
            "tlsbox_lat_seconds_bucket{kind=\"full\",le=\"+Inf\"} 4\n"
            "tlsbox_lat_seconds_sum{kind=\"full\"} 3.85\n"
            "tlsbox_lat_seconds_count{kind=\"full\"} 4\n"
            "# TYPE tlsbox_plain_seconds histogram\n"
            "tlsbox_plain_seconds_bucket{le=\"0.1\"} 0\n"
            "tlsbox_plain_seconds_bucket{le=\"0.5\"} 1\n"
            "tlsbox_plain_seconds_bucket{le=\"1\"} 1\n"
            "tlsbox_plain_seconds_bucket{le=\"+Inf\"} 1\n"
            "tlsbox_plain_seconds_sum 0.25\n"
            "tlsbox_plain_seconds_count 1\n",
            "prometheus text");
    free(text);

    /* Default buckets. */
    struct tlsbox_metric *hd =
        metrics_register(NULL, "tlsbox_default_seconds", TLSBOX_METRIC_HISTOGRAM, NULL, NULL, 0);
    metrics_observe(hd, 0.0004);
    metrics_observe(hd, 20);
    text = metrics_render_prometheus();
    like(text, "tlsbox_default_seconds_bucket{le=\"0.0005\"} 1\n", "default first bucket 0.0005");
    like(text, "tlsbox_default_seconds_bucket{le=\"10\"} 1\n", "default last bucket 10");
    like(text, "tlsbox_default_seconds_bucket{le=\"+Inf\"} 2\n", "+Inf holds everything");
    free(text);

    /* ---- JSON ---- */
    json_t *j = metrics_json();
    is_int(json_integer_value(json_object_get(j, "tlsbox_req_total{code=\"200\"}")), 3,
           "json counter");
    is_int(json_integer_value(json_object_get(j, "tlsbox_temp")), -5, "json gauge");
    json_t *hj = json_object_get(j, "tlsbox_lat_seconds{kind=\"full\"}");
    is_int(json_integer_value(json_object_get(hj, "count")), 4, "json histogram count");
    ok(fabs(json_real_value(json_object_get(hj, "sum")) - 3.85) < 1e-9, "json histogram sum");
    char *bk = json_dumps(json_object_get(hj, "buckets"), JSON_COMPACT);
    is_str(bk, "[[0.10000000000000001,2],[0.5,2],[1.0,3]]", "json cumulative buckets");
    free(bk);
    json_decref(j);

    metrics_free_all();
    ok(metrics_find("tlsbox_temp") == NULL, "metrics_free_all empties the registry");
    text = metrics_render_prometheus();
    is_str(text, "", "empty registry renders empty text");
    free(text);
    return done_testing();
}
