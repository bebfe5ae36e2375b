/* Time-based one-time passwords (RFC 6238 over RFC 4226 HOTP, HMAC-SHA1,
 * 6 digits, 30-second steps: what every authenticator app does by default)
 * and the base32 (RFC 4648) those apps take a secret in.  Pure functions:
 * any thread, no state. */
#ifndef TLSBOX_CORE_ADMIN_TOTP_H
#define TLSBOX_CORE_ADMIN_TOTP_H
#include <stddef.h>
#include <stdint.h>

/* Bytes of a secret (160 bits, RFC 4226's recommendation). */
#define TOTP_SECRET_LEN 20
#define TOTP_PERIOD 30
#define TOTP_DIGITS 6
/* base32 of TOTP_SECRET_LEN bytes: 32 characters and the NUL. */
#define TOTP_SECRET_B32 33

/* The HOTP value of @p key (@p len bytes) at @p counter: 0 .. 999999. */
uint32_t totp_hotp(const unsigned char *key, size_t len, uint64_t counter);

/*
 * Check @p code (6 digits; spaces ignored, as apps show "123 456") against
 * @p key at Unix time @p now, allowing one step of clock skew either way.
 * Only steps after @p after_step count: a code that was used once (its step
 * stored by the caller) does not log in again.  0 with *step (the step it
 * matched), -EINVAL for a code that is not 6 digits, -EACCES otherwise.
 * Constant time in the code's digits.
 */
int totp_verify(const unsigned char *key, size_t len, const char *code, int64_t now,
                int64_t after_step, int64_t *step);

/* @p in (@p len bytes) in base32 without padding into @p out (@p outlen
 * bytes, room for (len * 8 + 4) / 5 characters and the NUL).  The length
 * written, or 0 when it does not fit. */
size_t totp_base32(const unsigned char *in, size_t len, char *out, size_t outlen);

#endif
