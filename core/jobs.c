/* The maintenance thread pool: a FIFO of jobs run by a few threads.
 *
 * Ownership: jobs_submit takes @p arg; free_arg(arg) runs exactly once,
 * after the job ran or when it is dropped before running (cancel, stop).
 * When jobs_submit fails it returns a negative errno and does NOT call
 * free_arg: the caller still owns arg.
 *
 * free_arg and fn are plugin code, so a job counts as running until its
 * free_arg returned: jobs_cancel_owner() returning means no code of that
 * owner runs on a maintenance thread any more. */
#include "core/jobs.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "core/mono_clock.h"
#include "core/xalloc.h"

#define JOBS_THREADS_MAX 64

struct tlsbox_job {
    struct tlsbox_job *next, *prev; /* in jobs_queue or jobs_running */
    int64_t id;
    struct tlsbox_plugin *owner;
    char *name;
    tlsbox_job_fn fn;
    void *arg;
    void (*free_arg)(void *);
    atomic_bool cancelled;
};

struct job_list {
    struct tlsbox_job *head, *tail;
    int count;
};

static pthread_mutex_t jobs_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t jobs_work;  /* queue grew or stop */
static pthread_cond_t jobs_done;  /* a job finished */
static pthread_cond_t jobs_sleep; /* a job was cancelled: wake job_sleep */
static pthread_once_t jobs_once = PTHREAD_ONCE_INIT;
static struct job_list jobs_queue, jobs_running;
static int64_t jobs_next_id = 1;
static pthread_t jobs_threads[JOBS_THREADS_MAX];
static int jobs_nthreads;
static atomic_bool jobs_stopping;
static bool jobs_stopped;
static _Thread_local struct tlsbox_job *jobs_current;

/* Condition variables on CLOCK_MONOTONIC so job_sleep ignores clock changes. */
static void jobs_init_once(void)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&jobs_work, &ca);
    pthread_cond_init(&jobs_done, &ca);
    pthread_cond_init(&jobs_sleep, &ca);
    pthread_condattr_destroy(&ca);
}

static void list_push(struct job_list *l, struct tlsbox_job *j)
{
    j->next = NULL;
    j->prev = l->tail;
    if (l->tail)
        l->tail->next = j;
    else
        l->head = j;
    l->tail = j;
    l->count++;
}

static void list_remove(struct job_list *l, struct tlsbox_job *j)
{
    if (j->prev)
        j->prev->next = j->next;
    else
        l->head = j->next;
    if (j->next)
        j->next->prev = j->prev;
    else
        l->tail = j->prev;
    j->next = j->prev = NULL;
    l->count--;
}

static void job_free(struct tlsbox_job *j)
{
    free(j->name);
    free(j);
}

/* Drop jobs that never ran: free_arg outside the lock (it is plugin code). */
static void jobs_drop(struct job_list *dropped)
{
    struct tlsbox_job *j = dropped->head;
    while (j) {
        struct tlsbox_job *next = j->next;
        log_debug("jobs: \"%s\" (#%lld) cancelled before it ran", j->name, (long long)j->id);
        if (j->free_arg)
            j->free_arg(j->arg);
        job_free(j);
        j = next;
    }
}

/* A job that runs long allocates much, then frees it all: in an ACME
 * attempt (or a webhook) libcurl parses the system CA store, about 5 MB of
 * small blocks, on each new HTTPS connection.  glibc keeps what was freed in
 * the job thread's arena: after 10 failed ACME attempts the daemon's RSS was
 * 35 MB, against 21 MB with this trim (tests/perf/acme_retry_mem.sh).
 * malloc_trim hands the free pages back.  It walks every arena, the site
 * workers' too, so it runs only after a job of 20 ms or more (network,
 * crypto), not after the once-a-second gauge jobs. */
#define JOBS_TRIM_AFTER_NS (20 * 1000000ULL)

static void release_free_memory(uint64_t ran_ns)
{
#ifdef __GLIBC__
    if (ran_ns >= JOBS_TRIM_AFTER_NS)
        malloc_trim(0);
#else
    (void)ran_ns;
#endif
}

static void *jobs_worker(void *unused)
{
    pthread_mutex_lock(&jobs_lock);
    for (;;) {
        while (!jobs_queue.head && !atomic_load(&jobs_stopping))
            pthread_cond_wait(&jobs_work, &jobs_lock);
        if (atomic_load(&jobs_stopping))
            break; /* jobs_stop drops what is queued */
        struct tlsbox_job *j = jobs_queue.head;
        list_remove(&jobs_queue, j);
        list_push(&jobs_running, j);
        pthread_mutex_unlock(&jobs_lock);

        jobs_current = j;
        uint64_t t0 = mono_ns();
        j->fn(j->arg, j);
        if (j->free_arg)
            j->free_arg(j->arg);
        jobs_current = NULL;
        release_free_memory(mono_ns() - t0);

        pthread_mutex_lock(&jobs_lock);
        list_remove(&jobs_running, j);
        pthread_cond_broadcast(&jobs_done);
        job_free(j);
    }
    pthread_mutex_unlock(&jobs_lock);
    return NULL;
}

int jobs_start(int nthreads)
{
    pthread_once(&jobs_once, jobs_init_once);
    if (nthreads < 1 || nthreads > JOBS_THREADS_MAX) {
        log_err("jobs: %d threads is out of range 1..%d", nthreads, JOBS_THREADS_MAX);
        return -EINVAL;
    }
    int rc = 0;
    pthread_mutex_lock(&jobs_lock);
    if (jobs_nthreads > 0) {
        rc = -EALREADY;
        goto out;
    }
    atomic_store(&jobs_stopping, false);
    jobs_stopped = false;
    for (int i = 0; i < nthreads; i++) {
        rc = -pthread_create(&jobs_threads[i], NULL, jobs_worker, NULL);
        if (rc < 0) {
            log_err("jobs: cannot start maintenance thread %d: %s", i, strerror(-rc));
            break;
        }
        pthread_setname_np(jobs_threads[i], "tlsbox-jobs");
        jobs_nthreads++;
    }
    /* Some threads are better than none; fail only when none started. */
    if (jobs_nthreads > 0)
        rc = 0;
out:
    pthread_mutex_unlock(&jobs_lock);
    return rc;
}

void jobs_stop(void)
{
    pthread_once(&jobs_once, jobs_init_once);
    struct job_list dropped = {0};
    pthread_mutex_lock(&jobs_lock);
    atomic_store(&jobs_stopping, true);
    jobs_stopped = true;
    while (jobs_queue.head) {
        struct tlsbox_job *j = jobs_queue.head;
        list_remove(&jobs_queue, j);
        list_push(&dropped, j);
    }
    for (struct tlsbox_job *j = jobs_running.head; j; j = j->next)
        atomic_store(&j->cancelled, true);
    pthread_cond_broadcast(&jobs_work);
    pthread_cond_broadcast(&jobs_sleep);
    int n = jobs_nthreads;
    jobs_nthreads = 0;
    pthread_mutex_unlock(&jobs_lock);

    jobs_drop(&dropped);
    for (int i = 0; i < n; i++)
        pthread_join(jobs_threads[i], NULL);
}

int64_t jobs_submit(struct tlsbox_plugin *owner, const char *name, tlsbox_job_fn fn, void *arg,
                    void (*free_arg)(void *))
{
    if (!fn)
        return -EINVAL;
    pthread_once(&jobs_once, jobs_init_once);
    struct tlsbox_job *j = xcalloc(1, sizeof(*j));
    j->owner = owner;
    j->name = xstrdup(name && *name ? name : "job");
    j->fn = fn;
    j->arg = arg;
    j->free_arg = free_arg;
    atomic_init(&j->cancelled, false);

    pthread_mutex_lock(&jobs_lock);
    if (jobs_stopped) {
        pthread_mutex_unlock(&jobs_lock);
        job_free(j);
        return -ESHUTDOWN;
    }
    /* Before jobs_start the job waits in the queue for the first thread. */
    j->id = jobs_next_id++;
    int64_t id = j->id;
    list_push(&jobs_queue, j);
    pthread_cond_signal(&jobs_work);
    pthread_mutex_unlock(&jobs_lock);
    return id;
}

/* Job @p id, when @p any_owner or it is @p owner's. */
static bool job_matches(const struct tlsbox_job *j, int64_t id, bool any_owner,
                        const struct tlsbox_plugin *owner)
{
    return j->id == id && (any_owner || j->owner == owner);
}

static int jobs_cancel_locked(int64_t id, bool queued_only, bool any_owner,
                              const struct tlsbox_plugin *owner, struct job_list *dropped)
{
    for (struct tlsbox_job *j = jobs_queue.head; j; j = j->next) {
        if (job_matches(j, id, any_owner, owner)) {
            list_remove(&jobs_queue, j);
            list_push(dropped, j);
            return 0;
        }
    }
    if (queued_only)
        return -ENOENT;
    for (struct tlsbox_job *j = jobs_running.head; j; j = j->next) {
        if (job_matches(j, id, any_owner, owner)) {
            atomic_store(&j->cancelled, true);
            pthread_cond_broadcast(&jobs_sleep);
            return 0;
        }
    }
    return -ENOENT;
}

static int jobs_cancel_common(int64_t id, bool queued_only, bool any_owner,
                              const struct tlsbox_plugin *owner)
{
    pthread_once(&jobs_once, jobs_init_once);
    struct job_list dropped = {0};
    pthread_mutex_lock(&jobs_lock);
    int rc = jobs_cancel_locked(id, queued_only, any_owner, owner, &dropped);
    pthread_mutex_unlock(&jobs_lock);
    jobs_drop(&dropped);
    return rc;
}

int jobs_cancel(int64_t id)
{
    return jobs_cancel_common(id, false, true, NULL);
}

int jobs_cancel_of(const struct tlsbox_plugin *owner, int64_t id)
{
    return jobs_cancel_common(id, false, false, owner);
}

int jobs_cancel_queued(int64_t id)
{
    return jobs_cancel_common(id, true, true, NULL);
}

static int jobs_running_of(struct tlsbox_plugin *owner)
{
    int n = 0;
    for (struct tlsbox_job *j = jobs_running.head; j; j = j->next)
        if (j->owner == owner)
            n++;
    return n;
}

/* Move @p owner's queued jobs to @p dropped and flag its running ones;
 * jobs_lock held.  Returns how many were queued. */
static int cancel_owner_locked(struct tlsbox_plugin *owner, struct job_list *dropped)
{
    int n = 0;
    struct tlsbox_job *j = jobs_queue.head;
    while (j) {
        struct tlsbox_job *next = j->next;
        if (j->owner == owner) {
            list_remove(&jobs_queue, j);
            list_push(dropped, j);
            n++;
        }
        j = next;
    }
    for (j = jobs_running.head; j; j = j->next)
        if (j->owner == owner)
            atomic_store(&j->cancelled, true);
    pthread_cond_broadcast(&jobs_sleep);
    return n;
}

/* One round of jobs_cancel_owner: cancel the owner's timers, drop its
 * queued jobs, flag its running ones and wait for them.  Returns how many
 * of each it found (a job waiting for itself not counted). */
static int cancel_round(struct tlsbox_plugin *owner)
{
    /* Timers first, so no new job of this owner is submitted meanwhile. */
    int found = timers_cancel_owner(owner);

    /* A job cancelling its own owner cannot wait for itself. */
    int self = jobs_current && jobs_current->owner == owner ? 1 : 0;
    struct job_list dropped = {0};
    pthread_mutex_lock(&jobs_lock);
    found += jobs_running_of(owner) - self;
    for (;;) {
        /* Again after each job that ended: a job it submitted may have been
         * started by a free thread meanwhile, and must see the cancel too
         * (the next round would only find it done).  The lock is released
         * only in the wait, and a job that submits another ends after it:
         * its end wakes this loop. */
        found += cancel_owner_locked(owner, &dropped);
        if (jobs_running_of(owner) <= self)
            break;
        pthread_cond_wait(&jobs_done, &jobs_lock);
    }
    pthread_mutex_unlock(&jobs_lock);
    jobs_drop(&dropped);
    return found;
}

/*
 * A job still running when the owner's timers were cancelled may have
 * checked job_cancelled just before, and set a timer or submitted a job
 * just after: left there, that timer fires into the plugin's freed state
 * (or its unloaded code).  Once none of the owner's jobs runs, another
 * round finds what they left; rounds end when one finds nothing.  The
 * bound only stops a plugin that re-arms from every job it is given.
 */
void jobs_cancel_owner(struct tlsbox_plugin *owner)
{
    pthread_once(&jobs_once, jobs_init_once);
    int round = 0;
    while (cancel_round(owner) > 0)
        if (++round == 16) {
            log_warn("jobs: a plugin's jobs kept setting timers or jobs while cancelled");
            break;
        }
}

bool job_cancelled(struct tlsbox_job *job)
{
    if (atomic_load(&jobs_stopping))
        return true;
    return job && atomic_load(&job->cancelled);
}

static struct timespec deadline_after_ms(uint64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

bool job_sleep(struct tlsbox_job *job, uint64_t ms)
{
    pthread_once(&jobs_once, jobs_init_once);
    /* Far-future sleeps are capped so the timespec cannot overflow. */
    if (ms > 365ULL * 24 * 3600 * 1000)
        ms = 365ULL * 24 * 3600 * 1000;
    struct timespec deadline = deadline_after_ms(ms);
    pthread_mutex_lock(&jobs_lock);
    while (!job_cancelled(job)) {
        if (pthread_cond_timedwait(&jobs_sleep, &jobs_lock, &deadline) == ETIMEDOUT)
            break;
    }
    bool cancelled = job_cancelled(job);
    pthread_mutex_unlock(&jobs_lock);
    return cancelled;
}

int jobs_pending(void)
{
    pthread_mutex_lock(&jobs_lock);
    int n = jobs_queue.count + jobs_running.count;
    pthread_mutex_unlock(&jobs_lock);
    return n;
}
