/* Admin authentication: users with PBKDF2-SHA256 passwords, the first-run
 * setup token, sessions (cookie + CSRF token, idle and absolute expiry) and
 * login throttling per address and per user.  Any thread (each call opens
 * its own store connection); never from a site worker. */
#ifndef TLSBOX_CORE_ADMIN_AUTH_H
#define TLSBOX_CORE_ADMIN_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

/* Hex lengths (+1 for the NUL) of the session cookie value and CSRF token. */
#define ADMIN_TOKEN_HEX 65

/* A device cookie's value: "<issued>.<64 hex>" and its NUL. */
#define ADMIN_DEVICE_LEN 96
/* How long a device cookie is honoured after the login that issued it. */
#define ADMIN_DEVICE_MAX_AGE (180 * 86400)

struct admin_session {
    char user[64];
    char csrf[ADMIN_TOKEN_HEX];
    char cookie[ADMIN_TOKEN_HEX];  /* only filled by admin_login */
    char device[ADMIN_DEVICE_LEN]; /* only filled by admin_login: the device cookie to set */
};

/* Number of admin users, or a negative errno. */
int admin_users_count(void);

/* Create @p name or replace its password (salted PBKDF2-SHA256 with
 * admin.pbkdf2_iterations).  -EINVAL with *err for a bad name or a password
 * shorter than 10 characters.  Ends the user's sessions. */
int admin_set_password(const char *name, const char *password, char **err);

/* A new one-time setup token (caller frees), valid admin.setup_token_ttl
 * seconds; it replaces any earlier one.  NULL when a user exists already. */
char *admin_setup_token_new(void);
/* First run: with a valid setup token and no user yet, create @p name.  The
 * token is used up on success.  -EACCES bad/expired token, -EEXIST a user
 * exists, -EINVAL (with *err) bad name or password. */
int admin_setup(const char *token, const char *name, const char *password, char **err);

/*
 * Check a login from @p source.  0 and *s filled (new session) on success.
 * -EACCES wrong name or password; -ENOKEY / -EKEYREJECTED (see below); -EAGAIN throttled, -EPERM
 * locked out and -EBUSY no room to track the attempt (see throttle_begin), each with *retry_after
 * seconds; the attempt is then not even checked. Failures, throttling and lockouts are logged and
 * audited.
 *
 * @p device (NULL: none) is the device cookie the browser sent.  One that
 * this box issued to a browser that logged in as @p name, under the user's
 * current password and within ADMIN_DEVICE_MAX_AGE, counts the attempt
 * under that device instead of the name: someone failing on purpose from
 * elsewhere locks the name, not the owner's browser (OWASP's "device
 * cookies").  Its own failures lock only that device.  A success fills
 * s->device with a fresh one.  Any thread.
 */
int admin_login(const char *name, const char *password, const char *code, const char *source,
                const char *device, struct admin_session *s, int *retry_after);
/* With two-factor login on for the user (admin_twofactor.c), admin_login
 * also needs @p code, the 6 digits of the user's authenticator app, checked
 * after the password: -ENOKEY when the password is right and no code came
 * (not counted as a failure: the form then asks for it), -EKEYREJECTED
 * when the code is wrong or was used already (counted, throttled and locked
 * out like a wrong password).  A known device needs the code as well.  One
 * of the user's recovery codes stands in for the 6 digits, once. */
/* admin_login's second step for user @p user_id on @p db: 0 when the user
 * has no TOTP secret or @p code matches it (its step then stored: a code
 * logs in once), 1 when @p code was one of the user's recovery codes (now
 * used up, admin_recovery.h), -ENOKEY no code, -EKEYREJECTED wrong or
 * reused, -EIO. */
int admin_totp_login_check(sqlite3 *db, int64_t user_id, const char *code);
/* Register GET/POST/PUT admin/totp, POST admin/totp/off and
 * admin/totp/recovery (see
 * admin_twofactor.c).  Main thread, with admin_api_register. */
void admin_totp_api_register(void);
/* Re-check the password of logged-in user @p name before a change that
 * needs it (a new password): throttled, counted and audited as a failed
 * login of the name (not of an address: the caller holds a session).  With
 * @p factor (may be NULL), a second factor checked in the same attempt
 * once the password is right: factor(@p arg) returns 0, -EKEYREJECTED
 * (wrong code) or -EBADMSG (not a code), both counted as a failed login
 * like a wrong password, or -EIO.  Without that, a right password would
 * clear the count after each wrong code, and codes could be guessed
 * without end from an open session.  0,
 * -EACCES wrong password, -EAGAIN/-EPERM/-EBUSY with *retry_after, -EIO. */
int admin_password_recheck(const char *name, const char *password, int (*factor)(void *arg),
                           void *arg, int *retry_after);
/* The session of cookie value @p cookie: 0 with *s filled (cookie left
 * empty), -ENOENT unknown or expired (idle or absolute). */
int admin_session_get(const char *cookie, struct admin_session *s);
/* admin_session_get without counting as use: for what the box sends by
 * itself on an open connection (the live stream's ticks), which must not
 * keep an unattended session from its admin.session_idle end. */
int admin_session_alive(const char *cookie, struct admin_session *s);
/* End the session of @p cookie (logout).  0 or -ENOENT. */
int admin_session_end(const char *cookie);
/* The session this thread's API request came with (the admin server sets
 * it around the dispatch; NULL: none, as from the control socket).  The
 * cookie is copied; admin_session_current_set(NULL) forgets it. */
void admin_session_current_set(const char *cookie);
/* Inside @p db's open transaction: end every session of user @p user_id
 * but the one this thread's request came with (all of them without one),
 * as a change of the account's second factor does.  0 or -EIO. */
int admin_sessions_end_others(sqlite3 *db, int64_t user_id);

/* 64 hex digits from 32 random bytes (GNUTLS_RND_KEY).  0 or -EIO. */
int admin_random_hex(char out[ADMIN_TOKEN_HEX]);
/* @p raw (32 bytes, a digest or random) as 64 lower-case hex digits.  Pure. */
void admin_hex32(const unsigned char raw[32], char out[ADMIN_TOKEN_HEX]);
/* 0 with *user_id when @p password is @p name's; -EACCES otherwise (an
 * unknown name costs the same PBKDF2 run); -EIO on a store error.  A right
 * password whose stored hash used other iterations than
 * admin.pbkdf2_iterations is hashed again with the setting's (a write to
 * admin_users; a failure there is logged and the check still succeeds). */
int admin_password_check(sqlite3 *db, const char *name, const char *password, int64_t *user_id);
/* admin_password_check, and on success the stored hash the password
 * matched (the remade one after a re-hash) in @p hash: a session is made
 * only while the user's hash is still that one (admin_login), so a login
 * checked just before a new password makes no session after it. */
int admin_password_check_hash(sqlite3 *db, const char *name, const char *password, int64_t *user_id,
                              unsigned char hash[32]);

/* The PBKDF2 iterations an unknown name is hashed with: the count most
 * stored users' hashes use, else admin.pbkdf2_iterations. */
unsigned admin_unknown_user_iterations(sqlite3 *db);

/* Constant-time comparison of two NUL-terminated strings. */
int admin_token_equal(const char *a, const char *b);

#endif
