/* The bench plugin's tables (its own migrations) and their reads and
 * writes.  Every call opens and closes its own store connection, so any
 * non-site thread may call it. */
#ifndef TLSBOX_BENCH_STORE_H
#define TLSBOX_BENCH_STORE_H

#include <stdint.h>

#include <jansson.h>
#include <tlsbox/plugin.h>

#include "plugins/bench/bench.h"

extern const struct tlsbox_migration bench_migrations[];

/* A new run row (state "running") with this machine; *id set.  0 or -EIO. */
int bench_store_run_create(struct bench *b, enum bench_kind kind, json_t *params, int64_t *id);
/* Close a run: state "done", "cancelled" or "failed"; @p info is a JSON
 * object with "pinning", "temp_before_mc", "temp_after_mc",
 * "throttled_before", "throttled_after" (any may be missing); @p error NULL
 * unless failed. */
int bench_store_run_finish(struct bench *b, int64_t id, const char *state, json_t *info,
                           const char *error);
/* One result row of a run (a step of a report, A or B of an A/B, ...). */
int bench_store_result_add(struct bench *b, int64_t run_id, int seq, const char *name,
                           json_t *result);
/* Runs at daemon start still marked running: failed ("the daemon stopped"). */
void bench_store_close_stale(struct bench *b);
/* The newest runs, newest first: JSON array of summaries. */
json_t *bench_store_list(struct bench *b, int limit);
/* One run with machine and results; NULL when there is none with that id. */
json_t *bench_store_show(struct bench *b, int64_t id);
/* The newest finished ceiling's result, or NULL. */
json_t *bench_store_latest_ceiling(struct bench *b);

#endif
