/* The kit's mock host answers a setting as the daemon does: for a table of
 * (kind, bounds, value) cases, setting_set through the mock gives the same
 * return, the same message and stores the same canonical text as the core's
 * settings_check (core/settings_check.c, linked here under its own names; the
 * mock's copy is renamed tlsbox_mock_*), and tlsbox_mock_setup refuses the
 * settings tables the daemon refuses to load.  Prints TAP. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tlsbox/mock_host.h>
#include <tlsbox/xalloc.h>

#include "core/settings_check.h"
#include "tests/tap.h"

static const struct tlsbox_setting_def t_defs[] = {
    {.key = "flag", .type = TLSBOX_SETTING_BOOL, .default_value = "false"},
    {.key = "port", .type = TLSBOX_SETTING_INT, .default_value = "5", .min = 1, .max = 10},
    {.key = "any", .type = TLSBOX_SETTING_INT, .default_value = "0"},
    {.key = "neg", .type = TLSBOX_SETTING_INT, .default_value = "-3", .min = -5, .max = -1},
    {.key = "name", .type = TLSBOX_SETTING_STRING, .default_value = "box", .max = 8},
    {.key = "word", .type = TLSBOX_SETTING_STRING, .default_value = "abc", .pattern = "^[a-z]+$"},
    {.key = "free", .type = TLSBOX_SETTING_STRING, .default_value = ""},
    {.key = "mode",
     .type = TLSBOX_SETTING_ENUM,
     .default_value = "fast",
     .choices = "fast|slow|off"},
    /* An empty last choice: "" is one of them in the core. */
    {.key = "opt", .type = TLSBOX_SETTING_ENUM, .default_value = "a", .choices = "a|"},
    {.key = "names",
     .type = TLSBOX_SETTING_LIST,
     .default_value = "",
     .max = 8,
     .pattern = "^[a-z]+$"},
    {.key = "password",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .pattern = "^$|^.{8,}$",
     .flags = TLSBOX_SETTING_SECRET},
    {.key = "tokens",
     .type = TLSBOX_SETTING_LIST,
     .default_value = "",
     .pattern = "^[a-z]+$",
     .flags = TLSBOX_SETTING_SECRET},
    TLSBOX_SETTINGS_END};

static const struct tlsbox_plugin_desc t_desc = {.abi_major = TLSBOX_ABI_MAJOR,
                                                 .abi_minor = TLSBOX_ABI_MINOR,
                                                 .size = sizeof(struct tlsbox_plugin_desc),
                                                 .name = "mc",
                                                 .version = "1",
                                                 .settings = t_defs};

struct vcase {
    const char *key;
    const char *value; /* NULL: no value given */
};

static const struct vcase cases[] = {
    /* BOOL: the four spellings each way, any case; canonical true/false. */
    {"flag", "yes"},
    {"flag", "TRUE"},
    {"flag", "0"},
    {"flag", "off"},
    {"flag", "2"},
    {"flag", ""},
    {"flag", " true"},
    /* INT within .min..max: strict decimal, canonical without zeros. */
    {"port", "5"},
    {"port", "007"},
    {"port", "1"},
    {"port", "10"},
    {"port", "0"},
    {"port", "11"},
    {"port", "-0"},
    {"port", " 5"},
    {"port", "+5"},
    {"port", "5 "},
    {"port", "5x"},
    {"port", ""},
    {"port", "-"},
    {"port", NULL},
    /* INT with no bounds: anything that fits a long long. */
    {"any", "-9223372036854775808"},
    {"any", "9223372036854775807"},
    {"any", "99999999999999999999"},
    {"any", "+7"},
    {"neg", "-5"},
    {"neg", "-1"},
    {"neg", "0"},
    {"neg", "-6"},
    /* STRING: .max bytes, pattern, control characters, the 4096-byte cap. */
    {"name", "eightchr"},
    {"name", "ninechars"},
    {"name", ""},
    {"name", "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"},
    {"name", "a\tb"},
    {"word", "abc"},
    {"word", "ABC"},
    {"word", ""},
    {"word", "a b"},
    {"word", "a \"quoted\" \\ value that is longer than sixty-four bytes, so it is cut"},
    {"free", "anything at all"},
    {"free", "del\x7f"},
    /* ENUM: exact choices. */
    {"mode", "fast"},
    {"mode", "Fast"},
    {"mode", "slo"},
    {"mode", ""},
    {"opt", ""},
    {"opt", "b"},
    /* LIST: split on ',', blanks trimmed, each item bounded and matched. */
    {"names", "a,b"},
    {"names", " a , b "},
    {"names", ""},
    {"names", "   "},
    {"names", "a,"},
    {"names", ",a"},
    {"names", "a,,b"},
    {"names", "a, ,b"},
    {"names", "abcdefghi"},
    {"names", "a,B"},
    {"names", "a,\tb"},
    /* SECRET: refused without the value in the message. */
    {"password", "short"},
    {"password", "long enough"},
    {"tokens", "abc,DEF"},
    {"tokens", "abc , def"},
    /* Not declared. */
    {"nokey", "1"},
};

/* The daemon's answer for "mc.<key>" = @p value: settings_check's return,
 * message and canonical text (what it stores and hands .apply_settings). */
static int core_answer(const char *key, const char *value, char **canon, char **err)
{
    const struct tlsbox_setting_def *def = NULL;
    for (const struct tlsbox_setting_def *d = t_defs; d->key; d++)
        if (strcmp(d->key, key) == 0)
            def = d;
    char *full = tlsbox_xasprintf("mc.%s", key);
    int rc = settings_check(full, def, NULL, value, canon, err);
    free(full);
    return rc;
}

static void check_value(const struct vcase *c)
{
    char *cerr = NULL, *canon = NULL, *merr = NULL;
    const char *shown = c->value ? c->value : "(no value)";
    int crc = core_answer(c->key, c->value, &canon, &cerr);
    int mrc = tlsbox_mock_host.setting_set(tlsbox_mock_self(), c->key, c->value, &merr);

    is_int(mrc, crc, "%s = \"%.40s\": the mock %s it as the daemon does", c->key, shown,
           crc == 0 ? "accepts" : "refuses");
    is_str(merr, cerr, "%s = \"%.40s\": with the daemon's message", c->key, shown);
    if (crc == 0) {
        char *got = tlsbox_mock_host.setting_get(tlsbox_mock_self(), c->key);
        is_str(got, canon, "%s = \"%.40s\": the mock stores the core's canonical text", c->key,
               shown);
        free(got);
    }
    free(canon);
    free(cerr);
    free(merr);
}

struct tcase {
    const char *what;
    const char *plugin;
    struct tlsbox_setting_def defs[3];
};

static const struct tcase tables[] = {
    {"a valid table", "mc", {{.key = "k", .type = TLSBOX_SETTING_INT, .default_value = "1"}}},
    {"a default out of its range",
     "mc",
     {{.key = "k", .type = TLSBOX_SETTING_INT, .default_value = "0", .min = 1, .max = 9}}},
    {"a default outside its pattern",
     "mc",
     {{.key = "k", .type = TLSBOX_SETTING_STRING, .default_value = "A", .pattern = "^[a-z]$"}}},
    {"a pattern that does not compile",
     "mc",
     {{.key = "k", .type = TLSBOX_SETTING_STRING, .default_value = "a", .pattern = "(["}}},
    {"an empty range",
     "mc",
     {{.key = "k", .type = TLSBOX_SETTING_INT, .default_value = "5", .min = 9, .max = 1}}},
    {"an enum without choices",
     "mc",
     {{.key = "k", .type = TLSBOX_SETTING_ENUM, .default_value = "a"}}},
    {"no default", "mc", {{.key = "k", .type = TLSBOX_SETTING_BOOL}}},
    {"a key that is not [a-z0-9_]+",
     "mc",
     {{.key = "Key", .type = TLSBOX_SETTING_BOOL, .default_value = "true"}}},
    {"a key declared twice",
     "mc",
     {{.key = "k", .type = TLSBOX_SETTING_BOOL, .default_value = "true"},
      {.key = "k", .type = TLSBOX_SETTING_INT, .default_value = "1"}}},
    {"a plugin name that is not an owner name",
     "Mc",
     {{.key = "k", .type = TLSBOX_SETTING_BOOL, .default_value = "true"}}},
};

/* The daemon's answer for the table: settings_register's checks. */
static int core_table(const char *owner, const struct tlsbox_setting_def *defs)
{
    char *err = NULL;
    int rc = settings_check_owner(owner, &err);
    for (size_t i = 0; rc == 0 && defs[i].key; i++) {
        regex_t *re = NULL;
        rc = settings_check_decl(owner, defs, i, &re, &err);
        settings_check_free_regex(re);
    }
    free(err);
    return rc;
}

static void check_table(const struct tcase *t)
{
    struct tlsbox_plugin_desc d = t_desc;
    d.name = t->plugin;
    d.settings = t->defs;
    int crc = core_table(t->plugin, t->defs);
    int mrc = tlsbox_mock_setup(&d);
    is_int(mrc, crc, "a table with %s: the mock %s it as the daemon does", t->what,
           crc == 0 ? "takes" : "refuses");
    if (mrc == 0)
        tlsbox_mock_teardown();
}

int main(void)
{
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
        check_table(&tables[i]);

    if (tlsbox_mock_setup(&t_desc) < 0) {
        printf("Bail out! mock setup failed\n");
        return 1;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        check_value(&cases[i]);
    /* Any value is at most 4096 bytes (SETTINGS_VALUE_MAX). */
    char *big = tlsbox_xmalloc(SETTINGS_VALUE_MAX + 2);
    memset(big, 'a', SETTINGS_VALUE_MAX + 1);
    big[SETTINGS_VALUE_MAX + 1] = '\0';
    check_value(&(struct vcase){"free", big});
    big[SETTINGS_VALUE_MAX] = '\0';
    check_value(&(struct vcase){"free", big});
    free(big);

    /* A secret's value stays out of the message, as it does in the core. */
    char *err = NULL;
    tlsbox_mock_host.setting_set(tlsbox_mock_self(), "password", "hunter2", &err);
    ok(err && !strstr(err, "hunter2"), "a refused secret is not shown in the message (%s)",
       err ? err : "no message");
    free(err);

    /* setting_get_int/_bool read as the core reads: strict, else the default. */
    is_int(tlsbox_mock_host.setting_set(tlsbox_mock_self(), "port", "007", NULL), 0, "port = 007");
    is_int(tlsbox_mock_host.setting_get_int(tlsbox_mock_self(), "port", -1), 7, "reads as 7");
    is_int(tlsbox_mock_set("other.count", " 5"), 0, "another owner's key is taken as given");
    is_int(tlsbox_mock_host.setting_get_int(tlsbox_mock_self(), "other.count", -1), -1,
           "\" 5\" reads as the default, as settings_get_int reads it");
    is_int(tlsbox_mock_set("flag", "on"), 0, "flag = on");
    ok(tlsbox_mock_host.setting_get_bool(tlsbox_mock_self(), "flag", false), "reads as true");

    tlsbox_mock_teardown();
    return done_testing();
}
