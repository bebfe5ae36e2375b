/* Two-factor login for admin users: a TOTP secret per user (admin_users:
 * totp_secret, totp_pending while being set up, totp_last_step against
 * replays), its check at login, and the API that turns it on and off.
 *
 *   GET  admin/totp           {"user","enabled","pending"} (control: ?user=NAME)
 *   POST admin/totp           {"current_password"} -> {"secret","uri"}: a new
 *                             pending secret (web only: it is shown once)
 *   PUT  admin/totp           {"code"}: a code of the pending secret turns it on
 *   POST admin/totp/off       web {"current_password","code"}; control {"user"}
 *                             (recovery from the box: tlsboxctl admin totp-off)
 *   POST admin/totp/recovery  {"current_password","code"} -> {"recovery_codes"}:
 *                             a new set of recovery codes (web only)
 *
 * Turning it on (PUT) also answers with ten recovery codes
 * (admin_recovery.c); one of them stands in for an authenticator code, once,
 * at login, to turn it off or to get a new set.
 *
 * The secret leaves the box once, in the reply that creates it; it is in no
 * log, no audit row (the API records changes by the state GET admin/totp
 * shows, which has no secret) and no other reply. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/crypto.h>

#include "core/admin.h"
#include "core/admin_auth.h"
#include "core/admin_recovery.h"
#include "core/admin_throttle.h"
#include "core/admin_totp.h"
#include "core/api.h"
#include "core/log.h"
#include "core/plugin_loader.h"
#include "core/qr_encode.h"
#include "core/settings.h"
#include "core/store.h"
#include "core/tls.h"
#include "core/xalloc.h"

/* One user's two-factor state as stored. */
struct totp_row {
    int64_t id;
    unsigned char secret[TOTP_SECRET_LEN], pending[TOTP_SECRET_LEN];
    int has_secret, has_pending;
    int64_t last_step;
};

/* Read user @p name (or, with @p name NULL, user id @p id).  0, -ENOENT, -EIO. */
static int row_read(sqlite3 *db, const char *name, int64_t id, struct totp_row *r)
{
    sqlite3_stmt *st = NULL;
    memset(r, 0, sizeof *r);
    int rc = -EIO;
    if (sqlite3_prepare_v2(db,
                           name ? "SELECT id, totp_secret, totp_pending, totp_last_step "
                                  "FROM admin_users WHERE name = ?"
                                : "SELECT id, totp_secret, totp_pending, totp_last_step "
                                  "FROM admin_users WHERE id = ?",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    if (name)
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    else
        sqlite3_bind_int64(st, 1, id);
    rc = store_step_row(st);
    if (rc < 0)
        goto out;
    r->id = sqlite3_column_int64(st, 0);
    if (sqlite3_column_bytes(st, 1) == TOTP_SECRET_LEN) {
        memcpy(r->secret, sqlite3_column_blob(st, 1), TOTP_SECRET_LEN);
        r->has_secret = 1;
    }
    if (sqlite3_column_bytes(st, 2) == TOTP_SECRET_LEN) {
        memcpy(r->pending, sqlite3_column_blob(st, 2), TOTP_SECRET_LEN);
        r->has_pending = 1;
    }
    r->last_step = sqlite3_column_int64(st, 3);
out:
    sqlite3_finalize(st);
    return rc;
}

static void row_wipe(struct totp_row *r)
{
    gnutls_memset(r, 0, sizeof *r);
}

/* Store @p step as the last one used, only when it is later than the stored
 * one: of two logins racing with the same code, one wins.  0 or -EACCES. */
static int step_use(sqlite3 *db, int64_t id, int64_t step)
{
    sqlite3_stmt *st = NULL;
    int rc = -EACCES;
    if (sqlite3_prepare_v2(db,
                           "UPDATE admin_users SET totp_last_step = ?1 "
                           "WHERE id = ?2 AND totp_last_step < ?1",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, step);
        sqlite3_bind_int64(st, 2, id);
        if (sqlite3_step(st) == SQLITE_DONE && sqlite3_changes(db) == 1)
            rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

int admin_totp_login_check(sqlite3 *db, int64_t user_id, const char *code)
{
    struct totp_row r;
    int64_t step = 0;
    int rc = row_read(db, NULL, user_id, &r);
    if (rc < 0) {
        rc = -EIO;
    } else if (!r.has_secret) {
        rc = 0;
    } else if (!code || !*code) {
        rc = -ENOKEY;
    } else if (admin_recovery_shaped(code)) {
        rc = admin_recovery_use(db, r.id, code);
        rc = rc == 0 ? 1 : rc == -EIO ? rc : -EKEYREJECTED;
    } else if (totp_verify(r.secret, TOTP_SECRET_LEN, code, (int64_t)time(NULL), r.last_step,
                           &step) < 0 ||
               step_use(db, r.id, step) < 0) {
        rc = -EKEYREJECTED;
    }
    row_wipe(&r);
    return rc;
}

/* The second factor of a change by a logged-in user, checked by
 * admin_password_recheck in the same attempt as the password. */
struct factor {
    sqlite3 *db;
    const struct totp_row *r;
    const char *code;
};

/* A current authenticator code (its step then used) or one of the user's
 * recovery codes (then used up): 0, -EKEYREJECTED, -EBADMSG, -EIO. */
static int factor_check(void *arg)
{
    const struct factor *f = arg;
    int64_t step = 0;
    int v;
    if (admin_recovery_shaped(f->code))
        v = admin_recovery_use(f->db, f->r->id, f->code);
    else if ((v = totp_verify(f->r->secret, TOTP_SECRET_LEN, f->code, (int64_t)time(NULL),
                              f->r->last_step, &step)) == 0)
        v = step_use(f->db, f->r->id, step);
    return v == 0 || v == -EIO ? v : v == -EINVAL ? -EBADMSG : -EKEYREJECTED;
}

/* {"recovery_codes": [...]} from @p codes, which are then wiped. */
static json_t *codes_json(char codes[RECOVERY_CODES][RECOVERY_CODE_SIZE])
{
    json_t *a = json_array();
    for (int i = 0; i < RECOVERY_CODES; i++)
        json_array_append_new(a, json_string(codes[i]));
    gnutls_memset(codes, 0, sizeof(char[RECOVERY_CODES][RECOVERY_CODE_SIZE]));
    return a;
}

/* ---- API ---------------------------------------------------------------- */

/* Run @p sql with ?1 = @p blob (NULL: null), ?2 = @p step, ?3 = @p id.  0 or -EIO. */
static int row_write(sqlite3 *db, const char *sql, const unsigned char *blob, int64_t step,
                     int64_t id)
{
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        if (blob)
            sqlite3_bind_blob(st, 1, blob, TOTP_SECRET_LEN, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 1);
        sqlite3_bind_int64(st, 2, step);
        sqlite3_bind_int64(st, 3, id);
        if (sqlite3_step(st) == SQLITE_DONE)
            rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}

/* The current password of web user @p user, re-checked (throttled and
 * counted as a failed login), and with @p r the second factor in "code"
 * (struct factor) in the same attempt.  0, or an error reply written. */
static int password_ok(const char *user, json_t *body, sqlite3 *db, const struct totp_row *r,
                       struct tlsbox_api_reply *reply)
{
    const char *pw = json_string_value(json_object_get(body, "current_password"));
    struct factor f = {db, r, json_string_value(json_object_get(body, "code"))};
    if (!pw) {
        api_reply_error(reply, 400, "this needs the current password (\"current_password\")");
        return -EINVAL;
    }
    return admin_recheck_reply(user, pw, r ? factor_check : NULL, &f, reply);
}

/* The body of a request that only a web session may make (else 403 saying
 * @p web_only): the body (caller decrefs), or NULL with the reply written. */
static json_t *web_body(const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply,
                        const char *web_only)
{
    if (admin_request_from_control(req)) {
        api_reply_error(reply, 403, "%s", web_only);
        return NULL;
    }
    return api_body_object(req, reply);
}

/* "otpauth://totp/tlsbox:USER%40HOST?secret=...": the URI authenticator
 * apps take (the key-uri format); caller frees. */
static char *otpauth_uri(const char *user, const char *b32)
{
    char *host = tls_hostname();
    char label[256];
    size_t n = 0;
    char *who = xasprintf("%s@%s", user, host ? host : "tlsbox");
    for (const unsigned char *p = (const unsigned char *)who; *p && n + 4 < sizeof label; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_')
            label[n++] = (char)*p;
        else
            n += (size_t)snprintf(label + n, sizeof label - n, "%%%02X", *p);
    }
    label[n] = '\0';
    free(who);
    free(host);
    return xasprintf("otpauth://totp/tlsbox:%s?secret=%s&issuer=tlsbox&algorithm=SHA1&digits=%d&"
                     "period=%d",
                     label, b32, TOTP_DIGITS, TOTP_PERIOD);
}

static void on_get(void *arg, const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply)
{
    (void)arg;
    char *name =
        admin_request_from_control(req) ? api_query_get(req->query, "user") : xstrdup(req->user);
    sqlite3 *db = store_connect();
    struct totp_row r;
    int rc = !name ? -EINVAL : db ? row_read(db, name, 0, &r) : -EIO;
    if (rc == -EINVAL)
        api_reply_error(reply, 400, "from the control socket, say whose: admin/totp?user=NAME");
    else if (rc == -ENOENT)
        api_reply_error(reply, 404, "no admin user \"%s\"", name);
    else if (rc < 0)
        api_reply_error(reply, 500, "cannot read the store");
    else {
        /* When the set was made is part of the state: a new set shows in
         * the audit log even when as many codes were left before. */
        int64_t made = 0;
        int left = admin_recovery_left(db, r.id, &made);
        api_reply_json(reply, 200,
                       json_pack("{s:s,s:b,s:b,s:i,s:i,s:I}", "user", name, "enabled", r.has_secret,
                                 "pending", r.has_pending, "recovery_left", left < 0 ? 0 : left,
                                 "recovery_set", RECOVERY_CODES, "recovery_made",
                                 (json_int_t)made));
    }
    if (rc == 0)
        row_wipe(&r);
    store_disconnect(db);
    free(name);
}

static void on_begin(void *arg, const struct tlsbox_api_request *req,
                     struct tlsbox_api_reply *reply)
{
    (void)arg;
    json_t *body = web_body(req, reply,
                            "two-factor login is set up in the web UI (account page), where the "
                            "secret can be shown to the user");
    if (!body || password_ok(req->user, body, NULL, NULL, reply) < 0) {
        json_decref(body);
        return;
    }
    json_decref(body);
    sqlite3 *db = store_connect();
    struct totp_row r;
    unsigned char secret[TOTP_SECRET_LEN];
    char b32[TOTP_SECRET_B32];
    int rc = db ? row_read(db, req->user, 0, &r) : -EIO;
    if (rc == 0 && r.has_secret) {
        api_reply_error(reply, 409, "two-factor login is on already: turn it off first");
    } else if (rc < 0 || gnutls_rnd(GNUTLS_RND_KEY, secret, sizeof secret) < 0 ||
               row_write(db, "UPDATE admin_users SET totp_pending = ?1 WHERE id = ?3", secret, 0,
                         r.id) < 0) {
        api_reply_error(reply, 500, "cannot store a new secret");
    } else {
        totp_base32(secret, sizeof secret, b32, sizeof b32);
        char *uri = otpauth_uri(req->user, b32);
        json_t *out = json_pack("{s:s,s:s}", "secret", b32, "uri", uri);
        /* The URI as a QR code for the app's camera: the module count and
         * an SVG path, which the page draws without parsing markup. */
        struct qr_code qr;
        if (qr_encode(uri, strlen(uri), &qr) == 0) {
            char *path = qr_svg_path(&qr);
            if (path) {
                json_object_set_new(out, "qr",
                                    json_pack("{s:i,s:s}", "size", qr.size, "path", path));
                wipe_free_str(path);
            }
            qr_free(&qr);
        }
        api_reply_json(reply, 200, out);
        log_info("admin: user \"%s\" is setting up two-factor login", req->user);
        wipe_free_str(uri);
    }
    gnutls_memset(secret, 0, sizeof secret);
    gnutls_memset(b32, 0, sizeof b32);
    if (rc == 0)
        row_wipe(&r);
    store_disconnect(db);
}

static void on_confirm(void *arg, const struct tlsbox_api_request *req,
                       struct tlsbox_api_reply *reply)
{
    (void)arg;
    if (admin_request_from_control(req)) {
        api_reply_error(reply, 403, "two-factor login is set up in the web UI (account page)");
        return;
    }
    json_t *body = api_body_object(req, reply);
    if (!body)
        return;
    const char *code = json_string_value(json_object_get(body, "code"));
    sqlite3 *db = store_connect();
    struct totp_row r;
    int64_t step = 0;
    char codes[RECOVERY_CODES][RECOVERY_CODE_SIZE];
    /* Wrong codes back off and lock as wrong passwords do (in memory, apart
     * from the name's logins): else an open session could guess a pending
     * secret's code, a few in a million each, without end, and turn it on
     * with recovery codes only it has seen. */
    char *key = xasprintf("totp-confirm:%s", req->user);
    const char *keys[1] = {key};
    int rc = db ? row_read(db, req->user, 0, &r) : -EIO, v = 0, retry = 0, began = 0;
    if (rc < 0) {
        api_reply_error(reply, 500, "cannot read the store");
    } else if (!r.has_pending) {
        api_reply_error(reply, 409, "no secret is being set up: start with POST admin/totp");
    } else if (!(began = throttle_begin(keys, 1, &retry) == 0)) {
        api_reply_json(reply, 429,
                       json_pack("{s:s,s:i}", "error", "too many wrong codes: wait and retry",
                                 "retry_after", retry));
    } else if ((v = totp_verify(r.pending, TOTP_SECRET_LEN, code, (int64_t)time(NULL), 0, &step)) <
               0) {
        api_reply_error(reply, 400, "%s",
                        v == -EINVAL ? "code: the 6 digits the app shows"
                                     : "the code does not match the new secret: check that the "
                                       "app has it and that the phone's clock is right");
    } else if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        api_reply_error(reply, 500, "cannot write the store");
    } else if (row_write(db,
                         "UPDATE admin_users SET totp_secret = ?1, totp_pending = NULL, "
                         "totp_last_step = ?2 WHERE id = ?3",
                         r.pending, step, r.id) < 0 ||
               admin_recovery_new(db, r.id, codes) < 0 ||
               /* A session opened with the password alone (a stolen one)
                * must not outlive the second factor meant to stop it. */
               admin_sessions_end_others(db, r.id) < 0 ||
               sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        /* All or nothing: on without recovery codes would strand a user
         * who loses the phone before making new ones. */
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        api_reply_error(reply, 500, "cannot store the secret");
    } else {
        api_reply_json(reply, 200,
                       json_pack("{s:s,s:b,s:o}", "user", req->user, "enabled", 1, "recovery_codes",
                                 codes_json(codes)));
        log_info("admin: two-factor login is on for user \"%s\"", req->user);
    }
    if (began && throttle_end(keys, 1,
                              v == -EACCES ? THROTTLE_FAILED
                              : v == 0     ? THROTTLE_SUCCEEDED
                                           : THROTTLE_ABORTED))
        log_warn("admin: confirming two-factor login locked out for %lld s: %s",
                 settings_get_int("admin.lockout_seconds", 900), key);
    free(key);
    gnutls_memset(codes, 0, sizeof codes);
    if (rc == 0)
        row_wipe(&r);
    store_disconnect(db);
    json_decref(body);
}

static void on_off(void *arg, const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply)
{
    (void)arg;
    json_t *body = api_body_object(req, reply);
    if (!body)
        return;
    const char *name = admin_request_from_control(req)
                           ? json_string_value(json_object_get(body, "user"))
                           : req->user;
    sqlite3 *db = NULL;
    struct totp_row r;
    int rc = -EINVAL;
    if (!name) {
        api_reply_error(reply, 400, "admin/totp/off from the control socket needs {\"user\": ...}");
        goto out;
    }
    db = store_connect();
    rc = db ? row_read(db, name, 0, &r) : -EIO;
    if (rc == -ENOENT) {
        api_reply_error(reply, 404, "no admin user \"%s\"", name);
    } else if (rc < 0) {
        api_reply_error(reply, 500, "cannot read the store");
    } else if (!r.has_secret && !r.has_pending) {
        api_reply_error(reply, 409, "two-factor login is off already for \"%s\"", name);
    } else if (!admin_request_from_control(req) &&
               password_ok(name, body, db, r.has_secret ? &r : NULL, reply) < 0) {
        /* replied */
    } else if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
        api_reply_error(reply, 500, "cannot write the store");
    } else if (row_write(db,
                         "UPDATE admin_users SET totp_secret = ?1, totp_pending = ?1, "
                         "totp_last_step = ?2 WHERE id = ?3",
                         NULL, 0, r.id) < 0 ||
               admin_recovery_clear(db, r.id) < 0 ||
               /* As a new password does: the account's sign-in changed, so
                * the other sessions end (from the control socket: all). */
               (r.has_secret && admin_sessions_end_others(db, r.id) < 0) ||
               sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        /* All or nothing, as turning it on: the recovery codes go with
         * the secret, or neither does (the answer says it failed). */
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        api_reply_error(reply, 500, "cannot write the store");
    } else {
        api_reply_json(reply, 200, json_pack("{s:s,s:b}", "user", name, "enabled", 0));
        log_warn("admin: two-factor login is off for user \"%s\" (%s)", name,
                 admin_request_from_control(req) ? "from the control socket" : "by the user");
    }
    if (rc == 0)
        row_wipe(&r);
out:
    store_disconnect(db);
    json_decref(body);
}

/* POST admin/totp/recovery: a new set of recovery codes, the old ones void. */
static void on_recovery(void *arg, const struct tlsbox_api_request *req,
                        struct tlsbox_api_reply *reply)
{
    (void)arg;
    json_t *body = web_body(
        req, reply, "recovery codes are made in the web UI (account page), where they are shown");
    if (!body)
        return;
    sqlite3 *db = store_connect();
    struct totp_row r;
    char codes[RECOVERY_CODES][RECOVERY_CODE_SIZE];
    int rc = db ? row_read(db, req->user, 0, &r) : -EIO;
    if (rc < 0) {
        api_reply_error(reply, 500, "cannot read the store");
    } else if (!r.has_secret) {
        api_reply_error(reply, 409, "two-factor login is off: recovery codes come with it");
    } else if (password_ok(req->user, body, db, &r, reply) < 0) {
        /* replied */
    } else if (admin_recovery_new(db, r.id, codes) < 0) {
        api_reply_error(reply, 500, "cannot store new recovery codes");
    } else {
        api_reply_json(reply, 200, json_pack("{s:o}", "recovery_codes", codes_json(codes)));
        log_info("admin: user \"%s\" has new recovery codes", req->user);
    }
    gnutls_memset(codes, 0, sizeof codes);
    if (rc == 0)
        row_wipe(&r);
    store_disconnect(db);
    json_decref(body);
}

void admin_totp_api_register(void)
{
    struct tlsbox_plugin *self = core_self();
    api_route_add(self, "GET", "admin/totp", on_get, NULL);
    api_route_add(self, "POST", "admin/totp", on_begin, NULL);
    api_route_add(self, "PUT", "admin/totp", on_confirm, NULL);
    api_route_add(self, "POST", "admin/totp/off", on_off, NULL);
    api_route_add(self, "POST", "admin/totp/recovery", on_recovery, NULL);
}
