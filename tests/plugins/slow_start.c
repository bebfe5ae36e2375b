/* A plugin whose start hook waits (20 s at most) until the file named by
 * TLSBOX_TEST_SLOW_START exists: the daemon answers on its control socket
 * while plugins still start, and status must then say it is not ready. */
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <tlsbox/host.h>
#include <tlsbox/plugin.h>

static int slow_init(struct tlsbox_plugin *self, const struct tlsbox_host *h, void **state)
{
    (void)self;
    (void)h;
    *state = NULL;
    return 0;
}

static int slow_start(void *state)
{
    (void)state;
    const char *go = getenv("TLSBOX_TEST_SLOW_START");
    struct timespec ts = {0, 50 * 1000 * 1000};
    for (int i = 0; go && i < 400 && access(go, F_OK) != 0; i++)
        nanosleep(&ts, NULL);
    return 0;
}

TLSBOX_PLUGIN(.name = "slow_start", .version = "1",
              .description = "a start hook that waits for a file (status before ready)",
              .init = slow_init, .start = slow_start);
