/* Recovery codes for two-factor login: ten per user, each logs in once in
 * place of an authenticator code, for the day the phone is lost and no one
 * can reach the box's shell (tlsboxctl admin totp-off).  Codes are 10
 * base32 characters (50 random bits) shown as "abcde-fghij"; the store
 * keeps only a SHA-256 of each (admin_recovery_codes) and deletes one when
 * it is used.  All calls take the caller's store connection; none logs a
 * code.  Any thread, one connection per thread. */
#ifndef TLSBOX_CORE_ADMIN_RECOVERY_H
#define TLSBOX_CORE_ADMIN_RECOVERY_H

#include <stdbool.h>
#include <stdint.h>

#include <sqlite3.h>

#define RECOVERY_CODES 10
#define RECOVERY_CODE_SIZE 12 /* "abcde-fghij" and the NUL */

/* Whether @p code has a recovery code's shape (10 base32 characters, any
 * case, dashes and spaces ignored): a 6-digit authenticator code has not. */
bool admin_recovery_shaped(const char *code);

/* Replace user @p user_id's codes by RECOVERY_CODES new ones, written into
 * @p out for the caller to show once (and wipe).  Inside the caller's
 * transaction when it has one.  0, or -EIO (nothing changed). */
int admin_recovery_new(sqlite3 *db, int64_t user_id, char out[RECOVERY_CODES][RECOVERY_CODE_SIZE]);

/* Use @p code for @p user_id: 0 when it was one of the user's codes (now
 * deleted: of two logins racing with it, one wins), -EINVAL when it is not
 * shaped like one, -EKEYREJECTED when it is no (longer a) code, -EIO. */
int admin_recovery_use(sqlite3 *db, int64_t user_id, const char *code);

/* Codes user @p user_id has left (0..RECOVERY_CODES), or -EIO; *@p made
 * (may be NULL): the unix time their set was made, 0 for none. */
int admin_recovery_left(sqlite3 *db, int64_t user_id, int64_t *made);

/* Delete all of @p user_id's codes (two-factor login turned off).  0 or -EIO. */
int admin_recovery_clear(sqlite3 *db, int64_t user_id);

#endif
