/* The plugin's rows in the store: accounts, orders, attempt history, acme_kv. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/acme/acme.h"

/* History kept per certificate name (bounded writes and size on SD cards). */
#define STORE_EVENTS_KEEP_S "500"
/* Finished orders (done, invalid, abandoned: no key left) kept per name.  A
 * failing renewal places a new order every try, up to four a day for ever:
 * only the newest few are of any use to a person reading the store. */
#define STORE_ORDERS_KEEP_S "20"

static char *store_col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? tlsbox_xstrdup((const char *)t) : NULL;
}

static void store_bind_text(sqlite3_stmt *st, int i, const char *v)
{
    if (v)
        sqlite3_bind_text(st, i, v, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

/* Run one statement with text parameters (NULL binds NULL); -EIO on failure. */
static int store_exec(sqlite3 *db, const char *sql, int n, const char *const *args)
{
    sqlite3_stmt *st = NULL;
    int ret = -EIO;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto out;
    for (int i = 0; i < n; i++)
        store_bind_text(st, i + 1, args[i]);
    if (sqlite3_step(st) == SQLITE_DONE)
        ret = 0;
out:
    sqlite3_finalize(st);
    return ret;
}

int acme_store_account_get(sqlite3 *db, const char *directory, int64_t *id, char **key_pem,
                           char **url)
{
    sqlite3_stmt *st = NULL;
    int ret = -EIO;
    if (sqlite3_prepare_v2(db,
                           "SELECT id, key_pem, account_url FROM acme_accounts WHERE directory=?1",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_text(st, 1, directory, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        ret = -ENOENT;
        goto out;
    }
    if (rc != SQLITE_ROW)
        goto out;
    *id = sqlite3_column_int64(st, 0);
    const void *k = sqlite3_column_blob(st, 1);
    int kn = sqlite3_column_bytes(st, 1);
    *key_pem = tlsbox_xstrndup(k ? k : "", (size_t)kn);
    *url = store_col_text(st, 2);
    ret = 0;
out:
    sqlite3_finalize(st);
    return ret;
}

int acme_store_account_put(sqlite3 *db, const char *directory, const char *email,
                           const char *key_pem, int64_t *id)
{
    sqlite3_stmt *st = NULL;
    int ret = -EIO;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO acme_accounts (directory, email, key_pem, created_at) "
                           "VALUES (?1, ?2, ?3, strftime('%s','now'))",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    store_bind_text(st, 1, directory);
    store_bind_text(st, 2, email);
    sqlite3_bind_blob(st, 3, key_pem, (int)strlen(key_pem), SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto out;
    *id = sqlite3_last_insert_rowid(db);
    ret = 0;
out:
    sqlite3_finalize(st);
    return ret;
}

int acme_store_account_set_url(sqlite3 *db, int64_t id, const char *url)
{
    char ids[32];
    snprintf(ids, sizeof(ids), "%lld", (long long)id);
    const char *args[] = {url, ids};
    return store_exec(db, "UPDATE acme_accounts SET account_url=?1 WHERE id=?2", 2, args);
}

void acme_order_row_free(struct acme_order_row *o)
{
    free(o->cert_name);
    free(o->domains);
    free(o->key_type);
    free(o->order_url);
    free(o->status);
    free(o->finalize_url);
    free(o->cert_url);
    tlsbox_wipe_free_str(o->key_pem);
    free(o->replaces);
    memset(o, 0, sizeof(*o));
}

int acme_store_order_open(sqlite3 *db, const char *cert_name, struct acme_order_row *o)
{
    sqlite3_stmt *st = NULL;
    int ret = -EIO;
    memset(o, 0, sizeof(*o));
    if (sqlite3_prepare_v2(db,
                           "SELECT id, account_id, cert_name, domains, key_type, order_url, "
                           "status, finalize_url, cert_url, key_pem, replaces FROM acme_orders "
                           "WHERE cert_name=?1 AND status NOT IN ('done','abandoned','invalid') "
                           "ORDER BY id DESC LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_text(st, 1, cert_name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        ret = -ENOENT;
        goto out;
    }
    if (rc != SQLITE_ROW)
        goto out;
    o->id = sqlite3_column_int64(st, 0);
    o->account_id = sqlite3_column_int64(st, 1);
    o->cert_name = store_col_text(st, 2);
    o->domains = store_col_text(st, 3);
    o->key_type = store_col_text(st, 4);
    o->order_url = store_col_text(st, 5);
    o->status = store_col_text(st, 6);
    o->finalize_url = store_col_text(st, 7);
    o->cert_url = store_col_text(st, 8);
    if (sqlite3_column_type(st, 9) != SQLITE_NULL)
        o->key_pem =
            tlsbox_xstrndup(sqlite3_column_blob(st, 9), (size_t)sqlite3_column_bytes(st, 9));
    o->replaces = store_col_text(st, 10);
    ret = 0;
out:
    sqlite3_finalize(st);
    return ret;
}

int acme_store_order_insert(sqlite3 *db, struct acme_order_row *o)
{
    sqlite3_stmt *st = NULL;
    int ret = -EIO;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO acme_orders (account_id, cert_name, domains, key_type, "
                           "order_url, status, finalize_url, cert_url, key_pem, replaces, "
                           "created_at, updated_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,"
                           "strftime('%s','now'), strftime('%s','now'))",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int64(st, 1, o->account_id);
    store_bind_text(st, 2, o->cert_name);
    store_bind_text(st, 3, o->domains);
    store_bind_text(st, 4, o->key_type);
    store_bind_text(st, 5, o->order_url);
    store_bind_text(st, 6, o->status);
    store_bind_text(st, 7, o->finalize_url);
    store_bind_text(st, 8, o->cert_url);
    if (o->key_pem)
        sqlite3_bind_blob(st, 9, o->key_pem, (int)strlen(o->key_pem), SQLITE_STATIC);
    store_bind_text(st, 10, o->replaces);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto out;
    o->id = sqlite3_last_insert_rowid(db);
    ret = 0;
    /* An unfinished order is never dropped: a crash resumes it. */
    const char *args[] = {o->cert_name};
    store_exec(
        db,
        "DELETE FROM acme_orders WHERE cert_name=?1 AND status IN ('done','abandoned',"
        "'invalid') AND id <= (SELECT id FROM acme_orders WHERE cert_name=?1 AND status "
        "IN ('done','abandoned','invalid') ORDER BY id DESC LIMIT 1 OFFSET " STORE_ORDERS_KEEP_S
        ")",
        1, args);
out:
    sqlite3_finalize(st);
    return ret;
}

int acme_store_order_update(sqlite3 *db, const struct acme_order_row *o)
{
    sqlite3_stmt *st = NULL;
    int ret = -EIO;
    if (sqlite3_prepare_v2(db,
                           "UPDATE acme_orders SET order_url=?2, status=?3, finalize_url=?4, "
                           "cert_url=?5, key_pem=?6, updated_at=strftime('%s','now') WHERE id=?1",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int64(st, 1, o->id);
    store_bind_text(st, 2, o->order_url);
    store_bind_text(st, 3, o->status);
    store_bind_text(st, 4, o->finalize_url);
    store_bind_text(st, 5, o->cert_url);
    if (o->key_pem)
        sqlite3_bind_blob(st, 6, o->key_pem, (int)strlen(o->key_pem), SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 6);
    if (sqlite3_step(st) == SQLITE_DONE)
        ret = 0;
out:
    sqlite3_finalize(st);
    return ret;
}

int acme_store_order_set_status(sqlite3 *db, int64_t id, const char *status)
{
    char ids[32];
    snprintf(ids, sizeof(ids), "%lld", (long long)id);
    const char *args[] = {status, ids};
    /* A finished order keeps no key: the certificate row holds the one in use. */
    return store_exec(db,
                      "UPDATE acme_orders SET status=?1, updated_at=strftime('%s','now'), "
                      "key_pem=CASE WHEN ?1 IN ('done','abandoned','invalid') THEN NULL "
                      "ELSE key_pem END WHERE id=?2",
                      2, args);
}

int acme_store_event(sqlite3 *db, const char *cert_name, const char *step, bool ok,
                     const char *problem_type, const char *detail, time_t next_attempt)
{
    sqlite3_stmt *st = NULL;
    int ret = -EIO;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO acme_events (at, cert_name, step, ok, problem_type, "
                           "detail, next_attempt) VALUES (strftime('%s','now'),?1,?2,?3,?4,?5,?6)",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    store_bind_text(st, 1, cert_name);
    store_bind_text(st, 2, step);
    sqlite3_bind_int(st, 3, ok ? 1 : 0);
    store_bind_text(st, 4, problem_type);
    store_bind_text(st, 5, detail);
    if (next_attempt)
        sqlite3_bind_int64(st, 6, (sqlite3_int64)next_attempt);
    else
        sqlite3_bind_null(st, 6);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto out;
    ret = 0;
    const char *args[] = {cert_name};
    store_exec(db,
               "DELETE FROM acme_events WHERE cert_name=?1 AND id <= (SELECT id FROM acme_events "
               "WHERE cert_name=?1 ORDER BY id DESC LIMIT 1 OFFSET " STORE_EVENTS_KEEP_S ")",
               1, args);
out:
    sqlite3_finalize(st);
    return ret;
}

int acme_store_failures(sqlite3 *db, const char *cert_name, unsigned *n, time_t *first,
                        time_t *next)
{
    sqlite3_stmt *st = NULL;
    int ret = -EIO;
    *n = 0;
    *first = *next = 0;
    if (sqlite3_prepare_v2(
            db,
            "SELECT COUNT(*), MIN(at), (SELECT next_attempt FROM acme_events WHERE cert_name=?1 "
            "ORDER BY id DESC LIMIT 1) FROM acme_events WHERE cert_name=?1 AND ok=0 AND id > "
            "COALESCE((SELECT MAX(id) FROM acme_events WHERE cert_name=?1 AND ok=1), 0)",
            -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_text(st, 1, cert_name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW)
        goto out;
    *n = (unsigned)sqlite3_column_int(st, 0);
    if (*n) {
        *first = (time_t)sqlite3_column_int64(st, 1);
        *next = (time_t)sqlite3_column_int64(st, 2);
    }
    ret = 0;
out:
    sqlite3_finalize(st);
    return ret;
}

void acme_cert_row_free(struct acme_cert_row *c)
{
    free(c->chain_pem);
    free(c->sans);
    free(c->status);
    free(c->serial);
    free(c->ari_id);
    memset(c, 0, sizeof(*c));
}

int acme_store_kv_get(sqlite3 *db, const char *key, char **value)
{
    sqlite3_stmt *st = NULL;
    int ret = -EIO;
    *value = NULL;
    if (sqlite3_prepare_v2(db, "SELECT value FROM acme_kv WHERE key=?1", -1, &st, NULL) !=
        SQLITE_OK)
        goto out;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_DONE) {
        ret = -ENOENT;
        goto out;
    }
    if (rc != SQLITE_ROW)
        goto out;
    *value = tlsbox_xstrndup(sqlite3_column_blob(st, 0) ? sqlite3_column_blob(st, 0) : "",
                             (size_t)sqlite3_column_bytes(st, 0));
    ret = 0;
out:
    sqlite3_finalize(st);
    return ret;
}

int acme_store_kv_put(sqlite3 *db, const char *key, const char *value)
{
    const char *args[] = {key, value};
    if (!value)
        return store_exec(db, "DELETE FROM acme_kv WHERE key=?1", 1, args);
    return store_exec(db, "INSERT OR REPLACE INTO acme_kv (key, value) VALUES (?1, ?2)", 2, args);
}

int acme_store_dns_record_add(sqlite3 *db, const char *server, const char *zone, const char *fqdn,
                              const char *value, int64_t *id)
{
    const char *args[] = {server, zone, fqdn, value};
    int ret = store_exec(db,
                         "INSERT INTO acme_dns_records (server, zone, fqdn, value, put_at) "
                         "VALUES (?1, ?2, ?3, ?4, strftime('%s','now'))",
                         4, args);
    if (ret == 0)
        *id = sqlite3_last_insert_rowid(db);
    return ret;
}

int acme_store_dns_record_del(sqlite3 *db, int64_t id)
{
    char ids[32];
    snprintf(ids, sizeof(ids), "%lld", (long long)id);
    const char *args[] = {ids};
    return store_exec(db, "DELETE FROM acme_dns_records WHERE id=?1", 1, args);
}

int acme_store_dns_records(sqlite3 *db, size_t max, struct acme_dns_record **rows, size_t *n)
{
    sqlite3_stmt *st = NULL;
    int ret = -EIO, rc;
    *rows = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT id, server, zone, fqdn, value FROM acme_dns_records "
                           "ORDER BY id LIMIT ?1",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)max);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        *rows = tlsbox_xrealloc(*rows, (*n + 1) * sizeof(**rows));
        struct acme_dns_record *r = &(*rows)[(*n)++];
        r->id = sqlite3_column_int64(st, 0);
        r->server = store_col_text(st, 1);
        r->zone = store_col_text(st, 2);
        r->fqdn = store_col_text(st, 3);
        r->value = store_col_text(st, 4);
    }
    if (rc == SQLITE_DONE)
        ret = 0;
out:
    sqlite3_finalize(st);
    if (ret < 0) {
        acme_dns_records_free(*rows, *n);
        *rows = NULL;
        *n = 0;
    }
    return ret;
}

void acme_dns_records_free(struct acme_dns_record *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].server);
        free(rows[i].zone);
        free(rows[i].fqdn);
        free(rows[i].value);
    }
    free(rows);
}
