/* Recovery codes for two-factor login (see admin_recovery.h). */
#include "core/admin_recovery.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "core/admin_totp.h"

#define RAW_CHARS 10 /* base32 characters of a code: 50 bits */

/* @p code without dashes and spaces, upper case, into @p out (RAW_CHARS + 1):
 * true when that is RAW_CHARS base32 characters. */
static bool normalise(const char *code, char out[RAW_CHARS + 1])
{
    size_t n = 0;
    if (!code)
        return false;
    for (const char *p = code; *p; p++) {
        if (*p == '-' || *p == ' ')
            continue;
        int c = toupper((unsigned char)*p);
        if (n == RAW_CHARS || !((c >= 'A' && c <= 'Z') || (c >= '2' && c <= '7')))
            return false;
        out[n++] = (char)c;
    }
    out[n] = '\0';
    return n == RAW_CHARS;
}

bool admin_recovery_shaped(const char *code)
{
    char raw[RAW_CHARS + 1];
    bool ok = normalise(code, raw);
    gnutls_memset(raw, 0, sizeof raw);
    return ok;
}

/* SHA-256 of a normalised code, with a label so the hash is of no use as
 * anything else. */
static int code_hash(const char raw[RAW_CHARS + 1], unsigned char hash[32])
{
    char buf[32 + RAW_CHARS];
    int n = (int)strlen("tlsbox recovery code ");
    memcpy(buf, "tlsbox recovery code ", (size_t)n);
    memcpy(buf + n, raw, RAW_CHARS);
    int rc = gnutls_hash_fast(GNUTLS_DIG_SHA256, buf, (size_t)n + RAW_CHARS, hash);
    gnutls_memset(buf, 0, sizeof buf);
    return rc < 0 ? -EIO : 0;
}

/* "abcde-fghij": lower case (easier to read), split in two halves. */
static void shown(const char raw[RAW_CHARS + 1], char out[RECOVERY_CODE_SIZE])
{
    for (int k = 0, j = 0; k < RAW_CHARS; k++) {
        if (k == RAW_CHARS / 2)
            out[j++] = '-';
        out[j++] = (char)tolower((unsigned char)raw[k]);
    }
    out[RECOVERY_CODE_SIZE - 1] = '\0';
}

static int exec(sqlite3 *db, const char *sql)
{
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

/* Run @p sql with ?1 = @p user_id and ?2 = @p hash (NULL: none); the
 * number of rows changed, or -EIO. */
static int run(sqlite3 *db, const char *sql, int64_t user_id, const unsigned char *hash)
{
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, user_id);
        if (hash)
            sqlite3_bind_blob(st, 2, hash, 32, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_DONE)
            rc = sqlite3_changes(db);
    }
    sqlite3_finalize(st);
    return rc;
}

int admin_recovery_new(sqlite3 *db, int64_t user_id, char out[RECOVERY_CODES][RECOVERY_CODE_SIZE])
{
    int rc = exec(db, "SAVEPOINT recovery_new");
    if (rc < 0)
        return rc;
    rc = run(db, "DELETE FROM admin_recovery_codes WHERE user_id = ?1", user_id, NULL);
    for (int i = 0; i < RECOVERY_CODES && rc >= 0; i++) {
        unsigned char rnd[7], hash[32];
        char b32[16], raw[RAW_CHARS + 1];
        /* 56 random bits in 12 characters, of which the first 10 are kept. */
        if (gnutls_rnd(GNUTLS_RND_KEY, rnd, sizeof rnd) < 0 ||
            totp_base32(rnd, sizeof rnd, b32, sizeof b32) == 0) {
            rc = -EIO;
        } else {
            memcpy(raw, b32, RAW_CHARS);
            raw[RAW_CHARS] = '\0';
            rc = code_hash(raw, hash);
            if (rc == 0) {
                rc = run(db,
                         "INSERT OR IGNORE INTO admin_recovery_codes (user_id, hash, made) "
                         "VALUES (?1, ?2, CAST(strftime('%s', 'now') AS INTEGER))",
                         user_id, hash);
                if (rc == 0) /* a repeat (1 in 2^50): one code fewer, so another */
                    i--;
                else if (rc > 0)
                    shown(raw, out[i]);
            }
        }
        gnutls_memset(rnd, 0, sizeof rnd);
        gnutls_memset(b32, 0, sizeof b32);
        gnutls_memset(raw, 0, sizeof raw);
        gnutls_memset(hash, 0, sizeof hash);
    }
    if (rc >= 0 && exec(db, "RELEASE recovery_new") == 0)
        return 0;
    exec(db, "ROLLBACK TO recovery_new");
    exec(db, "RELEASE recovery_new");
    gnutls_memset(out, 0, sizeof(char[RECOVERY_CODES][RECOVERY_CODE_SIZE]));
    return -EIO;
}

int admin_recovery_use(sqlite3 *db, int64_t user_id, const char *code)
{
    char raw[RAW_CHARS + 1];
    unsigned char hash[32];
    int rc;
    if (!normalise(code, raw))
        rc = -EINVAL;
    else if ((rc = code_hash(raw, hash)) == 0)
        rc = run(db, "DELETE FROM admin_recovery_codes WHERE user_id = ?1 AND hash = ?2", user_id,
                 hash);
    gnutls_memset(raw, 0, sizeof raw);
    gnutls_memset(hash, 0, sizeof hash);
    return rc < 0 ? rc : rc == 1 ? 0 : -EKEYREJECTED;
}

int admin_recovery_left(sqlite3 *db, int64_t user_id, int64_t *made)
{
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    if (made)
        *made = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT count(*), coalesce(max(made), 0) FROM admin_recovery_codes "
                           "WHERE user_id = ?",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, user_id);
        if (sqlite3_step(st) == SQLITE_ROW) {
            rc = sqlite3_column_int(st, 0);
            if (made)
                *made = sqlite3_column_int64(st, 1);
        }
    }
    sqlite3_finalize(st);
    return rc;
}

int admin_recovery_clear(sqlite3 *db, int64_t user_id)
{
    return run(db, "DELETE FROM admin_recovery_codes WHERE user_id = ?1", user_id, NULL) < 0 ? -EIO
                                                                                             : 0;
}
