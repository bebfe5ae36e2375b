/* A small DER reader (see ocsp_der.h). */
#include <stdio.h>
#include <string.h>

#include "plugins/ocsp/ocsp_der.h"

int der_next(const unsigned char **p, const unsigned char *end, struct der *d)
{
    const unsigned char *q = *p;
    if (q >= end || end - q < 2)
        return -1;
    d->tlv = q;
    d->tag = *q++;
    if ((d->tag & 0x1f) == 0x1f)
        return -1; /* multi-byte tags: nothing we read uses them */
    size_t len = *q++;
    if (len & 0x80) {
        unsigned n = len & 0x7f;
        if (n == 0 || n > 4 || (size_t)(end - q) < n)
            return -1;
        len = 0;
        while (n--)
            len = len << 8 | *q++;
    }
    if ((size_t)(end - q) < len)
        return -1;
    d->val = q;
    d->len = len;
    *p = q + len;
    return 0;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant's
 * days_from_civil), in 64 bits: no time_t, so no 2038 on armhf. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static int digits(const unsigned char *s, size_t n, unsigned *out)
{
    unsigned v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    *out = v;
    return 0;
}

int der_time(const struct der *d, int64_t *out)
{
    const unsigned char *s = d->val;
    unsigned y, mo, da, h, mi, se;
    size_t yl;
    if (d->tag == DER_UTC_TIME && d->len == 13)
        yl = 2;
    else if (d->tag == DER_GENERALIZED_TIME && d->len == 15)
        yl = 4;
    else
        return -1;
    if (s[d->len - 1] != 'Z' || digits(s, yl, &y) || digits(s + yl, 2, &mo) ||
        digits(s + yl + 2, 2, &da) || digits(s + yl + 4, 2, &h) || digits(s + yl + 6, 2, &mi) ||
        digits(s + yl + 8, 2, &se))
        return -1;
    if (yl == 2)
        y += y < 50 ? 2000 : 1900; /* RFC 5280 4.1.2.5.1 */
    if (mo < 1 || mo > 12 || da < 1 || da > 31 || h > 23 || mi > 59 || se > 60)
        return -1;
    *out = days_from_civil(y, mo, da) * 86400 + h * 3600 + mi * 60 + se;
    return 0;
}

int der_oid_text(const struct der *d, char *out, size_t n)
{
    size_t o = 0;
    uint64_t v = 0;
    int first = 1;
    if (d->tag != DER_OID || d->len == 0 || n == 0)
        return -1;
    for (size_t i = 0; i < d->len; i++) {
        if (v >> 56)
            return -1;
        v = v << 7 | (d->val[i] & 0x7f);
        if (d->val[i] & 0x80) {
            if (i + 1 == d->len)
                return -1; /* the last arc is cut short */
            continue;
        }
        int w;
        if (first) {
            unsigned a = v < 80 ? (unsigned)(v / 40) : 2;
            w = snprintf(out + o, n - o, "%u.%llu", a, (unsigned long long)(v - a * 40));
            first = 0;
        } else {
            w = snprintf(out + o, n - o, ".%llu", (unsigned long long)v);
        }
        if (w < 0 || (size_t)w >= n - o)
            return -1;
        o += (size_t)w;
        v = 0;
    }
    return 0;
}
