/* A plugin that calls the host the way its header forbids or allows, to
 * check the daemon answers as <tlsbox/host.h> and the kit's mock host say:
 * its .apply_settings calls setting_set (the core must refuse it with
 * -EDEADLK, as the mock does, not wait for itself).  It logs each result
 * as "host_rules: NAME rc=N err=TEXT". */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tlsbox/host.h>
#include <tlsbox/plugin.h>

struct rules_state {
    struct tlsbox_plugin *self;
    const struct tlsbox_host *host;
};
static struct rules_state st;

static int rules_init(struct tlsbox_plugin *self, const struct tlsbox_host *host, void **state)
{
    st.self = self;
    st.host = host;
    *state = &st;
    return 0;
}

static int rules_start(void *state)
{
    (void)state;
    return 0;
}

/* A change of "trigger" makes the hook set "other": forbidden there. */
static int rules_apply(void *state, const struct tlsbox_setting_value *changes, char **err)
{
    struct rules_state *s = state;
    (void)err;
    for (size_t i = 0; changes[i].key; i++) {
        if (strcmp(changes[i].key, "trigger") != 0)
            continue;
        char *why = NULL;
        int rc = s->host->setting_set(s->self, "other", changes[i].value, &why);
        s->host->log(s->self, TLSBOX_LOG_INFO, "apply_set rc=%d err=%s", rc, why ? why : "-");
        free(why);
    }
    return 0;
}

static const struct tlsbox_setting_def rules_settings[] = {
    {.key = "trigger", .type = TLSBOX_SETTING_STRING, .default_value = "a", .help = "set me"},
    {.key = "other", .type = TLSBOX_SETTING_STRING, .default_value = "a", .help = "set by it"},
    TLSBOX_SETTINGS_END};

TLSBOX_PLUGIN(.name = "host_rules", .version = "1",
              .description = "calls the host as its header forbids or allows",
              .settings = rules_settings, .init = rules_init, .start = rules_start,
              .apply_settings = rules_apply);
