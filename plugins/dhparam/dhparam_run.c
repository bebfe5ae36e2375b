/* Generation runs: one at a time, recorded in dhparam_runs before they
 * start, the new parameters stored in one transaction with the run's end (a
 * stop mid-way leaves the run "interrupted" and no parameter row), resumed
 * at the next start (unless dhparam.bits changed since), and started again
 * when the rotation is due. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/dhparam/dhparam.h"

#define DAY_SECONDS 86400

static void set_stage(struct dhparam *d, sqlite3 *db, const char *stage)
{
    pthread_mutex_lock(&d->lock);
    d->cur.stage = stage;
    int64_t id = d->cur.run_id;
    pthread_mutex_unlock(&d->lock);
    dhparam_store_run_stage(db, id, stage);
}

static double elapsed(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void finish(struct dhparam *d)
{
    pthread_mutex_lock(&d->lock);
    memset(&d->cur, 0, sizeof(d->cur));
    pthread_mutex_unlock(&d->lock);
    d->host->metric_set(d->m_running, 0);
}

/* Write the end of run @p id; when it cannot be written now (no store: @p db
 * NULL, or the write refused), keep it for write_unwritten: a run whose end
 * is lost stays "running" in the store while nothing runs, and the next
 * start would take it up again as if a stop had cut it short. */
static void end_run(struct dhparam *d, sqlite3 *db, int64_t id, const char *state,
                    const char *error)
{
    if (db && dhparam_store_run_end(db, id, state, error) == 0)
        return;
    d->host->log(d->self, TLSBOX_LOG_WARN,
                 "run %lld: the store took no record of its end (%s): it is written at the "
                 "next chance",
                 (long long)id, state);
    char *e = error ? strdup(error) : NULL;
    pthread_mutex_lock(&d->lock);
    free(d->unwritten_error);
    d->unwritten_id = id;
    snprintf(d->unwritten_state, sizeof(d->unwritten_state), "%s", state);
    d->unwritten_error = e;
    pthread_mutex_unlock(&d->lock);
}

/* The end end_run could not write, written now (kept when it fails again). */
static void write_unwritten(struct dhparam *d, sqlite3 *db)
{
    pthread_mutex_lock(&d->lock);
    int64_t id = d->unwritten_id;
    char state[sizeof(d->unwritten_state)];
    snprintf(state, sizeof(state), "%s", d->unwritten_state);
    char *error = d->unwritten_error;
    d->unwritten_id = 0;
    d->unwritten_error = NULL;
    pthread_mutex_unlock(&d->lock);
    if (!id)
        return;
    if (dhparam_store_run_end(db, id, state, error) == 0) {
        d->host->log(d->self, TLSBOX_LOG_INFO, "run %lld recorded %s", (long long)id, state);
        free(error);
        return;
    }
    pthread_mutex_lock(&d->lock);
    if (!d->unwritten_id) { /* none newer meanwhile */
        d->unwritten_id = id;
        d->unwritten_error = error;
        error = NULL;
    }
    pthread_mutex_unlock(&d->lock);
    free(error);
}

bool dhparam_run_superseded(struct dhparam *d)
{
    pthread_mutex_lock(&d->lock);
    bool s = d->cur.superseded_by != 0;
    pthread_mutex_unlock(&d->lock);
    return s;
}

/* Record run @p id (of @p bits) as stopped by a change of dhparam.bits to
 * @p now_bits: "cancelled" (no start resumes it, and it is no failure). */
static void end_cancelled(struct dhparam *d, sqlite3 *db, int64_t id, int bits, int now_bits)
{
    char why[64];
    snprintf(why, sizeof(why), DHPARAM_CANCELLED_PREFIX "dhparam.bits is now %d", now_bits);
    end_run(d, db, id, "cancelled", why);
    d->host->log(d->self, TLSBOX_LOG_INFO,
                 "generation of %d-bit parameters cancelled: dhparam.bits is now %d", bits,
                 now_bits);
}

/* After a run: a size change that came while it ran is acted on now. */
static void resize_if_pending(struct dhparam *d, struct tlsbox_job *job)
{
    if (atomic_exchange(&d->resize_pending, false))
        dhparam_run_resize(d, job);
}

/* A generation job's argument: the run it was submitted for. */
struct run_arg {
    struct dhparam *d;
    int64_t run_id;
};

/* Generate, check with the core, store; then serve when the mode says so. */
static void run_job(void *arg, struct tlsbox_job *job)
{
    struct dhparam *d = ((struct run_arg *)arg)->d;
    char *pem = NULL, *err = NULL, *prio = d->host->setting_get(d->self, "priority");
    bool idle = !prio || strcmp(prio, "normal") != 0;
    free(prio);
    sqlite3 *db = d->host->store_open(d->self);
    pthread_mutex_lock(&d->lock);
    int64_t id = d->cur.run_id;
    int bits = d->cur.bits;
    clock_gettime(CLOCK_MONOTONIC, &d->cur.t0);
    struct timespec t0 = d->cur.t0;
    pthread_mutex_unlock(&d->lock);
    if (!db) {
        /* Failed, not left "running": end_run keeps its end for later. */
        const char *why = "the store could not be opened";
        end_run(d, NULL, id, "failed", why);
        d->host->log(d->self, TLSBOX_LOG_ERR, "generation of %d-bit parameters failed: %s", bits,
                     why);
        d->host->metric_add(d->m_failed, 1);
        finish(d);
        return;
    }

    set_stage(d, db, "generating");
    /* Superseded while queued: no child to start. */
    int rc = dhparam_run_superseded(d) ? -ECANCELED : dhparam_gen(d, job, bits, idle, &pem, &err);
    double secs = elapsed(&t0);
    pthread_mutex_lock(&d->lock);
    int now_bits = d->cur.superseded_by;
    pthread_mutex_unlock(&d->lock);
    if (rc == -ECANCELED && now_bits) {
        /* Not "interrupted": that would run the old size again at the next start. */
        end_cancelled(d, db, id, bits, now_bits);
        finish(d);
        d->host->store_close(d->self, db);
        atomic_store(&d->resize_pending, false);
        dhparam_run_resize(d, job); /* the new size, unless it is the one served */
        return;
    }
    if (rc == -ECANCELED) {
        end_run(d, db, id, "interrupted", NULL);
        d->host->log(d->self, TLSBOX_LOG_INFO,
                     "generation of %d-bit parameters interrupted after %.1f s; it starts "
                     "again at the next start",
                     bits, secs);
        goto out;
    }
    if (rc == 0) {
        set_stage(d, db, "checking");
        rc = d->host->dh_set(d->self, pem, "generated", TLSBOX_DH_CHECK_ONLY, &err);
    }
    if (rc >= 0) {
        set_stage(d, db, "storing");
        if ((rc = dhparam_store_run_done(db, id, pem, bits, secs)) < 0)
            err = strdup("cannot store the new parameters");
    }
    if (rc < 0) {
        end_run(d, db, id, "failed", err ? err : "unknown error");
        d->host->log(d->self, TLSBOX_LOG_ERR, "generation of %d-bit parameters failed: %s", bits,
                     err ? err : "unknown error");
        d->host->metric_add(d->m_failed, 1);
        goto out;
    }
    d->host->log(d->self, TLSBOX_LOG_INFO, "generated %d-bit DH parameters in %.1f s", bits, secs);
    d->host->metric_add(d->m_ok, 1);
    d->host->metric_set(d->m_seconds, (int64_t)(secs + 0.5));
    finish(d);
    dhparam_apply(d); /* the previous parameters served until here */
    d->host->store_close(d->self, db);
    free(pem);
    resize_if_pending(d, job);
    return;
out:
    finish(d);
    d->host->store_close(d->self, db);
    free(pem);
    free(err);
    if (rc != -ECANCELED) /* cancelled: the daemon stops */
        resize_if_pending(d, job);
}

/* After the job ran, or when a stop dropped it while it was still queued
 * (behind another job): run_job ends every run it starts (finish), so a
 * run still current here never started.  It is recorded "interrupted", as
 * a stop mid-way is, not left "running" after a clean stop. */
static void run_arg_free(void *arg)
{
    struct run_arg *a = arg;
    struct dhparam *d = a->d;
    pthread_mutex_lock(&d->lock);
    bool dropped = d->cur.run_id == a->run_id;
    int bits = d->cur.bits;
    pthread_mutex_unlock(&d->lock);
    if (dropped) {
        sqlite3 *db = d->host->store_open(d->self);
        end_run(d, db, a->run_id, "interrupted", NULL);
        if (db)
            d->host->store_close(d->self, db);
        d->host->log(d->self, TLSBOX_LOG_INFO,
                     "generation of %d-bit parameters interrupted before it started; it starts "
                     "again at the next start",
                     bits);
        finish(d);
    }
    free(a);
}

int64_t dhparam_run_start(struct dhparam *d, int bits, const char *reason, int64_t resume_id)
{
    int attempts = 0;
    if (atomic_load(&d->stopping))
        return -ESHUTDOWN;
    sqlite3 *db = d->host->store_open(d->self);
    if (db)
        write_unwritten(d, db); /* before a new run's end can take its place */
    pthread_mutex_lock(&d->lock);
    int64_t id = d->cur.run_id ? -EBUSY
                 : db          ? dhparam_store_run_begin(db, bits, reason, resume_id, &attempts)
                               : -EIO;
    if (db)
        d->host->store_close(d->self, db);
    if (id > 0) {
        d->cur = (struct dhparam_current){
            .run_id = id, .bits = bits, .attempts = attempts, .stage = "queued"};
        snprintf(d->cur.reason, sizeof(d->cur.reason), "%s", reason);
        clock_gettime(CLOCK_MONOTONIC, &d->cur.t0);
    }
    pthread_mutex_unlock(&d->lock);
    if (id < 0)
        return id;
    d->host->metric_set(d->m_running, 1);
    d->host->log(d->self, TLSBOX_LOG_INFO, "generating %d-bit DH parameters (%s, attempt %d)", bits,
                 reason, attempts);
    /* Not under the lock: a host may run the job before job_submit returns. */
    struct run_arg *a = malloc(sizeof(*a));
    int64_t job = -ENOMEM;
    if (a) {
        *a = (struct run_arg){.d = d, .run_id = id};
        job = d->host->job_submit(d->self, "dhparam.generate", run_job, a, run_arg_free);
        if (job < 0)
            free(a); /* not submitted: still ours */
    }
    pthread_mutex_lock(&d->lock);
    if (job < 0 && d->cur.run_id == id)
        memset(&d->cur, 0, sizeof(d->cur));
    else if (d->cur.run_id == id)
        d->cur.job = job;
    pthread_mutex_unlock(&d->lock);
    if (job < 0)
        d->host->metric_set(d->m_running, 0);
    return job < 0 ? job : id;
}

/* Once per daemon start: a run a stop or crash interrupted starts again,
 * unless it was of another size than dhparam.bits and no one asked for it
 * (dh/generate): dhparam.bits changed while the daemon was down (--set at
 * start, or in the store), and the old size is of no use now.  Returns
 * true for the first call. */
static bool resume(struct dhparam *d, sqlite3 *db)
{
    int64_t id;
    int bits;
    char reason[16];
    if (atomic_exchange(&d->resumed, true))
        return false;
    if (dhparam_store_run_unfinished(db, &id, &bits, reason) < 0)
        return true;
    int want = (int)d->host->setting_get_int(d->self, "bits", 3072);
    if (bits == want || strcmp(reason, "request") == 0) {
        dhparam_run_start(d, bits, reason, id);
        return true;
    }
    end_cancelled(d, db, id, bits, want);
    return true;
}

/* In generated mode, see that the parameters are of dhparam.bits: start a
 * generation of that size when the newest generated ones are of another,
 * stop a scheduled or size-change run of another size (a requested one
 * finishes first, then this runs again).  With @p keep_requested (at the
 * start or a switch into generated mode, when it is not known that the
 * size changed) parameters or a run someone asked for with dh/generate are
 * left as they are: they were of that size on purpose.  Returns true when
 * there are no generated parameters at all (the check starts the first). */
static bool match_bits(struct dhparam *d, bool keep_requested)
{
    int want = (int)d->host->setting_get_int(d->self, "bits", 3072);
    pthread_mutex_lock(&d->lock);
    bool running = d->cur.run_id != 0, stop = false;
    int running_bits = d->cur.bits;
    bool requested = strcmp(d->cur.reason, "request") == 0;
    if (running && running_bits != want && !(requested && keep_requested)) {
        /* Either way this runs again when that run ends (even if it ends
         * done, a moment before it would have seen the stop). */
        atomic_store(&d->resize_pending, true);
        /* One someone asked for finishes first; a scheduled one, or one of
         * an earlier size change, is of no use now. */
        stop = !requested;
        if (stop)
            d->cur.superseded_by = want;
    }
    pthread_mutex_unlock(&d->lock);
    if (stop)
        d->host->log(d->self, TLSBOX_LOG_INFO,
                     "dhparam.bits is now %d: stopping the %d-bit generation", want, running_bits);
    if (running)
        return false; /* of the size wanted, or stopping, or finishing first */
    sqlite3 *db = d->host->store_open(d->self);
    if (!db)
        return false;
    struct dhparam_row r;
    int have = dhparam_store_newest(db, "generated", &r);
    bool keep = have == 0 && keep_requested && dhparam_store_requested(db, r.id);
    d->host->store_close(d->self, db);
    if (have == 0 && r.bits != want && !keep &&
        dhparam_run_start(d, want, "bits", 0) == -EBUSY) /* one started since */
        atomic_store(&d->resize_pending, true);
    if (have == 0)
        dhparam_row_clear(&r);
    return have == -ENOENT;
}

/* The check; with @p sized (or at the first check since the start) also
 * match_bits: the size may have changed while the mode was another or the
 * daemon was down, when no resize ran. */
static void check(struct dhparam *d, bool sized)
{
    sqlite3 *db = d->host->store_open(d->self);
    if (!db)
        return;
    write_unwritten(d, db);
    if (resume(d, db))
        sized = true;
    dhparam_apply(d);
    char *mode = dhparam_mode(d);
    bool generated = strcmp(mode, "generated") == 0;
    free(mode);
    if (generated) {
        struct dhparam_row r;
        long long days = d->host->setting_get_int(d->self, "rotate_days", 30);
        int have = dhparam_store_newest(db, "generated", &r);
        if (have == -ENOENT || (have == 0 && time(NULL) - r.created_at >= days * DAY_SECONDS))
            dhparam_run_start(d, (int)d->host->setting_get_int(d->self, "bits", 3072),
                              have == 0 ? "schedule" : "first", 0);
        if (have == 0)
            dhparam_row_clear(&r);
    }
    d->host->store_close(d->self, db);
    if (generated && sized)
        match_bits(d, true);
}

void dhparam_run_check(void *arg, struct tlsbox_job *job)
{
    (void)job;
    check(arg, false);
}

void dhparam_run_mode(void *arg, struct tlsbox_job *job)
{
    (void)job;
    check(arg, true);
}

void dhparam_run_resize(void *arg, struct tlsbox_job *job)
{
    struct dhparam *d = arg;
    char *mode = dhparam_mode(d);
    bool generated = strcmp(mode, "generated") == 0;
    free(mode);
    if (!generated) /* rfc7919 and import use no generated parameters: nothing to make */
        return;
    if (match_bits(d, false)) /* none yet: the check starts the first run, at this size */
        dhparam_run_check(d, job);
}

json_t *dhparam_run_current(struct dhparam *d, sqlite3 *db)
{
    pthread_mutex_lock(&d->lock);
    struct dhparam_current c = d->cur;
    pthread_mutex_unlock(&d->lock);
    if (!c.run_id)
        return json_null();
    double secs = elapsed(&c.t0);
    json_t *j = json_pack("{s:I, s:s, s:s, s:i, s:s, s:i, s:f}", "id", (json_int_t)c.run_id,
                          "state", "running", "stage", c.stage, "bits", c.bits, "reason", c.reason,
                          "attempts", c.attempts, "elapsed_seconds", secs);
    if (c.pid > 0)
        json_object_set_new(j, "pid", json_integer(c.pid));
    /* The generator reports nothing while it searches for primes: estimate
     * from the last run of the same size on this machine. */
    double last = db ? dhparam_store_last_seconds(db, c.bits) : -1;
    if (last > 0) {
        double pct = 100.0 * secs / last;
        json_object_set_new(j, "percent_estimate", json_integer(pct > 99 ? 99 : (int)pct));
    }
    return j;
}

void dhparam_run_cancel(struct dhparam *d)
{
    atomic_store(&d->stopping, true);
    pthread_mutex_lock(&d->lock);
    int64_t job = d->cur.job;
    pthread_mutex_unlock(&d->lock);
    if (job)
        d->host->job_cancel(d->self, job);
}
