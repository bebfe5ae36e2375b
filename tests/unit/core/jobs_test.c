/* jobs: run, cancel (queued and running), job_sleep, cancel_owner, stop. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "core/jobs.h"
#include "tests/tap.h"

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wait (bounded) until *flag becomes nonzero. */
static int wait_flag(atomic_int *flag, int ms)
{
    uint64_t t0 = now_ms();
    while (!atomic_load(flag) && now_ms() - t0 < (uint64_t)ms)
        usleep(1000);
    return atomic_load(flag);
}

/* Wait (bounded) until @p job is cancelled. */
static void wait_cancel(struct tlsbox_job *job, int ms)
{
    uint64_t t0 = now_ms();
    while (!job_cancelled(job) && now_ms() - t0 < (uint64_t)ms)
        usleep(1000);
}

struct probe {
    atomic_int started, ran, freed, done;
    atomic_int saw_cancel;
    atomic_int sleep_result;
    atomic_llong sleep_ms;
    atomic_int release; /* blocker jobs wait for this */
    uint64_t sleep_for;
};

static void free_probe(void *arg)
{
    struct probe *p = arg;
    /* free_arg runs after the job function returned (or instead of it). */
    atomic_fetch_add(&p->freed, 1);
}

static void job_simple(void *arg, struct tlsbox_job *job)
{
    struct probe *p = arg;
    atomic_fetch_add(&p->ran, 1);
}

static void job_block(void *arg, struct tlsbox_job *job)
{
    struct probe *p = arg;
    atomic_store(&p->started, 1);
    uint64_t t0 = now_ms();
    while (!atomic_load(&p->release) && now_ms() - t0 < 5000)
        usleep(1000);
    atomic_store(&p->done, 1);
}

static void job_until_cancel(void *arg, struct tlsbox_job *job)
{
    struct probe *p = arg;
    atomic_store(&p->started, 1);
    wait_cancel(job, 5000);
    atomic_store(&p->saw_cancel, job_cancelled(job));
    atomic_store(&p->done, 1);
}

static void job_sleeper(void *arg, struct tlsbox_job *job)
{
    struct probe *p = arg;
    atomic_store(&p->started, 1);
    uint64_t t0 = now_ms();
    atomic_store(&p->sleep_result, job_sleep(job, p->sleep_for));
    atomic_store(&p->sleep_ms, (long long)(now_ms() - t0));
    atomic_store(&p->done, 1);
}

/* Ignores cancel for a while after waking: cancel_owner must still wait. */
static void job_stubborn(void *arg, struct tlsbox_job *job)
{
    struct probe *p = arg;
    atomic_store(&p->started, 1);
    job_sleep(job, 10000);
    usleep(150 * 1000);
    atomic_store(&p->done, 1);
}

/* Waits for the cancel, then sets a timer for its owner, as a job that
 * checked job_cancelled just before the cancel would. */
static atomic_int late_timer_rc;
static void noop_timer(void *arg, struct tlsbox_job *job)
{
    (void)arg;
    (void)job;
}
static void job_arms_after_cancel(void *arg, struct tlsbox_job *job);

static char owner_a_tag, owner_b_tag, owner_c_tag;
#define OWNER_A ((struct tlsbox_plugin *)(void *)&owner_a_tag)
#define OWNER_B ((struct tlsbox_plugin *)(void *)&owner_b_tag)

#define OWNER_C ((struct tlsbox_plugin *)(void *)&owner_c_tag)

static void job_arms_after_cancel(void *arg, struct tlsbox_job *job)
{
    struct probe *p = arg;
    atomic_store(&p->started, 1);
    wait_cancel(job, 5000);
    usleep(20 * 1000); /* after timers_cancel_owner, for sure */
    atomic_store(&late_timer_rc,
                 (int)timers_add(OWNER_C, "late", 3600 * 1000, 0, 0, noop_timer, NULL));
    atomic_store(&p->done, 1);
}

/* Waits for the cancel, then submits another job of its owner and goes on
 * until a free thread has started it, as dhparam's check job does when a
 * stop lands between its check of "stopping" and its job_submit: the new
 * job runs while jobs_cancel_owner waits for this one. */
static char owner_d_tag;
#define OWNER_D ((struct tlsbox_plugin *)(void *)&owner_d_tag)
static struct probe *late_probe;
static atomic_llong late_id;
static void job_submits_after_cancel(void *arg, struct tlsbox_job *job)
{
    struct probe *p = arg;
    atomic_store(&p->started, 1);
    wait_cancel(job, 5000);
    atomic_store(&late_id,
                 (long long)jobs_submit(OWNER_D, "late", job_until_cancel, late_probe, free_probe));
    wait_flag(&late_probe->started, 5000);
    atomic_store(&p->done, 1);
}

static atomic_int self_cancel_returned;
static void job_cancels_own_owner(void *arg, struct tlsbox_job *job)
{
    jobs_cancel_owner(OWNER_B);
    atomic_store(&self_cancel_returned, 1);
}

int main(void)
{
    /* A fresh probe per use: reusing one while a finished job's thread may
     * still be on its way out is fine for C11 atomics but confuses helgrind. */
    static struct probe probes[32];
    int nprobes = 0;
#define FRESH() (&probes[nprobes++])
    struct probe *p0 = FRESH(), *p1 = FRESH(), *p2 = FRESH(), *p3 = FRESH();

    /* Submitted before start: waits for a thread. */
    int64_t id = jobs_submit(NULL, "early", job_simple, p0, free_probe);
    ok(id > 0, "submit before start returns an id");
    usleep(20 * 1000);
    is_int(atomic_load(&p0->ran), 0, "nothing runs before jobs_start");
    is_int(jobs_pending(), 1, "one job pending");
    is_int(jobs_start(1), 0, "jobs_start(1)");
    is_int(jobs_start(1), -EALREADY, "second jobs_start refused");
    wait_flag(&p0->freed, 5000);
    is_int(atomic_load(&p0->ran), 1, "early job ran once");
    is_int(atomic_load(&p0->freed), 1, "free_arg called once after it ran");
    is_int(jobs_submit(NULL, "x", NULL, NULL, NULL), -EINVAL, "NULL function refused");

    /* A queued job cancelled never runs, and its free_arg is called. */
    p0 = FRESH();
    p1 = FRESH();
    jobs_submit(NULL, "blocker", job_block, p0, free_probe);
    ok(wait_flag(&p0->started, 5000), "blocker occupies the only thread");
    int64_t queued = jobs_submit(NULL, "queued", job_simple, p1, free_probe);
    is_int(jobs_pending(), 2, "blocker running + one queued");
    is_int(jobs_cancel(queued), 0, "cancel the queued job");
    is_int(atomic_load(&p1->freed), 1, "its free_arg was called by jobs_cancel");
    atomic_store(&p0->release, 1);
    wait_flag(&p0->freed, 5000);
    usleep(20 * 1000);
    is_int(atomic_load(&p1->ran), 0, "the cancelled job never ran");
    is_int(jobs_cancel(queued), -ENOENT, "cancelling it again: -ENOENT");
    is_int(jobs_pending(), 0, "nothing pending");

    /* A running job sees job_cancelled(). */
    p0 = FRESH();
    id = jobs_submit(NULL, "spin", job_until_cancel, p0, free_probe);
    ok(wait_flag(&p0->started, 5000), "spinning job started");
    is_int(jobs_cancel_queued(id), -ENOENT, "jobs_cancel_queued leaves a running job alone");
    is_int(jobs_cancel(id), 0, "cancel the running job");
    ok(wait_flag(&p0->done, 5000), "it returned");
    is_int(atomic_load(&p0->saw_cancel), 1, "it saw job_cancelled() true");
    wait_flag(&p0->freed, 5000);

    /* job_sleep: full length when not cancelled, early when cancelled. */
    p0 = FRESH();
    p0->sleep_for = 100;
    jobs_submit(NULL, "nap", job_sleeper, p0, free_probe);
    wait_flag(&p0->done, 5000);
    is_int(atomic_load(&p0->sleep_result), 0, "uncancelled job_sleep returns false");
    /* Upper bounds here are far off (a busy machine may stall a thread for
     * a while): they tell a full or early return from a 10 s one. */
    ok(atomic_load(&p0->sleep_ms) >= 100 && atomic_load(&p0->sleep_ms) < 5000,
       "and slept its 100 ms (%lld)", (long long)atomic_load(&p0->sleep_ms));
    p0 = FRESH();
    p0->sleep_for = 10000;
    id = jobs_submit(NULL, "long nap", job_sleeper, p0, free_probe);
    wait_flag(&p0->started, 5000);
    usleep(50 * 1000);
    jobs_cancel(id);
    wait_flag(&p0->done, 5000);
    is_int(atomic_load(&p0->sleep_result), 1, "cancelled job_sleep returns true");
    ok(atomic_load(&p0->sleep_ms) < 5000, "and returned early (%lld ms of 10000)",
       (long long)atomic_load(&p0->sleep_ms));
    wait_flag(&p0->freed, 5000);
    jobs_stop();

    /* jobs_cancel_owner waits for the owner's running jobs, drops the queued
     * ones, and leaves other owners alone. */
    jobs_start(3);
    p0 = FRESH();
    p1 = FRESH();
    p2 = FRESH();
    p3 = FRESH();
    jobs_submit(OWNER_A, "a1", job_stubborn, p0, free_probe);
    jobs_submit(OWNER_A, "a2", job_stubborn, p1, free_probe);
    jobs_submit(OWNER_B, "b1", job_block, p2, free_probe);
    wait_flag(&p0->started, 5000);
    wait_flag(&p1->started, 5000);
    wait_flag(&p2->started, 5000);
    jobs_submit(OWNER_A, "a3 (queued)", job_simple, p3, free_probe);
    uint64_t t0 = now_ms();
    jobs_cancel_owner(OWNER_A);
    uint64_t took = now_ms() - t0;
    ok(atomic_load(&p0->done) && atomic_load(&p1->done), "owner's running jobs finished");
    is_int(atomic_load(&p0->freed) + atomic_load(&p1->freed), 2,
           "and their free_arg ran before jobs_cancel_owner returned");
    ok(took >= 100 && took < 5000, "jobs_cancel_owner waited for them (%llu ms)",
       (unsigned long long)took);
    is_int(atomic_load(&p3->ran), 0, "owner's queued job never ran");
    is_int(atomic_load(&p3->freed), 1, "its free_arg was called");
    is_int(atomic_load(&p2->done), 0, "another owner's job keeps running");
    atomic_store(&p2->release, 1);
    wait_flag(&p2->freed, 5000);

    /* A job cancelling its own owner does not wait for itself. */
    jobs_submit(OWNER_B, "self", job_cancels_own_owner, NULL, NULL);
    ok(wait_flag(&self_cancel_returned, 5000), "jobs_cancel_owner from the owner's own job");

    /* A timer a running job sets after the cancel is cancelled too: left,
     * it would fire into the plugin's freed state. */
    p0 = FRESH();
    jobs_submit(OWNER_C, "arms late", job_arms_after_cancel, p0, free_probe);
    wait_flag(&p0->started, 5000);
    jobs_cancel_owner(OWNER_C);
    ok(atomic_load(&p0->done) && atomic_load(&late_timer_rc) > 0,
       "the job set its timer after the cancel (%d)", atomic_load(&late_timer_rc));
    is_int(timers_cancel_owner(OWNER_C), 0,
           "no timer of the owner is left once jobs_cancel_owner returns");

    /* A job one of them submits meanwhile, started by a free thread while
     * jobs_cancel_owner waits, is cancelled too: it used to run unflagged
     * (a DH generation of minutes, stored and served during the stop). */
    p0 = FRESH();
    late_probe = FRESH();
    jobs_submit(OWNER_D, "submits late", job_submits_after_cancel, p0, free_probe);
    wait_flag(&p0->started, 5000);
    jobs_cancel_owner(OWNER_D);
    ok(atomic_load(&late_id) > 0 && atomic_load(&late_probe->started),
       "the job submitted after the cancel started (id %lld)", (long long)atomic_load(&late_id));
    is_int(atomic_load(&late_probe->saw_cancel), 1, "and saw job_cancelled()");
    is_int(atomic_load(&late_probe->freed), 1,
           "its free_arg ran before jobs_cancel_owner returned");

    /* jobs_stop: running jobs see the stop, queued ones are dropped. */
    p0 = FRESH();
    p1 = FRESH();
    p2 = FRESH();
    p3 = FRESH();
    jobs_submit(NULL, "s1", job_until_cancel, p0, free_probe);
    jobs_submit(NULL, "s2", job_until_cancel, p1, free_probe);
    jobs_submit(NULL, "s3", job_until_cancel, p2, free_probe);
    wait_flag(&p0->started, 5000);
    wait_flag(&p1->started, 5000);
    wait_flag(&p2->started, 5000);
    jobs_submit(NULL, "s4 (queued)", job_simple, p3, free_probe);
    t0 = now_ms();
    jobs_stop();
    ok(now_ms() - t0 < 1000, "jobs_stop returns promptly");
    is_int(atomic_load(&p0->saw_cancel) + atomic_load(&p1->saw_cancel) +
               atomic_load(&p2->saw_cancel),
           3, "running jobs saw job_cancelled()");
    is_int(atomic_load(&p0->freed) + atomic_load(&p1->freed) + atomic_load(&p2->freed), 3,
           "their free_arg ran");
    is_int(atomic_load(&p3->ran), 0, "queued job dropped at stop");
    is_int(atomic_load(&p3->freed), 1, "with free_arg");
    is_int(jobs_submit(NULL, "late", job_simple, p3, free_probe), -ESHUTDOWN,
           "submit after stop refused");
    is_int(atomic_load(&p3->freed), 1, "a refused submit does not call free_arg");
    is_int(jobs_start(0), -EINVAL, "0 threads refused");
    return done_testing();
}
