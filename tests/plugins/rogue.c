/* A plugin that tries to write tables it does not own, on demand: GET
 * /api/v1/rogue/try/<what> runs one statement on a host->store_open
 * connection and answers {"ok": bool, "error": SQLite's message}. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tlsbox/host.h>
#include <tlsbox/plugin.h>

struct rogue {
    struct tlsbox_plugin *self;
    const struct tlsbox_host *h;
};

static const struct {
    const char *what, *sql;
} attempts[] = {
    {"own", "INSERT INTO rogue_notes (t) VALUES ('mine')"},
    {"certificates", "UPDATE certificates SET status = 'revoked'"},
    {"acme_orders", "DELETE FROM acme_orders"},
    {"settings", "INSERT INTO settings (key, value, updated_at) VALUES ('core.x', '1', 0)"},
    {"drop", "DROP TABLE audit"},
    {"create", "CREATE TABLE notmine (x)"},
    {"neighbour", "CREATE TABLE rogue_schema_mine (x)"},
    {"index", "CREATE INDEX rogue_idx ON certificates (serial)"},
    {"trigger", "CREATE TRIGGER rogue_trg AFTER INSERT ON rogue_notes BEGIN "
                "UPDATE certificates SET status = 'revoked'; END"},
    {"fire", "INSERT INTO rogue_notes (t) VALUES ('fires the trigger')"},
    {"pragma", "PRAGMA user_version = 999"},
    {"attach", "ATTACH DATABASE ':memory:' AS other"},
    {"keys", "SELECT name, key_pem FROM certificates"},
    {"totp", "SELECT name, totp_secret FROM admin_users"},
    {"recovery", "SELECT hash FROM admin_recovery_codes"},
    {"read", "SELECT name, not_after FROM certificates"},
    /* Its own AUTOINCREMENT table at the largest id: SQLite sets the
     * counter itself.  Moved to the core's audit (the row of audit deleted,
     * its own renamed), the next audit row would fail "database or disk is
     * full". */
    {"counted", "INSERT INTO rogue_counted (id, t) VALUES (9223372036854775807, 'last')"},
    {"seq_delete", "DELETE FROM sqlite_sequence WHERE name = 'audit'"},
    {"seq_rename", "UPDATE sqlite_sequence SET name = 'audit' WHERE name = 'rogue_counted'"},
    /* SQLite tells the guard the old name of a rename, never the new one. */
    {"rename", "ALTER TABLE rogue_counted RENAME TO rogue_schema_counted"},
    /* A foreign key to a core table: the core's deletes of settings would
     * cascade into this table (and fire its triggers on the core's own
     * connection), or fail. */
    {"fk", "CREATE TABLE rogue_linked (k TEXT REFERENCES settings (key) ON DELETE CASCADE)"},
    {"add_fk", "ALTER TABLE rogue_notes ADD COLUMN k TEXT REFERENCES settings (key)"},
    /* A table in all but name, made outside a migration step. */
    {"vtable", "CREATE VIRTUAL TABLE rogue_v USING dbstat"},
    /* Statistics made up for the core's tables steer the core's plans. */
    {"analyze", "ANALYZE"},
    {"stat1", "INSERT INTO sqlite_stat1 VALUES ('settings', NULL, '1')"},
};

static void on_try(void *arg, const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply)
{
    struct rogue *r = arg;
    const char *what = req->path + strlen("rogue/try/");
    const char *sql = NULL;
    for (size_t i = 0; i < sizeof attempts / sizeof *attempts; i++)
        if (strcmp(attempts[i].what, what) == 0)
            sql = attempts[i].sql;
    if (!sql) {
        r->h->api_reply_error(reply, 404, "no attempt %s", what);
        return;
    }
    sqlite3 *db = r->h->store_open(r->self);
    if (!db) {
        r->h->api_reply_error(reply, 500, "no store");
        return;
    }
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    char buf[512];
    snprintf(buf, sizeof buf, "{\"ok\":%s,\"error\":\"%s\"}", rc == SQLITE_OK ? "true" : "false",
             msg ? msg : "");
    sqlite3_free(msg);
    r->h->store_close(r->self, db);
    reply->body = strdup(buf);
}

static int rogue_init(struct tlsbox_plugin *self, const struct tlsbox_host *host, void **state)
{
    struct rogue *r = calloc(1, sizeof *r);
    if (!r)
        return -ENOMEM;
    r->self = self;
    r->h = host;
    *state = r;
    return 0;
}

static int rogue_start(void *state)
{
    struct rogue *r = state;
    return r->h->api_route_add(r->self, "GET", "rogue/try/*", on_try, r);
}

static void rogue_fini(void *state)
{
    free(state);
}

static const struct tlsbox_migration rogue_migrations[] = {
    {.name = "0001_notes", .sql = "CREATE TABLE rogue_notes (id INTEGER PRIMARY KEY, t TEXT)"},
    {.name = "0002_counted",
     .sql = "CREATE TABLE rogue_counted (id INTEGER PRIMARY KEY AUTOINCREMENT, t TEXT)"},
    TLSBOX_MIGRATIONS_END};

TLSBOX_PLUGIN(.name = "rogue", .version = "1", .description = "writes what it does not own",
              .init = rogue_init, .start = rogue_start, .fini = rogue_fini,
              .migrations = rogue_migrations);
