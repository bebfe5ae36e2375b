/* An example tlsbox plugin: one setting, one metric, one API route.
 * Built in tree and, in a test, out of tree against the installed kit:
 *
 *   cc -shared -fPIC $(pkg-config --cflags tlsbox-plugin) -o example.so example.c
 *   install -m 0644 example.so $(pkg-config --variable=plugindir tlsbox-plugin)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tlsbox/host.h>
#include <tlsbox/plugin.h>

struct example {
    struct tlsbox_plugin *self;
    const struct tlsbox_host *host;
    struct tlsbox_metric *hellos;
};

static const struct tlsbox_setting_def example_settings[] = {
    {.key = "greeting",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "hello",
     .pattern = "^[A-Za-z ,!]{1,40}$",
     .help = "What GET /api/v1/example/hello answers (letters, spaces, commas, !)"},
    TLSBOX_SETTINGS_END};

/* GET /api/v1/example/hello -> {"greeting": "...", "count": N} */
static void on_hello(void *arg, const struct tlsbox_api_request *req,
                     struct tlsbox_api_reply *reply)
{
    struct example *ex = arg;
    (void)req; /* every request gets the same answer */
    ex->host->metric_add(ex->hellos, 1);
    char *greeting = ex->host->setting_get(ex->self, "greeting");
    if (!greeting) {
        ex->host->api_reply_error(reply, 500, "example.greeting is not declared");
        return;
    }
    /* The pattern allows no quote or backslash, so the value embeds as is. */
    size_t n = strlen(greeting) + 64;
    reply->body = malloc(n);
    if (reply->body)
        snprintf(reply->body, n, "{\"greeting\":\"%s\"}", greeting);
    free(greeting);
}

static int example_init(struct tlsbox_plugin *self, const struct tlsbox_host *host, void **state)
{
    struct example *ex = calloc(1, sizeof *ex);
    if (!ex)
        return -ENOMEM;
    ex->self = self;
    ex->host = host;
    *state = ex;
    return 0;
}

static int example_start(void *state)
{
    struct example *ex = state;
    ex->hellos =
        ex->host->metric_register(ex->self, "tlsbox_example_hellos_total", TLSBOX_METRIC_COUNTER,
                                  "Answers given by the example plugin", NULL, 0);
    if (!ex->hellos)
        return -EINVAL;
    int rc = ex->host->api_route_add(ex->self, "GET", "example/hello", on_hello, ex);
    if (rc < 0)
        return rc;
    ex->host->log(ex->self, TLSBOX_LOG_INFO, "example plugin started");
    return 0;
}

static void example_fini(void *state)
{
    free(state);
}

/* The plugin's own table: the core applies these steps at load (ABI 1.1). */
static const struct tlsbox_migration example_migrations[] = {
    {.name = "0001_greetings",
     .sql = "CREATE TABLE example_greetings (id INTEGER PRIMARY KEY, said_at INTEGER NOT NULL, "
            "text TEXT NOT NULL)"},
    TLSBOX_MIGRATIONS_END};

TLSBOX_PLUGIN(.name = "example", .version = "1.0",
              .description = "Example plugin from the plugin kit", .settings = example_settings,
              .init = example_init, .start = example_start, .fini = example_fini,
              .migrations = example_migrations);
