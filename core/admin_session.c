/* Logins and sessions (see admin_auth.h).  The cookie value is random; the
 * store keeps only its SHA-256, so a copy of the database opens no session. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "core/admin_auth.h"
#include "core/admin_recovery.h"
#include "core/admin_throttle.h"
#include "core/audit.h"
#include "core/log.h"
#include "core/settings.h"
#include "core/store.h"
#include "core/utf8.h"
#include "core/xalloc.h"

#define HASH_LEN 32

static void cookie_hash(const char *cookie, unsigned char out[HASH_LEN])
{
    gnutls_hash_fast(GNUTLS_DIG_SHA256, cookie, strlen(cookie), out);
}

/* A new session for @p user_id into @p s, only while the user's stored
 * password hash is still @p pw_hash, the one the login checked: a new
 * password (admin_set_password) ends the user's sessions, and a login
 * checked against the old one just before must not start one after.  0,
 * -EACCES (the password changed meanwhile), -EIO. */
static int session_create(sqlite3 *db, int64_t user_id, const unsigned char pw_hash[HASH_LEN],
                          const char *source, struct admin_session *s)
{
    if (admin_random_hex(s->cookie) < 0 || admin_random_hex(s->csrf) < 0)
        return -EIO;
    unsigned char h[HASH_LEN];
    cookie_hash(s->cookie, h);
    time_t now = time(NULL);
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    /* Expired sessions go when a new one comes. */
    sqlite3_exec(db, "DELETE FROM admin_sessions WHERE expires_at < strftime('%s','now')", NULL,
                 NULL, NULL);
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO admin_sessions (token_hash, user_id, csrf_token, "
                           "created_at, expires_at, last_seen, source) "
                           "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7 WHERE EXISTS "
                           "(SELECT 1 FROM admin_users WHERE id = ?2 AND pw_hash = ?8)",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_blob(st, 1, h, HASH_LEN, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, user_id);
        sqlite3_bind_text(st, 3, s->csrf, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)now);
        sqlite3_bind_int64(st, 5,
                           (sqlite3_int64)(now + settings_get_int("admin.session_max", 12 * 3600)));
        sqlite3_bind_int64(st, 6, (sqlite3_int64)now);
        sqlite3_bind_text(st, 7, source, -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 8, pw_hash, HASH_LEN, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_DONE)
            rc = sqlite3_changes(db) == 1 ? 0 : -EACCES;
    }
    sqlite3_finalize(st);
    return rc;
}

/* The most of a tried name that a failed login logs and audits (bytes; the
 * throttle keys hold as much). */
#define SHOWN_NAME_MAX 64

/* @p name as a failed login shows it: cut at a character after
 * SHOWN_NAME_MAX bytes, "..." marking the cut.  Anyone may try a 16 KB name,
 * and each failure is a log line and an audit row. */
static char *shown_name(const char *name)
{
    size_t n = strlen(name), clip = utf8_clip(name, n, SHOWN_NAME_MAX);
    return clip < n ? xasprintf("%.*s...", (int)clip, name) : xstrdup(name);
}

/*
 * "Refused" lines, of attempts the throttle turned away before any check:
 * they cost the client nothing, so one connection could send thousands a
 * second and drown the journal (and journald's rate limit would then drop
 * the lines that matter).  One such line per 10 s at most, counting the
 * ones left out.
 */
static void log_refused(const char *name, const char *source, const char *why, int seconds)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static time_t last;
    static unsigned left_out;
    time_t now = time(NULL);
    unsigned skipped = 0;
    bool say = false;
    pthread_mutex_lock(&lock);
    if (last == 0 || now - last >= 10) {
        say = true;
        skipped = left_out;
        left_out = 0;
        last = now;
    } else {
        left_out++;
    }
    pthread_mutex_unlock(&lock);
    if (!say)
        return;
    char *shown = shown_name(name);
    if (skipped)
        log_warn("admin: login for user \"%s\" from %s refused: %s for %d s (and %u more refused "
                 "logins since the last such line)",
                 shown, source, why, seconds, skipped);
    else
        log_warn("admin: login for user \"%s\" from %s refused: %s for %d s", shown, source, why,
                 seconds);
    free(shown);
}

/* Log and audit a failure; @p locked: the @p keys it locked, bit i for
 * keys[i], named in one line. */
static void login_failed(const char *name, const char *source, const char *const keys[], int n,
                         unsigned locked)
{
    char *shown = shown_name(name);
    log_warn("admin: failed login for user \"%s\" from %s", shown, source);
    audit_event(shown, source, "login.failed", shown, NULL);
    if (locked) {
        char *what = xstrdup("");
        for (int i = 0; i < n; i++) {
            if (!(locked & 1u << i))
                continue;
            char *more = xasprintf("%s%s%s", what, what[0] ? ", " : "", keys[i]);
            free(what);
            what = more;
        }
        log_warn("admin: login locked out for %lld s: %s",
                 settings_get_int("admin.lockout_seconds", 900), what);
        audit_event(shown, source, "login.lockout", what, NULL);
        free(what);
    }
    free(shown);
}

/*
 * A known user's failures are also counted in the store (admin_users
 * failed_logins and locked_until, wall-clock seconds), so that neither a
 * restart nor a flood that pushes the user out of the in-memory throttle
 * table (admin_throttle.c) starts the count again.  Unknown names have no
 * row and stay in memory only: storing them would let anyone grow the
 * store.  A success or a new password (admin_set_password) clears both.
 */

/* Seconds until the stored lock of @p name ends, or 0 (none, unknown name, or
 * a store error: the in-memory throttle still applies). */
static int stored_lock(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st = NULL;
    int64_t until = 0, now = (int64_t)time(NULL);
    if (sqlite3_prepare_v2(db, "SELECT locked_until FROM admin_users WHERE name = ?", -1, &st,
                           NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (store_step_row(st) == 0)
        until = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return until > now ? (int)(until - now) : 0;
}

/* Count a failure of @p name in the store; 1 when it locks the user.  A
 * lock served starts a fresh count, as in memory.  One statement: parallel
 * failures each count. */
static int stored_fail(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st = NULL;
    int64_t now = (int64_t)time(NULL), lockout = settings_get_int("admin.lockout_seconds", 900),
            after = settings_get_int("admin.lockout_after", 10);
    int locked = 0;
    if (sqlite3_prepare_v2(
            db,
            "UPDATE admin_users SET "
            "failed_logins = CASE WHEN locked_until > 0 AND locked_until <= ?1 THEN 1 "
            "ELSE failed_logins + 1 END, "
            "locked_until = CASE WHEN (CASE WHEN locked_until > 0 AND locked_until <= ?1 THEN 1 "
            "ELSE failed_logins + 1 END) >= ?2 THEN ?1 + ?3 "
            "WHEN locked_until <= ?1 THEN 0 ELSE locked_until END "
            "WHERE name = ?4 RETURNING failed_logins, locked_until",
            -1, &st, NULL) != SQLITE_OK) {
        log_warn("admin: counting a failed login in the store: %s", sqlite3_errmsg(db));
        return 0;
    }
    sqlite3_bind_int64(st, 1, (sqlite3_int64)now);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)after);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)lockout);
    sqlite3_bind_text(st, 4, name, -1, SQLITE_STATIC);
    /* The failure that reaches the limit locks; one more in flight at the
     * same time finds the lock already there and does not lock (or audit)
     * it again. */
    bool known = store_step_row(st) == 0;
    if (known)
        locked = sqlite3_column_int64(st, 0) == after;
    sqlite3_finalize(st);
    /* An unknown name writes the same page too, so that a failure costs
     * the same commit and sync whether the name exists or not: on an SD
     * card the sync alone would tell, by the answer's delay, which names
     * are users (the password check already costs the same).  A row
     * written back unchanged is not written at all (SQLite compares), so
     * the first user's count goes up and down again in one transaction:
     * the page is written, nothing changes. */
    if (!known &&
        sqlite3_exec(db,
                     "BEGIN IMMEDIATE;"
                     "UPDATE admin_users SET failed_logins = failed_logins + 1 "
                     "WHERE id = (SELECT min(id) FROM admin_users);"
                     "UPDATE admin_users SET failed_logins = failed_logins - 1 "
                     "WHERE id = (SELECT min(id) FROM admin_users);"
                     "COMMIT",
                     NULL, NULL, NULL) != SQLITE_OK &&
        !sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return locked;
}

/* A success clears the stored count (written only when there is one). */
static void stored_clear(sqlite3 *db, int64_t uid)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "UPDATE admin_users SET failed_logins = 0, locked_until = 0 "
                           "WHERE id = ? AND (failed_logins != 0 OR locked_until != 0)",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)uid);
    (void)sqlite3_step(st);
    sqlite3_finalize(st);
}

/* ---- device cookies ------------------------------------------------------
 * "<issued>.<tag>": tag is HMAC-SHA256, keyed by the user's stored password
 * hash, over the issue time and the name.  Nothing is stored: a new
 * password (or a re-hash of the same one) ends every device cookie of the
 * user, and a copy of the cookie is worth only its owner's own attempts. */

/* The tag of @p name's device cookie issued at @p issued, as hex.  0, or
 * -ENOENT (no such user) / -EIO. */
static int device_tag(sqlite3 *db, const char *name, int64_t issued, char hex[ADMIN_TOKEN_HEX])
{
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    if (sqlite3_prepare_v2(db, "SELECT pw_hash FROM admin_users WHERE name = ?", -1, &st, NULL) !=
        SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (store_step_row(st) != 0) {
        rc = -ENOENT;
    } else {
        const void *key = sqlite3_column_blob(st, 0);
        int klen = sqlite3_column_bytes(st, 0);
        char head[48];
        int hn = snprintf(head, sizeof head, "tlsbox-device\n%lld\n", (long long)issued);
        unsigned char mac[32];
        gnutls_hmac_hd_t h;
        if (key && klen > 0 && gnutls_hmac_init(&h, GNUTLS_MAC_SHA256, key, (size_t)klen) == 0) {
            gnutls_hmac(h, head, (size_t)hn);
            gnutls_hmac(h, name, strlen(name));
            gnutls_hmac_deinit(h, mac);
            admin_hex32(mac, hex);
            rc = 0;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* The issue time of @p cookie when it is a valid device cookie of @p name
 * now, else 0. */
static int64_t device_valid(sqlite3 *db, const char *name, const char *cookie)
{
    char *end = NULL, want[ADMIN_TOKEN_HEX];
    int64_t now = (int64_t)time(NULL);
    if (!cookie || *cookie < '1' || *cookie > '9')
        return 0;
    long long issued = strtoll(cookie, &end, 10);
    if (*end != '.' || issued > now || now - issued > ADMIN_DEVICE_MAX_AGE ||
        device_tag(db, name, issued, want) != 0)
        return 0;
    return admin_token_equal(end + 1, want) ? (int64_t)issued : 0;
}

/* A fresh device cookie for @p name into @p out (left empty on failure). */
static void device_issue(sqlite3 *db, const char *name, char out[ADMIN_DEVICE_LEN])
{
    char tag[ADMIN_TOKEN_HEX];
    int64_t now = (int64_t)time(NULL);
    out[0] = '\0';
    if (device_tag(db, name, now, tag) == 0)
        snprintf(out, ADMIN_DEVICE_LEN, "%lld.%s", (long long)now, tag);
}

/* End the attempt throttle_begin reserved on @p keys (the user's key
 * last) with the outcome of check @p rc, counting a wrong password of a
 * known user in the store as well (not with @p db NULL: a known device's
 * attempt): the keys it locked, bit i for keys[i]. */
static unsigned attempt_end(sqlite3 *db, const char *name, const char *const keys[], int n, int rc)
{
    unsigned stored_locked = rc == -EACCES && db && stored_fail(db, name) ? 1u << (n - 1) : 0u;
    return stored_locked | throttle_end(keys, n,
                                        rc == 0         ? THROTTLE_SUCCEEDED
                                        : rc == -EACCES ? THROTTLE_FAILED
                                                        : THROTTLE_ABORTED);
}

int admin_login(const char *name, const char *password, const char *code, const char *source,
                const char *device, struct admin_session *s, int *retry_after)
{
    sqlite3 *db = store_connect();
    /* A known device's attempts are its own: not the name's (in memory or
     * in the store), which someone else may have locked on purpose. */
    int64_t dev = db ? device_valid(db, name, device) : 0;
    int clip = (int)utf8_clip(name, strlen(name), 64);
    /* The address's keys (an IPv6 address's /64, /56, /48; an IPv4 address
     * and its /24), then the name's. */
    char *owned[THROTTLE_ADDR_KEYS + 1];
    int nkeys = throttle_addr_keys(source, owned);
    owned[nkeys++] = dev ? xasprintf("device:%.*s/%lld", clip, name, (long long)dev)
                         : xasprintf("user:%.*s", clip, name);
    const char *keys[THROTTLE_ADDR_KEYS + 1];
    for (int i = 0; i < nkeys; i++)
        keys[i] = owned[i];
    /* Reserved before the password is checked (a PBKDF2 run): parallel
     * attempts count as the failures they may become. */
    int rc = throttle_begin(keys, nkeys, retry_after);
    if (rc < 0) {
        log_refused(name, source,
                    rc == -EPERM   ? "locked out"
                    : rc == -EBUSY ? "throttle table full"
                                   : "backing off",
                    *retry_after);
        goto out;
    }
    int64_t uid = 0;
    unsigned char pw_hash[HASH_LEN] = {0};
    int held = db && !dev ? stored_lock(db, name) : 0;
    if (held > 0) {
        /* Locked in the store, not (or no longer) in memory: not checked. */
        *retry_after = held;
        rc = -EPERM;
        log_refused(name, source, "locked out", held);
    } else {
        rc = db ? admin_password_check_hash(db, name, password, &uid, pw_hash) : -EIO;
    }
    /* The second factor before anything that a success does: a right
     * password with a wrong code must not clear the name's failure count,
     * or codes could be guessed without end. */
    int recovered = 0;
    if (rc == 0) {
        rc = admin_totp_login_check(db, uid, code);
        recovered = rc == 1;
        if (recovered)
            rc = 0;
    }
    /* A wrong code counts as a wrong password; no code at all counts as
     * nothing (the form asks for it next). */
    int counted = rc == -EKEYREJECTED ? -EACCES : rc;
    if (rc == 0) {
        memset(s, 0, sizeof *s);
        snprintf(s->user, sizeof s->user, "%s", name);
        rc = session_create(db, uid, pw_hash, source, s);
        /* A new password came since the check: this one is wrong now. */
        if (rc == -EACCES)
            counted = rc;
        if (rc == 0 && !dev) /* the name's count is not the device's to clear */
            stored_clear(db, uid);
        /* After the check: a re-hash of the password has changed the key. */
        if (rc == 0)
            device_issue(db, name, s->device);
    }
    unsigned locked = attempt_end(dev ? NULL : db, name, keys, nkeys, counted);
    if (counted == -EACCES)
        login_failed(name, source, keys, nkeys, locked);
    if (rc == 0 && recovered) {
        /* Worth a warning: the phone may be lost, or a code stolen. */
        char *left = xasprintf("%d recovery codes left", admin_recovery_left(db, uid, NULL));
        log_warn("admin: user \"%s\" logged in from %s with a recovery code; %s", name, source,
                 left);
        audit_event(name, source, "login.recovery_code", name, left);
        free(left);
    } else if (rc == 0) {
        log_info("admin: user \"%s\" logged in from %s%s", name, source,
                 dev ? " (a known device)" : "");
        audit_event(name, source, "login", name, NULL);
    }
out:
    store_disconnect(db);
    for (int i = 0; i < nkeys; i++)
        free(owned[i]);
    return rc;
}

int admin_password_recheck(const char *name, const char *password, int (*factor)(void *arg),
                           void *arg, int *retry_after)
{
    char *ukey = xasprintf("user:%.*s", (int)utf8_clip(name, strlen(name), 64), name);
    const char *keys[1] = {ukey};
    int rc = throttle_begin(keys, 1, retry_after);
    if (rc < 0)
        goto out;
    sqlite3 *db = store_connect();
    int64_t uid = 0;
    /* Locked in the store counts here too: else each restart (which
     * empties the in-memory table) would give a stolen session
     * admin.lockout_after more guesses at the password. */
    int held = db ? stored_lock(db, name) : 0;
    if (held > 0) {
        *retry_after = held;
        rc = -EPERM;
        attempt_end(NULL, name, keys, 1, rc);
        store_disconnect(db);
        goto out;
    }
    rc = db ? admin_password_check(db, name, password, &uid) : -EIO;
    if (rc == 0 && factor)
        rc = factor(arg);
    int counted = rc == -EKEYREJECTED || rc == -EBADMSG ? -EACCES : rc;
    unsigned locked = attempt_end(db, name, keys, 1, counted);
    store_disconnect(db);
    if (counted == -EACCES)
        login_failed(name, "a web session", keys, 1, locked);
out:
    free(ukey);
    return rc;
}

/* The session of @p cookie; @p touch: the request counts as use, moving
 * last_seen (admin.session_idle counts from there). */
static int session_lookup(const char *cookie, struct admin_session *s, bool touch)
{
    if (!cookie || strlen(cookie) != ADMIN_TOKEN_HEX - 1)
        return -ENOENT;
    unsigned char h[HASH_LEN];
    cookie_hash(cookie, h);
    sqlite3 *db = store_connect();
    sqlite3_stmt *st = NULL;
    int rc = -ENOENT;
    time_t now = time(NULL);
    long long idle = settings_get_int("admin.session_idle", 1800);
    if (!db || sqlite3_prepare_v2(db,
                                  "SELECT u.name, s.csrf_token, s.expires_at, s.last_seen "
                                  "FROM admin_sessions s JOIN admin_users u ON u.id = s.user_id "
                                  "WHERE s.token_hash = ?",
                                  -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_blob(st, 1, h, HASH_LEN, SQLITE_STATIC);
    if (store_step_row(st) != 0)
        goto out;
    time_t expires = (time_t)sqlite3_column_int64(st, 2);
    time_t last = (time_t)sqlite3_column_int64(st, 3);
    if (now >= expires || now - last > idle)
        goto out;
    memset(s, 0, sizeof *s);
    snprintf(s->user, sizeof s->user, "%s", (const char *)sqlite3_column_text(st, 0));
    snprintf(s->csrf, sizeof s->csrf, "%s", (const char *)sqlite3_column_text(st, 1));
    rc = 0;
    sqlite3_finalize(st);
    st = NULL;
    /* Few writes (SD cards): last_seen moves at most every idle/4 (<= 60 s). */
    long long step = idle / 4 < 60 ? idle / 4 : 60;
    if (touch && now - last >= step &&
        sqlite3_prepare_v2(db, "UPDATE admin_sessions SET last_seen = ? WHERE token_hash = ?", -1,
                           &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, (sqlite3_int64)now);
        sqlite3_bind_blob(st, 2, h, HASH_LEN, SQLITE_STATIC);
        sqlite3_step(st);
    }
out:
    sqlite3_finalize(st);
    store_disconnect(db);
    return rc;
}

int admin_session_get(const char *cookie, struct admin_session *s)
{
    return session_lookup(cookie, s, true);
}

int admin_session_alive(const char *cookie, struct admin_session *s)
{
    return session_lookup(cookie, s, false);
}

int admin_session_end(const char *cookie)
{
    if (!cookie)
        return -ENOENT;
    unsigned char h[HASH_LEN];
    cookie_hash(cookie, h);
    sqlite3 *db = store_connect();
    sqlite3_stmt *st = NULL;
    int rc = -ENOENT;
    if (db && sqlite3_prepare_v2(db, "DELETE FROM admin_sessions WHERE token_hash = ?", -1, &st,
                                 NULL) == SQLITE_OK) {
        sqlite3_bind_blob(st, 1, h, HASH_LEN, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_DONE && sqlite3_changes(db) > 0)
            rc = 0;
    }
    sqlite3_finalize(st);
    store_disconnect(db);
    return rc;
}

/* The API request on this thread came with this session (admin server). */
static _Thread_local unsigned char current_hash[HASH_LEN];
static _Thread_local bool has_current;

void admin_session_current_set(const char *cookie)
{
    has_current = cookie != NULL;
    if (cookie)
        cookie_hash(cookie, current_hash);
    else
        memset(current_hash, 0, sizeof current_hash);
}

int admin_sessions_end_others(sqlite3 *db, int64_t user_id)
{
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    if (sqlite3_prepare_v2(db,
                           "DELETE FROM admin_sessions WHERE user_id = ?1 AND "
                           "(?2 IS NULL OR token_hash <> ?2)",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, user_id);
        if (has_current)
            sqlite3_bind_blob(st, 2, current_hash, HASH_LEN, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_DONE)
            rc = 0;
    }
    sqlite3_finalize(st);
    return rc;
}
