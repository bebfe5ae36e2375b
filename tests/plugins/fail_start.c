/* A plugin whose start hook fails: the daemon must go on without it, and its
 * status gives the reason the plugin logged (the last ERROR line before the
 * hook returned), not only the errno.  (Not with EADDRINUSE: a port held by
 * another process stops tlsboxd, so that a second instance never runs
 * half-started.)  A change of its setting is stored for the next start, and
 * the caller told so. */
#include <errno.h>
#include <stdlib.h>

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
    char *path = s->host->setting_get(s->self, "path");
    s->host->log(s->self, TLSBOX_LOG_ERR, "fail_start.path: cannot open %s: %s", path,
                 "No such file or directory");
    free(path);
    return -EIO;
}

static const struct tlsbox_setting_def fail_settings[] = {
    {.key = "path",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "/nonexistent",
     .pattern = "^/[a-z/]*$",
     .help = "What the start hook says it cannot open"},
    TLSBOX_SETTINGS_END};

TLSBOX_PLUGIN(.name = "fail_start", .version = "1", .description = "start always fails",
              .settings = fail_settings, .init = fail_init, .start = fail_start);
