#include "core/plugin_schema.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "core/log.h"
#include "core/store.h"
#include "core/store_guard.h"
#include "core/xalloc.h"

int plugin_schema_count(const struct tlsbox_migration *steps)
{
    int n = 0;
    while (steps && steps[n].name)
        n++;
    return n;
}

int plugin_schema_version(sqlite3 *db, const char *plugin)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT version FROM plugin_schema WHERE plugin = ?1", -1, &st,
                           NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(st, 1, plugin, -1, SQLITE_STATIC);
    int rc = store_step_row(st);
    int v = rc == 0 ? sqlite3_column_int(st, 0) : rc == -ENOENT ? 0 : rc;
    sqlite3_finalize(st);
    return v;
}

static int record_version(sqlite3 *db, const char *plugin, int version)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO plugin_schema (plugin, version, applied_at) "
                           "VALUES (?1, ?2, ?3) ON CONFLICT (plugin) DO UPDATE SET "
                           "version = excluded.version, applied_at = excluded.applied_at",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(st, 1, plugin, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, version);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)time(NULL));
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    sqlite3_finalize(st);
    return rc;
}

/* One step on the core's connection @p db, under the plugin's guard.  Its
 * triggers fire in it (a step may insert into a table of the plugin's with
 * one), checked by the guard like the step; off again after it, as on every
 * core connection (store_set_triggers). */
static int run_step(sqlite3 *db, const char *plugin, const struct tlsbox_migration *step,
                    char **err)
{
    if (store_guard_attach_migration(db, plugin) < 0 || store_set_triggers(db, 1) < 0) {
        store_guard_detach(db);
        xset_err(err, "cannot install the table guard");
        return -EIO;
    }
    int r = store_exec(db, step->sql, err);
    if (store_set_triggers(db, 0) < 0 && r == 0) {
        xset_err(err, "cannot turn triggers off again: %s", sqlite3_errmsg(db));
        r = -EIO;
    }
    store_guard_detach(db);
    return r;
}

int plugin_schema_migrate(sqlite3 *db, const char *plugin, const struct tlsbox_migration *steps,
                          char **err)
{
    int n = plugin_schema_count(steps);
    int rc = -EIO;
    char *e = NULL;
    struct store_guard_mark *mark = NULL;

    /* The version is read inside the write transaction, so two daemons on
     * one store cannot both apply the same step. */
    if (store_begin(db, &e) < 0) {
        xset_err(err, "plugin %s: cannot start the schema transaction: %s", plugin, e);
        goto out;
    }
    int cur = plugin_schema_version(db, plugin);
    if (cur < 0) {
        xset_err(err, "plugin %s: cannot read its schema version: %s", plugin, sqlite3_errmsg(db));
        goto out;
    }
    if (cur > n) {
        xset_err(err,
                 "plugin %s: refused: the store has schema version %d of its tables, this "
                 "plugin knows %d (the store was written by a newer version of the plugin); "
                 "upgrade the plugin",
                 plugin, cur, n);
        rc = -EPROTO;
        goto out;
    }
    if (cur == n) {
        store_rollback(db); /* nothing to write */
        return 0;
    }
    /* The steps run under the plugin's guard, as its own connections do: a
     * step that touches a table the plugin does not own fails here.  What
     * the guard cannot see (the counters in sqlite_sequence, the new name of
     * a rename, foreign keys, temporary objects left on this connection) is
     * checked after each step, still inside the transaction. */
    if (!(mark = store_guard_mark(db, plugin, &e))) {
        xset_err(err, "plugin %s: cannot apply its schema: %s", plugin, e);
        goto out;
    }
    for (int i = cur; i < n; i++) {
        int r = run_step(db, plugin, &steps[i], &e);
        if (r == 0)
            r = store_guard_verify(db, plugin, mark, &e);
        if (r < 0) {
            xset_err(err, "plugin %s: migration %s failed: %s", plugin, steps[i].name, e);
            goto out;
        }
    }
    if (record_version(db, plugin, n) < 0) {
        xset_err(err, "plugin %s: cannot record schema version %d: %s", plugin, n,
                 sqlite3_errmsg(db));
        goto out;
    }
    if (store_commit(db, &e) < 0) {
        xset_err(err, "plugin %s: schema commit failed: %s", plugin, e);
        goto out;
    }
    log_info("store: plugin %s schema %d -> %d", plugin, cur, n);
    store_guard_mark_free(mark);
    free(e);
    return n - cur;
out:
    store_rollback(db);
    store_guard_mark_free(mark);
    free(e);
    return rc;
}

int plugin_schema_check(sqlite3 *db, const char *plugin, char **err)
{
    char *e = NULL;
    int rc = store_guard_check_foreign_keys(db, plugin, &e);
    if (rc == -EPERM)
        xset_err(err,
                 "plugin %s: refused: %s; the store is left as it is: a migration step of the "
                 "plugin that rebuilds the table without that foreign key, or dropping the "
                 "table, lets the plugin start",
                 plugin, e);
    else if (rc < 0)
        xset_err(err, "plugin %s: cannot check its tables: %s", plugin, e);
    free(e);
    return rc;
}
