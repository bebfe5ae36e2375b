/* QR Code encoder (ISO/IEC 18004), byte mode, error correction level M.
 *
 * Written for one job: showing the otpauth:// URI of a new two-factor
 * secret as a code an authenticator app can scan, without a library (none
 * is packaged for C or for the browser in Debian 12).  The secret passes
 * through here, so nothing is logged and qr_free() wipes the modules. */
#ifndef TLSBOX_CORE_QR_ENCODE_H
#define TLSBOX_CORE_QR_ENCODE_H

#include <stdbool.h>
#include <stddef.h>

/* Longest input: version 40 at level M holds 2,331 bytes (of ASCII). */
#define QR_MAX_BYTES 2331

struct qr_code {
    int version;            /* 1..40 */
    int size;               /* modules per side: 17 + 4 * version */
    int mask;               /* 0..7, the one with the lowest penalty */
    unsigned char *modules; /* size * size, row-major, 1 = dark */
};

/* Encode @p len bytes of @p data in the smallest version that holds them;
 * bytes above ASCII are marked as UTF-8 (an ECI header, 12 bits, so such
 * data holds slightly less).
 * 0, or -EMSGSIZE when longer than QR_MAX_BYTES, -ENOMEM.  On success the
 * caller owns @p out and frees it with qr_free().  Thread-safe (no state). */
int qr_encode(const void *data, size_t len, struct qr_code *out);

/* Whether the module at column @p x, row @p y is dark (false outside). */
bool qr_dark(const struct qr_code *qr, int x, int y);

/* The dark modules as an SVG path in module units ("M3 0h2v1h-2z..."),
 * one rectangle per horizontal run, for a viewBox of "0 0 size size" (the
 * quiet zone is the caller's).  Caller frees (and should wipe: it encodes
 * the data).  NULL when out of memory. */
char *qr_svg_path(const struct qr_code *qr);

/* Wipe and free the modules; @p qr may be reused. */
void qr_free(struct qr_code *qr);

#endif
