/* The dhparam plugin: its state and the functions its files share.
 *
 *   dhparam.c        descriptor, settings, schema, hooks, mode switching, metrics
 *   dhparam_run.c    generation runs: start, resume, rotate, the job itself
 *   dhparam_gen.c    one generation in a child process at idle priority
 *   dhparam_store.c  the plugin's own tables (dhparam_params, dhparam_runs)
 *   dhparam_api.c    dh/status, dh/generate, dh/import, dh/mode
 */
#ifndef TLSBOX_PLUGINS_DHPARAM_H
#define TLSBOX_PLUGINS_DHPARAM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>
#include <tlsbox/host.h>

/* The generation running now (guarded by dhparam.lock). */
struct dhparam_current {
    int64_t job;    /* job id, 0 when none */
    int64_t run_id; /* dhparam_runs row */
    int bits;
    int attempts;
    char reason[16];    /* request, schedule, first */
    const char *stage;  /* static: queued, generating, checking, storing */
    struct timespec t0; /* CLOCK_MONOTONIC at start */
    pid_t pid;          /* generating child, 0 when none */
    int superseded_by;  /* dhparam.bits changed to this: stop, not a failure; 0 when not */
};

struct dhparam {
    struct tlsbox_plugin *self;
    const struct tlsbox_host *host;

    pthread_mutex_t lock; /* cur, seen_mode, seen_bits */
    struct dhparam_current cur;
    /* Mode and size at the last settings.changed (or the start): a reload
     * (SIGHUP) does not say which keys changed, so it compares with these. */
    char seen_mode[16];
    long long seen_bits;
    pthread_mutex_t apply_lock; /* one mode switch at a time */
    atomic_bool stopping;
    atomic_bool resumed;        /* the first check looked for an interrupted run */
    atomic_bool resize_pending; /* dhparam.bits changed while a run of another size went on */
    /* The end of a run that could not be written (the store would not open
     * or took no write): written at the next store open of a check or a
     * run's start, so the run is not left "running" (guarded by lock). */
    int64_t unwritten_id; /* 0 when none */
    char unwritten_state[16];
    char *unwritten_error;

    int64_t timer;
    int64_t subs[3];
    struct tlsbox_metric *m_bits, *m_rfc7919, *m_dhe, *m_running, *m_seconds, *m_ok, *m_failed;
};

/* Start of the error of a run stopped by a dhparam.bits change (state
 * 'cancelled', which no start resumes; before schema step 0002 such a run
 * was stored as 'failed' with this error, which is how 0002 finds it). */
#define DHPARAM_CANCELLED_PREFIX "cancelled: "

/* Allowed generation sizes.  Long long, the width of json_int_t and of
 * setting_get_int: a narrower type would wrap a value such as 2^32 + 2048
 * (long is 32 bits on armhf) into an allowed size before the check. */
bool dhparam_bits_ok(long long bits);

/* ---- dhparam.c ---------------------------------------------------------- */

/* Hand the core the parameters the mode asks for (nothing when they are
 * served already); then refresh the metrics.  Any thread but a site worker. */
void dhparam_apply(struct dhparam *d);
/* Update the served-parameter metrics from host->dh_served.  Any thread. */
void dhparam_metrics_refresh(struct dhparam *d);
/* The "mode" setting (caller frees; "rfc7919" when unreadable). */
char *dhparam_mode(struct dhparam *d);

/* ---- dhparam_run.c ------------------------------------------------------ */

/*
 * Start a generation of @p bits for @p reason, recorded in dhparam_runs
 * (@p resume_id > 0: that interrupted row again, one more attempt).  Returns
 * the run id, -EBUSY when one is running, -ESHUTDOWN while stopping, -EIO.
 * Any thread but a site worker.
 */
int64_t dhparam_run_start(struct dhparam *d, int bits, const char *reason, int64_t resume_id);
/* Periodic check (a timer job): resume an interrupted run once (not one of
 * another size than dhparam.bits that no one asked for: that one is
 * recorded as cancelled), apply the mode, start a rotation when the
 * generated parameters are due.  The first check since the start also does
 * what dhparam_run_resize does: dhparam.bits may have changed while the
 * daemon was down. */
void dhparam_run_check(void *arg, struct tlsbox_job *job);
/* dhparam.mode changed (a job): the check, then, in generated mode, what
 * dhparam_run_resize does (dhparam.bits may have changed in another mode). */
void dhparam_run_mode(void *arg, struct tlsbox_job *job);
/*
 * dhparam.bits changed (a job): in generated mode, start parameters of the
 * new size now (the ones served stay until they are ready) and stop a
 * scheduled or earlier size-change run of another size; back at the size
 * served, that stop is all.  A run someone asked for (dh/generate) is left
 * to finish, then this runs again.  Other modes generate nothing.
 */
void dhparam_run_resize(void *arg, struct tlsbox_job *job);
/* True when the running generation was superseded by a dhparam.bits change
 * (the generator polls it with job_cancelled).  Any thread. */
bool dhparam_run_superseded(struct dhparam *d);
/* The running generation as JSON (new reference), or json null. */
json_t *dhparam_run_current(struct dhparam *d, sqlite3 *db);
/* Stop hook: cancel the running job (it kills its child, marks the run). */
void dhparam_run_cancel(struct dhparam *d);

/* ---- dhparam_gen.c ------------------------------------------------------ */

/*
 * Generate @p bits-bit parameters in a child process (SCHED_IDLE and nice 19
 * when @p idle) that runs the host binary as "tlsboxd --generate-dh BITS"
 * (/proc/self/exe), and wait for it from @p job, polling for cancellation.
 * d->cur.pid is set while the child lives.  Returns 0 with *pem (PKCS#3,
 * caller frees), -ECANCELED when the job was cancelled (child killed and
 * reaped; also when dhparam_run_superseded turns true), or -EIO with *err
 * (caller frees).
 */
int dhparam_gen(struct dhparam *d, struct tlsbox_job *job, int bits, bool idle, char **pem,
                char **err);

/* ---- dhparam_store.c ---------------------------------------------------- */

/* One row of dhparam_params. */
struct dhparam_row {
    int64_t id;
    int bits;
    char *pem; /* caller frees (dhparam_row_clear) */
    char source[16];
    int64_t created_at;
    double gen_seconds; /* < 0 for imports */
};
void dhparam_row_clear(struct dhparam_row *r);

/* Newest parameters of @p source ("generated", "import"): 0, -ENOENT, -EIO. */
int dhparam_store_newest(sqlite3 *db, const char *source, struct dhparam_row *out);
/* Insert imported parameters: the new row id or -EIO. */
int64_t dhparam_store_import(sqlite3 *db, const char *pem, int bits);
/* A new run row (running, queued), or @p resume_id again with one more
 * attempt; returns the id and the attempt number in *attempts, or -EIO. */
int64_t dhparam_store_run_begin(sqlite3 *db, int bits, const char *reason, int64_t resume_id,
                                int *attempts);
/* Set a run's stage (best effort). */
void dhparam_store_run_stage(sqlite3 *db, int64_t run_id, const char *stage);
/* Finish a run: state "interrupted", "cancelled" or "failed" (with @p error).
 * 0, or -EIO when it was not written. */
int dhparam_store_run_end(sqlite3 *db, int64_t run_id, const char *state, const char *error);
/* At a start: runs an earlier tlsboxd left "running" (it ended before it
 * could write their end) become "interrupted".  Their number, or -EIO. */
int dhparam_store_run_orphans(sqlite3 *db);
/* In one transaction: insert the generated parameters and mark the run done. */
int dhparam_store_run_done(sqlite3 *db, int64_t run_id, const char *pem, int bits, double seconds);
/* The newest run left running or interrupted: its id, bits and reason; 0,
 * -ENOENT, -EIO.  @p reason has room for 16 bytes. */
int dhparam_store_run_unfinished(sqlite3 *db, int64_t *id, int *bits, char *reason);
/* True when parameter row @p params_id was made by a run someone asked for
 * (dh/generate); false for other runs, imports and on errors. */
bool dhparam_store_requested(sqlite3 *db, int64_t params_id);
/* Seconds the last successful generation of @p bits took, or -1. */
double dhparam_store_last_seconds(sqlite3 *db, int bits);
/* Summary of the stored parameters and the last finished run (new reference).
 * The run's "state" and "outcome" are its stored state; a run stopped by a
 * dhparam.bits change ("cancelled") also has "cancelled_because". */
json_t *dhparam_store_summary(sqlite3 *db);

/* ---- dhparam_api.c ------------------------------------------------------ */

/* Register dh/status, dh/generate, dh/import, dh/mode.  Main thread. */
int dhparam_api_register(struct dhparam *d);

#endif
