/* notify_deliveries: one row per delivery, updated after each try; the
 * newest NOTIFY_KEEP are kept.  Short writes, on the calling thread. */
#include "plugins/notify/notify.h"

#include <time.h>

#include <sqlite3.h>

int64_t notify_store_add(struct notify *n, const char *event, const char *origin)
{
    sqlite3 *db = n->host->store_open(n->self);
    if (!db)
        return 0;
    sqlite3_stmt *st = NULL;
    int64_t row = 0;
    sqlite3_int64 now = (sqlite3_int64)time(NULL);
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO notify_deliveries (at, event, origin, status, updated_at) "
                           "VALUES (?1, ?2, ?3, 'queued', ?1)",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, now);
        sqlite3_bind_text(st, 2, event, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, origin, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_DONE)
            row = sqlite3_last_insert_rowid(db);
    }
    sqlite3_finalize(st);
    if (!row)
        n->host->log(n->self, TLSBOX_LOG_WARN, "cannot record a delivery: %s", sqlite3_errmsg(db));
    sqlite3_exec(db,
                 "DELETE FROM notify_deliveries WHERE id <= (SELECT id FROM notify_deliveries "
                 "ORDER BY id DESC LIMIT 1 OFFSET 200)", /* NOTIFY_KEEP */
                 NULL, NULL, NULL);
    n->host->store_close(n->self, db);
    return row;
}

void notify_store_update(struct notify *n, int64_t row, const char *status, int tries,
                         long http_status, const char *error)
{
    if (!row)
        return;
    sqlite3 *db = n->host->store_open(n->self);
    if (!db)
        return;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "UPDATE notify_deliveries SET status = ?2, tries = ?3, http_status = "
                           "?4, error = ?5, updated_at = ?6 WHERE id = ?1",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, row);
        sqlite3_bind_text(st, 2, status, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 3, tries);
        if (http_status)
            sqlite3_bind_int64(st, 4, http_status);
        else
            sqlite3_bind_null(st, 4);
        if (error)
            sqlite3_bind_text(st, 5, error, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 5);
        sqlite3_bind_int64(st, 6, (sqlite3_int64)time(NULL));
        if (sqlite3_step(st) != SQLITE_DONE)
            n->host->log(n->self, TLSBOX_LOG_WARN, "cannot record a delivery: %s",
                         sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    n->host->store_close(n->self, db);
}
