/* The store: fresh migration, upgrade, refusal of a newer schema, permissions. */
#include "core/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/xalloc.h"
#include "tests/tap.h"

static char tmp[] = "/tmp/tlsbox-store-test-XXXXXX";

static const char *const tables[] = {
    "settings",    "policy_versions", "certificates",    "internal_ca", "ticket_keys",
    "tls_staples", "tls_dh",          "metrics_history", "admin_users", "admin_sessions",
    "audit",       "plugin_kv",       "plugin_schema"};

/* The newest embedded core schema: 0002_plugin_schema.sql (plugin kit 1.1)
 * added the plugin_schema table; later migrations only add to it. */
static int newest(void)
{
    return store_migrations[store_migrations_count - 1].version;
}

static long long query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    long long v = -999;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static char *query_text(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    char *v = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_text(st, 0))
        v = xstrdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
}

static int table_exists(sqlite3 *db, const char *name)
{
    char *sql =
        xasprintf("SELECT count(*) FROM sqlite_master WHERE type='table' AND name='%s'", name);
    long long n = query_int(db, sql);
    free(sql);
    return n == 1;
}

static unsigned mode_of(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (unsigned)(sb.st_mode & 07777) : 0xffff;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    *len = 0;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = xmalloc((size_t)n + 1);
    *len = fread(buf, 1, (size_t)n, f);
    fclose(f);
    return buf;
}

static void check_pragmas(sqlite3 *db, const char *who)
{
    char *mode = query_text(db, "PRAGMA journal_mode");
    is_str(mode, "wal", "%s: journal_mode is wal", who);
    free(mode);
    is_int(query_int(db, "PRAGMA synchronous"), 2, "%s: synchronous is FULL", who);
    is_int(query_int(db, "PRAGMA foreign_keys"), 1, "%s: foreign keys on", who);
    is_int(query_int(db, "PRAGMA busy_timeout"), 5000, "%s: busy timeout 5 s", who);
    is_int(query_int(db, "PRAGMA journal_size_limit"), STORE_WAL_LIMIT, "%s: WAL limit 4 MiB", who);
}

static long long size_of(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : -1;
}

/* One 12 MB transaction grows the WAL to 12 MB; after a checkpoint the next
 * write starts it over, and it is cut back to STORE_WAL_LIMIT, not kept at
 * its largest size for good. */
static void test_wal_limit(const char *state)
{
    char *err = NULL;
    is_int(store_init(state, &err), 0, "wal: store_init");
    free(err);
    sqlite3 *db = store_connect();
    ok(db != NULL, "wal: a connection");
    if (!db)
        return;
    char *wal = xasprintf("%s/tlsbox.db-wal", state);
    is_int(sqlite3_exec(db,
                        "CREATE TABLE big(b BLOB); BEGIN; "
                        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
                        "WHERE i < 12) INSERT INTO big SELECT randomblob(1048576) FROM n; "
                        "COMMIT",
                        NULL, NULL, NULL),
           SQLITE_OK, "wal: 12 MB written in one transaction");
    long long big = size_of(wal);
    ok(big > 12LL * 1048576, "wal: the WAL holds it (%lld bytes)", big);
    is_int(sqlite3_exec(db, "PRAGMA wal_checkpoint(PASSIVE); DELETE FROM big", NULL, NULL, NULL),
           SQLITE_OK, "wal: checkpoint, then a small write");
    is_int(sqlite3_exec(db, "PRAGMA wal_checkpoint(PASSIVE); INSERT INTO big VALUES (x'00')", NULL,
                        NULL, NULL),
           SQLITE_OK, "wal: checkpoint, then another small write");
    long long after = size_of(wal);
    ok(after >= 0 && after <= STORE_WAL_LIMIT,
       "wal: the WAL is cut back to at most %d bytes (%lld)", STORE_WAL_LIMIT, after);
    store_disconnect(db);
    store_close();
    free(wal);
}

static void test_fresh(const char *state)
{
    char *err = NULL;
    /* umask 0 proves the modes come from the code, not from the umask. */
    mode_t old = umask(0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = store_init(state, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    umask(old);
    diag("store_init on an empty state dir (create + migrate): %.1f ms",
         (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
    is_int(rc, 0, "store_init on a missing state dir");
    if (rc < 0)
        diag("%s", err);
    free(err);

    char *db_path = xasprintf("%s/tlsbox.db", state);
    is_str(store_path(), db_path, "store_path is <state>/tlsbox.db");
    sqlite3 *db = store_main();
    ok(db != NULL, "store_main is open");
    is_int(store_migrations_count >= 1, 1, "at least one embedded migration");
    is_int(store_migrations[0].version, 1, "first migration is version 1");
    is_str(store_migrations[0].name, "0001_init.sql", "first migration name");
    is_int(store_schema_version(db), store_migrations[store_migrations_count - 1].version,
           "fresh store at the newest schema");
    ok(newest() >= 2, "schema 2 or later (plugin_schema, ABI 1.1)");
    is_str(store_migrations[1].name, "0002_plugin_schema.sql", "second migration name");
    for (int i = 0; i < store_migrations_count; i++)
        is_int(store_migrations[i].version, i + 1, "migration %d is version %d (no gap)", i, i + 1);
    int missing = 0;
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
        if (!table_exists(db, tables[i])) {
            diag("missing table %s", tables[i]);
            missing++;
        }
    is_int(missing, 0, "all %zu tables present", sizeof(tables) / sizeof(tables[0]));
    check_pragmas(db, "main connection");

    /* Permissions, including the WAL files SQLite creates itself. */
    is_int(mode_of(state), 0700, "state dir is 0700");
    is_int(mode_of(db_path), 0600, "tlsbox.db is 0600");
    store_audit(db, "tester", "test.action", "thing", "detail");
    is_int(query_int(db, "SELECT count(*) FROM audit WHERE actor='tester' AND "
                         "action='test.action' AND target='thing' AND detail='detail' AND at > 0"),
           1, "store_audit wrote one row");
    store_audit(db, NULL, "test.noactor", NULL, NULL);
    is_int(query_int(db, "SELECT count(*) FROM audit WHERE actor='system' AND action='test.noactor'"
                         " AND target IS NULL"),
           1, "store_audit without actor records 'system'");
    char *wal = xasprintf("%s-wal", db_path), *shm = xasprintf("%s-shm", db_path);
    is_int(mode_of(wal), 0600, "tlsbox.db-wal is 0600");
    is_int(mode_of(shm), 0600, "tlsbox.db-shm is 0600");

    /* A second connection is set up the same way and sees the data. */
    sqlite3 *c = store_connect();
    ok(c != NULL, "store_connect");
    check_pragmas(c, "store_connect");
    is_int(query_int(c, "SELECT count(*) FROM audit"), 2, "second connection sees the audit rows");

    /* Transactions: rollback drops, commit keeps; errors name the file. */
    err = NULL;
    is_int(store_begin(c, &err), 0, "store_begin");
    store_exec(c, "INSERT INTO plugin_kv VALUES ('t', 'a', 'x')", NULL);
    store_rollback(c);
    is_int(query_int(c, "SELECT count(*) FROM plugin_kv"), 0, "rollback drops the insert");
    store_begin(c, NULL);
    store_exec(c, "INSERT INTO plugin_kv VALUES ('t', 'a', 'x')", NULL);
    is_int(store_commit(c, &err), 0, "store_commit");
    is_int(query_int(db, "SELECT count(*) FROM plugin_kv"), 1,
           "commit is seen by the main connection");
    is_int(store_exec(c, "INSERT INTO nosuchtable VALUES (1)", &err), -EIO,
           "store_exec fails on bad SQL");
    like(err, "tlsbox.db: no such table: nosuchtable", "error names the file and the problem");
    free(err);
    err = NULL;
    store_exec(c,
               "INSERT INTO admin_sessions (token_hash, user_id, csrf_token, created_at, "
               "expires_at) VALUES (x'00', 42, 'c', 0, 0)",
               &err);
    like(err, "FOREIGN KEY", "foreign keys are enforced");
    free(err);
    store_disconnect(c);

    store_close();
    ok(store_main() == NULL, "store_close clears the main connection");
    is_int(access(wal, F_OK), -1, "clean close removes the -wal file");

    /* Reopening an up-to-date store changes nothing and migrates nothing; a
     * database restored with a looser mode is tightened. */
    err = NULL;
    chmod(db_path, 0644);
    is_int(store_init(state, &err), 0, "store_init on an existing store");
    is_int(mode_of(db_path), 0600, "a 0644 tlsbox.db is tightened to 0600");
    is_int(store_schema_version(store_main()), newest(), "still the newest schema");
    is_int(query_int(store_main(), "SELECT count(*) FROM audit"), 2, "data kept");
    store_close();
    free(err);
    free(wal);
    free(shm);
    free(db_path);
}

/* Migrations above the embedded ones: applied in order, once, all or nothing. */
static void test_upgrade(const char *state)
{
    char *err = NULL;
    int n = store_migrations_count, v = newest();
    struct store_migration *migs = xcalloc((size_t)n + 3, sizeof *migs);
    memcpy(migs, store_migrations, (size_t)n * sizeof *migs);
    migs[n] = (struct store_migration){v + 1, "9001_test.sql",
                                       "CREATE TABLE test_two (x INTEGER);\n"
                                       "INSERT INTO test_two VALUES (2);\n"};
    migs[n + 1] = (struct store_migration){v + 2, "9002_bad.sql",
                                           "CREATE TABLE test_three (x INTEGER);\n"
                                           "INSERT INTO no_such_table VALUES (3);\n"};

    is_int(store_init(state, &err), 0, "store_init (embedded schema)");
    sqlite3 *db = store_main();
    is_int(store_schema_version(db), v, "at the newest embedded schema before the upgrade");
    is_int(store_migrate(db, migs, n + 1, &err), 0, "store_migrate applies one more migration");
    is_int(store_schema_version(db), v + 1, "user_version is one more");
    is_int(query_int(db, "SELECT x FROM test_two"), 2, "the new migration ran");
    is_int(store_migrate(db, migs, n + 1, &err), 0, "second run succeeds");
    is_int(store_schema_version(db), v + 1, "second run: version unchanged");
    is_int(query_int(db, "SELECT count(*) FROM test_two"), 1, "second run: migration not re-run");

    /* A failing migration is all or nothing: no table, version unchanged. */
    is_int(store_migrate(db, migs, n + 2, &err), -EIO, "a failing migration is -EIO");
    like(err, "migration 9002_bad.sql: ", "error names the migration");
    like(err, "no such table: no_such_table", "and the SQLite problem");
    is_int(store_schema_version(db), v + 1, "version unchanged");
    ok(!table_exists(db, "test_three"), "nothing of the failed migration remains");
    free(err);
    err = NULL;

    /* With the list out of order, migrations still apply by version. */
    migs[n + 1] = (struct store_migration){v + 3, "9004_four.sql", "CREATE TABLE test_four (x);"};
    migs[n + 2] = (struct store_migration){v + 2, "9003_three.sql", "CREATE TABLE test_three (x);"};
    is_int(store_migrate(db, migs, n + 3, &err), 0, "two more migrations applied");
    is_int(store_schema_version(db), v + 3, "user_version is three more");
    ok(table_exists(db, "test_three") && table_exists(db, "test_four"), "both tables exist");
    store_close();
    free(err);
    free(migs);
}

static void test_refuse_newer(const char *state)
{
    char *err = NULL;
    char *db_path = xasprintf("%s/tlsbox.db", state);
    sqlite3 *db = NULL;

    /* A store written by a future tlsboxd: rollback journal, user_version 99. */
    mkdir(state, 0700);
    is_int(sqlite3_open(db_path, &db), SQLITE_OK, "create a future store");
    sqlite3_exec(db,
                 "CREATE TABLE future (x); INSERT INTO future VALUES (1); PRAGMA user_version = 99",
                 NULL, NULL, NULL);
    sqlite3_close(db);
    size_t len0, len1;
    char *before = slurp(db_path, &len0);
    struct stat st0, st1;
    stat(db_path, &st0);

    is_int(store_init(state, &err), -EPROTO, "store_init refuses schema 99 (-EPROTO)");
    char *want = xasprintf("%s: store schema version 99 is newer than this tlsboxd knows (%d); "
                           "upgrade tlsbox or restore a backup",
                           db_path, store_migrations[store_migrations_count - 1].version);
    is_str(err, want, "the message names the file, both versions and what to do");
    ok(store_main() == NULL, "no main connection after the refusal");
    char *after = slurp(db_path, &len1);
    stat(db_path, &st1);
    ok(before && after && len0 == len1 && memcmp(before, after, len0) == 0,
       "database file unchanged byte for byte");
    ok(st0.st_mtime == st1.st_mtime, "mtime unchanged");
    char *wal = xasprintf("%s-wal", db_path);
    is_int(access(wal, F_OK), -1, "no -wal file left behind");

    /* store_migrate refuses too, also without change. */
    free(err);
    err = NULL;
    sqlite3_open(db_path, &db);
    is_int(store_migrate(db, store_migrations, store_migrations_count, &err), -EPROTO,
           "store_migrate refuses schema 99");
    like(err, "store schema version 99 is newer than this tlsboxd knows", "same message");
    is_int(store_schema_version(db), 99, "user_version still 99");
    sqlite3_close(db);
    free(err);
    free(want);
    free(wal);
    free(before);
    free(after);
    free(db_path);
}

/* A state directory reached through a symbolic link (the directory itself,
 * or one above it): refused, naming the link, before the store is created
 * in the target (SQLite would refuse the path only after that). */
static void test_symlinked_dir(void)
{
    char *err = NULL;
    char *real = xasprintf("%s/real-state", tmp);
    char *link = xasprintf("%s/link-state", tmp);
    char *below = xasprintf("%s/sub", link);
    char *made = xasprintf("%s/tlsbox.db", real);
    char *made_below = xasprintf("%s/sub", real);
    mkdir(real, 0700);
    ok(symlink(real, link) == 0, "link-state is a symlink to a directory");
    is_int(store_init(link, &err), -ELOOP, "store_init refuses a symlinked state directory");
    char *want = xasprintf("%s: %s is a symbolic link (to %s): ", link, link, real);
    like(err, want, "error names the link and its target");
    free(want);
    free(err);
    err = NULL;
    is_int(store_init(below, &err), -ELOOP, "and a state directory below a symlink");
    want = xasprintf("%s: %s is a symbolic link (to %s): ", below, link, real);
    like(err, want, "error names the directory, the link and its target");
    free(want);
    free(err);
    is_int(access(made, F_OK) + access(made_below, F_OK), -2,
           "no store and no directory created in the target");
    free(real);
    free(link);
    free(below);
    free(made);
    free(made_below);
}

static void test_symlink(const char *state)
{
    char *err = NULL;
    char *target = xasprintf("%s/elsewhere.db", tmp);
    char *db_path = xasprintf("%s/tlsbox.db", state);
    mkdir(state, 0700);
    ok(symlink(target, db_path) == 0, "tlsbox.db is a symlink");
    is_int(store_init(state, &err), -EIO, "store_init refuses a symlinked database (-EIO)");
    like(err, "tlsbox.db: cannot open", "error names the file");
    is_int(access(target, F_OK), -1, "nothing created at the symlink's target");
    free(err);
    free(target);
    free(db_path);
}

int main(void)
{
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    char *s1 = xasprintf("%s/fresh", tmp), *s2 = xasprintf("%s/upgrade", tmp),
         *s3 = xasprintf("%s/newer", tmp), *s4 = xasprintf("%s/link", tmp);
    test_fresh(s1);
    test_upgrade(s2);
    test_refuse_newer(s3);
    test_symlink(s4);
    test_symlinked_dir();
    char *s5 = xasprintf("%s/wal", tmp);
    test_wal_limit(s5);
    free(s5);
    free(s1);
    free(s2);
    free(s3);
    free(s4);
    if (getenv("TLSBOX_KEEP_TMP") == NULL) {
        char *cmd = xasprintf("rm -rf '%s'", tmp);
        if (system(cmd) != 0)
            diag("could not remove %s", tmp);
        free(cmd);
    }
    return done_testing();
}
