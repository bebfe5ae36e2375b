/* Renewal policy: when to renew, how long to back off, ARI ids, Retry-After.  No I/O. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/acme/acme.h"

/*
 * The reference schedule (Caddy/certmagic): quick retries for blips, then
 * slower, never more often than every 6 hours once it is clearly not a blip.
 */
static const long renew_backoff[] = {
    60,   120,  120,  300,  600,  600,  600,  1200, 1200, 1200,  1200,  1800,  1800,
    1800, 1800, 1800, 1800, 3600, 3600, 3600, 7200, 7200, 10800, 10800, 21600,
};

long acme_backoff_delay(unsigned failures)
{
    size_t n = sizeof(renew_backoff) / sizeof(renew_backoff[0]);
    if (failures == 0)
        return 0;
    if (failures > n)
        return renew_backoff[n - 1];
    return renew_backoff[failures - 1];
}

int acme_ari_cert_id(gnutls_x509_crt_t crt, char **id)
{
    unsigned char aki[128], serial[64];
    size_t aki_len = sizeof(aki), serial_len = sizeof(serial);
    unsigned critical = 0;
    if (gnutls_x509_crt_get_authority_key_id(crt, aki, &aki_len, &critical) < 0)
        return -ENOENT;
    if (gnutls_x509_crt_get_serial(crt, serial, &serial_len) < 0)
        return -EINVAL;
    char *a = acme_b64url(aki, aki_len);
    char *s = acme_b64url(serial, serial_len);
    *id = tlsbox_xasprintf("%s.%s", a, s);
    free(a);
    free(s);
    return 0;
}

int acme_ari_cert_id_pem(const char *chain_pem, char **id)
{
    gnutls_x509_crt_t crt;
    gnutls_datum_t d = {(unsigned char *)chain_pem, (unsigned)strlen(chain_pem)};
    if (gnutls_x509_crt_init(&crt) < 0)
        return -ENOMEM;
    int ret = -EINVAL;
    if (gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM) == 0)
        ret = acme_ari_cert_id(crt, id);
    gnutls_x509_crt_deinit(crt);
    return ret;
}

static uint64_t renew_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; s && *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

time_t acme_renew_time(time_t not_before, time_t not_after, time_t ws, time_t we, const char *seed,
                       time_t now)
{
    time_t life = not_after > not_before ? not_after - not_before : 0;
    time_t by_life = not_after - life / 3;
    /* Near the end the CA's advice no longer matters: the certificate must go. */
    if (ws > 0 && we > ws && not_after - now > life / 20) {
        if (we <= now)
            return now;
        return ws + (time_t)(renew_hash(seed) % (uint64_t)(we - ws));
    }
    return by_life;
}

time_t acme_parse_retry_after(const char *value, time_t now)
{
    if (!value)
        return 0;
    while (*value == ' ' || *value == '\t')
        value++;
    time_t t = 0;
    if (*value >= '0' && *value <= '9') {
        char *end;
        unsigned long long v = strtoull(value, &end, 10);
        while (*end == ' ' || *end == '\t' || *end == '\r' || *end == '\n')
            end++;
        if (*end)
            return 0;
        t = v > 86400 ? now + 86400 : now + (time_t)v;
    } else {
        struct tm tm = {0};
        const char *end = strptime(value, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        if (!end)
            return 0;
        t = timegm(&tm);
        if (t < now)
            t = now;
        if (t > now + 86400)
            t = now + 86400;
    }
    return t;
}

time_t acme_parse_rfc3339(const char *s)
{
    struct tm tm = {0};
    if (!s)
        return 0;
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return 0;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++)
            ;
    long off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        /* Exactly "+hh:mm": sscanf alone accepts "+2:30", and p += 6 then
         * stepped past the string's end (found by tests/fuzz/acme_fuzz). */
        int hh, mm;
        for (int i = 1; i <= 5; i++)
            if (i == 3 ? p[i] != ':' : !(p[i] >= '0' && p[i] <= '9'))
                return 0;
        if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2)
            return 0;
        off = (hh * 3600L + mm * 60L) * (*p == '+' ? 1 : -1);
        p += 6;
    } else {
        return 0;
    }
    if (*p)
        return 0;
    return timegm(&tm) - off;
}
