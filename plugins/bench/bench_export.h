/* Stored runs for people and spreadsheets: CSV export and the comparison of
 * two runs. */
#ifndef TLSBOX_BENCH_EXPORT_H
#define TLSBOX_BENCH_EXPORT_H

#include <jansson.h>

/* A run (as from bench_store_show) as CSV with a header line, one line per
 * result; caller frees. */
char *bench_export_csv(json_t *run);
/* Results of run @p b against run @p a, matched by name: {"a": id, "b": id,
 * "rows": [{"name", "a_rps", "b_rps", "rps_ratio", "p50_ratio", "p99_ratio",
 * "cpu_per_request_ratio"}], "machines_differ": bool}.  New reference. */
json_t *bench_export_compare(json_t *a, json_t *b);

#endif
