/* The host table keeps plugins apart: a plugin's job_cancel, timer_cancel and
 * event_unsubscribe reach only what that plugin registered; another plugin's
 * (or the core's) id is -ENOENT and stays in force.  Prints TAP. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/events.h"
#include "core/host.h"
#include "core/jobs.h"
#include "core/plugin_loader.h"
#include "tests/tap.h"

static atomic_int job_started, job_saw_cancel, job_done;

/* Sleeps until cancelled (bounded: 10 s), then says whether it was. */
static void job_wait_cancel(void *arg, struct tlsbox_job *job)
{
    const struct tlsbox_host *h = arg;
    atomic_store(&job_started, 1);
    atomic_store(&job_saw_cancel, h->job_sleep(job, 10000));
    atomic_store(&job_done, 1);
}

static void never(void *arg, struct tlsbox_job *job)
{
    (void)arg;
    (void)job;
}

static void on_event(void *arg, const char *event, const char *data)
{
    (void)event;
    (void)data;
    atomic_fetch_add((atomic_int *)arg, 1);
}

/* Wait (bounded) for @p flag. */
static int wait_for(atomic_int *flag)
{
    for (int i = 0; i < 500 && !atomic_load(flag); i++)
        usleep(10 * 1000);
    return atomic_load(flag);
}

int main(void)
{
    const struct tlsbox_host *h = host_table();
    struct tlsbox_plugin a = {.name = "alpha"}, b = {.name = "beta"};

    /* Settings: another owner's are read, never written (refused before
     * the store is asked: there is none here). */
    char *err = NULL;
    is_int(h->setting_set(&a, "core.user", "pi", &err), -EPERM,
           "alpha cannot set core.user through the host table");
    is_str(err,
           "core.user: plugin alpha sets only its own settings (alpha.KEY); another owner's are "
           "read, not written",
           "  saying so");
    free(err);
    err = NULL;
    is_int(h->setting_set(&a, "beta.port", "1", &err), -EPERM, "nor beta's settings");
    free(err);
    err = NULL;
    is_int(h->setting_set(&a, "alphabet.port", "1", &err), -EPERM,
           "nor those of a plugin whose name starts with its own");
    free(err);
    err = NULL;

    is_int(jobs_start(1), 0, "jobs started");
    int64_t job = h->job_submit(&a, "alpha.wait", job_wait_cancel, (void *)h, NULL);
    ok(job > 0, "alpha submits a job");
    ok(wait_for(&job_started), "alpha's job runs");
    is_int(h->job_cancel(&b, job), -ENOENT, "beta cannot cancel alpha's job");
    is_int(h->job_cancel(NULL, job), -ENOENT, "nor can the core's handle through the host table");
    is_int(h->job_cancel(&a, job), 0, "alpha cancels its own job");
    ok(wait_for(&job_done), "the job returned");
    is_int(atomic_load(&job_saw_cancel), 1, "woken by alpha's cancel, not before");

    int64_t timer = h->timer_add(&a, "alpha.timer", 3600 * 1000, 0, 0, never, NULL);
    ok(timer > 0, "alpha adds a timer");
    is_int(h->timer_cancel(&b, timer), -ENOENT, "beta cannot cancel alpha's timer");
    is_int(h->timer_cancel(&a, timer), 0, "alpha cancels it: it was still there");
    is_int(h->timer_cancel(&a, timer), -ENOENT, "and now it is gone");

    atomic_int calls = 0;
    is_int(events_start(), 0, "events started");
    int64_t sub = h->event_subscribe(&a, "test.ping", on_event, &calls);
    ok(sub > 0, "alpha subscribes to test.ping");
    is_int(h->event_unsubscribe(&b, sub), -ENOENT, "beta cannot remove alpha's subscription");
    h->event_publish(&b, "test.ping", NULL);
    events_flush();
    is_int(atomic_load(&calls), 1, "alpha still gets the event");
    is_int(h->event_unsubscribe(&a, sub), 0, "alpha removes its own subscription");
    h->event_publish(&b, "test.ping", NULL);
    events_flush();
    is_int(atomic_load(&calls), 1, "and gets no more");

    /* No bundle built: the calls take the NULL bundle_acquire gives (the
     * mock host answers the same: tests/unit/pdk/mock_host_test). */
    struct tlsbox_bundle *none = h->bundle_acquire();
    ok(none == NULL, "no bundle built: bundle_acquire gives NULL");
    is_int(h->bundle_session_setup(none, NULL), -EINVAL, "bundle_session_setup(NULL): -EINVAL");
    ok(h->bundle_hsts(none) == NULL, "bundle_hsts(NULL): NULL");
    is_int((int)h->bundle_generation(none), 0, "bundle_generation(NULL): 0");

    events_stop();
    timers_stop();
    jobs_stop();
    return done_testing();
}
