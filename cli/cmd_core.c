/* tlsboxctl status | plugins | settings [history|undo] | get | set | reset | metrics | version */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/ctl.h"
#include "core/xalloc.h"

static int usage_error(const char *what)
{
    fprintf(stderr, "tlsboxctl: usage: tlsboxctl %s\n", what);
    return CTL_EXIT_USAGE;
}

/* A command that takes no arguments: an extra one is a mistake, often a
 * global option put after the command ("status --json"), which would
 * otherwise be ignored without a word. */
static int no_args(const char *cmd, int argc, char **argv)
{
    if (argc == 0)
        return CTL_EXIT_OK;
    fprintf(stderr,
            "tlsboxctl: %s takes no arguments, got '%s' (options such as --json go before the "
            "command)\n",
            cmd, argv[0]);
    return CTL_EXIT_USAGE;
}

static const char *str(json_t *j, const char *key)
{
    const char *s = json_string_value(json_object_get(j, key));
    return s ? s : "";
}

static long long num(json_t *j, const char *key)
{
    return (long long)json_integer_value(json_object_get(j, key));
}

static void show_status(struct ctl *c, json_t *j)
{
    printf("tlsboxd %s (plugin ABI %s), pid %lld, up %llds\n", str(j, "version"), str(j, "abi"),
           num(j, "pid"), num(j, "uptime_s"));
    if (json_is_false(json_object_get(j, "ready")))
        printf("starting: the plugins are not all started yet\n");
    printf("store: %s\n", str(j, "store"));
    if (json_is_integer(json_object_get(j, "tls_bundle_generation")))
        printf("tls bundle: generation %lld\n", num(j, "tls_bundle_generation"));
    else
        printf("tls bundle: none (HTTPS cannot be served)\n");
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(j, "plugins"), i, p)
    {
        const char *err = str(p, "error");
        printf("plugin %-10s %s%s%s\n", str(p, "name"), str(p, "state"), *err ? ": " : "", err);
    }
}

static int cmd_status(struct ctl *c, int argc, char **argv)
{
    int rc = no_args("status", argc, argv);
    if (rc)
        return rc;
    return ctl_show(c, "GET", "status", NULL, show_status);
}

static void show_plugins(struct ctl *c, json_t *j)
{
    size_t i;
    json_t *p;
    printf("%-10s %-8s %-5s %-12s %s\n", "NAME", "VERSION", "ABI", "STATE", "DESCRIPTION");
    json_array_foreach(j, i, p)
    {
        const char *err = str(p, "error");
        printf("%-10s %-8s %-5s %-12s %s%s%s\n", str(p, "name"), str(p, "version"), str(p, "abi"),
               str(p, "state"), str(p, "description"), *err ? ": " : "", err);
    }
}

static int cmd_plugins(struct ctl *c, int argc, char **argv)
{
    int rc = no_args("plugins", argc, argv);
    if (rc)
        return rc;
    return ctl_show(c, "GET", "plugins", NULL, show_plugins);
}

static void show_settings(struct ctl *c, json_t *j)
{
    size_t i;
    json_t *s;
    json_array_foreach(j, i, s)
    {
        printf("%-32s = %-24s %s\n", str(s, "full_key"), str(s, "value"), str(s, "help"));
    }
}

static int cmd_settings(struct ctl *c, int argc, char **argv)
{
    if (argc != 1)
        return usage_error("settings PLUGIN");
    char *path = ctl_path("plugins", argv[0], "/settings");
    int rc = ctl_show(c, "GET", path, NULL, show_settings);
    free(path);
    return rc;
}

/* A history value: null is the declared default, a secret is never shown. */
static const char *history_value(json_t *item, const char *which)
{
    if (json_is_true(json_object_get(item, "secret")))
        return "********";
    const char *v = json_string_value(json_object_get(item, which));
    return !v ? "(default)" : *v ? v : "\"\"";
}

static void show_history(struct ctl *c, json_t *j)
{
    size_t i, k;
    json_t *ch, *it;
    json_t *changes = json_object_get(j, "changes");
    if (!json_array_size(changes)) {
        printf("no settings changes recorded\n");
        return;
    }
    printf("%-7s %-20s %-14s %-32s %s\n", "CHANGE", "TIME (UTC)", "BY", "SETTING", "OLD -> NEW");
    json_array_foreach(changes, i, ch)
    {
        char when[32];
        ctl_utc((time_t)num(ch, "at"), when, sizeof when);
        json_array_foreach(json_object_get(ch, "items"), k, it)
        {
            if (k == 0)
                printf("%-7lld %-20s %-14s ", num(ch, "id"), when, str(ch, "actor"));
            else
                printf("%-7s %-20s %-14s ", "", "", "");
            printf("%-32s %s -> %s\n", str(it, "key"), history_value(it, "old"),
                   history_value(it, "new"));
        }
        if (json_is_integer(json_object_get(ch, "undo_of")))
            printf("%-43s (undid change %lld)\n", "", num(ch, "undo_of"));
        if (json_is_integer(json_object_get(ch, "undone_by")))
            printf("%-43s (undone by change %lld)\n", "", num(ch, "undone_by"));
        else if (!json_is_true(json_object_get(ch, "undoable")))
            printf("%-43s (cannot be undone: %s)\n", "", str(ch, "undo_blocked"));
    }
    if (num(j, "next_before"))
        printf("older changes: tlsboxctl settings history --before %lld\n", num(j, "next_before"));
}

static int cmd_settings_history(struct ctl *c, int argc, char **argv)
{
    const char *plugin = NULL, *before = NULL;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--before") == 0 && i + 1 < argc)
            before = argv[++i];
        else if (argv[i][0] != '-' && !plugin)
            plugin = argv[i];
        else
            return usage_error("settings history [PLUGIN] [--before CHANGE]");
    }
    char *p = plugin ? ctl_escape(plugin) : NULL, *b = before ? ctl_escape(before) : NULL;
    char *path = xasprintf("settings/history?limit=50%s%s%s%s", p ? "&plugin=" : "", p ? p : "",
                           b ? "&before=" : "", b ? b : "");
    int rc = ctl_show(c, "GET", path, NULL, show_history);
    free(path);
    free(p);
    free(b);
    return rc;
}

static void show_undo(struct ctl *c, json_t *j)
{
    const char *note = json_string_value(json_object_get(j, "note"));
    printf("change %lld undone by change %lld%s%s%s\n", num(j, "undo_of"), num(j, "id"),
           note ? " (" : "", note ? note : "", note ? ")" : "");
}

static int cmd_settings_undo(struct ctl *c, int argc, char **argv)
{
    long long id = argc == 1 ? ctl_positive(argv[0]) : 0;
    if (id <= 0)
        return usage_error("settings undo CHANGE   (numbers from tlsboxctl settings history)");
    char *path = xasprintf("settings/history/%lld/undo", id);
    int rc = ctl_show(c, "POST", path, "{}", show_undo);
    free(path);
    return rc;
}

static void show_value(struct ctl *c, json_t *j)
{
    printf("%s\n", str(j, "value"));
}

static int cmd_get(struct ctl *c, int argc, char **argv)
{
    if (argc != 1)
        return usage_error("get PLUGIN.KEY");
    char *path = ctl_path("settings", argv[0], "");
    int rc = ctl_show(c, "GET", path, NULL, show_value);
    free(path);
    return rc;
}

static void show_set(struct ctl *c, json_t *j)
{
    const char *note = json_string_value(json_object_get(j, "note"));
    if (note) /* the plugin's own words: which value serves until then */
        printf("%s = %s (%s)\n", str(j, "key"), str(j, "value"), note);
    else if (json_is_true(json_object_get(j, "restart_needed")))
        printf("%s = %s (takes effect when tlsboxd restarts)\n", str(j, "key"), str(j, "value"));
}

static int cmd_set(struct ctl *c, int argc, char **argv)
{
    if (argc != 2)
        return usage_error("set PLUGIN.KEY VALUE");
    char *path = ctl_path("settings", argv[0], "");
    json_t *body = json_pack("{s:s}", "value", argv[1]);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    int rc = ctl_show(c, "PUT", path, text, show_set);
    free(text);
    free(path);
    return rc;
}

/* No stored value: the default serves again (PUT plugins/OWNER/settings
 * {"KEY": null}, one change in the settings history). */
static int cmd_reset(struct ctl *c, int argc, char **argv)
{
    const char *dot = argc == 1 ? strchr(argv[0], '.') : NULL;
    if (!dot || dot == argv[0] || !dot[1])
        return usage_error("reset PLUGIN.KEY");
    char *owner = xstrndup(argv[0], (size_t)(dot - argv[0]));
    char *path = ctl_path("plugins", owner, "/settings");
    json_t *body = json_object();
    if (json_object_set_new(body, dot + 1, json_null()) < 0) { /* jansson keys are UTF-8 */
        fprintf(stderr, "tlsboxctl: reset: %s is not a setting name (not UTF-8)\n", argv[0]);
        json_decref(body);
        free(path);
        free(owner);
        return CTL_EXIT_USAGE;
    }
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    json_t *reply = NULL;
    int rc = ctl_call(c, "PUT", path, text, &reply);
    if (rc == CTL_EXIT_OK && c->json) {
        ctl_print_json(c, reply);
    } else if (rc == CTL_EXIT_OK) {
        size_t i;
        json_t *s;
        json_array_foreach(reply, i, s)
        {
            if (strcmp(str(s, "key"), dot + 1) != 0)
                continue;
            const char *note = json_string_value(json_object_get(s, "note"));
            if (!note && json_is_true(json_object_get(s, "restart")))
                note = "takes effect when tlsboxd restarts"; /* as set says */
            printf("%s = %s (the default)%s%s%s\n", argv[0], str(s, "value"), note ? " (" : "",
                   note ? note : "", note ? ")" : "");
        }
    }
    json_decref(reply);
    free(text);
    free(path);
    free(owner);
    return rc;
}

static void show_metrics(struct ctl *c, json_t *j)
{
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v)
    {
        if (json_is_integer(v))
            printf("%s %lld\n", k, (long long)json_integer_value(v));
        else if (json_is_real(v))
            printf("%s %g\n", k, json_real_value(v));
        else if (json_is_object(v))
            printf("%s count=%lld sum=%g\n", k, num(v, "count"),
                   json_number_value(json_object_get(v, "sum")));
    }
}

static int cmd_metrics(struct ctl *c, int argc, char **argv)
{
    int rc = no_args("metrics", argc, argv);
    if (rc)
        return rc;
    return ctl_show(c, "GET", "metrics", NULL, show_metrics);
}

static int cmd_version(struct ctl *c, int argc, char **argv)
{
    int rc = no_args("version", argc, argv);
    if (rc)
        return rc;
    printf("tlsboxctl %s\n", PACKAGE_VERSION);
    long status;
    json_t *j = NULL;
    /* The daemon's version is extra information: a stopped daemon is said
     * (on stderr) but is not an error here. */
    if (ctl_request(c, "GET", "status", NULL, &status, &j) == CTL_EXIT_OK && status == 200)
        printf("tlsboxd %s (plugin ABI %s)\n", str(j, "version"), str(j, "abi"));
    json_decref(j);
    return CTL_EXIT_OK;
}

static void show_restart(struct ctl *c, json_t *j)
{
    (void)c;
    (void)j;
    printf("tlsboxd stops now; systemd starts it again in about 2 s "
           "(tlsboxctl status then shows its new pid)\n");
}

static int cmd_restart(struct ctl *c, int argc, char **argv)
{
    int rc = no_args("restart", argc, argv);
    if (rc)
        return rc;
    return ctl_show(c, "POST", "restart", "{}", show_restart);
}

const struct ctl_command ctl_core_commands[] = {
    {"status", NULL, "", "daemon version, uptime, store, TLS bundle, plugins", cmd_status},
    {"plugins", NULL, "", "loaded plugins, their ABI and state", cmd_plugins},
    /* Before "settings PLUGIN": the first entry that matches runs. */
    {"settings", "history", "[PLUGIN] [--before CHANGE]",
     "settings changes, newest first: what changed from what to what, by whom",
     cmd_settings_history},
    {"settings", "undo", "CHANGE", "put the settings a change changed back (as a new change)",
     cmd_settings_undo},
    {"settings", NULL, "PLUGIN", "every setting of a plugin (or core)", cmd_settings},
    {"get", NULL, "PLUGIN.KEY", "print one setting", cmd_get},
    {"set", NULL, "PLUGIN.KEY VALUE", "validate and store one setting", cmd_set},
    {"reset", NULL, "PLUGIN.KEY", "store no value for a setting: its default serves again",
     cmd_reset},
    {"metrics", NULL, "", "current metrics", cmd_metrics},
    {"version", NULL, "", "client and daemon versions", cmd_version},
    {"restart", NULL, "", "stop tlsboxd cleanly for systemd to start it again", cmd_restart},
    {NULL, NULL, NULL, NULL, NULL}};
