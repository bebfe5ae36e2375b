/* TOTP and base32 (see admin_totp.h). */
#include <errno.h>
#include <string.h>

#include <gnutls/crypto.h>

#include "core/admin_totp.h"

uint32_t totp_hotp(const unsigned char *key, size_t len, uint64_t counter)
{
    unsigned char msg[8], mac[20];
    for (int i = 7; i >= 0; i--) {
        msg[i] = (unsigned char)(counter & 0xff);
        counter >>= 8;
    }
    if (gnutls_hmac_fast(GNUTLS_MAC_SHA1, key, len, msg, sizeof msg, mac) < 0)
        return UINT32_MAX; /* never a 6-digit value: matches no code */
    /* RFC 4226 5.3: dynamic truncation. */
    unsigned off = mac[19] & 0x0f;
    uint32_t bin = (uint32_t)(mac[off] & 0x7f) << 24 | (uint32_t)mac[off + 1] << 16 |
                   (uint32_t)mac[off + 2] << 8 | mac[off + 3];
    return bin % 1000000u;
}

int totp_verify(const unsigned char *key, size_t len, const char *code, int64_t now,
                int64_t after_step, int64_t *step)
{
    uint32_t want = 0;
    int digits = 0;
    for (const char *p = code ? code : ""; *p; p++) {
        if (*p == ' ')
            continue;
        if (*p < '0' || *p > '9' || ++digits > TOTP_DIGITS)
            return -EINVAL;
        want = want * 10 + (uint32_t)(*p - '0');
    }
    if (digits != TOTP_DIGITS || now < 0)
        return -EINVAL;
    int64_t t = now / TOTP_PERIOD;
    int found = -EACCES;
    /* Every step of the window is computed and compared, match or not. */
    for (int64_t s = t - 1; s <= t + 1; s++) {
        uint32_t diff = totp_hotp(key, len, (uint64_t)s) ^ want;
        if (diff == 0 && s > after_step && found != 0) {
            found = 0;
            *step = s;
        }
    }
    return found;
}

size_t totp_base32(const unsigned char *in, size_t len, char *out, size_t outlen)
{
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    size_t need = (len * 8 + 4) / 5;
    if (outlen < need + 1)
        return 0;
    size_t n = 0;
    unsigned buf = 0, bits = 0;
    for (size_t i = 0; i < len; i++) {
        buf = (buf << 8 | in[i]) & 0xfff;
        bits += 8;
        while (bits >= 5) {
            out[n++] = abc[(buf >> (bits - 5)) & 31];
            bits -= 5;
        }
    }
    if (bits)
        out[n++] = abc[(buf << (5 - bits)) & 31];
    out[n] = '\0';
    return n;
}
