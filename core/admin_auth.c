#include "core/admin_auth.h"

#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "core/admin_throttle.h"
#include "core/audit.h"
#include "core/log.h"
#include "core/settings.h"
#include "core/store.h"
#include "core/xalloc.h"

#define SALT_LEN 16
#define HASH_LEN 32
#define MIN_PASSWORD 10

static pthread_mutex_t auth_lock = PTHREAD_MUTEX_INITIALIZER;
static char setup_token[ADMIN_TOKEN_HEX];
/* CLOCK_MONOTONIC seconds: the first run is often just after a boot, when
 * NTP steps the wall clock of a box without an RTC by days, which must
 * neither end the token at once nor keep it past admin.setup_token_ttl. */
static int64_t setup_expires;

static int64_t mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec;
}

/* ---- helpers ----------------------------------------------------------- */

void admin_hex32(const unsigned char raw[32], char out[ADMIN_TOKEN_HEX])
{
    for (size_t i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

int admin_random_hex(char out[ADMIN_TOKEN_HEX])
{
    unsigned char raw[32];
    if (gnutls_rnd(GNUTLS_RND_KEY, raw, sizeof raw) < 0)
        return -EIO;
    admin_hex32(raw, out);
    return 0;
}

int admin_token_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = la != lb;
    for (size_t i = 0; i < la && i < lb; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0 && la > 0;
}

static int pbkdf2(const char *password, const unsigned char *salt, unsigned iter,
                  unsigned char out[HASH_LEN])
{
    gnutls_datum_t key = {(unsigned char *)password, (unsigned)strlen(password)};
    gnutls_datum_t s = {(unsigned char *)salt, SALT_LEN};
    return gnutls_pbkdf2(GNUTLS_MAC_SHA256, &key, &s, iter, out, HASH_LEN) < 0 ? -EIO : 0;
}

static int valid_name(const char *name, char **err)
{
    regex_t re;
    regcomp(&re, "^[a-z][a-z0-9_.-]{0,31}$", REG_EXTENDED | REG_NOSUB);
    int ok = regexec(&re, name, 0, NULL, 0) == 0;
    regfree(&re);
    /* "control" and "system" name the socket and the daemon in the audit log. */
    if (!ok || strcmp(name, "control") == 0 || strcmp(name, "system") == 0) {
        *err = xasprintf("user name \"%s\": use 1-32 of a-z 0-9 _ . - starting with a letter "
                         "(not control or system)",
                         name);
        return -EINVAL;
    }
    return 0;
}

/* ---- users ------------------------------------------------------------- */

int admin_users_count(void)
{
    sqlite3 *db = store_connect();
    sqlite3_stmt *st = NULL;
    int n = -EIO;
    if (db &&
        sqlite3_prepare_v2(db, "SELECT count(*) FROM admin_users", -1, &st, NULL) == SQLITE_OK &&
        store_step_row(st) == 0)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    store_disconnect(db);
    return n;
}

/* The characters of UTF-8 @p s: the bytes that start one.  The rule is of
 * characters, and "ééééé" is 10 bytes. */
static size_t password_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

/* Write the user; @p only_first refuses when any user exists (first run). */
static int write_user(const char *name, const char *password, int only_first, char **err)
{
    if (valid_name(name, err) < 0)
        return -EINVAL;
    if (password_chars(password) < MIN_PASSWORD) {
        *err = xasprintf("password: at least %d characters", MIN_PASSWORD);
        return -EINVAL;
    }
    unsigned char salt[SALT_LEN], hash[HASH_LEN];
    unsigned iter = (unsigned)settings_get_int("admin.pbkdf2_iterations", 200000);
    if (gnutls_rnd(GNUTLS_RND_KEY, salt, sizeof salt) < 0 || pbkdf2(password, salt, iter, hash))
        return -EIO;
    sqlite3 *db = store_connect();
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    if (!db || store_begin(db, err) < 0)
        goto out;
    if (only_first &&
        (sqlite3_prepare_v2(db, "SELECT 1 FROM admin_users", -1, &st, NULL) != SQLITE_OK ||
         store_step_row(st) != -ENOENT)) {
        rc = -EEXIST;
        goto rollback;
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO admin_users (name, pw_salt, pw_hash, pw_iterations, "
                           "created_at) VALUES (?1,?2,?3,?4,?5) ON CONFLICT(name) DO UPDATE "
                           "SET pw_salt=?2, pw_hash=?3, pw_iterations=?4, failed_logins=0, "
                           "locked_until=0",
                           -1, &st, NULL) != SQLITE_OK)
        goto rollback;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 2, salt, SALT_LEN, SQLITE_STATIC);
    sqlite3_bind_blob(st, 3, hash, HASH_LEN, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, iter);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)time(NULL));
    if (sqlite3_step(st) != SQLITE_DONE)
        goto rollback;
    sqlite3_finalize(st);
    st = NULL;
    /* A new password ends every session of the user. */
    if (sqlite3_prepare_v2(db,
                           "DELETE FROM admin_sessions WHERE user_id = "
                           "(SELECT id FROM admin_users WHERE name = ?1)",
                           -1, &st, NULL) != SQLITE_OK)
        goto rollback;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE || store_commit(db, err) < 0)
        goto rollback;
    rc = 0;
    goto out;
rollback:
    store_rollback(db);
out:
    sqlite3_finalize(st);
    store_disconnect(db);
    if (rc == -EIO && !*err)
        *err = xstrdup("store: cannot write the user");
    return rc;
}

int admin_set_password(const char *name, const char *password, char **err)
{
    int rc = write_user(name, password, 0, err);
    /* The name's lock in memory goes with the one in the store (write_user):
     * it held guesses at the old password, and "tlsboxctl admin passwd" is
     * how a locked-out user gets in again. */
    if (rc == 0) {
        char *key = xasprintf("user:%s", name);
        throttle_forget(key);
        free(key);
    }
    return rc;
}

/* ---- first run --------------------------------------------------------- */

char *admin_setup_token_new(void)
{
    if (admin_users_count() != 0)
        return NULL;
    char t[ADMIN_TOKEN_HEX];
    if (admin_random_hex(t) < 0)
        return NULL;
    pthread_mutex_lock(&auth_lock);
    memcpy(setup_token, t, sizeof t);
    setup_expires = mono_s() + settings_get_int("admin.setup_token_ttl", 1800);
    pthread_mutex_unlock(&auth_lock);
    return xstrdup(t);
}

int admin_setup(const char *token, const char *name, const char *password, char **err)
{
    pthread_mutex_lock(&auth_lock);
    int ok = setup_token[0] && mono_s() < setup_expires && admin_token_equal(token, setup_token);
    pthread_mutex_unlock(&auth_lock);
    if (!ok)
        return -EACCES;
    int rc = write_user(name, password, 1, err);
    if (rc == 0) {
        pthread_mutex_lock(&auth_lock);
        memset(setup_token, 0, sizeof setup_token);
        pthread_mutex_unlock(&auth_lock);
    }
    return rc;
}

/* ---- checking a password ----------------------------------------------- */

unsigned admin_unknown_user_iterations(sqlite3 *db)
{
    /* The count most stored hashes use (the larger on a tie): a name that
     * does not exist then costs what most existing names cost, also after
     * admin.pbkdf2_iterations changed and before their users logged in. */
    unsigned iter = (unsigned)settings_get_int("admin.pbkdf2_iterations", 200000);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT pw_iterations FROM admin_users GROUP BY pw_iterations "
                           "ORDER BY count(*) DESC, pw_iterations DESC LIMIT 1",
                           -1, &st, NULL) == SQLITE_OK &&
        store_step_row(st) == 0 && sqlite3_column_int64(st, 0) > 0)
        iter = (unsigned)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return iter;
}

/* After a successful check: a hash made with other iterations than the
 * setting's is made again with the setting's, so raising
 * admin.pbkdf2_iterations protects every user from their next login on, and
 * all stored hashes come to cost the same.  The old hash is in the WHERE, so
 * a password changed meanwhile is not overwritten; a remade hash replaces
 * @p old_hash.  1 when the stored hash was no longer @p old_hash (a new
 * password, or a parallel login remade it), else 0.  Failure only logs: the
 * login itself succeeded. */
static int rehash_if_needed(sqlite3 *db, int64_t uid, const char *name, const char *password,
                            unsigned had, unsigned char old_hash[HASH_LEN])
{
    unsigned want = (unsigned)settings_get_int("admin.pbkdf2_iterations", 200000);
    if (had == want)
        return 0;
    unsigned char salt[SALT_LEN], hash[HASH_LEN];
    sqlite3_stmt *st = NULL;
    int done = -1;
    if (gnutls_rnd(GNUTLS_RND_KEY, salt, sizeof salt) == 0 &&
        pbkdf2(password, salt, want, hash) == 0 &&
        sqlite3_prepare_v2(db,
                           "UPDATE admin_users SET pw_salt = ?1, pw_hash = ?2, pw_iterations = ?3 "
                           "WHERE id = ?4 AND pw_hash = ?5",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_blob(st, 1, salt, SALT_LEN, SQLITE_STATIC);
        sqlite3_bind_blob(st, 2, hash, HASH_LEN, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, want);
        sqlite3_bind_int64(st, 4, uid);
        sqlite3_bind_blob(st, 5, old_hash, HASH_LEN, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_DONE)
            done = sqlite3_changes(db);
    }
    sqlite3_finalize(st);
    if (done > 0) {
        memcpy(old_hash, hash, HASH_LEN); /* now the one stored */
        log_info("admin: password hash of user \"%s\" remade with %u PBKDF2 iterations (was %u)",
                 name, want, had);
    } else if (done < 0) {
        log_warn("admin: could not remake the password hash of user \"%s\" with %u PBKDF2 "
                 "iterations: %s",
                 name, want, sqlite3_errmsg(db));
    }
    return done == 0;
}

/* admin_password_check_hash; @p again: once more after a lost re-hash. */
static int password_check(sqlite3 *db, const char *name, const char *password, int64_t *user_id,
                          unsigned char hash[HASH_LEN], bool again)
{
    sqlite3_stmt *st = NULL;
    unsigned char salt[SALT_LEN] = {0}, stored[HASH_LEN] = {0}, got[HASH_LEN];
    unsigned iter = 0;
    int found = 0;
    int64_t uid = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT id, pw_salt, pw_hash, pw_iterations FROM admin_users "
                           "WHERE name = ?",
                           -1, &st, NULL) != SQLITE_OK)
        return -EIO;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (store_step_row(st) == 0 && sqlite3_column_bytes(st, 1) == SALT_LEN &&
        sqlite3_column_bytes(st, 2) == HASH_LEN && sqlite3_column_int64(st, 3) > 0) {
        found = 1;
        uid = sqlite3_column_int64(st, 0);
        memcpy(salt, sqlite3_column_blob(st, 1), SALT_LEN);
        memcpy(stored, sqlite3_column_blob(st, 2), HASH_LEN);
        iter = (unsigned)sqlite3_column_int64(st, 3);
    }
    sqlite3_finalize(st);
    /* An unknown user costs the same hash: timing does not tell names. */
    if (!found)
        iter = admin_unknown_user_iterations(db);
    if (pbkdf2(password, salt, iter, got) < 0)
        return -EIO;
    unsigned char d = 0;
    for (int i = 0; i < HASH_LEN; i++)
        d |= (unsigned char)(got[i] ^ stored[i]);
    if (!found || d != 0)
        return -EACCES;
    /* The hash changed since it was read: against the one stored now (a
     * parallel login remade it), which a new password fails. */
    if (rehash_if_needed(db, uid, name, password, iter, stored) && !again)
        return password_check(db, name, password, user_id, hash, true);
    *user_id = uid;
    memcpy(hash, stored, HASH_LEN);
    return 0;
}

int admin_password_check(sqlite3 *db, const char *name, const char *password, int64_t *user_id)
{
    unsigned char hash[HASH_LEN];
    return password_check(db, name, password, user_id, hash, false);
}

int admin_password_check_hash(sqlite3 *db, const char *name, const char *password, int64_t *user_id,
                              unsigned char hash[32])
{
    return password_check(db, name, password, user_id, hash, false);
}
