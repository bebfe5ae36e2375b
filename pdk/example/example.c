/* An example tlsbox plugin: a setting, a table of its own, an API route, a
 * timer and a metric.  Built in tree and, in a test, out of tree against the
 * installed kit (see doc/plugin-guide.md and the Makefile next to it):
 *
 *   make            builds example.so
 *   make check      builds and runs example_test against the kit's mock host
 *   make install    copies example.so into the kit's plugin directory
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tlsbox/host.h>
#include <tlsbox/plugin.h>
#include <tlsbox/xalloc.h>

/* Every minute the timer keeps the newest 100 greetings (the 100 is in the
 * SQL of on_prune). */
#define EXAMPLE_PRUNE_MS 60000

struct example {
    struct tlsbox_plugin *self;
    const struct tlsbox_host *host;
    struct tlsbox_metric *hellos;
    int64_t prune_timer;
};

static const struct tlsbox_setting_def example_settings[] = {
    {.key = "greeting",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "hello",
     .pattern = "^[A-Za-z ,!]{1,40}$",
     .help = "What GET /api/v1/example/hello answers (letters, spaces, commas, !)"},
    TLSBOX_SETTINGS_END};

/* The plugin's own table: the core applies these steps at load (ABI 1.1),
 * once each, in one transaction.  Never edit a step that shipped: add one. */
static const struct tlsbox_migration example_migrations[] = {
    {.name = "0001_greetings",
     .sql = "CREATE TABLE example_greetings (id INTEGER PRIMARY KEY, said_at INTEGER NOT NULL, "
            "text TEXT NOT NULL)"},
    TLSBOX_MIGRATIONS_END};

/* Record @p text; returns how many greetings are kept, or a negative errno. */
static int example_record(struct example *ex, const char *text)
{
    sqlite3 *db = ex->host->store_open(ex->self);
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    if (!db)
        return -EIO;
    if (sqlite3_prepare_v2(db, "INSERT INTO example_greetings (said_at, text) VALUES (?1, ?2)", -1,
                           &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)time(NULL));
    sqlite3_bind_text(st, 2, text, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto out;
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM example_greetings", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        rc = sqlite3_column_int(st, 0);
out:
    sqlite3_finalize(st);
    ex->host->store_close(ex->self, db);
    return rc;
}

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
    /* One short write: fine on the admin thread (anything slow goes to a job). */
    int count = example_record(ex, greeting);
    if (count < 0)
        ex->host->api_reply_error(reply, 500, "cannot record the greeting: %s", strerror(-count));
    else /* the pattern allows no quote or backslash, so the value embeds as is */
        reply->body = tlsbox_xasprintf("{\"greeting\":\"%s\",\"count\":%d}", greeting, count);
    free(greeting);
}

/* Timer, on a maintenance thread: keep the newest 100 greetings. */
static void on_prune(void *arg, struct tlsbox_job *job)
{
    struct example *ex = arg;
    (void)job;
    sqlite3 *db = ex->host->store_open(ex->self);
    if (!db)
        return;
    char *err = NULL;
    if (sqlite3_exec(db,
                     "DELETE FROM example_greetings WHERE id <= (SELECT id FROM example_greetings "
                     "ORDER BY id DESC LIMIT 1 OFFSET 100)",
                     NULL, NULL, &err) != SQLITE_OK)
        ex->host->log(ex->self, TLSBOX_LOG_WARN, "pruning greetings: %s", err);
    else if (sqlite3_changes(db) > 0)
        ex->host->log(ex->self, TLSBOX_LOG_INFO, "pruned %d old greetings", sqlite3_changes(db));
    sqlite3_free(err);
    ex->host->store_close(ex->self, db);
}

static int example_init(struct tlsbox_plugin *self, const struct tlsbox_host *host, void **state)
{
    struct example *ex = tlsbox_xcalloc(1, sizeof *ex);
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
    int64_t t = ex->host->timer_add(ex->self, "example-prune", EXAMPLE_PRUNE_MS, EXAMPLE_PRUNE_MS,
                                    1000, on_prune, ex);
    if (t < 0)
        return (int)t;
    ex->prune_timer = t;
    ex->host->log(ex->self, TLSBOX_LOG_INFO, "example plugin started");
    return 0;
}

static void example_fini(void *state)
{
    free(state);
}

TLSBOX_PLUGIN(.name = "example", .version = "1.0",
              .description = "Example plugin from the plugin kit", .settings = example_settings,
              .init = example_init, .start = example_start, .fini = example_fini,
              .migrations = example_migrations);
