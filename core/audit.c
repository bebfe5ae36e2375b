#include "core/audit.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/api.h"
#include "core/log.h"
#include "core/settings.h"
#include "core/settings_check.h"
#include "core/store.h"
#include "core/utf8.h"
#include "core/xalloc.h"

/* Longest stored texts: the audit log is for people, not a backup. */
#define AUDIT_MAX_TEXT 8192
#define MASK "********"

/*
 * Rows anyone can cause, without logging in: failed logins and the
 * lockouts they bring.  The newest AUDIT_STRANGER_KEEP of them are kept;
 * older ones go as new ones come.  Throttled as they are, a client with
 * many addresses could still add rows without end to a store on an SD
 * card.  Counting them apart means a flood of them never pushes out what
 * the admins did.
 */
#define AUDIT_STRANGER_KEEP 1000
#define STRANGER_ACTIONS "('login.failed', 'login.lockout')"

static bool stranger_action(const char *action)
{
    return strcmp(action, "login.failed") == 0 || strcmp(action, "login.lockout") == 0;
}

/*
 * Rows every session brings, whatever it changes: logins and logouts.  A
 * script that logs in for each call it makes adds them for as long as the
 * box runs.  The newest AUDIT_SESSION_KEEP are kept, counted apart as the
 * strangers' are; the changes made in those sessions all stay.
 */
#define AUDIT_SESSION_KEEP 1000
#define SESSION_ACTIONS "('login', 'logout')"

static bool session_action(const char *action)
{
    return strcmp(action, "login") == 0 || strcmp(action, "logout") == 0;
}

char *audit_resource(const char *path)
{
    char *p = xstrdup(path);
    for (;;) {
        if (api_route_exists("GET", p))
            return p;
        char *slash = strrchr(p, '/');
        if (!slash)
            break;
        *slash = '\0';
    }
    free(p);
    return NULL;
}

static int secret_name(const char *k)
{
    size_t n = strlen(k);
    /* "code": one-time and recovery codes (admin/totp). */
    return strcasecmp(k, "key") == 0 || strcasecmp(k, "code") == 0 ||
           (n > 4 && strcasecmp(k + n - 4, "_key") == 0) || strcasestr(k, "key_pem") ||
           strcasestr(k, "private") || strcasestr(k, "password") || strcasestr(k, "secret") ||
           strcasestr(k, "token") || strcasestr(k, "hmac");
}

/* A setting "owner.key" declared SECRET (owner may be NULL: key is full). */
static int secret_setting(const char *owner, const char *key)
{
    char *full = owner && !strchr(key, '.') ? xasprintf("%s.%s", owner, key) : xstrdup(key);
    const struct tlsbox_setting_def *d = settings_def(full);
    free(full);
    return d && settings_is_secret(d);
}

/* Mask secret members of @p j in place, recursively.  @p owner: settings
 * owner when the object is a settings change. */
static void mask(json_t *j, const char *owner)
{
    const char *k;
    json_t *v;
    size_t i;
    if (json_is_array(j))
        json_array_foreach(j, i, v) mask(v, NULL);
    if (!json_is_object(j))
        return;
    json_object_foreach(j, k, v)
    {
        if (secret_name(k) || (owner && secret_setting(owner, k)))
            json_object_set_new(j, k, json_string(MASK));
        else
            mask(v, NULL);
    }
}

char *audit_masked_body(const char *path, const char *body, size_t len)
{
    if (!body || !len)
        return NULL;
    json_t *j = json_loadb(body, len, 0, NULL);
    if (!j)
        return xasprintf("(%zu bytes, not JSON)", len);
    char *owner = NULL;
    if (strncmp(path, "plugins/", 8) == 0)
        owner = xstrndup(path + 8, strcspn(path + 8, "/"));
    mask(j, owner);
    if (strncmp(path, "settings/", 9) == 0 && secret_setting(NULL, path + 9) &&
        json_object_get(j, "value"))
        json_object_set_new(j, "value", json_string(MASK));
    free(owner);
    char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(j);
    return s;
}

/* At most AUDIT_MAX_TEXT bytes, cut between characters: half a character
 * would make the row invalid UTF-8, which JSON cannot carry. */
static void bind_clipped(sqlite3_stmt *st, int idx, const char *s)
{
    if (!s)
        sqlite3_bind_null(st, idx);
    else
        sqlite3_bind_text(st, idx, s, (int)utf8_clip(s, strlen(s), AUDIT_MAX_TEXT), SQLITE_STATIC);
}

/* Keep the newest @p keep rows of the ACTIONS list in @p sql. */
#define AUDIT_PRUNE_SQL(ACTIONS)                                                                   \
    "DELETE FROM audit WHERE action IN " ACTIONS " AND id < "                                      \
    "(SELECT id FROM audit WHERE action IN " ACTIONS " ORDER BY id DESC LIMIT 1 OFFSET ?)"

static void audit_prune(sqlite3 *db, const char *sql, int keep, const char *what)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, keep - 1);
        if (sqlite3_step(st) != SQLITE_DONE)
            log_err("audit: cannot drop old %s: %s", what, sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
}

static void audit_insert(const char *actor, const char *source, const char *action,
                         const char *target, const char *detail, const char *before,
                         const char *after)
{
    static const char sql[] = "INSERT INTO audit (at, actor, action, target, detail, source, "
                              "before_state, after_state) VALUES (?,?,?,?,?,?,?,?)";
    sqlite3 *db = store_connect();
    sqlite3_stmt *st = NULL;
    if (!db) {
        log_err("audit: no store connection for %s", action);
        return;
    }
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, (sqlite3_int64)time(NULL));
        /* The actor of a failed login is whatever name was tried: clipped too. */
        bind_clipped(st, 2, actor && *actor ? actor : "system");
        bind_clipped(st, 3, action);
        bind_clipped(st, 4, target);
        bind_clipped(st, 5, detail);
        bind_clipped(st, 6, source);
        bind_clipped(st, 7, before);
        bind_clipped(st, 8, after);
        if (sqlite3_step(st) != SQLITE_DONE)
            log_err("audit: cannot record %s: %s", action, sqlite3_errmsg(db));
        else if (stranger_action(action))
            audit_prune(db, AUDIT_PRUNE_SQL(STRANGER_ACTIONS), AUDIT_STRANGER_KEEP,
                        "failed logins");
        else if (session_action(action))
            audit_prune(db, AUDIT_PRUNE_SQL(SESSION_ACTIONS), AUDIT_SESSION_KEEP,
                        "logins and logouts");
    } else {
        log_err("audit: %s", sqlite3_errmsg(db));
    }
    sqlite3_finalize(st);
    store_disconnect(db);
}

void audit_change(const char *user, const char *source, const char *method, const char *path,
                  const char *body, size_t body_len, const char *before, const char *after)
{
    char *action = xasprintf("%s %s", method, path);
    char *detail = audit_masked_body(path, body, body_len);
    audit_insert(user, source, action, path, detail, before, after);
    free(detail);
    free(action);
}

void audit_event(const char *actor, const char *source, const char *action, const char *target,
                 const char *detail)
{
    audit_insert(actor, source, action, target, detail, NULL, NULL);
}

/* A text column as a JSON string.  Rows written before texts were cut
 * between characters may hold invalid UTF-8: shown with U+FFFD rather than
 * lost (json_string would give NULL and the row would vanish from the list). */
static json_t *column(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL)
        return json_null();
    const char *s = (const char *)sqlite3_column_text(st, i);
    json_t *j = json_string(s);
    if (!j) {
        char *clean = utf8_sanitize(s, strlen(s));
        j = json_string(clean);
        free(clean);
    }
    return j ? j : json_null();
}

json_t *audit_list(int limit, long long before_id, long long *next_before)
{
    /* One row more than asked: whether it exists says if there are older ones. */
    static const char sql[] = "SELECT id, at, actor, action, target, detail, source, "
                              "before_state, after_state FROM audit WHERE ?1 = 0 OR id < ?1 "
                              "ORDER BY id DESC LIMIT ?2";
    sqlite3 *db = store_connect();
    sqlite3_stmt *st = NULL;
    *next_before = 0;
    if (!db)
        return NULL;
    json_t *a = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, before_id);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)limit + 1);
        a = json_array();
        long long last = 0;
        for (int n = 0; sqlite3_step(st) == SQLITE_ROW; n++) {
            if (n == limit) {
                *next_before = last;
                break;
            }
            last = sqlite3_column_int64(st, 0);
            json_t *row =
                json_pack("{s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "id", (json_int_t)last, "at",
                          (json_int_t)sqlite3_column_int64(st, 1), "actor", column(st, 2), "action",
                          column(st, 3), "target", column(st, 4), "detail", column(st, 5), "source",
                          column(st, 6), "before", column(st, 7), "after", column(st, 8));
            if (row)
                json_array_append_new(a, row);
            else
                log_err("audit: cannot list row %lld", last);
        }
    }
    sqlite3_finalize(st);
    store_disconnect(db);
    return a;
}
