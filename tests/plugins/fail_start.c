/* A plugin whose start hook fails while fail_start.path cannot be opened
 * (the default): the daemon must go on without it, and its status gives the
 * reason the plugin logged (the last ERROR line before the hook returned),
 * not only the errno.  (Not with EADDRINUSE: a port held by another process
 * stops tlsboxd, so that a second instance never runs half-started.)  A
 * change of its setting is stored, the caller told so, and the core starts
 * it again with the new value. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    char *path = s->host->setting_get(s->self, "path");
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    int e = errno;
    if (fd >= 0) {
        close(fd);
        free(path);
        return 0;
    }
    s->host->log(s->self, TLSBOX_LOG_WARN, "a warning is not the reason");
    s->host->log(s->self, TLSBOX_LOG_ERR, "first error, not the last");
    s->host->log(s->self, TLSBOX_LOG_ERR, "fail_start.path: cannot open %s: %s", path, strerror(e));
    free(path);
    return -EIO;
}

static const struct tlsbox_setting_def fail_settings[] = {
    {.key = "path",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "/nonexistent",
     .pattern = "^/[A-Za-z0-9._/-]*$",
     .help = "A file or directory the start hook opens; it fails while it cannot"},
    TLSBOX_SETTINGS_END};

TLSBOX_PLUGIN(.name = "fail_start", .version = "1",
              .description = "start fails while fail_start.path cannot be opened",
              .settings = fail_settings, .init = fail_init, .start = fail_start);
