/* The ocsp plugin's own table: what it knows per certificate.  The staple
 * the bundle serves is the core's (host->staple_set); this is bookkeeping. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ocsp/ocsp_plugin.h"

const struct tlsbox_migration ocsp_migrations[] = {
    {.name = "0001_ocsp_certs",
     .sql = "CREATE TABLE ocsp_certs ("
            " cert_name    TEXT PRIMARY KEY,"
            " serial       TEXT NOT NULL," /* the leaf this row is about */
            " state        TEXT NOT NULL," /* pending good revoked unknown not_applicable */
            " responder    TEXT,"          /* AIA URL, 'internal', or NULL */
            " reason       TEXT,"          /* why not applicable */
            " response     BLOB,"          /* last good response, DER */
            " produced_at  INTEGER, this_update INTEGER, next_update INTEGER,"
            " serve_until  INTEGER, stapled INTEGER NOT NULL DEFAULT 0,"
            " revoked_at   INTEGER,"
            " fetched_at   INTEGER, next_refresh INTEGER,"
            " failures     INTEGER NOT NULL DEFAULT 0, last_error TEXT,"
            " must_staple  INTEGER NOT NULL DEFAULT 0,"
            " updated_at   INTEGER NOT NULL)"},
    /* How revocation is checked: 'ocsp' (a staple), 'crl' (the CA's CRL,
     * nothing to staple), NULL while not applicable.  responder is then the
     * CRL's URL, and this_update/next_update the CRL's. */
    {.name = "0002_ocsp_method",
     .sql = "ALTER TABLE ocsp_certs ADD COLUMN method TEXT;"
            "UPDATE ocsp_certs SET method = 'ocsp' WHERE state != 'not_applicable'"},
    /* The validators of the last CRL accepted (ETag, Last-Modified), sent
     * back as If-None-Match / If-Modified-Since: an unchanged CRL is not
     * downloaded and parsed again. */
    {.name = "0003_ocsp_crl_validators",
     .sql = "ALTER TABLE ocsp_certs ADD COLUMN crl_etag TEXT;"
            "ALTER TABLE ocsp_certs ADD COLUMN crl_last_modified TEXT"},
    TLSBOX_MIGRATIONS_END};

static char *col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? tlsbox_xstrdup((const char *)t) : NULL;
}

static const char row_cols[] =
    "cert_name, serial, state, responder, reason, response, produced_at, this_update, "
    "next_update, serve_until, stapled, revoked_at, fetched_at, next_refresh, failures, "
    "last_error, must_staple, method, crl_etag, crl_last_modified";

static void row_read(sqlite3_stmt *st, struct ocsp_row *r)
{
    r->cert_name = col_text(st, 0);
    r->serial = col_text(st, 1);
    r->state = col_text(st, 2);
    r->responder = col_text(st, 3);
    r->reason = col_text(st, 4);
    int n = sqlite3_column_bytes(st, 5);
    if (n > 0) {
        r->response = tlsbox_xmalloc((size_t)n);
        memcpy(r->response, sqlite3_column_blob(st, 5), (size_t)n);
        r->response_len = (size_t)n;
    }
    r->produced_at = sqlite3_column_int64(st, 6);
    r->this_update = sqlite3_column_int64(st, 7);
    r->next_update = sqlite3_column_int64(st, 8);
    r->serve_until = sqlite3_column_int64(st, 9);
    r->stapled = sqlite3_column_int(st, 10) != 0;
    r->revoked_at = sqlite3_column_int64(st, 11);
    r->fetched_at = sqlite3_column_int64(st, 12);
    r->next_refresh = sqlite3_column_int64(st, 13);
    r->failures = sqlite3_column_int(st, 14);
    r->last_error = col_text(st, 15);
    r->must_staple = sqlite3_column_int(st, 16) != 0;
    r->method = col_text(st, 17);
    r->crl_etag = col_text(st, 18);
    r->crl_last_modified = col_text(st, 19);
}

int ocsp_row_load(sqlite3 *db, const char *name, struct ocsp_row *row)
{
    sqlite3_stmt *st = NULL;
    char sql[512];
    int rc = -EIO;
    memset(row, 0, sizeof(*row));
    snprintf(sql, sizeof(sql), "SELECT %s FROM ocsp_certs WHERE cert_name = ?", row_cols);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW) {
        row_read(st, row);
        rc = 0;
    } else if (s == SQLITE_DONE) {
        rc = -ENOENT;
    }
out:
    sqlite3_finalize(st);
    return rc;
}

static void bind_time(sqlite3_stmt *st, int i, int64_t t)
{
    if (t)
        sqlite3_bind_int64(st, i, t);
    else
        sqlite3_bind_null(st, i);
}

int ocsp_row_save(sqlite3 *db, const struct ocsp_row *r)
{
    sqlite3_stmt *st = NULL;
    char sql[768];
    int rc = -EIO;
    snprintf(
        sql, sizeof(sql),
        "INSERT OR REPLACE INTO ocsp_certs (%s, updated_at) VALUES "
        "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, "
        "?20, strftime('%%s','now'))",
        row_cols);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_text(st, 1, r->cert_name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, r->serial ? r->serial : "", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, r->state ? r->state : "pending", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, r->responder, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, r->reason, -1, SQLITE_STATIC);
    if (r->response)
        sqlite3_bind_blob(st, 6, r->response, (int)r->response_len, SQLITE_STATIC);
    bind_time(st, 7, r->produced_at);
    bind_time(st, 8, r->this_update);
    bind_time(st, 9, r->next_update);
    bind_time(st, 10, r->serve_until);
    sqlite3_bind_int(st, 11, r->stapled);
    bind_time(st, 12, r->revoked_at);
    bind_time(st, 13, r->fetched_at);
    bind_time(st, 14, r->next_refresh);
    sqlite3_bind_int(st, 15, r->failures);
    sqlite3_bind_text(st, 16, r->last_error, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 17, r->must_staple);
    sqlite3_bind_text(st, 18, r->method, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 19, r->crl_etag, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 20, r->crl_last_modified, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_DONE)
        rc = 0;
out:
    sqlite3_finalize(st);
    return rc;
}

void ocsp_row_clear(struct ocsp_row *r)
{
    free(r->cert_name);
    free(r->serial);
    free(r->state);
    free(r->responder);
    free(r->reason);
    free(r->last_error);
    free(r->response);
    free(r->method);
    free(r->crl_etag);
    free(r->crl_last_modified);
    memset(r, 0, sizeof(*r));
}

int ocsp_rows_prune(sqlite3 *db, json_t *names)
{
    sqlite3_stmt *st = NULL;
    char *list = json_dumps(names, JSON_COMPACT);
    int rc = -EIO;
    if (list && sqlite3_prepare_v2(db,
                                   "DELETE FROM ocsp_certs WHERE cert_name NOT IN "
                                   "(SELECT value FROM json_each(?))",
                                   -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, list, -1, SQLITE_STATIC);
        rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -EIO;
    }
    sqlite3_finalize(st);
    free(list);
    return rc;
}

static json_t *time_or_null(int64_t t)
{
    return t ? json_integer(t) : json_null();
}

void ocsp_status_judge(json_t *j, time_t now, const char *unsent_because)
{
    json_t *su = json_object_get(j, "serve_until");
    bool ended = json_is_integer(su) && json_integer_value(su) <= now;
    bool stapled = json_is_true(json_object_get(j, "stapled")) && json_is_integer(su) && !ended;
    /* Kept in the row, but the bundle leaves every staple out. */
    bool held = stapled && unsent_because;
    if (held)
        stapled = false;
    const char *answer = json_string_value(json_object_get(j, "answer"));
    const char *status = answer ? answer : "pending";
    const char *method = json_string_value(json_object_get(j, "method"));
    bool by_crl = method && strcmp(method, "crl") == 0;
    /* A good answer that is no longer sent must not read "good": the
     * clients get no staple, whatever the responder said last.  A CRL is
     * not sent to clients: "good" until the CRL it came from runs out, then
     * "stale" (the certificate may have been revoked since). */
    json_t *nu = json_object_get(j, "next_update");
    if (by_crl && strcmp(status, "good") == 0 && json_is_integer(nu) &&
        json_integer_value(nu) <= now)
        status = "stale";
    else if (!by_crl && strcmp(status, "good") == 0 && !stapled)
        status = ended ? "expired" : "not_stapled";
    if (held)
        json_object_set_new(j, "not_stapled_because", json_string(unsent_because));
    else
        json_object_del(j, "not_stapled_because");
    json_object_set_new(j, "stapled", json_boolean(stapled));
    json_object_set_new(j, "status", json_string(status));
    json_t *tu = json_object_get(j, "this_update");
    json_object_set_new(j, "staple_age",
                        stapled && json_is_integer(tu) ? json_integer(now - json_integer_value(tu))
                                                       : json_null());
    if (json_is_true(json_object_get(j, "must_staple")) && !stapled)
        json_object_set_new(j, "warning",
                            json_string("must-staple certificate without a valid staple: "
                                        "strict clients refuse it"));
    else
        json_object_del(j, "warning");
}

/* One row for the API: the stored facts, judged at @p now. */
static json_t *row_json(const struct ocsp_row *r, time_t now)
{
    json_t *j = json_pack("{s:s, s:s, s:s?, s:s?, s:b, s:b, s:i, s:s?, s:s?}", "name", r->cert_name,
                          "answer", r->state, "responder", r->responder, "reason", r->reason,
                          "stapled", r->stapled, "must_staple", r->must_staple, "failures",
                          r->failures, "last_error", r->last_error, "method", r->method);
    json_object_set_new(j, "produced_at", time_or_null(r->produced_at));
    json_object_set_new(j, "this_update", time_or_null(r->this_update));
    json_object_set_new(j, "next_update", time_or_null(r->next_update));
    json_object_set_new(j, "serve_until", time_or_null(r->serve_until));
    json_object_set_new(j, "fetched_at", time_or_null(r->fetched_at));
    json_object_set_new(j, "next_refresh", time_or_null(r->next_refresh));
    json_object_set_new(j, "revoked_at", time_or_null(r->revoked_at));
    ocsp_status_judge(j, now, NULL);
    return j;
}

json_t *ocsp_rows_json(sqlite3 *db, time_t now)
{
    sqlite3_stmt *st = NULL;
    char sql[512];
    json_t *a = json_array();
    snprintf(sql, sizeof(sql), "SELECT %s FROM ocsp_certs ORDER BY cert_name", row_cols);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto out;
    while (sqlite3_step(st) == SQLITE_ROW) {
        struct ocsp_row r;
        memset(&r, 0, sizeof(r));
        row_read(st, &r);
        json_array_append_new(a, row_json(&r, now));
        ocsp_row_clear(&r);
    }
out:
    sqlite3_finalize(st);
    return a;
}
