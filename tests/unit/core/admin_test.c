/* Admin authentication pieces on a real store: first-run token, PBKDF2
 * passwords, sessions (only the cookie's hash stored), throttling and
 * lockout, and the masking of secrets in audited request bodies. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/admin.h"
#include "core/admin_auth.h"
#include "core/admin_recovery.h"
#include "core/admin_throttle.h"
#include "core/admin_totp.h"
#include "core/audit.h"
#include "core/settings.h"
#include "core/store.h"
#include "core/xalloc.h"
#include "tests/tap.h"

static const struct tlsbox_setting_def test_settings[] = {
    {.key = "token",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .help = "x",
     .flags = TLSBOX_SETTING_SECRET},
    {.key = "plain", .type = TLSBOX_SETTING_STRING, .default_value = "", .help = "x"},
    TLSBOX_SETTINGS_END};

static void test_first_run_and_passwords(void)
{
    char *err = NULL;
    is_int(admin_users_count(), 0, "no user at first");
    char *token = admin_setup_token_new();
    ok(token && strlen(token) == 64, "a setup token of 64 hex digits");
    is_int(admin_setup("0000", "admin", "long enough pw", &err), -EACCES,
           "a wrong token is refused");
    is_int(admin_setup(token, "admin", "short", &err), -EINVAL, "a short password is refused");
    like(err, "at least 10", "and says why");
    free(err);
    err = NULL;
    is_int(admin_setup(token, "control", "long enough pw", &err), -EINVAL,
           "the reserved name control is refused");
    free(err);
    err = NULL;
    is_int(admin_setup(token, "admin", "long enough pw", &err), 0, "first run creates the user");
    is_int(admin_setup(token, "eve", "long enough pw", &err), -EACCES, "the token works once");
    ok(admin_setup_token_new() == NULL, "no new token once a user exists");
    is_int(admin_set_password("gina", "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", &err), -EINVAL,
           "a password of 5 characters in 10 bytes (5 x U+00E9) is short too");
    like(err, "at least 10 characters", "and says why");
    free(err);
    err = NULL;
    free(token);

    sqlite3 *db = store_connect();
    int64_t uid = 0;
    is_int(admin_password_check(db, "admin", "long enough pw", &uid), 0, "the password checks");
    ok(uid > 0, "and gives the user id");
    is_int(admin_password_check(db, "admin", "long enough pX", &uid), -EACCES, "a wrong one fails");
    is_int(admin_password_check(db, "nobody", "long enough pw", &uid), -EACCES,
           "an unknown user fails the same way");
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db,
                       "SELECT length(pw_hash), length(pw_salt), pw_iterations FROM admin_users",
                       -1, &st, NULL);
    is_int(store_step_row(st), 0, "the user row exists");
    is_int(sqlite3_column_int(st, 0) * 100 + sqlite3_column_int(st, 1), 3216,
           "a 32-byte hash and a 16-byte salt are stored");
    is_int(sqlite3_column_int(st, 2), 10000, "with admin.pbkdf2_iterations");
    sqlite3_finalize(st);
    store_disconnect(db);
}

/* admin_users.pw_iterations of @p name (-1 when missing), its hash in @p hash. */
static int stored_iterations(sqlite3 *db, const char *name, unsigned char hash[32])
{
    sqlite3_stmt *st = NULL;
    int n = -1;
    memset(hash, 0, 32);
    if (sqlite3_prepare_v2(db, "SELECT pw_iterations, pw_hash FROM admin_users WHERE name = ?", -1,
                           &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        if (store_step_row(st) == 0 && sqlite3_column_bytes(st, 1) == 32) {
            n = sqlite3_column_int(st, 0);
            memcpy(hash, sqlite3_column_blob(st, 1), 32);
        }
    }
    sqlite3_finalize(st);
    return n;
}

/* admin.pbkdf2_iterations raised: an unknown name keeps costing what the
 * stored user costs until that user logs in; the login remakes the hash
 * with the new count, a wrong password does not. */
static void test_iterations_change(void)
{
    char *err = NULL;
    sqlite3 *db = store_connect();
    int64_t uid = 0;
    unsigned char h0[32], h1[32];
    is_int((int)admin_unknown_user_iterations(db), 10000,
           "an unknown name is hashed with the stored user's 10000 iterations");
    is_int(settings_set("admin.pbkdf2_iterations", "20000", "test", &err), 0,
           "admin.pbkdf2_iterations raised to 20000");
    is_int((int)admin_unknown_user_iterations(db), 10000,
           "an unknown name still costs 10000 iterations: admin's hash has 10000");
    is_int(stored_iterations(db, "admin", h0), 10000, "admin's stored hash has 10000");
    is_int(admin_password_check(db, "admin", "long enough pX", &uid), -EACCES,
           "a wrong password fails");
    is_int(stored_iterations(db, "admin", h1), 10000, "and remakes nothing");
    ok(memcmp(h0, h1, 32) == 0, "the hash is the same");
    is_int(admin_password_check(db, "nobody", "long enough pw", &uid), -EACCES,
           "an unknown name fails");
    is_int(admin_password_check(db, "admin", "long enough pw", &uid), 0,
           "the right password checks");
    is_int(stored_iterations(db, "admin", h1), 20000, "and remakes the hash with 20000 iterations");
    ok(memcmp(h0, h1, 32) != 0, "a new hash is stored");
    is_int((int)admin_unknown_user_iterations(db), 20000, "an unknown name now costs 20000");
    is_int(admin_password_check(db, "admin", "long enough pw", &uid), 0,
           "the password checks against the new hash");
    is_int(admin_password_check(db, "admin", "long enough pX", &uid), -EACCES,
           "a wrong one still fails");
    is_int(stored_iterations(db, "admin", h0), 20000, "a second login remakes nothing");
    ok(memcmp(h0, h1, 32) == 0, "the hash stays");
    is_int(settings_set("admin.pbkdf2_iterations", "10000", "test", &err), 0,
           "admin.pbkdf2_iterations back to 10000");
    is_int(admin_password_check(db, "admin", "long enough pw", &uid), 0, "the password checks");
    is_int(stored_iterations(db, "admin", h0), 10000, "and the hash follows the setting down too");
    free(err);
    store_disconnect(db);
}

/* admin_users.failed_logins of @p name, or -1. */
static int stored_failures(const char *name)
{
    sqlite3 *db = store_connect();
    sqlite3_stmt *st = NULL;
    int n = -1;
    sqlite3_prepare_v2(db, "SELECT failed_logins FROM admin_users WHERE name = ?", -1, &st, NULL);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (store_step_row(st) == 0)
        n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    store_disconnect(db);
    return n;
}

static void test_sessions(void)
{
    struct admin_session s, g;
    int retry = 0;
    is_int(admin_login("admin", "long enough pw", NULL, "192.0.2.7", NULL, &s, &retry), 0, "login");
    is_int((int)strlen(s.cookie) * 100 + (int)strlen(s.csrf), 6464, "cookie and CSRF token");
    is_int(admin_session_get(s.cookie, &g), 0, "the session is found by its cookie");
    is_str(g.user, "admin", "for its user");
    is_str(g.csrf, s.csrf, "with its CSRF token");
    sqlite3 *db = store_connect();
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db, "SELECT count(*) FROM admin_sessions WHERE hex(token_hash) = upper(?)",
                       -1, &st, NULL);
    sqlite3_bind_text(st, 1, s.cookie, -1, SQLITE_STATIC);
    store_step_row(st);
    is_int(sqlite3_column_int(st, 0), 0, "the cookie value itself is not stored");
    sqlite3_finalize(st);
    store_disconnect(db);
    is_int(admin_session_end(s.cookie), 0, "logout");
    is_int(admin_session_get(s.cookie, &g), -ENOENT, "the session is gone");
    is_int(admin_session_get("nonsense", &g), -ENOENT, "a malformed cookie finds nothing");
    /* A known user's failures are counted in the store as well (they
     * outlive a restart); a success clears them. */
    is_int(admin_login("admin", "not the password", NULL, "192.0.2.8", NULL, &s, &retry), -EACCES,
           "a wrong password");
    is_int(stored_failures("admin"), 1, "is counted in admin_users");
    is_int(admin_login("admin", "long enough pw", NULL, "192.0.2.9", NULL, &s, &retry), 0,
           "the right one");
    is_int(stored_failures("admin"), 0, "clears the stored count");
    is_int(admin_session_end(s.cookie), 0, "logout");
    ok(admin_token_equal("abc", "abc") && !admin_token_equal("abc", "abd") &&
           !admin_token_equal("abc", "ab") && !admin_token_equal("", ""),
       "token comparison");
}

/* Set (or with @p key NULL clear) @p name's TOTP secret in the store. */
static void totp_store(const char *name, const unsigned char *key)
{
    sqlite3 *db = store_connect();
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db,
                       "UPDATE admin_users SET totp_secret = ?, totp_last_step = 0 WHERE name = ?",
                       -1, &st, NULL);
    if (key)
        sqlite3_bind_blob(st, 1, key, TOTP_SECRET_LEN, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    (void)sqlite3_step(st);
    sqlite3_finalize(st);
    store_disconnect(db);
}

/* Two-factor login: the code is asked for after a right password, a wrong
 * one counts as a failed login (and clears nothing), a code logs in once.
 * (Two failures in a row at most: a third would make the name back off.) */
static void test_two_factor(void)
{
    struct admin_session s;
    int retry = 0;
    const unsigned char key[] = "12345678901234567890"; /* RFC 6238's SHA-1 secret */
    char code[8], wrong[8];
    totp_store("admin", key);
    uint32_t v = totp_hotp(key, TOTP_SECRET_LEN, (uint64_t)(time(NULL) / TOTP_PERIOD));
    snprintf(code, sizeof code, "%06u", v);
    snprintf(wrong, sizeof wrong, "%06u", (v + 1) % 1000000);
    is_int(admin_login("admin", "long enough pw", NULL, "192.0.2.30", NULL, &s, &retry), -ENOKEY,
           "TOTP on: the right password alone asks for the code");
    is_int(stored_failures("admin"), 0, "which is no failure");
    is_int(admin_login("admin", "long enough pw", "12345", "192.0.2.31", NULL, &s, &retry),
           -EKEYREJECTED, "five digits are a wrong code");
    is_int(admin_login("admin", "long enough pw", wrong, "192.0.2.32", NULL, &s, &retry),
           -EKEYREJECTED, "a wrong code is refused");
    is_int(stored_failures("admin"), 2, "each wrong code counts as a failed login of the name");
    is_int(admin_login("admin", "long enough pw", code, "192.0.2.34", NULL, &s, &retry), 0,
           "the right password and code log in");
    is_int(stored_failures("admin"), 0, "and clear the count");
    is_int(admin_session_end(s.cookie), 0, "logout");
    is_int(admin_login("admin", "long enough pw", code, "192.0.2.35", NULL, &s, &retry),
           -EKEYREJECTED, "the same code does not log in twice");

    /* Recovery codes: shapes, one use each, a new set voids the old. */
    ok(admin_recovery_shaped("abcde-fgh23") && admin_recovery_shaped("ABCDEFGH23") &&
           admin_recovery_shaped(" abcde fgh23 "),
       "recovery codes: any case, dashes and spaces ignored");
    ok(!admin_recovery_shaped("123456") && !admin_recovery_shaped("abcde-fgh1j") &&
           !admin_recovery_shaped("abcde-fghijk") && !admin_recovery_shaped(NULL),
       "a 6-digit code, a 0/1/8/9, 11 characters are not recovery codes");
    sqlite3 *db = store_connect();
    int64_t uid = 0;
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db, "SELECT id FROM admin_users WHERE name = 'admin'", -1, &st, NULL);
    if (sqlite3_step(st) == SQLITE_ROW)
        uid = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    char set1[RECOVERY_CODES][RECOVERY_CODE_SIZE], set2[RECOVERY_CODES][RECOVERY_CODE_SIZE];
    int64_t made = 0;
    is_int(admin_recovery_new(db, uid, set1), 0, "a set of recovery codes");
    is_int(admin_recovery_left(db, uid, &made), RECOVERY_CODES, "%d of them", RECOVERY_CODES);
    ok(made > 0 && llabs((long long)(made - time(NULL))) <= 5, "made now");
    is_int(admin_login("admin", "long enough pw", set1[0], "192.0.2.37", NULL, &s, &retry), 0,
           "the right password and a recovery code log in");
    is_int(admin_session_end(s.cookie), 0, "logout");
    is_int(admin_login("admin", "long enough pw", set1[0], "192.0.2.38", NULL, &s, &retry),
           -EKEYREJECTED, "the same recovery code does not log in twice");
    is_int(admin_recovery_left(db, uid, NULL), RECOVERY_CODES - 1, "one fewer left");
    is_int(admin_recovery_new(db, uid, set2), 0, "a new set");
    is_int(admin_recovery_use(db, uid, set1[1]), -EKEYREJECTED, "voids the old one's codes");
    is_int(admin_recovery_use(db, uid, set2[1]), 0, "the new one's count");
    is_int(admin_recovery_use(db, uid, "12345678"), -EINVAL, "digits are not a recovery code");
    is_int(admin_recovery_clear(db, uid), 0, "cleared");
    is_int(admin_recovery_left(db, uid, &made), 0, "none left");
    is_int((int)made, 0, "and no set");
    store_disconnect(db);

    totp_store("admin", NULL);
    is_int(admin_login("admin", "long enough pw", NULL, "192.0.2.36", NULL, &s, &retry), 0,
           "TOTP off: the password alone logs in again");
    is_int(admin_session_end(s.cookie), 0, "logout");
}

/* Lock @p name in the store for 900 s, as failures from elsewhere would. */
static void lock_in_store(const char *name)
{
    sqlite3 *db = store_connect();
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db,
                       "UPDATE admin_users SET failed_logins = 10, "
                       "locked_until = strftime('%s','now') + 900 WHERE name = ?",
                       -1, &st, NULL);
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    (void)sqlite3_step(st);
    sqlite3_finalize(st);
    store_disconnect(db);
}

/* Device cookies: a browser that has logged in is not locked out with its
 * user's name (someone failing on purpose from elsewhere). */
static void test_devices(void)
{
    struct admin_session s;
    int retry = 0;
    char dev[ADMIN_DEVICE_LEN], bad[ADMIN_DEVICE_LEN], *err = NULL;
    is_int(admin_login("admin", "long enough pw", NULL, "192.0.2.20", NULL, &s, &retry), 0,
           "login");
    const char *dot = strchr(s.device, '.');
    ok(dot && dot > s.device && strlen(dot + 1) == 64 &&
           strspn(dot + 1, "0123456789abcdef") == 64 &&
           strspn(s.device, "0123456789") == (size_t)(dot - s.device),
       "a device cookie \"<issued>.<64 hex>\" comes with it (%s)", s.device);
    snprintf(dev, sizeof dev, "%s", s.device);
    admin_session_end(s.cookie);

    lock_in_store("admin");
    is_int(admin_login("admin", "long enough pw", NULL, "192.0.2.21", NULL, &s, &retry), -EPERM,
           "the name locked: a browser without the cookie is refused");
    snprintf(bad, sizeof bad, "%s", dev);
    bad[strlen(bad) - 1] = bad[strlen(bad) - 1] == '0' ? '1' : '0';
    is_int(admin_login("admin", "long enough pw", NULL, "192.0.2.21", bad, &s, &retry), -EPERM,
           "and so is one with a forged cookie");
    is_int(admin_login("admin", "long enough pw", NULL, "192.0.2.21", "0.abc", &s, &retry), -EPERM,
           "or a malformed one");
    is_int(admin_login("nobody", "long enough pw", NULL, "192.0.2.21", dev, &s, &retry), -EACCES,
           "admin's cookie is nothing to another name");
    is_int(admin_login("admin", "long enough pw", NULL, "192.0.2.21", dev, &s, &retry), 0,
           "the browser with its device cookie logs in");
    ok(s.device[0] != '\0', "and gets a device cookie again");
    snprintf(dev, sizeof dev, "%s", s.device);
    admin_session_end(s.cookie);
    is_int(stored_failures("admin"), 10, "its success leaves the name's stored count alone");

    /* A wrong password with the cookie is the device's failure, not the
     * name's: the store does not count it. */
    is_int(admin_login("admin", "wrong", NULL, "192.0.2.22", dev, &s, &retry), -EACCES,
           "a wrong password with the cookie: 401");
    is_int(stored_failures("admin"), 10, "not counted against the name in the store");
    is_int(admin_login("admin", "long enough pw", NULL, "192.0.2.24", NULL, &s, &retry), -EPERM,
           "and the name stays locked for the others");

    /* A new password ends every device cookie issued before it. */
    is_int(admin_set_password("admin", "another long pw", &err), 0, "a new password");
    lock_in_store("admin");
    is_int(admin_login("admin", "another long pw", NULL, "192.0.2.23", dev, &s, &retry), -EPERM,
           "the old device cookie no longer passes the lock");
    free(err);
    err = NULL;
    is_int(admin_set_password("admin", "long enough pw", &err), 0, "the password back");
    free(err);
}

/* A new password from the box lifts the name's lock in memory too, not only
 * the one in the store: the locked-out user logs in at once. */
static void test_new_password_unlocks(void)
{
    struct admin_session s;
    int retry = 0;
    char *err = NULL;
    const char *keys[] = {"user:frank"};
    is_int(admin_set_password("frank", "franks first pw", &err), 0, "a user frank");
    for (int i = 0; i < 10; i++)
        throttle_end(keys, 1, THROTTLE_FAILED);
    is_int(admin_login("frank", "franks first pw", NULL, "192.0.2.30", NULL, &s, &retry), -EPERM,
           "ten failures in memory lock frank out");
    is_int(admin_set_password("frank", "franks second pw", &err), 0, "a new password");
    is_int(admin_login("frank", "franks second pw", NULL, "192.0.2.31", NULL, &s, &retry), 0,
           "lifts the lock: frank logs in with it");
    admin_session_end(s.cookie);
    free(err);
}

/* Failures of @p key until it backs off (at most 100). */
static int failures_until_backoff(const char *key)
{
    const char *keys[] = {key};
    int n = 0, r = 0;
    while (n < 100 && throttle_begin(keys, 1, &r) == 0) {
        throttle_end(keys, 1, THROTTLE_FAILED);
        n++;
    }
    return n;
}

static void test_throttle(void)
{
    int r = 0;
    char *err = NULL;
    const char *k[] = {"k"}, *other[] = {"other"};
    settings_set("admin.lockout_after", "5", "test", &err);
    is_int(throttle_begin(k, 1, &r), 0, "a fresh key may try");
    throttle_end(k, 1, THROTTLE_FAILED);
    is_int(throttle_begin(k, 1, &r), 0, "after one failure too");
    throttle_end(k, 1, THROTTLE_FAILED);
    is_int(throttle_begin(k, 1, &r), 0, "two failures are free");
    is_int((int)throttle_end(k, 1, THROTTLE_FAILED), 0, "the third failure does not lock");
    is_int(throttle_begin(k, 1, &r), -EAGAIN, "but backs off");
    is_int(r, 2, "for 2 s");
    is_int(throttle_begin(other, 1, &r), 0, "other keys are not affected");
    throttle_end(other, 1, THROTTLE_SUCCEEDED);

    /* The address keys: an IPv6 client by its /64, /56 and /48, IPv4 by
     * its address and /24, in IPv6 form too. */
    const char *const addr_cases[][2] = {
        {"192.0.2.7", "addr:192.0.2.7 addr:192.0.2.0/24"},
        {"10.1.255.0", "addr:10.1.255.0 addr:10.1.255.0/24"},
        {"2001:db8:1:2:3:4:5:6",
         "addr:2001:db8:1:2::/64 addr:2001:db8:1::/56 addr:2001:db8:1::/48"},
        {"2001:db8:1:2ff::ffff",
         "addr:2001:db8:1:2ff::/64 addr:2001:db8:1:200::/56 addr:2001:db8:1::/48"},
        {"::ffff:192.0.2.7", "addr:192.0.2.7 addr:192.0.2.0/24"},
        {"::FFFF:198.51.100.8", "addr:198.51.100.8 addr:198.51.100.0/24"},
        {"unknown", "addr:unknown"},
    };
    for (size_t i = 0; i < sizeof(addr_cases) / sizeof(addr_cases[0]); i++) {
        char *keys[THROTTLE_ADDR_KEYS], all[200] = "";
        int n = throttle_addr_keys(addr_cases[i][0], keys);
        for (int j = 0; j < n; j++) {
            snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", j ? " " : "", keys[j]);
            free(keys[j]);
        }
        is_str(all, addr_cases[i][1], "throttle keys of %s", addr_cases[i][0]);
    }

    /* A /56 key fails 4 times, a /48 key 16 times what a /64 may; an IPv4
     * /24 key as a /48; only an address's key ends so. */
    const char *k56[] = {"addr:2001:db8:9::/56"}, *k24[] = {"addr:198.51.100.0/24"};
    is_int(failures_until_backoff(k56[0]), 12, "a /56 backs off after 12 failures");
    is_int(failures_until_backoff("addr:2001:db8:9::/48"), 48, "a /48 after 48");
    int free24 = failures_until_backoff(k24[0]);
    is_int(free24, 48, "a /24 after 48");
    is_int(failures_until_backoff("user:a/24"), 3, "a name ending in /24 after 3");
    unsigned locked24 = 0;
    for (int i = free24; i < 100 && !locked24; i++)
        locked24 = throttle_end(k24, 1, THROTTLE_FAILED) ? (unsigned)i + 1 : 0;
    is_int((int)locked24, 80, "and locks at 80 (16 x admin.lockout_after)");

    /* Attempts in flight count as the failures they may become. */
    const char *p[] = {"addr:p", "user:p"};
    is_int(throttle_begin(p, 2, &r), 0, "parallel attempts: the first");
    is_int(throttle_begin(p, 2, &r), 0, "the second");
    is_int(throttle_begin(p, 2, &r), 0, "the third (its failure would start the backoff)");
    is_int(throttle_begin(p, 2, &r), -EAGAIN, "a fourth waits while three are in flight");
    is_int(r, 2, "as long as the third failure would make it wait");
    throttle_end(p, 2, THROTTLE_FAILED);
    throttle_end(p, 2, THROTTLE_FAILED);
    is_int(throttle_begin(p, 2, &r), -EAGAIN, "still while the third is in flight");
    is_int((int)throttle_end(p, 2, THROTTLE_FAILED), 0, "its failure does not lock");
    is_int(throttle_begin(p, 2, &r), -EAGAIN, "and starts the backoff");

    const char *q[] = {"q"};
    throttle_begin(q, 1, &r);
    throttle_end(q, 1, THROTTLE_FAILED);
    throttle_begin(q, 1, &r);
    throttle_end(q, 1, THROTTLE_FAILED);
    throttle_begin(q, 1, &r);
    throttle_end(q, 1, THROTTLE_SUCCEEDED);
    int n = 0;
    while (n < 10 && throttle_begin(q, 1, &r) == 0)
        n++;
    is_int(n, 3, "a success clears the key: three attempts in flight again");
    for (int i = 0; i < n; i++)
        throttle_end(q, 1, THROTTLE_ABORTED);
    is_int(throttle_begin(q, 1, &r), 0, "an attempt not checked (server error) counts nothing");
    throttle_end(q, 1, THROTTLE_ABORTED);

    /* A full table forgets the entry least harmful to lose: never an
     * attempt in flight, nor a name's lock. */
    char names[300][16]; /* "f" and any int: gcc -O1 checks the whole range */
    const char *f[300];
    int rc = 0;
    for (n = 0; n < 300; n++) {
        snprintf(names[n], sizeof names[n], "f%d", n);
        f[n] = names[n];
        if ((rc = throttle_begin(&f[n], 1, &r)) < 0)
            break;
    }
    ok(rc == -EBUSY && n <= 256, "a table full of attempts in flight refuses a new key (%d fit)",
       n);
    is_int(r, 1, "retry in a second, when an attempt in flight may have ended");
    is_int(throttle_begin(k, 1, &r), -EBUSY, "a name's backoff was forgotten for them");
    is_int(throttle_begin(p, 2, &r), -EBUSY, "so were an address's and a name's");
    is_int(throttle_begin(k56, 1, &r), -EBUSY, "and the /56's");
    /* Room for four: a name's lock, an address's lock and backoff, a
     * name's backoff (failures counted without an attempt reserved). */
    for (int i = 0; i < 4; i++)
        throttle_end(&f[i], 1, THROTTLE_ABORTED);
    const char *nl[] = {"user:locked"}, *al[] = {"addr:192.0.2.98"}, *ab[] = {"addr:192.0.2.99"},
               *nb[] = {"user:backoff"};
    for (int i = 0; i < 5; i++) {
        throttle_end(nl, 1, THROTTLE_FAILED);
        throttle_end(al, 1, THROTTLE_FAILED);
    }
    for (int i = 0; i < 3; i++) {
        throttle_end(ab, 1, THROTTLE_FAILED);
        throttle_end(nb, 1, THROTTLE_FAILED);
    }
    const char *x[] = {"x"}, *y[] = {"y"}, *w[] = {"w"}, *z[] = {"z"};
    /* Probes of keys still there (a probe of one forgotten would take its
     * room back); which one went is the one no longer there. */
    is_int(throttle_begin(x, 1, &r), 0, "a full table takes a new key");
    is_int(throttle_begin(al, 1, &r), -EPERM, "forgetting not the address's lock");
    is_int(throttle_begin(nb, 1, &r), -EAGAIN, "nor the name's backoff");
    is_int(throttle_begin(nl, 1, &r), -EPERM, "nor the name's lock (so the address's backoff)");
    is_int(throttle_begin(y, 1, &r), 0, "another new key");
    is_int(throttle_begin(nb, 1, &r), -EAGAIN, "forgets not the name's backoff");
    is_int(throttle_begin(nl, 1, &r), -EPERM, "nor the name's lock (so the address's lock)");
    is_int(throttle_begin(w, 1, &r), 0, "another");
    is_int(throttle_begin(nl, 1, &r), -EPERM, "forgets not the name's lock (so its backoff)");
    is_int(throttle_begin(z, 1, &r), -EBUSY, "then a new key finds no room: the name's lock stays");
    is_int(throttle_begin(nl, 1, &r), -EPERM, "and holds");
    ok(r > 800, "for the lockout (%d s)", r);
    const char *gone[] = {ab[0], al[0], nb[0]};
    for (int i = 0; i < 3; i++)
        is_int(throttle_begin(&gone[i], 1, &r), -EBUSY, "%s is no longer there", gone[i]);
    throttle_end(&f[4], 1, THROTTLE_ABORTED);
    const char *two[] = {"new1", "new2"}, *three[] = {"new3"};
    is_int(throttle_begin(two, 2, &r), -EBUSY, "room for one key: a login with two is refused");
    is_int(throttle_begin(three, 1, &r), 0, "and takes nothing: the room is still there");
    throttle_end(three, 1, THROTTLE_ABORTED);
    throttle_end(x, 1, THROTTLE_ABORTED);
    throttle_end(y, 1, THROTTLE_ABORTED);
    throttle_end(w, 1, THROTTLE_ABORTED);
    for (int i = 5; i < n; i++)
        throttle_end(&f[i], 1, THROTTLE_ABORTED);
}

/* A long name tried is logged and audited cut; the rows anyone can cause
 * are bounded; an unknown name's failure writes the store as a known
 * one's does; a re-check of the password honours the lock in the store. */
static void test_strangers(void)
{
    struct admin_session s;
    int retry = 0;
    char name[300];
    memset(name, 'a', 62);
    memcpy(name + 62, "\xc3\xa9", 2); /* a 2-byte character across byte 64 */
    memset(name + 64, 'b', 200);
    name[264] = '\0';
    is_int(admin_login(name, "x", NULL, "192.0.2.90", NULL, &s, &retry), -EACCES,
           "a login with a 264-byte name fails");
    sqlite3 *db = store_connect();
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db,
                       "SELECT actor, target FROM audit WHERE action = 'login.failed' "
                       "ORDER BY id DESC LIMIT 1",
                       -1, &st, NULL);
    char want[80];
    snprintf(want, sizeof want, "%.64s...", name);
    if (sqlite3_step(st) == SQLITE_ROW) {
        is_str((const char *)sqlite3_column_text(st, 0), want,
               "the audit row's actor: its first 64 bytes, then \"...\"");
        is_str((const char *)sqlite3_column_text(st, 1), want, "and so is its target");
    } else {
        ok(0, "the failed login is audited");
    }
    sqlite3_finalize(st);

    /* An unknown name's failure writes the store as a known name's does:
     * the same number of pages reach the write-ahead log (emptied before
     * each try), so the same syncs, and the same delay. */
    sqlite3 *watch = store_connect();
    long long frames[2] = {-1, -1};
    for (int known = 0; known < 2; known++) {
        sqlite3_exec(watch, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
        is_int(admin_password_recheck(known ? "admin" : "nobody-at-all", "wrong password", NULL,
                                      NULL, &retry),
               -EACCES, "a wrong password for %s", known ? "a known name" : "an unknown name");
        sqlite3_prepare_v2(watch, "PRAGMA wal_checkpoint(PASSIVE)", -1, &st, NULL);
        if (sqlite3_step(st) == SQLITE_ROW)
            frames[known] = sqlite3_column_int64(st, 1);
        sqlite3_finalize(st);
    }
    ok(frames[1] > 0 && frames[0] == frames[1],
       "an unknown name's failure writes as many pages as a known name's (%lld, %lld)", frames[0],
       frames[1]);
    store_disconnect(watch);
    sqlite3_exec(db, "UPDATE admin_users SET failed_logins = 0, locked_until = 0", NULL, NULL,
                 NULL);

    /* Rows anyone can cause: the newest 1000 kept, the admins' rows all. */
    sqlite3_exec(db, "DELETE FROM audit", NULL, NULL, NULL);
    for (int i = 0; i < 1100; i++) {
        audit_event("stranger", "192.0.2.91", i % 2 ? "login.failed" : "login.lockout", "x", NULL);
        if (i % 100 == 0)
            audit_event("admin", "192.0.2.1", "PUT settings/site.workers", "x", NULL);
    }
    long long strangers = -1, admins = -1, oldest = -1;
    sqlite3_prepare_v2(db,
                       "SELECT sum(action LIKE 'login.%'), sum(actor = 'admin'), "
                       "min(CASE WHEN action LIKE 'login.%' THEN id END) - min(id) FROM audit",
                       -1, &st, NULL);
    if (sqlite3_step(st) == SQLITE_ROW) {
        strangers = sqlite3_column_int64(st, 0);
        admins = sqlite3_column_int64(st, 1);
        oldest = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    is_int(strangers, 1000, "of 1100 failed logins and lockouts, the newest 1000 are kept");
    is_int(admins, 11, "every one of the 11 admin actions among them is kept");
    ok(oldest > 0, "the oldest admin action is older than every stranger row kept (%lld)", oldest);

    /* Logins and logouts (a script logging in for each call): the newest
     * 1000 kept, counted apart from the strangers' rows and the changes. */
    for (int i = 0; i < 1100; i++) {
        audit_event("admin", "192.0.2.1", i % 2 ? "logout" : "login", "admin", NULL);
        if (i % 100 == 0)
            audit_event("admin", "192.0.2.1", "PUT settings/site.workers", "x", NULL);
    }
    long long sessions = -1, first_login = -1;
    strangers = admins = -1;
    sqlite3_prepare_v2(db,
                       "SELECT sum(action IN ('login', 'logout')), sum(action LIKE 'login.%'), "
                       "sum(action = 'PUT settings/site.workers'), min(CASE WHEN action IN "
                       "('login', 'logout') THEN id END) FROM audit",
                       -1, &st, NULL);
    if (sqlite3_step(st) == SQLITE_ROW) {
        sessions = sqlite3_column_int64(st, 0);
        strangers = sqlite3_column_int64(st, 1);
        admins = sqlite3_column_int64(st, 2);
        first_login = sqlite3_column_int64(st, 3);
    }
    sqlite3_finalize(st);
    is_int(sessions, 1000, "of 1100 logins and logouts, the newest 1000 are kept");
    is_int(strangers, 1000, "the failed logins kept are not pushed out by them");
    is_int(admins, 22, "every one of the 22 admin actions is kept");
    sqlite3_prepare_v2(db,
                       "SELECT count(*) FROM audit WHERE action IN ('login', 'logout') AND id > "
                       "(SELECT max(id) FROM audit WHERE action = 'PUT settings/site.workers')",
                       -1, &st, NULL);
    is_int(sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1, 99,
           "the newest ones are those kept (first kept id %lld)", first_login);
    sqlite3_finalize(st);

    /* A long detail is cut at 8192 bytes, before a character it cannot
     * hold whole. */
    char *detail = xmalloc(8300);
    memset(detail, 'd', 8191);
    memcpy(detail + 8191, "\xc3\xa9tail", 7);
    audit_event("admin", "192.0.2.1", "test.long", "x", detail);
    free(detail);
    sqlite3_prepare_v2(db,
                       "SELECT length(CAST(detail AS BLOB)) FROM audit WHERE action = 'test.long'",
                       -1, &st, NULL);
    is_int(sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1, 8191,
           "a long detail is kept to 8191 bytes, before the character across the limit");
    sqlite3_finalize(st);

    /* The lock in the store holds for a re-check of the password (the
     * in-memory table is empty after a restart). */
    lock_in_store("admin");
    retry = 0;
    is_int(admin_password_recheck("admin", "long enough pw", NULL, NULL, &retry), -EPERM,
           "a re-check for a name locked in the store is refused, the right password too");
    ok(retry > 800 && retry <= 900, "with the time left of the lock (%d s)", retry);
    sqlite3_exec(db, "UPDATE admin_users SET failed_logins = 0, locked_until = 0", NULL, NULL,
                 NULL);
    is_int(admin_password_recheck("admin", "long enough pw", NULL, NULL, &retry), 0,
           "unlocked, the re-check passes");
    store_disconnect(db);
}

static void test_masking(void)
{
    settings_register("t", test_settings);
    const char *b = "{\"name\":\"a\",\"key_pem\":\"SECRETKEY\"}";
    char *m = audit_masked_body("cert/import", b, strlen(b));
    is_str(m, "{\"name\":\"a\",\"key_pem\":\"********\"}", "key_pem masked");
    free(m);
    b = "{\"user\":\"u\",\"password\":\"pw\",\"x\":{\"api_token\":\"t\"},\"key_types\":[\"rsa\"]}";
    m = audit_masked_body("admin/password", b, strlen(b));
    is_str(m,
           "{\"user\":\"u\",\"password\":\"********\",\"x\":{\"api_token\":\"********\"},"
           "\"key_types\":[\"rsa\"]}",
           "passwords and tokens masked at any depth, key_types kept");
    free(m);
    b = "{\"token\":\"s3cret\",\"plain\":\"shown\"}";
    m = audit_masked_body("plugins/t/settings", b, strlen(b));
    is_str(m, "{\"token\":\"********\",\"plain\":\"shown\"}", "a SECRET setting masked by name");
    free(m);
    b = "{\"value\":\"s3cret\"}";
    m = audit_masked_body("settings/t.token", b, strlen(b));
    is_str(m, "{\"value\":\"********\"}", "a SECRET setting's value masked");
    free(m);
    m = audit_masked_body("settings/t.plain", b, strlen(b));
    is_str(m, "{\"value\":\"s3cret\"}", "a plain setting's value kept");
    free(m);
    m = audit_masked_body("x", "not json", 8);
    is_str(m, "(8 bytes, not JSON)", "a non-JSON body is not copied");
    free(m);
}

/* A row that holds invalid UTF-8 (as stores written before texts were cut
 * between characters do) is listed with U+FFFD, not dropped. */
static void test_audit_list_bad_utf8(void)
{
    sqlite3 *db = store_connect();
    sqlite3_exec(db, "DELETE FROM audit", NULL, NULL, NULL);
    sqlite3_exec(db,
                 "INSERT INTO audit (at, actor, action, target) VALUES "
                 "(1, 'a', 'older', NULL), (2, 'u' || X'C3', 'login.failed', 'u' || X'C3')",
                 NULL, NULL, NULL);
    store_disconnect(db);
    long long next = -1;
    json_t *a = audit_list(1, 0, &next);
    json_t *e = json_array_get(a, 0);
    is_int(json_array_size(a), 1, "audit_list lists the row with invalid UTF-8");
    is_str(json_string_value(json_object_get(e, "target")), "u\xef\xbf\xbd",
           "its bad byte shown as U+FFFD");
    is_str(json_string_value(json_object_get(e, "action")), "login.failed", "it is the newest");
    ok(next == json_integer_value(json_object_get(e, "id")), "next_before: its id (one older)");
    json_decref(a);
    a = audit_list(1, next, &next);
    is_str(json_string_value(json_object_get(json_array_get(a, 0), "action")), "older",
           "the page before it holds the older row");
    is_int(next, 0, "and no next_before: nothing older");
    json_decref(a);
}

int main(void)
{
    char tmpl[] = "/tmp/admin_test.XXXXXX";
    char *dir = mkdtemp(tmpl);
    char *state = xasprintf("%s/state", dir);
    char *err = NULL;
    if (store_init(state, &err) < 0) {
        printf("Bail out! store_init: %s\n", err);
        return 1;
    }
    settings_register("admin", admin_settings);
    settings_set("admin.pbkdf2_iterations", "10000", "test", &err);
    test_first_run_and_passwords();
    test_iterations_change();
    test_sessions();
    test_two_factor();
    test_devices();
    test_new_password_unlocks();
    test_throttle();
    test_strangers();
    test_masking();
    test_audit_list_bad_utf8();
    store_close();
    char *cmd = xasprintf("rm -rf '%s'", dir);
    if (system(cmd) != 0)
        diag("could not remove %s", dir);
    free(cmd);
    free(state);
    return done_testing();
}
