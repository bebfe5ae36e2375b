/* A plugin whose event callback submits a job while the plugin is being
 * stopped (the dhparam plugin does so on "settings.changed"): no job of a
 * plugin may run after its fini hook.  The stop hook leaves a running job
 * (the sentinel) and publishes an event; the callback waits until the
 * sentinel was cancelled, then submits the late job, which says in the log
 * whether it ran after fini.  Flags are static: nothing here is freed. */
#include <stdatomic.h>
#include <time.h>

#include <tlsbox/host.h>
#include <tlsbox/plugin.h>

static struct tlsbox_plugin *me;
static const struct tlsbox_host *host;
static atomic_int sentinel_started, sentinel_cancelled, fini_done;

static void nap_ms(long ms)
{
    struct timespec ts = {0, ms * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static void sentinel(void *arg, struct tlsbox_job *job)
{
    (void)arg;
    atomic_store(&sentinel_started, 1);
    host->job_sleep(job, 10000);
    atomic_store(&sentinel_cancelled, 1);
}

static void late(void *arg, struct tlsbox_job *job)
{
    (void)arg;
    for (int i = 0; i < 3000; i++) {
        if (atomic_load(&fini_done)) {
            host->log(me, TLSBOX_LOG_ERR, "late job ran after fini");
            return;
        }
        if (host->job_cancelled(job)) {
            host->log(me, TLSBOX_LOG_INFO, "late job cancelled before fini");
            return;
        }
        nap_ms(1);
    }
}

static void on_ping(void *arg, const char *event, const char *data)
{
    (void)arg;
    (void)event;
    (void)data;
    for (int i = 0; i < 400 && !atomic_load(&sentinel_cancelled); i++)
        nap_ms(5);
    host->job_submit(me, "late_job.late", late, NULL, NULL);
}

static int late_init(struct tlsbox_plugin *self, const struct tlsbox_host *h, void **state)
{
    me = self;
    host = h;
    *state = NULL;
    return 0;
}

static int late_start(void *state)
{
    (void)state;
    int64_t id = host->event_subscribe(me, "late_job.ping", on_ping, NULL);
    return id < 0 ? (int)id : 0;
}

static void late_stop(void *state)
{
    (void)state;
    if (host->job_submit(me, "late_job.sentinel", sentinel, NULL, NULL) < 0)
        return;
    for (int i = 0; i < 1000 && !atomic_load(&sentinel_started); i++)
        nap_ms(5);
    host->event_publish(me, "late_job.ping", NULL);
}

static void late_fini(void *state)
{
    (void)state;
    atomic_store(&fini_done, 1);
}

TLSBOX_PLUGIN(.name = "late_job", .version = "1",
              .description = "submits a job from an event callback while it stops",
              .init = late_init, .start = late_start, .stop = late_stop, .fini = late_fini);
