/* A plugin whose thread blocks every signal, TLSBOX_SIGNAL_CAPDROP included,
 * against the kit's rule: started with CAP_NET_BIND_SERVICE (as root, or by
 * systemd), the daemon must refuse to run rather than keep the capability in
 * this thread. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>

#include <tlsbox/host.h>
#include <tlsbox/plugin.h>

static pthread_t blocker;
static atomic_int stopping;

static void *blocker_main(void *arg)
{
    (void)arg;
    while (!atomic_load(&stopping)) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

static int sb_start(void *state)
{
    (void)state;
    /* The thread is born with every signal blocked (a thread inherits its
     * creator's mask): blocked from its own first line instead, the core's
     * signal could come first and the thread would drop its capability. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&blocker, NULL, blocker_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return -rc;
}

static void sb_stop(void *state)
{
    (void)state;
    atomic_store(&stopping, 1);
    pthread_join(blocker, NULL);
}

TLSBOX_PLUGIN(.name = "sig_blocker", .version = "1",
              .description = "a thread that blocks every signal", .start = sb_start,
              .stop = sb_stop);
