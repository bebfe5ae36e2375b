/* The kit's mock host takes or refuses a metric as the daemon does: a series
 * name the core refuses (bad characters, a malformed label set, "le" on a
 * histogram), buckets it refuses, and a series whose family is registered
 * with another type are NULL through the mock's host table too, with the
 * core's message in the log; what the core takes, the mock takes.  Before,
 * the mock took any non-empty name, so a plugin whose metric the daemon
 * refuses (and whose start then fails) passed its unit tests.  Prints TAP. */
#include <stdio.h>
#include <stdlib.h>

#include <tlsbox/mock_host.h>

#include "tests/tap.h"
#include "tests/unit/metrics_bad_names.h"

static const struct tlsbox_plugin_desc t_desc = {
    .abi_major = TLSBOX_ABI_MAJOR, .abi_minor = TLSBOX_ABI_MINOR, .name = "mm", .version = "1"};

static struct tlsbox_metric *reg(const char *name, enum tlsbox_metric_type type, const double *b,
                                 size_t nb)
{
    return tlsbox_mock_host.metric_register(tlsbox_mock_self(), name, type, "help", b, nb);
}

int main(void)
{
    if (tlsbox_mock_setup(&t_desc) != 0)
        return 1;
    /* The names the core's own test shows it refuses. */
    int refused = 0;
    for (size_t i = 0; i < METRICS_BAD_NAMES; i++) {
        if (!reg(metrics_bad_names[i], TLSBOX_METRIC_COUNTER, NULL, 0))
            refused++;
        else
            diag("  accepted bad name '%s'", metrics_bad_names[i]);
    }
    is_int(refused, (int)(METRICS_BAD_NAMES), "every name the core refuses is refused");
    is_int(tlsbox_mock_log_count("is not a valid series name"), refused,
           "each logged with the core's message");
    ok(!reg("mm_h{le=\"1\"}", TLSBOX_METRIC_HISTOGRAM, NULL, 0), "label le refused on a histogram");
    double unsorted[] = {1, 0.5};
    ok(!reg("mm_h_bad", TLSBOX_METRIC_HISTOGRAM, unsorted, 2), "descending buckets refused");
    ok(!reg("mm_h_none", TLSBOX_METRIC_HISTOGRAM, unsorted, 0), "zero buckets refused");
    ok(reg("mm_h_seconds", TLSBOX_METRIC_HISTOGRAM, NULL, 0) != NULL,
       "a histogram with the default buckets taken");

    struct tlsbox_metric *c1 = reg("mm_req_total{code=\"200\"}", TLSBOX_METRIC_COUNTER, NULL, 0);
    ok(c1 != NULL, "a labelled counter taken");
    ok(reg("mm_req_total{code=\"200\"}", TLSBOX_METRIC_COUNTER, NULL, 0) == c1,
       "the same series found again");
    ok(reg("mm_req_total{code=\"404\"}", TLSBOX_METRIC_COUNTER, NULL, 0) != NULL,
       "another series of the family taken");
    ok(!reg("mm_req_total{code=\"500\"}", TLSBOX_METRIC_GAUGE, NULL, 0),
       "a series of that family with another type refused");
    ok(!reg("mm_req_total", TLSBOX_METRIC_GAUGE, NULL, 0),
       "the family's bare name with another type refused");
    is_int(tlsbox_mock_log_count("clashes with the type of family mm_req_total"), 2,
           "both logged with the core's message");
    ok(reg("ns:sub_total{a=\"x\\\"y\",b_2=\"\\\\\"}", TLSBOX_METRIC_COUNTER, NULL, 0) != NULL,
       "colons, escaped quotes and backslashes taken");
    ok(!reg("mm_x", (enum tlsbox_metric_type)7, NULL, 0), "an unknown type refused");

    /* Updates as the core takes them (core/metrics.c): before, the mock
     * counted what the daemon ignores, so a plugin that set a counter or
     * observed into a gauge passed its tests and showed 0 on /metrics. */
    const struct tlsbox_host *h = &tlsbox_mock_host;
    struct tlsbox_metric *c = reg("mm_upd_total", TLSBOX_METRIC_COUNTER, NULL, 0);
    struct tlsbox_metric *g = reg("mm_upd_level", TLSBOX_METRIC_GAUGE, NULL, 0);
    struct tlsbox_metric *hi = reg("mm_upd_seconds", TLSBOX_METRIC_HISTOGRAM, NULL, 0);
    h->metric_add(c, 5);
    h->metric_add(c, -2);
    h->metric_set(c, 100);
    h->metric_observe(c, 1);
    is_int(tlsbox_mock_metric("mm_upd_total"), 5,
           "counter: a negative add, a set and an observation are ignored");
    h->metric_set(g, 7);
    h->metric_add(g, -10);
    h->metric_observe(g, 1);
    is_int(tlsbox_mock_metric("mm_upd_level"), -3, "gauge: set and add, an observation ignored");
    h->metric_observe(hi, 0.1);
    h->metric_observe(hi, 0.0 / 0.0);
    h->metric_add(hi, 10);
    h->metric_set(hi, 10);
    is_int(tlsbox_mock_metric("mm_upd_seconds"), 1,
           "histogram: counts observations; NaN, add and set ignored");

    /* metric_retire (ABI 1.5), as the core's: the series is gone, the
     * pointer still takes updates that show nowhere, and the name
     * registered again is a new series. */
    ok(TLSBOX_HOST_HAS(h, metric_retire), "the mock has metric_retire");
    h->metric_retire(tlsbox_mock_self(), g);
    is_int(tlsbox_mock_metric("mm_upd_level"), -1, "a retired gauge is gone");
    h->metric_set(g, 9);
    is_int(tlsbox_mock_metric("mm_upd_level"), -1,
           "an update through the old pointer shows nowhere");
    struct tlsbox_metric *g2 = reg("mm_upd_level", TLSBOX_METRIC_GAUGE, NULL, 0);
    ok(g2 != NULL && g2 != g, "registered again: a new series");
    is_int(tlsbox_mock_metric("mm_upd_level"), 0, "starting from 0");
    h->metric_retire(tlsbox_mock_self(), NULL);
    is_int(tlsbox_mock_metric("mm_upd_total"), 5, "retiring NULL: nothing else goes");
    tlsbox_mock_teardown();
    return done_testing();
}
