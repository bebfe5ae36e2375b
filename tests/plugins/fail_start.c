/* A plugin whose start hook fails: the daemon must go on without it.  (Not
 * with EADDRINUSE: a port held by another process stops tlsboxd, so that a
 * second instance never runs half-started.) */
#include <errno.h>

#include <tlsbox/host.h>
#include <tlsbox/plugin.h>

static int fail_start(void *state)
{
    return -EIO;
}

TLSBOX_PLUGIN(.name = "fail_start", .version = "1", .description = "start always fails",
              .start = fail_start);
