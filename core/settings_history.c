/* The settings history: see core/settings_history.h. */
#include "core/settings_history.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/store.h"
#include "core/xalloc.h"

static bool same_value(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

static void bind_text_or_null(sqlite3_stmt *st, int col, const char *s)
{
    if (s)
        sqlite3_bind_text(st, col, s, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, col);
}

static int sql_fail(sqlite3 *db, const char *what, char **err)
{
    xset_err(err, "settings history: cannot %s: %s", what, sqlite3_errmsg(db));
    return -EIO;
}

int settings_history_record(sqlite3 *db, const char *actor, long long undo_of,
                            const struct settings_history_item *items, size_t n, long long *id,
                            char **err)
{
    static const char add_change[] =
        "INSERT INTO settings_changes (at, actor, undo_of) VALUES (?1, ?2, ?3)";
    static const char add_item[] = "INSERT INTO settings_change_items "
                                   "(change_id, key, old_value, new_value, secret) "
                                   "VALUES (?1, ?2, ?3, ?4, ?5)";
    /* Ids only grow (AUTOINCREMENT): the newest KEEP are those above id - KEEP. */
    static const char drop_items[] = "DELETE FROM settings_change_items WHERE change_id <= ?1";
    static const char drop_changes[] = "DELETE FROM settings_changes WHERE id <= ?1";
    sqlite3_stmt *st = NULL;
    size_t changed = 0;
    int rc = -EIO;

    *id = 0;
    for (size_t k = 0; k < n; k++)
        changed += items[k].secret || !same_value(items[k].old_value, items[k].new_value);
    if (!changed)
        return 0;

    if (sqlite3_prepare_v2(db, add_change, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db, "record a change", err);
    sqlite3_bind_int64(st, 1, (sqlite3_int64)time(NULL));
    sqlite3_bind_text(st, 2, actor && *actor ? actor : "system", -1, SQLITE_STATIC);
    if (undo_of > 0)
        sqlite3_bind_int64(st, 3, undo_of);
    else
        sqlite3_bind_null(st, 3);
    if (sqlite3_step(st) != SQLITE_DONE) {
        rc = sql_fail(db, "record a change", err);
        goto out;
    }
    long long cid = sqlite3_last_insert_rowid(db);
    sqlite3_finalize(st);

    if (sqlite3_prepare_v2(db, add_item, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db, "record a change", err);
    for (size_t k = 0; k < n; k++) {
        const struct settings_history_item *it = &items[k];
        if (!it->secret && same_value(it->old_value, it->new_value))
            continue;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, cid);
        sqlite3_bind_text(st, 2, it->key, -1, SQLITE_STATIC);
        /* A secret's values stay out of the history, whatever the caller gave. */
        bind_text_or_null(st, 3, it->secret ? NULL : it->old_value);
        bind_text_or_null(st, 4, it->secret ? NULL : it->new_value);
        sqlite3_bind_int(st, 5, it->secret);
        if (sqlite3_step(st) != SQLITE_DONE) {
            rc = sql_fail(db, "record a change", err);
            goto out;
        }
    }
    sqlite3_finalize(st);
    st = NULL;

    const char *drops[] = {drop_items, drop_changes};
    for (size_t k = 0; k < 2 && cid > SETTINGS_HISTORY_KEEP; k++) {
        if (sqlite3_prepare_v2(db, drops[k], -1, &st, NULL) != SQLITE_OK)
            return sql_fail(db, "drop old changes", err);
        sqlite3_bind_int64(st, 1, cid - SETTINGS_HISTORY_KEEP);
        if (sqlite3_step(st) != SQLITE_DONE) {
            rc = sql_fail(db, "drop old changes", err);
            goto out;
        }
        sqlite3_finalize(st);
        st = NULL;
    }
    *id = cid;
    rc = 0;
out:
    sqlite3_finalize(st);
    return rc;
}

static char *column_dup(sqlite3_stmt *st, int col)
{
    const unsigned char *s = sqlite3_column_text(st, col);
    return s ? xstrdup((const char *)s) : NULL;
}

/* The items of change @p id, sorted by key, appended to @p out->items. */
static int load_items(sqlite3 *db, long long id, struct settings_history_change *out, char **err)
{
    static const char sql[] = "SELECT key, old_value, new_value, secret FROM "
                              "settings_change_items WHERE change_id = ?1 ORDER BY key";
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    int s;

    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db, "read a change", err);
    sqlite3_bind_int64(st, 1, id);
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->n == cap) {
            cap = cap ? 2 * cap : 4;
            out->items = xrealloc(out->items, cap * sizeof(*out->items));
        }
        struct settings_history_item *it = &out->items[out->n++];
        it->key = column_dup(st, 0);
        it->old_value = column_dup(st, 1);
        it->new_value = column_dup(st, 2);
        it->secret = sqlite3_column_int(st, 3) != 0;
    }
    sqlite3_finalize(st);
    return s == SQLITE_DONE ? 0 : sql_fail(db, "read a change", err);
}

int settings_history_load(sqlite3 *db, long long id, struct settings_history_change *out,
                          char **err)
{
    static const char sql[] = "SELECT at FROM settings_changes WHERE id = ?1";
    sqlite3_stmt *st = NULL;

    memset(out, 0, sizeof(*out));
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return sql_fail(db, "read a change", err);
    sqlite3_bind_int64(st, 1, id);
    int rc = store_step_row(st);
    if (rc == 0)
        out->at = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc == -ENOENT) {
        xset_err(err, "settings change %lld: no such change (the newest %d are kept)", id,
                 SETTINGS_HISTORY_KEEP);
        return rc;
    }
    if (rc < 0)
        return sql_fail(db, "read a change", err);
    out->id = id;
    if ((rc = load_items(db, id, out, err)) < 0)
        settings_history_change_free(out);
    return rc;
}

void settings_history_change_free(struct settings_history_change *c)
{
    for (size_t k = 0; k < c->n; k++) {
        free(c->items[k].key);
        free(c->items[k].old_value);
        free(c->items[k].new_value);
    }
    free(c->items);
    memset(c, 0, sizeof(*c));
}

long long settings_history_newer(sqlite3 *db, const char *key, long long id)
{
    static const char sql[] =
        "SELECT max(change_id) FROM settings_change_items WHERE key = ?1 AND change_id > ?2";
    sqlite3_stmt *st = NULL;
    long long newer = 0;

    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, id);
    if (sqlite3_step(st) == SQLITE_ROW)
        newer = sqlite3_column_int64(st, 0); /* NULL reads as 0 */
    sqlite3_finalize(st);
    return newer;
}

static json_t *text_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *id_or_null(sqlite3_stmt *st, int col)
{
    return sqlite3_column_type(st, col) == SQLITE_NULL
               ? json_null()
               : json_integer((json_int_t)sqlite3_column_int64(st, col));
}

json_t *settings_history_list(sqlite3 *db, const char *owner, int limit, long long before,
                              long long *next_before, char **err)
{
    /* One row more than asked: whether it exists says if there are older ones. */
    static const char sql[] =
        "SELECT c.id, c.at, c.actor, c.undo_of, "
        "(SELECT max(u.id) FROM settings_changes u WHERE u.undo_of = c.id) "
        "FROM settings_changes c WHERE (?1 = 0 OR c.id < ?1) AND (?2 IS NULL OR EXISTS "
        "(SELECT 1 FROM settings_change_items i WHERE i.change_id = c.id "
        "AND substr(i.key, 1, length(?2) + 1) = ?2 || '.')) ORDER BY c.id DESC LIMIT ?3";
    sqlite3_stmt *st = NULL;
    json_t *a = json_array();
    int s = SQLITE_DONE, n = 0;

    *next_before = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_int64(st, 1, before);
    bind_text_or_null(st, 2, owner);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)limit + 1);
    long long last = 0;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (n++ == limit) {
            *next_before = last;
            s = SQLITE_DONE;
            break;
        }
        last = sqlite3_column_int64(st, 0);
        struct settings_history_change c = {0};
        if (load_items(db, last, &c, err) < 0)
            goto out;
        json_t *items = json_array();
        for (size_t k = 0; k < c.n; k++)
            json_array_append_new(items, json_pack("{s:s,s:o,s:o,s:b}", "key", c.items[k].key,
                                                   "old", text_or_null(c.items[k].old_value), "new",
                                                   text_or_null(c.items[k].new_value), "secret",
                                                   c.items[k].secret));
        settings_history_change_free(&c);
        const unsigned char *actor = sqlite3_column_text(st, 2);
        json_array_append_new(a, json_pack("{s:I,s:I,s:s,s:o,s:o,s:o}", "id", (json_int_t)last,
                                           "at", (json_int_t)sqlite3_column_int64(st, 1), "actor",
                                           actor ? (const char *)actor : "", "undo_of",
                                           id_or_null(st, 3), "undone_by", id_or_null(st, 4),
                                           "items", items));
    }
    if (s == SQLITE_DONE) {
        sqlite3_finalize(st);
        return a;
    }
fail:
    sql_fail(db, "list changes", err);
out:
    sqlite3_finalize(st);
    json_decref(a);
    return NULL;
}
