/* The mock host's store: a temporary SQLite file with the plugin's
 * migrations applied, guarded by the daemon's own rule (core/store_guard.c,
 * compiled into this library under tlsbox_mock_ names). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/store.h"
#include "core/store_guard.h"
#include "mock.h"

static char *path;
static sqlite3 *test_db;

/* store_guard.c logs its refusals through log_msg: into the captured log. */
void log_msg(const char *who, enum tlsbox_log_level level, const char *fmt, ...)
{
    va_list ap;
    (void)who;
    va_start(ap, fmt);
    tlsbox_mockp_vlog(NULL, level, fmt, ap);
    va_end(ap);
}

static sqlite3 *open_conn(void)
{
    sqlite3 *db = NULL;
    if (!path || sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    /* As core/store.c sets up every connection: a plugin's code sees the
     * same result codes (SQLITE_CONSTRAINT_PRIMARYKEY, not SQLITE_CONSTRAINT). */
    sqlite3_busy_timeout(db, 5000);
    sqlite3_extended_result_codes(db, 1);
    sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON",
                 NULL, NULL, NULL);
    return db;
}

/* The core's schema first, so the plugin's steps meet the store the daemon
 * has (core tables included: a step may read them); then all the plugin's
 * steps in one transaction, under the guard, as the core applies them. */
static int migrate(sqlite3 *db, const struct tlsbox_plugin_desc *d)
{
    const struct tlsbox_migration *m = TLSBOX_DESC_HAS(d, migrations) ? d->migrations : NULL;
    char *msg = NULL, *why = NULL;
    struct store_guard_mark *mark = NULL;
    int rc = -EIO;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK)
        goto out;
    for (int i = 0; i < store_migrations_count; i++)
        if (sqlite3_exec(db, store_migrations[i].sql, NULL, NULL, &msg) != SQLITE_OK) {
            fprintf(stderr, "# mock host: core schema %s: %s\n", store_migrations[i].name, msg);
            goto out;
        }
    /* No COMMIT in a step, and after each step the core's checks of what
     * the guard cannot see, as in the core (core/plugin_schema.c). */
    if (!(mark = store_guard_mark(db, d->name, &why))) {
        fprintf(stderr, "# mock host: plugin %s: %s\n", d->name, why);
        goto out;
    }
    for (; m && m->name; m++) {
        store_guard_attach_migration(db, d->name);
        int ok = sqlite3_exec(db, m->sql, NULL, NULL, &msg) == SQLITE_OK;
        store_guard_detach(db);
        if (!ok || store_guard_verify(db, d->name, mark, &why) < 0) {
            fprintf(stderr, "# mock host: plugin %s: migration %s failed: %s\n", d->name, m->name,
                    ok ? why : msg);
            goto out;
        }
    }
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, &msg) == SQLITE_OK)
        rc = 0;
out:
    store_guard_detach(db);
    if (rc < 0)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    store_guard_mark_free(mark);
    sqlite3_free(msg);
    free(why);
    return rc;
}

int tlsbox_mockp_store_setup(const struct tlsbox_plugin_desc *d)
{
    const char *tmp = getenv("TMPDIR");
    path = tlsbox_xasprintf("%s/tlsbox-mock-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", d->name);
    int fd = mkstemp(path);
    if (fd < 0) {
        int e = errno;
        fprintf(stderr, "# mock host: %s: %s\n", path, strerror(e));
        free(path);
        path = NULL;
        return -e;
    }
    close(fd);
    test_db = open_conn();
    int rc = test_db ? migrate(test_db, d) : -EIO;
    if (rc < 0)
        tlsbox_mockp_store_teardown();
    return rc;
}

void tlsbox_mockp_store_teardown(void)
{
    sqlite3_close(test_db);
    test_db = NULL;
    if (path) {
        static const char *const ext[] = {"", "-wal", "-shm", "-journal"};
        for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
            char *f = tlsbox_xasprintf("%s%s", path, ext[i]);
            unlink(f);
            free(f);
        }
    }
    free(path);
    path = NULL;
}

sqlite3 *tlsbox_mockp_store_open(struct tlsbox_plugin *self)
{
    (void)self;
    sqlite3 *db = open_conn();
    if (db && store_guard_attach(db, tlsbox_mockp.self.name) < 0) {
        sqlite3_close(db);
        db = NULL;
    }
    return db;
}

void tlsbox_mockp_store_close(struct tlsbox_plugin *self, sqlite3 *db)
{
    (void)self;
    sqlite3_close(db);
}

const char *tlsbox_mock_store_path(void)
{
    return path;
}

sqlite3 *tlsbox_mock_db(void)
{
    return test_db;
}

int64_t tlsbox_mock_query_int(const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = INT64_MIN;
    if (test_db && sqlite3_prepare_v2(test_db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}
