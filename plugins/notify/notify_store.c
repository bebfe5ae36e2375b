/* notify_deliveries: one row per delivery, updated after each try; the
 * newest NOTIFY_KEEP are kept, and every pending one (with its body).
 * Short writes, on the calling thread. */
#include "plugins/notify/notify.h"

#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include <tlsbox/xalloc.h>

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
                 "DELETE FROM notify_deliveries WHERE body IS NULL AND id <= (SELECT id FROM "
                 "notify_deliveries ORDER BY id DESC LIMIT 1 OFFSET 200)", /* NOTIFY_KEEP */
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
                           "?4, error = ?5, updated_at = ?6, body = CASE WHEN ?2 IN ('delivered', "
                           "'failed') THEN NULL ELSE body END WHERE id = ?1",
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

void notify_store_keep(struct notify *n, int64_t row, const char *body, const char *rcpt)
{
    sqlite3 *db = row ? n->host->store_open(n->self) : NULL;
    if (!db)
        return;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "UPDATE notify_deliveries SET body = ?2, rcpt = ?3 WHERE id = ?1",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, row);
        sqlite3_bind_text(st, 2, body, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, rcpt, -1, SQLITE_STATIC); /* NULL binds NULL */
        if (sqlite3_step(st) != SQLITE_DONE)
            n->host->log(n->self, TLSBOX_LOG_WARN,
                         "cannot keep delivery %lld for a retry after a stop: %s", (long long)row,
                         sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    n->host->store_close(n->self, db);
}

/* A column's text, copied (NULL stays NULL). */
static char *column_dup(sqlite3_stmt *st, int col)
{
    const char *t = (const char *)sqlite3_column_text(st, col);
    return t ? tlsbox_xstrdup(t) : NULL;
}

struct notify_delivery *notify_store_pending(struct notify *n)
{
    sqlite3 *db = n->host->store_open(n->self);
    if (!db)
        return NULL;
    struct notify_delivery *head = NULL, **tail = &head;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT id, event, origin, body, rcpt, tries FROM notify_deliveries "
                           "WHERE body IS NOT NULL ORDER BY id",
                           -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            struct notify_delivery *d = tlsbox_xcalloc(1, sizeof *d);
            d->n = n;
            d->row = sqlite3_column_int64(st, 0);
            d->event = column_dup(st, 1);
            /* As GET notify/deliveries tells the channel: a webhook's URL
             * is http(s)://, the mail server's smtp(s)://. */
            const char *origin = (const char *)sqlite3_column_text(st, 2);
            d->mail = origin && strncmp(origin, "smtp", 4) == 0;
            d->body = column_dup(st, 3);
            d->rcpt = column_dup(st, 4);
            d->tries = sqlite3_column_int(st, 5);
            *tail = d;
            tail = &d->next;
        }
    }
    sqlite3_finalize(st);
    n->host->store_close(n->self, db);
    return head;
}
