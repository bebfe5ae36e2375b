/* A plugin whose start hook fails: the daemon must go on without it, and its
 * status gives the reason the plugin logged (the last ERROR line before the
 * hook returned), not only the errno.  (Not with EADDRINUSE: a port held by
 * another process stops tlsboxd, so that a second instance never runs
 * half-started.) */
#include <errno.h>

#include <tlsbox/host.h>
#include <tlsbox/plugin.h>

struct fail_state {
    struct tlsbox_plugin *self;
    const struct tlsbox_host *host;
};
static struct fail_state st;

static int fail_init(struct tlsbox_plugin *self, const struct tlsbox_host *host, void **state)
{
    st.self = self;
    st.host = host;
    *state = &st;
    return 0;
}

static int fail_start(void *state)
{
    struct fail_state *s = state;
    s->host->log(s->self, TLSBOX_LOG_WARN, "a warning is not the reason");
    s->host->log(s->self, TLSBOX_LOG_ERR, "first error, not the last");
    s->host->log(s->self, TLSBOX_LOG_ERR, "fail_start.path: cannot open %s: %s", "/nonexistent",
                 "No such file or directory");
    return -EIO;
}

TLSBOX_PLUGIN(.name = "fail_start", .version = "1", .description = "start always fails",
              .init = fail_init, .start = fail_start);
