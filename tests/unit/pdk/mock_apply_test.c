/* The kit's mock host calls a started plugin's .apply_settings as the core
 * does (core/settings.c): a refusal leaves the value and returns the
 * plugin's error, TLSBOX_APPLY_AT_RESTART stores the value, and nothing is
 * applied before the plugin started or after it stopped.  Prints TAP. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tlsbox/mock_host.h>
#include <tlsbox/xalloc.h>

static int n, failed;

static void check(int pass, const char *what)
{
    printf("%sok %d - %s\n", pass ? "" : "not ", ++n, what);
    failed += !pass;
}

static void check_int(long long got, long long want, const char *what)
{
    check(got == want, what);
    if (got != want)
        printf("#   got %lld, want %lld\n", got, want);
}

static void check_str(const char *got, const char *want, const char *what)
{
    int pass = got && want ? strcmp(got, want) == 0 : got == want;
    check(pass, what);
    if (!pass)
        printf("#   got '%s', want '%s'\n", got ? got : "(null)", want ? want : "(null)");
}

struct state {
    struct tlsbox_plugin *self;
    const struct tlsbox_host *host;
    char seen[256];  /* "key=value(now);" per change given */
    char served[32]; /* the port in effect */
    int nested_rc;   /* what a setting_set from the hook returned */
};

/* Refuses port "1" (in use), stores "80" for the next start, takes others. */
static int t_apply(void *arg, const struct tlsbox_setting_value *ch, char **err)
{
    struct state *s = arg;
    char *now = s->host->setting_get(s->self, "port");
    snprintf(s->seen + strlen(s->seen), sizeof(s->seen) - strlen(s->seen), "%s=%s(%s);", ch[0].key,
             ch[0].value, now);
    free(now);
    if (strcmp(ch[0].value, "1") == 0) {
        *err = tlsbox_xasprintf("mt.port: cannot listen on port 1: %s", strerror(EADDRINUSE));
        return -EADDRINUSE;
    }
    if (strcmp(ch[0].value, "2") == 0) {
        char *e = NULL;
        s->nested_rc = s->host->setting_set(s->self, "name", "x", &e);
        free(e);
        return 0;
    }
    if (strcmp(ch[0].value, "80") == 0) {
        *err = tlsbox_xstrdup("mt.port: port 80 opens at the next start");
        return TLSBOX_APPLY_AT_RESTART;
    }
    snprintf(s->served, sizeof(s->served), "%s", ch[0].value);
    return 0;
}

static int t_init(struct tlsbox_plugin *self, const struct tlsbox_host *host, void **state)
{
    struct state *s = tlsbox_xcalloc(1, sizeof(*s));
    s->self = self;
    s->host = host;
    snprintf(s->served, sizeof(s->served), "8443");
    *state = s;
    return 0;
}

static int t_start(void *state)
{
    (void)state;
    return 0;
}

static const struct tlsbox_setting_def t_settings[] = {
    {.key = "port", .type = TLSBOX_SETTING_INT, .default_value = "8443", .min = 1, .max = 65535},
    {.key = "name", .type = TLSBOX_SETTING_STRING, .default_value = "box", .max = 8},
    {.key = "names", .type = TLSBOX_SETTING_LIST, .default_value = "", .max = 8},
    TLSBOX_SETTINGS_END};

static const struct tlsbox_plugin_desc desc = {.abi_major = TLSBOX_ABI_MAJOR,
                                               .abi_minor = TLSBOX_ABI_MINOR,
                                               .size = sizeof(struct tlsbox_plugin_desc),
                                               .name = "mt",
                                               .version = "1",
                                               .settings = t_settings,
                                               .init = t_init,
                                               .start = t_start,
                                               .apply_settings = t_apply};

static char *get(struct state *s, const char *key)
{
    return s->host->setting_get(s->self, key);
}

int main(void)
{
    void *v = NULL;
    char *val, *err = NULL;

    if (tlsbox_mock_setup(&desc) < 0) {
        printf("Bail out! mock setup failed\n");
        return 1;
    }
    desc.init(tlsbox_mock_self(), &tlsbox_mock_host, &v);
    struct state *s = v;

    /* Before start, as for tlsboxd --set: stored, the hook not called. */
    check_int(tlsbox_mock_set("port", "9000"), 0, "before start a value is stored");
    check_str(s->seen, "", "and .apply_settings is not called");
    check_int(tlsbox_mock_set("name", "ninechars"), -EINVAL,
              "a STRING longer than .max is refused");
    /* A LIST is split as the core splits it: items trimmed of blanks, each
     * bounded by .max, none empty.  A tab is a control character, which the
     * daemon refuses anywhere in a value. */
    check_int(tlsbox_mock_set("names", "eightchr , abc "), 0,
              "LIST items of 8 bytes with blanks around them are accepted");
    check_str(val = get(s, "names"), "eightchr,abc", "and stored trimmed, as the core stores it");
    free(val);
    check_int(tlsbox_mock_set("names", "abc,\tde"), -EINVAL,
              "a LIST with a tab in it is refused, as the daemon refuses it");
    check_int(tlsbox_mock_set("names", "eightchr,ninechars"), -EINVAL,
              "a LIST item longer than .max is refused");
    check_int(tlsbox_mock_set("names", "abc,"), -EINVAL, "a LIST with a trailing comma is refused");
    check_int(tlsbox_mock_set("names", "abc, ,de"), -EINVAL,
              "a LIST with an empty item is refused");
    check_int(tlsbox_mock_set("names", "  "), 0, "blanks alone are the empty LIST");

    desc.start(s);
    tlsbox_mock_started(s);
    check_int(tlsbox_mock_set("port", "9001"), 0, "a change the plugin applies is stored");
    check_str(s->seen, "port=9001(9000);", "the hook got it while setting_get said the old value");
    check_str(s->served, "9001", "and applied it");
    check_str(val = get(s, "port"), "9001", "setting_get gives the new value");
    free(val);

    s->seen[0] = '\0';
    check_int(tlsbox_mock_set("port", "1"), -EADDRINUSE, "a refusal returns the plugin's errno");
    check_str(val = get(s, "port"), "9001", "and leaves the value as it was");
    free(val);
    check_int(s->host->setting_set(s->self, "port", "1", &err), -EADDRINUSE,
              "setting_set gets the refusal too");
    check_str(err, "mt.port: cannot listen on port 1: Address already in use",
              "with the plugin's message");
    free(err);
    err = NULL;

    check_int(tlsbox_mock_set("port", "80"), TLSBOX_APPLY_AT_RESTART,
              "TLSBOX_APPLY_AT_RESTART is returned");
    check_str(val = get(s, "port"), "80", "and the value is stored");
    free(val);
    check_str(s->served, "9001", "while the plugin serves the old one");
    check_int(tlsbox_mock_log_count("port 80 opens at the next start"), 1, "the note is logged");
    check_int(s->host->setting_set(s->self, "port", "80", &err), 0,
              "setting_set answers 0 for it, as the host call does");
    free(err);
    err = NULL;

    check_int(tlsbox_mock_set("port", "2"), 0, "a hook that calls setting_set is not hung");
    check_int(s->nested_rc, -EDEADLK, "its setting_set is refused, as the core forbids it");
    check_int(tlsbox_mock_set("port", "09002"), 0, "port 09002 is taken");
    check_str(s->served, "9002", "and reaches the hook as the core hands it on: canonical");

    tlsbox_mock_stopped();
    s->seen[0] = '\0';
    check_int(tlsbox_mock_set("port", "1"), 0, "after stop a value is only stored");
    check_str(s->seen, "", "the hook is not called");

    free(s);
    tlsbox_mock_teardown();
    printf("1..%d\n", n);
    return failed ? 1 : 0;
}
