/* Timers: one thread sleeps (CLOCK_MONOTONIC) until the earliest deadline
 * and submits the timer's function as a job on the maintenance pool.
 *
 * A timer is "busy" from the submit until the job's free_arg ran (whether the
 * job ran or was dropped), and a due firing is skipped while it is busy, so
 * a timer never runs twice at once.  A timer stays in timers_list until it is
 * finished (cancelled, or a one-shot that fired) and not busy; then it is
 * freed by whoever sees that state last. */
#include "core/jobs.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/mono_clock.h"
#include "core/xalloc.h"

#define NS_PER_MS 1000000ULL
/* Longer delays are refused: nothing in tlsbox waits a year, and it keeps
 * every nanosecond sum far from overflow. */
#define TIMERS_MAX_MS (366ULL * 24 * 3600 * 1000)

struct timer {
    struct timer *next;
    int64_t id;
    struct tlsbox_plugin *owner;
    char *name;
    tlsbox_job_fn fn;
    void *arg;
    uint64_t period_ns, jitter_ns;
    uint64_t base_ns; /* next scheduled time before jitter */
    uint64_t due_ns;  /* base_ns + this firing's jitter */
    int64_t job_id;   /* the busy firing's job, 0 when none */
    uint64_t skipped; /* firings skipped because the previous one still ran */
    bool busy;
    bool cancelled;
    bool fired; /* one-shot timer that fired */
};

static pthread_mutex_t timers_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t timers_cond; /* list changed or stop */
static pthread_once_t timers_once = PTHREAD_ONCE_INIT;
static struct timer *timers_list;
static int64_t timers_next_id = 1;
static pthread_t timers_thread;
static bool timers_running, timers_stopping, timers_stopped;
static uint64_t timers_rng;

static void timers_init_once(void)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&timers_cond, &ca);
    pthread_condattr_destroy(&ca);
}

static struct timespec ns_to_timespec(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ULL),
                          .tv_nsec = (long)(ns % 1000000000ULL)};
    return ts;
}

/* Jitter only spreads load (many boxes renewing at once), so xorshift is
 * enough.  timers_lock held. */
static uint64_t timers_jitter_locked(uint64_t max_ns)
{
    if (max_ns == 0)
        return 0;
    if (timers_rng == 0)
        timers_rng = mono_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ULL;
    timers_rng ^= timers_rng << 13;
    timers_rng ^= timers_rng >> 7;
    timers_rng ^= timers_rng << 17;
    return timers_rng % (max_ns + 1);
}

static bool timer_finished(const struct timer *t)
{
    return t->cancelled || t->fired;
}

/* Free finished timers that no firing uses any more.  timers_lock held. */
static void timers_reap_locked(void)
{
    struct timer **pp = &timers_list;
    while (*pp) {
        struct timer *t = *pp;
        if (timer_finished(t) && !t->busy) {
            *pp = t->next;
            free(t->name);
            free(t);
        } else {
            pp = &t->next;
        }
    }
}

/* The job: run the timer's function unless it was cancelled after the
 * firing was submitted but before it started ("none starts after return"). */
static void timer_run(void *arg, struct tlsbox_job *job)
{
    struct timer *t = arg;
    pthread_mutex_lock(&timers_lock);
    bool cancelled = t->cancelled;
    pthread_mutex_unlock(&timers_lock);
    if (!cancelled)
        t->fn(t->arg, job);
}

/* The job's free_arg: runs once per firing, whether it ran or was dropped. */
static void timer_done(void *arg)
{
    struct timer *t = arg;
    pthread_mutex_lock(&timers_lock);
    t->busy = false;
    t->job_id = 0;
    if (timer_finished(t))
        timers_reap_locked();
    pthread_mutex_unlock(&timers_lock);
}

/* timers_lock held. */
static void timer_fire_locked(struct timer *t, uint64_t now)
{
    if (t->busy) {
        t->skipped++;
        log_debug("timers: \"%s\" still running, firing skipped (%llu so far)", t->name,
                  (unsigned long long)t->skipped);
    } else {
        /* jobs_submit never calls back into timer_done, so holding
         * timers_lock here is safe (lock order: timers, then jobs). */
        int64_t id = jobs_submit(t->owner, t->name, timer_run, t, timer_done);
        if (id > 0) {
            t->busy = true;
            t->job_id = id;
        } else {
            log_warn("timers: cannot submit \"%s\": %s", t->name, strerror((int)-id));
        }
    }
    if (t->period_ns == 0) {
        t->fired = true;
        return;
    }
    t->base_ns += t->period_ns;
    /* Far behind (suspend, a stalled thread): resume the rhythm from now
     * rather than firing a burst of catch-ups. */
    if (t->base_ns <= now)
        t->base_ns = now + t->period_ns;
    t->due_ns = t->base_ns + timers_jitter_locked(t->jitter_ns);
}

static void *timers_main(void *unused)
{
    pthread_mutex_lock(&timers_lock);
    while (!timers_stopping) {
        uint64_t now = mono_ns();
        uint64_t next = UINT64_MAX;
        for (struct timer *t = timers_list; t; t = t->next) {
            if (timer_finished(t))
                continue;
            if (t->due_ns <= now)
                timer_fire_locked(t, now);
            if (!timer_finished(t) && t->due_ns < next)
                next = t->due_ns;
        }
        timers_reap_locked();
        if (next == UINT64_MAX) {
            pthread_cond_wait(&timers_cond, &timers_lock);
        } else {
            struct timespec ts = ns_to_timespec(next);
            pthread_cond_timedwait(&timers_cond, &timers_lock, &ts);
        }
    }
    pthread_mutex_unlock(&timers_lock);
    return NULL;
}

int timers_start(void)
{
    pthread_once(&timers_once, timers_init_once);
    int rc = 0;
    pthread_mutex_lock(&timers_lock);
    if (timers_running) {
        rc = -EALREADY;
        goto out;
    }
    timers_stopping = false;
    timers_stopped = false;
    rc = -pthread_create(&timers_thread, NULL, timers_main, NULL);
    if (rc < 0) {
        log_err("timers: cannot start the timer thread: %s", strerror(-rc));
        goto out;
    }
    pthread_setname_np(timers_thread, "tlsbox-timers");
    timers_running = true;
out:
    pthread_mutex_unlock(&timers_lock);
    return rc;
}

/* Mark timers cancelled (all, or @p owner's, or id @p id; @p owner's id @p id
 * when @p by_owner) and drop their queued firings.  Returns how many matched. */
static int timers_cancel_matching(bool all, const struct tlsbox_plugin *owner, int64_t id,
                                  bool by_owner)
{
    pthread_once(&timers_once, timers_init_once);
    int n = 0, njobs = 0, cap = 0;
    int64_t *jobs = NULL;
    pthread_mutex_lock(&timers_lock);
    for (struct timer *t = timers_list; t; t = t->next) {
        if (t->cancelled ||
            !(all || (id ? t->id == id && (!by_owner || t->owner == owner) : t->owner == owner)))
            continue;
        t->cancelled = true;
        n++;
        if (t->job_id) {
            if (njobs == cap) {
                cap = cap ? 2 * cap : 8;
                jobs = xrealloc(jobs, (size_t)cap * sizeof(*jobs));
            }
            jobs[njobs++] = t->job_id;
        }
    }
    timers_reap_locked();
    pthread_cond_signal(&timers_cond);
    pthread_mutex_unlock(&timers_lock);
    /* Outside timers_lock: a dropped job calls timer_done synchronously. */
    for (int i = 0; i < njobs; i++)
        jobs_cancel_queued(jobs[i]);
    free(jobs);
    return n;
}

void timers_stop(void)
{
    pthread_once(&timers_once, timers_init_once);
    pthread_mutex_lock(&timers_lock);
    bool running = timers_running;
    timers_stopping = true;
    timers_stopped = true;
    pthread_cond_signal(&timers_cond);
    pthread_mutex_unlock(&timers_lock);
    if (running)
        pthread_join(timers_thread, NULL);
    pthread_mutex_lock(&timers_lock);
    timers_running = false;
    pthread_mutex_unlock(&timers_lock);
    /* Busy timers are freed by their firing's timer_done (or jobs_stop). */
    timers_cancel_matching(true, NULL, 0, false);
}

int64_t timers_add(struct tlsbox_plugin *owner, const char *name, uint64_t first_ms,
                   uint64_t period_ms, uint64_t jitter_ms, tlsbox_job_fn fn, void *arg)
{
    if (!fn || first_ms > TIMERS_MAX_MS || period_ms > TIMERS_MAX_MS || jitter_ms > TIMERS_MAX_MS)
        return -EINVAL;
    pthread_once(&timers_once, timers_init_once);
    struct timer *t = xcalloc(1, sizeof(*t));
    t->owner = owner;
    t->name = xstrdup(name && *name ? name : "timer");
    t->fn = fn;
    t->arg = arg;
    t->period_ns = period_ms * NS_PER_MS;
    t->jitter_ns = jitter_ms * NS_PER_MS;

    pthread_mutex_lock(&timers_lock);
    if (timers_stopped) {
        pthread_mutex_unlock(&timers_lock);
        free(t->name);
        free(t);
        return -ESHUTDOWN;
    }
    t->id = timers_next_id++;
    t->base_ns = mono_ns() + first_ms * NS_PER_MS;
    t->due_ns = t->base_ns + timers_jitter_locked(t->jitter_ns);
    t->next = timers_list;
    timers_list = t;
    int64_t id = t->id;
    pthread_cond_signal(&timers_cond);
    pthread_mutex_unlock(&timers_lock);
    return id;
}

int timers_cancel(int64_t id)
{
    if (id <= 0)
        return -ENOENT;
    return timers_cancel_matching(false, NULL, id, false) ? 0 : -ENOENT;
}

int timers_cancel_of(const struct tlsbox_plugin *owner, int64_t id)
{
    if (id <= 0)
        return -ENOENT;
    return timers_cancel_matching(false, owner, id, true) ? 0 : -ENOENT;
}

int timers_cancel_owner(struct tlsbox_plugin *owner)
{
    return timers_cancel_matching(false, owner, 0, false);
}
