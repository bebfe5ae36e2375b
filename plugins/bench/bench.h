/* The bench plugin's state, shared by its glue files (bench.c, bench_job.c,
 * bench_api.c, bench_report.c, bench_ab.c). */
#ifndef TLSBOX_BENCH_H
#define TLSBOX_BENCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <tlsbox/host.h>

#include "plugins/bench/bench_gen.h"
#include "plugins/bench/bench_opts.h"

/* What a job does. */
enum bench_kind {
    BENCH_KIND_RUN,
    BENCH_KIND_REPORT,
    BENCH_KIND_CEILING,
    BENCH_KIND_AB,
    BENCH_KIND_MAX
};

/* Progress of the running job, as the API shows it. */
struct bench_progress {
    char phase[96]; /* "h2 (3/9)" */
    int step, steps;
    long done, total;          /* requests in the current step (total 0: by time) */
    long elapsed_ms, total_ms; /* time in the current step (total_ms 0: by count) */
};

struct bench {
    struct tlsbox_plugin *self;
    const struct tlsbox_host *host;
    pthread_mutex_t lock; /* guards the fields below */
    bool busy;            /* a job is queued or running: one at a time */
    int64_t job_id;       /* its job id */
    int64_t run_id;       /* its bench_runs row */
    enum bench_kind kind;
    struct bench_progress progress;
    atomic_bool cancel; /* bench/cancel asked */
    atomic_bool stopping;
};

/* A job's order, owned by the job (freed by bench_job_free). */
struct bench_order {
    struct bench *b;
    enum bench_kind kind;
    int64_t run_id;
    json_t *params;         /* the request body */
    struct bench_opts opts; /* run, ab: parsed */
    struct tlsbox_job *job; /* set when it runs */
    struct bench_limits limits;
    struct bench_local local;
};

const char *bench_kind_name(enum bench_kind k);

/* bench.c: the limits from settings. */
void bench_limits_load(struct bench *b, struct bench_limits *lim);
/* bench_local.c: the local site as the running site enforces it (or, when it
 * cannot say, as stored, with a log line).  From an API handler or a job. */
void bench_local_load(struct bench *b, struct bench_local *local);

/* bench_job.c */
/* Queue an order (ownership passes, also on refusal); *run_id is its row.
 * Refused with -EBUSY (and *err) while another job runs. */
int bench_job_submit(struct bench_order *ord, int64_t *run_id, char **err);
void bench_job_free(void *ord);
/* One measured step: the generator with pinning, server metrics and ceiling
 * ratio; returns the result JSON (new reference) or NULL when cancelled
 * before it started.  @p name labels the step. */
json_t *bench_job_step(struct bench_order *ord, const struct bench_opts *o, const char *name,
                       int step, int steps);
bool bench_job_cancelled(struct bench_order *ord);
void bench_job_set_phase(struct bench *b, const char *phase, int step, int steps);

/* bench_report.c: the seeds' questions in one job. */
int bench_report_run(struct bench_order *ord, json_t *out);
/* Refuse a report's parameters (-EINVAL, *err) that are not its options or
 * that its steps would refuse. */
int bench_report_check(json_t *params, const struct bench_limits *lim,
                       const struct bench_local *local, char **err);
/* bench_ceiling.c: the crypto ceiling of this machine (this thread's core). */
json_t *bench_ceiling_measure(struct bench_order *ord, long ms_per_algorithm);
/* Most full handshakes per second one core can do for a negotiated
 * signature and group, from @p ceiling; 0 when unknown. */
double bench_ceiling_handshakes(json_t *ceiling, const char *sign, const char *group);
/* bench_ab.c: policy A/B. */
int bench_ab_run(struct bench_order *ord, json_t *out, char **err);

/* bench_api.c */
int bench_api_register(struct bench *b);

#endif
