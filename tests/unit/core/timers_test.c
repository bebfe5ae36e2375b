/* timers: periodic, one-shot, jitter, no overlap, cancel semantics.
 *
 * Every check holds however loaded the machine is (make check runs tests
 * side by side): the test waits, bounded, for what it needs to have
 * happened, then checks what must always hold (never before first_ms,
 * never faster than the period, never twice at once, none after cancel),
 * not how soon a thread was scheduled. */
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

struct tprobe {
    atomic_int fires, active, max_active;
    atomic_llong first_at;
    int work_ms;
};

static void on_fire(void *arg, struct tlsbox_job *job)
{
    struct tprobe *p = arg;
    int a = atomic_fetch_add(&p->active, 1) + 1;
    int m = atomic_load(&p->max_active);
    while (a > m && !atomic_compare_exchange_weak(&p->max_active, &m, a))
        ;
    long long zero = 0;
    atomic_compare_exchange_strong(&p->first_at, &zero, (long long)now_ms());
    atomic_fetch_add(&p->fires, 1);
    if (p->work_ms)
        usleep((useconds_t)p->work_ms * 1000);
    atomic_fetch_sub(&p->active, 1);
}

static atomic_int block_release, block_started;
static void job_block(void *arg, struct tlsbox_job *job)
{
    atomic_store(&block_started, 1);
    uint64_t t0 = now_ms();
    while (!atomic_load(&block_release) && now_ms() - t0 < 5000)
        usleep(1000);
}

/* Wait until *@p v reaches @p want, at most 5 s. */
static void wait_for(atomic_int *v, int want)
{
    uint64_t t0 = now_ms();
    while (atomic_load(v) < want && now_ms() - t0 < 5000)
        usleep(1000);
}

static char owner_tag;
#define OWNER ((struct tlsbox_plugin *)(void *)&owner_tag)

int main(void)
{
    is_int(jobs_start(3), 0, "jobs_start(3)");
    is_int(timers_start(), 0, "timers_start");

    /* Periodic. */
    struct tprobe per = {0};
    uint64_t t0 = now_ms();
    int64_t id = timers_add(NULL, "periodic", 20, 20, 0, on_fire, &per);
    ok(id > 0, "timers_add returns an id");
    wait_for(&per.fires, 8);
    is_int(timers_cancel(id), 0, "cancel periodic timer");
    long long took = (long long)(now_ms() - t0);
    int n = atomic_load(&per.fires);
    ok(n >= 8, "a periodic timer fires again and again (%d times)", n);
    ok(n <= took / 20 + 1, "never faster than every 20 ms (%d times in %lld ms)", n, took);
    long long first = atomic_load(&per.first_at) - (long long)t0;
    ok(first >= 19, "first firing after first_ms (%lld ms)", first);
    usleep(60 * 1000);
    is_int(atomic_load(&per.fires), n, "no firing after cancel returned");
    is_int(timers_cancel(id), -ENOENT, "second cancel: -ENOENT");

    /* No overlap: work takes 6 periods. */
    struct tprobe slow = {.work_ms = 60};
    t0 = now_ms();
    id = timers_add(NULL, "slow", 0, 10, 0, on_fire, &slow);
    wait_for(&slow.fires, 4);
    timers_cancel(id);
    took = (long long)(now_ms() - t0);
    n = atomic_load(&slow.fires);
    while (atomic_load(&slow.active) && now_ms() - t0 < 10000) /* the last one finishes */
        usleep(1000);
    is_int(atomic_load(&slow.max_active), 1, "a timer never runs twice at once");
    ok(n >= 4 && n <= took / 60 + 1,
       "firings skipped while the previous ran (%d in %lld ms, each 60 ms, period 10 ms)", n, took);

    /* One-shot. */
    struct tprobe once = {0};
    t0 = now_ms();
    timers_add(NULL, "once", 30, 0, 0, on_fire, &once);
    wait_for(&once.fires, 1);
    usleep(100 * 1000); /* a second firing would be due well within this */
    is_int(atomic_load(&once.fires), 1, "one-shot fires exactly once");
    first = atomic_load(&once.first_at) - (long long)t0;
    ok(first >= 29, "after first_ms (%lld ms)", first);

    /* Jitter: ten one-shots, 10 ms + 0..100 ms. */
    struct tprobe jit[10];
    memset(jit, 0, sizeof(jit));
    t0 = now_ms();
    for (int i = 0; i < 10; i++)
        timers_add(NULL, "jitter", 10, 0, 100, on_fire, &jit[i]);
    for (int i = 0; i < 10; i++)
        wait_for(&jit[i].fires, 1);
    long long lo = 1 << 30, hi = 0;
    int fired = 0;
    for (int i = 0; i < 10; i++) {
        fired += atomic_load(&jit[i].fires);
        long long d = atomic_load(&jit[i].first_at) - (long long)t0;
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    is_int(fired, 10, "every jittered timer fired once");
    ok(lo >= 9, "none before first_ms (%lld..%lld ms)", lo, hi);
    /* Ten draws from 0..100 ms all within 10 ms of each other: p < 1e-8. */
    ok(hi - lo >= 10, "jitter spreads them (%lld ms apart)", hi - lo);

    /* Cancel while the firing waits in the job queue: it never runs.  Fill
     * all three threads with blockers first. */
    atomic_store(&block_release, 0);
    for (int i = 0; i < 3; i++)
        jobs_submit(NULL, "blocker", job_block, NULL, NULL);
    struct tprobe queued = {0};
    id = timers_add(NULL, "queued", 0, 0, 0, on_fire, &queued);
    t0 = now_ms(); /* until due, submitted, stuck behind the blockers */
    while (jobs_pending() < 4 && now_ms() - t0 < 4000)
        usleep(1000);
    is_int(jobs_pending(), 4, "the firing is queued behind three blockers");
    is_int(timers_cancel(id), 0, "cancel the timer with a queued firing");
    is_int(jobs_pending(), 3, "its queued firing was dropped");
    atomic_store(&block_release, 1);
    usleep(50 * 1000);
    is_int(atomic_load(&queued.fires), 0, "the dropped firing never ran");

    /* Cancel while a firing runs: it finishes, no new one starts. */
    struct tprobe running = {.work_ms = 1000};
    id = timers_add(NULL, "running", 0, 20, 0, on_fire, &running);
    t0 = now_ms();
    while (!atomic_load(&running.active) && now_ms() - t0 < 5000)
        usleep(1000);
    is_int(timers_cancel(id), 0, "cancel while firing");
    is_int(atomic_load(&running.active), 1, "cancel does not wait for the firing");
    while (atomic_load(&running.active) && now_ms() - t0 < 10000)
        usleep(1000);
    usleep(100 * 1000); /* five periods: a firing after cancel would start */
    is_int(atomic_load(&running.fires), 1, "it finished and none started after");

    /* Owner cancel through jobs_cancel_owner. */
    struct tprobe owned = {.work_ms = 50};
    timers_add(OWNER, "owned", 0, 10, 0, on_fire, &owned);
    timers_add(OWNER, "owned2", 1000, 10, 0, on_fire, &owned);
    t0 = now_ms();
    while (!atomic_load(&owned.active) && now_ms() - t0 < 5000)
        usleep(1000);
    jobs_cancel_owner(OWNER);
    is_int(atomic_load(&owned.active), 0, "jobs_cancel_owner waited for the running firing");
    n = atomic_load(&owned.fires);
    usleep(100 * 1000);
    is_int(atomic_load(&owned.fires), n, "and the owner's timers are gone");

    /* Bad arguments. */
    is_int(timers_add(NULL, "x", 0, 0, 0, NULL, NULL), -EINVAL, "NULL function refused");
    is_int(timers_add(NULL, "x", 0, 1000ULL * 3600 * 24 * 400, 0, on_fire, &once), -EINVAL,
           "a period over a year refused");
    is_int(timers_cancel(0), -ENOENT, "id 0: -ENOENT");

    /* Stop: nothing fires afterwards. */
    struct tprobe after = {0};
    timers_add(NULL, "after", 50, 10, 0, on_fire, &after);
    timers_stop();
    usleep(100 * 1000);
    is_int(atomic_load(&after.fires), 0, "no firing after timers_stop");
    is_int(timers_add(NULL, "x", 0, 0, 0, on_fire, &after), -ESHUTDOWN, "add after stop refused");
    jobs_stop();
    return done_testing();
}
