/* The host calls dh_set and dh_served: the core's tls_dh row, written after
 * tls_dh_check, announced with "dh.changed"; the served side read from the
 * current bundle. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/events.h"
#include "core/log.h"
#include "core/plugin_loader.h"
#include "core/store.h"
#include "core/tls.h"
#include "core/tls_bundle.h"
#include "core/tls_dh.h"
#include "core/xalloc.h"

/* True when the tls_dh row already says what @p pem / @p c / @p source say
 * (pem NULL: when there is no row). */
static bool dh_unchanged(sqlite3 *db, const char *pem, const struct tls_dh_check *c,
                         const char *source)
{
    sqlite3_stmt *st = NULL;
    bool same = false;
    if (sqlite3_prepare_v2(db, "SELECT fingerprint, source FROM tls_dh", -1, &st, NULL) !=
        SQLITE_OK)
        return false;
    int s = sqlite3_step(st);
    if (!pem)
        same = s == SQLITE_DONE;
    else if (s == SQLITE_ROW)
        same = strcmp((const char *)sqlite3_column_text(st, 0), c->fingerprint) == 0 &&
               strcmp((const char *)sqlite3_column_text(st, 1), source) == 0;
    sqlite3_finalize(st);
    return same;
}

/* Replace (pem) or delete (pem NULL) the tls_dh row, with an audit line.
 * Returns 0 when written, 1 when the row already said so (nothing written). */
static int dh_store(sqlite3 *db, const char *pem, const struct tls_dh_check *c, const char *source,
                    const char *actor, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    if (store_begin(db, err) < 0)
        return rc;
    if (dh_unchanged(db, pem, c, source)) {
        store_rollback(db);
        return 1;
    }
    const char *sql = pem ? "INSERT OR REPLACE INTO tls_dh (id, pem, bits, fingerprint, "
                            "safe_prime, source, set_by, set_at) VALUES (1, ?, ?, ?, ?, ?, ?, ?)"
                          : "DELETE FROM tls_dh";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto fail;
    if (pem) {
        sqlite3_bind_text(st, 1, pem, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 2, c->bits);
        sqlite3_bind_text(st, 3, c->fingerprint, -1, SQLITE_STATIC);
        sqlite3_bind_int(st, 4, c->safe_prime);
        sqlite3_bind_text(st, 5, source, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, actor, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 7, (sqlite3_int64)time(NULL));
    }
    if (sqlite3_step(st) != SQLITE_DONE)
        goto fail;
    sqlite3_finalize(st);
    st = NULL;
    char *detail = pem ? xasprintf("%s, %d bits, %s", source, c->bits, c->fingerprint)
                       : xstrdup("RFC 7919 groups");
    store_audit(db, actor, "dh.set", "tls_dh", detail);
    free(detail);
    if (store_commit(db, err) < 0)
        goto fail;
    return 0;
fail:
    if (!*err)
        *err = xasprintf("store: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    store_rollback(db);
    return rc;
}

static bool source_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 32)
        return false;
    return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

int tls_dh_set(struct tlsbox_plugin *self, const char *pem, const char *source, unsigned flags,
               char **err)
{
    struct tls_dh_check c = {0};
    const char *actor = self && self->name ? self->name : "core";
    *err = NULL;
    if (pem && !source_ok(source)) {
        *err = xstrdup("DH parameters: source must be 1-32 of a-z 0-9 _ -");
        return -EINVAL;
    }
    if (pem && tls_dh_check(pem, &c, err) < 0)
        return -EINVAL;
    if (flags & TLSBOX_DH_CHECK_ONLY)
        return c.bits;
    sqlite3 *db = store_connect();
    if (!db) {
        *err = xstrdup("store: cannot open a connection");
        return -EIO;
    }
    int rc = dh_store(db, pem, &c, source, actor, err);
    store_disconnect(db);
    if (rc < 0)
        return rc;
    if (rc == 1) /* served already: no rebuild */
        return c.bits;
    char *ev = pem ? xasprintf("{\"source\":\"%s\",\"bits\":%d,\"fingerprint\":\"%s\"}", source,
                               c.bits, c.fingerprint)
                   : xstrdup("{\"source\":\"rfc7919\"}");
    log_info("tls: DH parameters set by %s: %s", actor, ev);
    events_publish("dh.changed", ev);
    free(ev);
    return c.bits;
}

char *tls_dh_served(struct tlsbox_plugin *self)
{
    (void)self;
    struct tlsbox_bundle *b = tls_bundle_acquire();
    const char *text = b ? tls_bundle_dh_text(b) : NULL;
    char *out = text ? xstrdup(text) : NULL;
    tls_bundle_release(b);
    return out;
}
