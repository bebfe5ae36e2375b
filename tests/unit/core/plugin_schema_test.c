/* A plugin's own schema (ABI 1.1): pending steps applied once and recorded,
 * a failing step leaves the store file byte for byte as it was, a downgrade
 * is refused for that plugin only. */
#include "core/plugin_schema.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/host.h"
#include "core/plugin_loader.h"
#include "core/store.h"
#include "core/store_guard.h"
#include "core/xalloc.h"
#include "tests/tap.h"

static char tmp[] = "/tmp/tlsbox-plugin-schema-test-XXXXXX";

static long long query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    long long v = -999;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The store file's bytes after moving every committed page out of the WAL. */
static char *file_bytes(sqlite3 *db, size_t *len)
{
    sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
    FILE *f = fopen(store_path(), "rb");
    *len = 0;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = xmalloc((size_t)n + 1);
    *len = fread(buf, 1, (size_t)n, f);
    fclose(f);
    return buf;
}

static const struct tlsbox_migration two_steps[] = {
    {.name = "0001_notes", .sql = "CREATE TABLE demo_notes (id INTEGER PRIMARY KEY, t TEXT);"},
    {.name = "0002_seed", .sql = "INSERT INTO demo_notes (t) VALUES ('first');"},
    TLSBOX_MIGRATIONS_END};

/* Steps 1 and 2 above, then a step that creates a table and fails. */
static const struct tlsbox_migration broken[] = {
    {.name = "0001_notes", .sql = "CREATE TABLE demo_notes (id INTEGER PRIMARY KEY, t TEXT);"},
    {.name = "0002_seed", .sql = "INSERT INTO demo_notes (t) VALUES ('first');"},
    {.name = "0003_more", .sql = "CREATE TABLE demo_more (x); INSERT INTO demo_more VALUES (1);"},
    {.name = "0004_typo", .sql = "INSERT INTO demo_nosuch VALUES (1);"},
    TLSBOX_MIGRATIONS_END};

static void test_apply_once(sqlite3 *db)
{
    char *err = NULL;
    is_int(plugin_schema_count(two_steps), 2, "two steps counted");
    is_int(plugin_schema_count(NULL), 0, "no steps: 0");
    is_int(plugin_schema_version(db, "demo"), 0, "a plugin never seen is at version 0");
    is_int(plugin_schema_migrate(db, "demo", two_steps, &err), 2, "both pending steps applied");
    is_int(plugin_schema_version(db, "demo"), 2, "version 2 recorded");
    is_int(query_int(db, "SELECT count(*) FROM demo_notes"), 1, "the seed row is there once");
    is_int(plugin_schema_migrate(db, "demo", two_steps, &err), 0, "second run applies nothing");
    is_int(query_int(db, "SELECT count(*) FROM demo_notes"), 1, "the seed step did not run again");
    is_int(query_int(db, "SELECT applied_at > 0 FROM plugin_schema WHERE plugin='demo'"), 1,
           "applied_at recorded");
    ok(err == NULL, "no error set on success");
}

static void test_failing_step(sqlite3 *db)
{
    char *err = NULL;
    size_t len0, len1;
    char *before = file_bytes(db, &len0);
    int rc = plugin_schema_migrate(db, "demo", broken, &err);
    is_int(rc, -EIO, "a failing step returns -EIO");
    like(err, "plugin demo", "the message names the plugin");
    like(err, "migration 0004_typo failed", "the message names the step");
    like(err, "no such table: demo_nosuch", "the message carries SQLite's");
    is_int(plugin_schema_version(db, "demo"), 2, "version still 2");
    is_int(query_int(db, "SELECT count(*) FROM sqlite_master WHERE name='demo_more'"), 0,
           "the table of the step before it is not there");
    char *after = file_bytes(db, &len1);
    ok(before && after && len0 == len1 && memcmp(before, after, len0) == 0,
       "the store file is unchanged byte for byte (%zu bytes)", len0);
    ok(sqlite3_get_autocommit(db), "no transaction left open");
    free(before);
    free(after);
    free(err);
}

/* A step that ends the core's transaction itself: refused, and nothing of
 * the steps before it stays behind. */
static void test_commit_in_step(sqlite3 *db)
{
    char *err = NULL;
    size_t len0, len1;
    static const struct tlsbox_migration commits[] = {
        {.name = "0001_a", .sql = "CREATE TABLE demo3_a (x);"},
        {.name = "0002_b", .sql = "CREATE TABLE demo3_b (x); COMMIT;"},
        {.name = "0003_typo", .sql = "INSERT INTO demo3_nosuch VALUES (1);"},
        TLSBOX_MIGRATIONS_END};
    char *before = file_bytes(db, &len0);
    is_int(plugin_schema_migrate(db, "demo3", commits, &err), -EIO, "a step with COMMIT fails");
    like(err, "migration 0002_b failed", "the message names the step");
    is_int(query_int(db, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'demo3_%'"), 0,
           "neither its table nor the one of the step before it is in the store");
    is_int(plugin_schema_version(db, "demo3"), 0, "no version recorded");
    char *after = file_bytes(db, &len1);
    ok(before && after && len0 == len1 && memcmp(before, after, len0) == 0,
       "the store file is unchanged byte for byte");
    ok(sqlite3_get_autocommit(db), "no transaction left open");
    free(before);
    free(after);
    free(err);
}

static void test_downgrade(sqlite3 *db)
{
    char *err = NULL;
    static const struct tlsbox_migration one_step[] = {
        {.name = "0001_notes", .sql = "CREATE TABLE demo_notes (id INTEGER PRIMARY KEY, t TEXT);"},
        TLSBOX_MIGRATIONS_END};
    static const struct tlsbox_migration other[] = {
        {.name = "0001_x", .sql = "CREATE TABLE other_x (x);"}, TLSBOX_MIGRATIONS_END};
    is_int(plugin_schema_migrate(db, "demo", one_step, &err), -EPROTO,
           "a plugin older than its tables is refused");
    like(err,
         "plugin demo: refused: the store has schema version 2 of its tables, this plugin "
         "knows 1",
         "the message names the plugin and both versions");
    is_int(plugin_schema_version(db, "demo"), 2, "the store still records version 2");
    free(err);
    err = NULL;
    is_int(plugin_schema_migrate(db, "other", other, &err), 1, "another plugin still migrates");
    is_int(plugin_schema_version(db, "other"), 1, "and records its own version");
    free(err);
}

/* A plugin whose name is the first word of a core table ("admin", "tls",
 * "plugin") owns no core table by the "<plugin>_..." rule. */
/* Two loaded plugins whose names overlap, for the guard's longest-name rule. */
static struct tlsbox_plugin fake_long = {.name = "rogue_schema"};
static struct tlsbox_plugin fake_short = {.name = "rogue", .next = &fake_long};
static struct tlsbox_plugin *fake_plugins(void)
{
    return &fake_short;
}

static void test_core_objects(sqlite3 *db)
{
    char *err = NULL;
    static const struct tlsbox_migration admin[] = {
        {.name = "0001_takeover", .sql = "UPDATE admin_users SET pw_hash = 'x';"},
        TLSBOX_MIGRATIONS_END};
    static const struct tlsbox_migration tls[] = {
        {.name = "0001_drop", .sql = "DROP TABLE tls_dh;"}, TLSBOX_MIGRATIONS_END};
    static const struct tlsbox_migration plugin[] = {
        {.name = "0001_reset", .sql = "UPDATE plugin_schema SET version = 0;"},
        TLSBOX_MIGRATIONS_END};
    is_int(plugin_schema_migrate(db, "admin", admin, &err), -EIO,
           "plugin \"admin\" may not write admin_users");
    like(err, "migration 0001_takeover failed", "the message names the step");
    like(err, "not authorized", "refused by the guard");
    free(err);
    err = NULL;
    is_int(plugin_schema_migrate(db, "tls", tls, &err), -EIO, "plugin \"tls\" may not drop tls_dh");
    is_int(query_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'tls_dh'"), 1,
           "tls_dh is still there");
    free(err);
    err = NULL;
    is_int(plugin_schema_migrate(db, "plugin", plugin, &err), -EIO,
           "plugin \"plugin\" may not rewrite plugin_schema");
    free(err);

    /* The AUTOINCREMENT counters of the core's tables: at the largest rowid,
     * every later insert into audit fails ("database or disk is full"). */
    static const struct tlsbox_migration seq_insert[] = {
        {.name = "0001_full",
         .sql = "INSERT INTO sqlite_sequence (name, seq) VALUES ('audit', 9223372036854775807);"},
        TLSBOX_MIGRATIONS_END};
    static const struct tlsbox_migration seq_update[] = {
        {.name = "0001_full", .sql = "UPDATE sqlite_sequence SET seq = 9223372036854775807;"},
        TLSBOX_MIGRATIONS_END};
    static const struct tlsbox_migration seq_own[] = {
        {.name = "0001_t", .sql = "CREATE TABLE seqc_t (id INTEGER PRIMARY KEY AUTOINCREMENT);"},
        {.name = "0002_row", .sql = "INSERT INTO seqc_t DEFAULT VALUES;"},
        {.name = "0003_rename", .sql = "ALTER TABLE seqc_t RENAME TO seqc_u;"},
        {.name = "0004_drop", .sql = "DROP TABLE seqc_u;"},
        TLSBOX_MIGRATIONS_END};
    long long seq_before = query_int(db, "SELECT total(seq) FROM sqlite_sequence");
    err = NULL;
    is_int(plugin_schema_migrate(db, "seqa", seq_insert, &err), -EIO,
           "a plugin may not insert into sqlite_sequence");
    free(err);
    err = NULL;
    is_int(plugin_schema_migrate(db, "seqb", seq_update, &err), -EIO, "nor set the counters in it");
    free(err);
    err = NULL;
    is_int(query_int(db, "SELECT total(seq) FROM sqlite_sequence"), seq_before,
           "the counters are as they were");
    is_int(store_exec(db, "INSERT INTO audit (at, actor, action) VALUES (1, 't', 't')", NULL), 0,
           "the core still inserts into audit");
    is_int(plugin_schema_migrate(db, "seqc", seq_own, &err), 4,
           "its own AUTOINCREMENT table: insert, rename and drop still work");
    free(err);

    /* Every object of a fresh core store, against every "<word>_" prefix of
     * its name: a new core table must be added to store_guard.c's list. */
    sqlite3_stmt *st = NULL;
    int n = 0;
    sqlite3_prepare_v2(db,
                       "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite%' ORDER BY name",
                       -1, &st, NULL);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        char *owner = NULL;
        for (const char *u = strchr(name, '_'); u && !owner; u = strchr(u + 1, '_')) {
            char *prefix = xasprintf("%.*s", (int)(u - name), name);
            if (store_guard_owns(prefix, name))
                owner = prefix;
            else
                free(prefix);
        }
        ok(owner == NULL, "core object %s is owned by no plugin%s%s", name,
           owner ? ": not even " : "", owner ? owner : "");
        free(owner);
        n++;
    }
    sqlite3_finalize(st);
    ok(n >= 13, "the core store has its objects (%d)", n);

    /* Names in any case, as SQLite compares them. */
    ok(!store_guard_owns("settings", "settings_CHANGES"),
       "settings_CHANGES is the core's settings_changes: no plugin's");
    ok(!store_guard_owns("settings", "Settings_Change_Items_key"), "nor in mixed case");
    ok(!store_guard_owns("rogue", "SQLITE_x"), "SQLITE_x is SQLite's prefix");
    store_guard_set_plugins(fake_plugins);
    ok(!store_guard_owns("rogue", "rogue_SCHEMA_kv"),
       "with rogue_schema loaded, rogue_SCHEMA_kv is not rogue's");
    ok(store_guard_owns("rogue_schema", "ROGUE_SCHEMA_kv"), "but rogue_schema's, in any case");
    ok(store_guard_owns("rogue", "rogue_kv"), "and rogue keeps its own");
    store_guard_set_plugins(NULL);
}

/* A failing migration: -EIO, the message naming the step and @p what, the
 * store file unchanged byte for byte. */
static void refused_step(sqlite3 *db, const char *plugin, const struct tlsbox_migration *steps,
                         const char *step, const char *what, const char *desc)
{
    char *err = NULL;
    size_t len0, len1;
    char *before = file_bytes(db, &len0);
    is_int(plugin_schema_migrate(db, plugin, steps, &err), -EIO, "%s: refused", desc);
    diag("%s", err ? err : "no message");
    like(err, step, "%s: the message names the step", desc);
    like(err, what, "%s: and what it changed", desc);
    char *after = file_bytes(db, &len1);
    ok(before && after && len0 == len1 && memcmp(before, after, len0) == 0,
       "%s: the store file is unchanged byte for byte", desc);
    is_int(plugin_schema_version(db, plugin), 0, "%s: no version recorded", desc);
    ok(sqlite3_get_autocommit(db), "%s: no transaction left open", desc);
    free(before);
    free(after);
    free(err);
}

/* What SQLite's authorizer does not show the guard, checked by the core
 * after each step: the rows of sqlite_sequence a statement changes (a
 * plugin's DROP and RENAME of its own AUTOINCREMENT table change them
 * through the same actions), the new name of a rename, a table's foreign
 * keys, and the temporary objects a step leaves on the core's connection. */
static void test_checked_after_step(sqlite3 *db)
{
    char *err = NULL;
    long long audit_seq = query_int(db, "SELECT seq FROM sqlite_sequence WHERE name = 'audit'");

    /* The core's audit counter set to the largest rowid: its own counter
     * moved onto audit's name. */
    static const struct tlsbox_migration seq_move[] = {
        {.name = "0001_t", .sql = "CREATE TABLE seqd_t (id INTEGER PRIMARY KEY AUTOINCREMENT);"},
        {.name = "0002_full",
         .sql = "INSERT INTO seqd_t (id) VALUES (9223372036854775807);"
                "DELETE FROM sqlite_sequence WHERE name = 'audit';"
                "UPDATE sqlite_sequence SET name = 'audit' WHERE name = 'seqd_t';"},
        TLSBOX_MIGRATIONS_END};
    refused_step(db, "seqd", seq_move, "migration 0002_full failed",
                 "the AUTOINCREMENT counter of audit in sqlite_sequence (now "
                 "9223372036854775807,",
                 "a counter moved onto audit's name");
    /* Without its row, audit would reuse the ids of deleted rows. */
    static const struct tlsbox_migration seq_delete[] = {
        {.name = "0001_forget", .sql = "DELETE FROM sqlite_sequence WHERE name = 'audit';"},
        TLSBOX_MIGRATIONS_END};
    refused_step(db, "seqe", seq_delete, "migration 0001_forget failed",
                 "the AUTOINCREMENT counter of audit in sqlite_sequence (now none,",
                 "audit's counter deleted");
    is_int(query_int(db, "SELECT seq FROM sqlite_sequence WHERE name = 'audit'"), audit_seq,
           "audit's counter is as it was");
    is_int(store_exec(db, "INSERT INTO audit (at, actor, action) VALUES (1, 't', 't')", NULL), 0,
           "the core still inserts into audit");

    /* SQLite names only the old table to the authorizer of a rename. */
    static const struct tlsbox_migration squat[] = {
        {.name = "0001_t",
         .sql = "CREATE TABLE ren_t (id INTEGER PRIMARY KEY AUTOINCREMENT);"
                "INSERT INTO ren_t DEFAULT VALUES;"},
        {.name = "0002_squat", .sql = "ALTER TABLE ren_t RENAME TO acme_kv;"},
        TLSBOX_MIGRATIONS_END};
    refused_step(db, "ren", squat, "migration 0002_squat failed",
                 "it made table acme_kv, not plugin ren's", "a rename to another's name");
    is_int(query_int(db, "SELECT count(*) FROM sqlite_master WHERE name IN ('ren_t', 'acme_kv')"),
           0, "neither name is in the store");

    /* A foreign key to a core table: deleting the setting would cascade
     * into the plugin's table (test_triggers: no trigger runs there). */
    is_int(store_exec(
               db, "INSERT INTO settings (key, value, updated_at) VALUES ('core.fk_test', '1', 0)",
               NULL),
           0, "a setting to refer to");
    static const struct tlsbox_migration fk_core[] = {
        {.name = "0001_link",
         .sql = "CREATE TABLE fk_t (k TEXT REFERENCES settings (key) ON DELETE CASCADE);"
                "CREATE TRIGGER fk_trg AFTER DELETE ON fk_t BEGIN "
                "INSERT INTO audit (at, actor, action) VALUES (0, 'fk', 'cascaded'); END;"
                "INSERT INTO fk_t VALUES ('core.fk_test');"},
        TLSBOX_MIGRATIONS_END};
    refused_step(db, "fk", fk_core, "migration 0001_link failed",
                 "table fk_t has a foreign key to settings, not plugin fk's",
                 "a foreign key to settings");
    is_int(store_exec(db, "DELETE FROM settings WHERE key = 'core.fk_test'", NULL), 0,
           "the core deletes the setting");
    is_int(query_int(db, "SELECT count(*) FROM audit WHERE actor = 'fk'"), 0,
           "and no trigger of the plugin ran on the core's connection");
    static const struct tlsbox_migration fk_added[] = {
        {.name = "0001_t", .sql = "CREATE TABLE fkb_t (x);"},
        {.name = "0002_col",
         .sql = "ALTER TABLE fkb_t ADD COLUMN k TEXT REFERENCES settings (key);"},
        TLSBOX_MIGRATIONS_END};
    refused_step(db, "fkb", fk_added, "migration 0002_col failed",
                 "table fkb_t has a foreign key to settings, not plugin fkb's",
                 "a foreign key added by ALTER TABLE");
    /* acme_kv: another plugin's, even when that plugin is not loaded. */
    static const struct tlsbox_migration fk_other[] = {
        {.name = "0001_link", .sql = "CREATE TABLE fkc_t (k INTEGER REFERENCES acme_kv (id));"},
        TLSBOX_MIGRATIONS_END};
    refused_step(db, "fkc", fk_other, "migration 0001_link failed",
                 "table fkc_t has a foreign key to acme_kv, not plugin fkc's",
                 "a foreign key to another plugin's table");

    /* A step runs on the core's own connection: a temporary view named
     * settings would stand in for the core's table there afterwards. */
    static const struct tlsbox_migration temp_left[] = {
        {.name = "0001_shadow",
         .sql = "CREATE TEMP VIEW settings AS SELECT 'core.x' AS key, 'y' AS value;"},
        TLSBOX_MIGRATIONS_END};
    refused_step(db, "tmp", temp_left, "migration 0001_shadow failed",
                 "it left temporary view settings on the core's connection",
                 "a temporary view left behind");
    is_int(query_int(db, "SELECT count(*) FROM temp.sqlite_master"), 0,
           "no temporary object is left");

    /* What a plugin's own migrations need still works: its own foreign
     * keys, the columns of its tables, a table rebuilt under a new name and
     * renamed back (SQLite's way to change a constraint), with its
     * AUTOINCREMENT counter, and temporary tables it drops again. */
    static const struct tlsbox_migration own[] = {
        {.name = "0001_t",
         .sql = "CREATE TABLE ownm_runs (id INTEGER PRIMARY KEY AUTOINCREMENT, s TEXT);"
                "CREATE TABLE ownm_items (run INTEGER REFERENCES ownm_runs (id) ON DELETE "
                "CASCADE);"
                "INSERT INTO ownm_runs (s) VALUES ('a'), ('b');"},
        {.name = "0002_cols",
         .sql = "ALTER TABLE ownm_items ADD COLUMN note TEXT;"
                "ALTER TABLE ownm_items RENAME COLUMN note TO text;"
                "ALTER TABLE ownm_items DROP COLUMN text;"},
        {.name = "0003_rebuild",
         .sql = "CREATE TEMP TABLE ownm_scratch AS SELECT * FROM ownm_runs;"
                "CREATE TABLE ownm_runs_new (id INTEGER PRIMARY KEY AUTOINCREMENT, s TEXT "
                "CHECK (s <> ''));"
                "INSERT INTO ownm_runs_new SELECT * FROM ownm_scratch;"
                "DROP TABLE ownm_scratch;"
                "DROP TABLE ownm_runs;"
                "ALTER TABLE ownm_runs_new RENAME TO ownm_runs;"
                "INSERT INTO ownm_runs (s) VALUES ('c');"},
        TLSBOX_MIGRATIONS_END};
    err = NULL;
    is_int(plugin_schema_migrate(db, "ownm", own, &err), 3, "a plugin's own schema changes apply");
    ok(err == NULL, "without an error (%s)", err ? err : "none");
    is_int(query_int(db, "SELECT seq FROM sqlite_sequence WHERE name = 'ownm_runs'"), 3,
           "its counter followed the rename");
    is_int(query_int(db, "SELECT count(*) FROM sqlite_sequence WHERE name = 'ownm_runs_new'"), 0,
           "and no counter is left under the old name");
    free(err);
}

/* A trigger of the store's schema runs with the rights of the connection
 * that fires it.  A plugin's trigger on its own table, fired on a core
 * connection (by a core delete that cascades through a foreign key into
 * the table, as a store made before the guard checked foreign keys allows),
 * would write core tables past the guard.  Core connections fire no trigger;
 * a plugin's connection and its migration steps fire them, under its guard. */
static void test_triggers(sqlite3 *db)
{
    char *err = NULL;
    /* Made by the core's connection, as an old store (or a hand) left it. */
    is_int(store_exec(db,
                      "INSERT INTO settings (key, value, updated_at) VALUES "
                      "('core.lg_a', '1', 0), ('core.lg_b', '1', 0);"
                      "CREATE TABLE lg_t (k TEXT REFERENCES settings (key) ON DELETE CASCADE);"
                      "CREATE TABLE lg_log (x TEXT);"
                      "CREATE TRIGGER lg_trg AFTER DELETE ON lg_t BEGIN "
                      "INSERT INTO audit (at, actor, action) VALUES (0, 'lg', 'cascaded'); END;"
                      "CREATE TRIGGER lg_mine AFTER INSERT ON lg_t BEGIN "
                      "INSERT INTO lg_log VALUES (NEW.k); END;",
                      &err),
           0, "a plugin table with a foreign key to settings and triggers (%s)",
           err ? err : "made");
    free(err);
    err = NULL;
    /* Inserted on a plugin's connection: its own trigger runs there. */
    struct tlsbox_plugin lg = {.name = "lg"};
    sqlite3 *pc = host_table()->store_open(&lg);
    ok(pc != NULL, "plugin lg's connection");
    is_int(store_exec(pc, "INSERT INTO lg_t VALUES ('core.lg_a'), ('core.lg_b')", &err), 0,
           "lg inserts into its own table (%s)", err ? err : "ok");
    is_int(query_int(db, "SELECT count(*) FROM lg_log"), 2,
           "its own trigger ran on its connection");
    host_table()->store_close(&lg, pc);
    long long audit = query_int(db, "SELECT count(*) FROM audit");
    sqlite3 *cc = store_connect();
    is_int(store_exec(cc, "DELETE FROM settings WHERE key = 'core.lg_a'", NULL), 0,
           "the core deletes a setting on a connection of its own");
    store_disconnect(cc);
    is_int(store_exec(db, "DELETE FROM settings WHERE key = 'core.lg_b'", NULL), 0,
           "and one on its main connection");
    is_int(query_int(db, "SELECT count(*) FROM lg_t"), 0, "the deletes cascaded into lg_t");
    is_int(query_int(db, "SELECT count(*) FROM audit"), audit,
           "but lg's trigger wrote no audit row on the core's connections");
    is_int(query_int(db, "SELECT count(*) FROM audit WHERE actor = 'lg'"), 0, "none of lg's");

    /* A migration step's own triggers run in the step; after it, the core's
     * connection fires them no more. */
    static const struct tlsbox_migration trg[] = {
        {.name = "0001_t",
         .sql = "CREATE TABLE trg_t (x INTEGER); CREATE TABLE trg_log (x INTEGER);"
                "CREATE TRIGGER trg_copy AFTER INSERT ON trg_t BEGIN "
                "INSERT INTO trg_log VALUES (NEW.x); END;"
                "INSERT INTO trg_t VALUES (7);"},
        TLSBOX_MIGRATIONS_END};
    is_int(plugin_schema_migrate(db, "trg", trg, &err), 1, "a step with a trigger applies (%s)",
           err ? err : "ok");
    is_int(query_int(db, "SELECT total(x) FROM trg_log"), 7, "its trigger ran in the step");
    is_int(store_exec(db, "INSERT INTO trg_t VALUES (8)", NULL), 0,
           "the core's connection inserts after the step");
    is_int(query_int(db, "SELECT total(x) FROM trg_log"), 7, "and fired no trigger");
    free(err);
}

/* A plugin's table with a foreign key to a table it does not own, left by
 * a store made before the check after each step (test_triggers made lg_t):
 * the plugin is refused until a step of its own rebuilds the table; the
 * refusal changes nothing. */
static void test_existing_foreign_keys(sqlite3 *db)
{
    char *err = NULL;
    size_t len0, len1;
    char *before = file_bytes(db, &len0);
    is_int(plugin_schema_check(db, "lg", &err), -EPERM, "plugin lg is refused");
    diag("%s", err ? err : "no message");
    like(err, "plugin lg: refused: table lg_t has a foreign key to settings, not plugin lg's",
         "the message names the plugin, its table and what it refers to");
    char *after = file_bytes(db, &len1);
    ok(before && after && len0 == len1 && memcmp(before, after, len0) == 0,
       "the store file is unchanged byte for byte");
    free(before);
    free(after);
    free(err);
    err = NULL;
    is_int(plugin_schema_check(db, "trg", &err), 0, "plugin trg's tables pass");
    ok(err == NULL, "without a message");
    is_int(plugin_schema_check(db, "nosuch", &err), 0, "so does a plugin without tables");
    static const struct tlsbox_migration mend[] = {
        {.name = "0001_unlink",
         .sql = "CREATE TABLE lg_new (k TEXT); INSERT INTO lg_new SELECT k FROM lg_t;"
                "DROP TABLE lg_t; ALTER TABLE lg_new RENAME TO lg_t;"},
        TLSBOX_MIGRATIONS_END};
    is_int(plugin_schema_migrate(db, "lg", mend, &err), 1,
           "a step that rebuilds the table without the foreign key applies (%s)", err ? err : "ok");
    is_int(plugin_schema_check(db, "lg", &err), 0, "then lg passes");
    free(err);
}

int main(void)
{
    char *err = NULL;
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    char *state = xasprintf("%s/state", tmp);
    if (store_init(state, &err) < 0) {
        diag("store_init: %s", err);
        return 1;
    }
    sqlite3 *db = store_main();
    test_core_objects(db);
    test_checked_after_step(db);
    test_triggers(db);
    test_existing_foreign_keys(db);
    test_apply_once(db);
    test_failing_step(db);
    test_commit_in_step(db);
    test_downgrade(db);
    store_close();
    free(state);
    if (getenv("TLSBOX_KEEP_TMP") == NULL) {
        char *cmd = xasprintf("rm -rf '%s'", tmp);
        if (system(cmd) != 0)
            diag("could not remove %s", tmp);
        free(cmd);
    }
    return done_testing();
}
