/* Reading a leaf for OCSP and building the request (see ocsp.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/ocsp.h>

#include "plugins/ocsp/ocsp.h"

char *ocsp_responder_url(gnutls_x509_crt_t leaf)
{
    for (unsigned seq = 0;; seq++) {
        gnutls_datum_t uri = {NULL, 0};
        int r =
            gnutls_x509_crt_get_authority_info_access(leaf, seq, GNUTLS_IA_OCSP_URI, &uri, NULL);
        if (r == GNUTLS_E_UNKNOWN_ALGORITHM)
            continue; /* a CA Issuers entry, not OCSP */
        if (r < 0)
            return NULL;
        char *s = malloc(uri.size + 1);
        if (s) {
            memcpy(s, uri.data, uri.size);
            s[uri.size] = 0;
            /* Only what libcurl will be allowed to fetch; another (an
             * ldap URL) may be followed by one it can. */
            if ((strncmp(s, "http://", 7) != 0 && strncmp(s, "https://", 8) != 0) ||
                strlen(s) != uri.size) {
                free(s);
                gnutls_free(uri.data);
                continue;
            }
        }
        gnutls_free(uri.data);
        return s;
    }
}

bool ocsp_must_staple(gnutls_x509_crt_t leaf)
{
    gnutls_x509_tlsfeatures_t f = NULL;
    bool must = false;
    if (gnutls_x509_tlsfeatures_init(&f) < 0)
        return false;
    if (gnutls_x509_crt_get_tlsfeatures(leaf, f, 0, NULL) == 0) {
        unsigned feature;
        for (unsigned i = 0; gnutls_x509_tlsfeatures_get(f, i, &feature) == 0; i++)
            if (feature == 5) /* status_request */
                must = true;
    }
    gnutls_x509_tlsfeatures_deinit(f);
    return must;
}

bool ocsp_short_lived(gnutls_x509_crt_t leaf)
{
    time_t nb = gnutls_x509_crt_get_activation_time(leaf);
    time_t na = gnutls_x509_crt_get_expiration_time(leaf);
    return nb != (time_t)-1 && na != (time_t)-1 && na - nb <= OCSP_SHORT_LIVED_SECONDS;
}

int ocsp_request_build(gnutls_x509_crt_t leaf, gnutls_x509_crt_t issuer, gnutls_datum_t *out)
{
    gnutls_ocsp_req_t req = NULL;
    int rc = -EINVAL;
    out->data = NULL;
    out->size = 0;
    if (gnutls_ocsp_req_init(&req) < 0)
        return -ENOMEM;
    if (gnutls_ocsp_req_add_cert(req, GNUTLS_DIG_SHA1, issuer, leaf) == 0 &&
        gnutls_ocsp_req_export(req, out) == 0)
        rc = 0;
    gnutls_ocsp_req_deinit(req);
    return rc;
}

int ocsp_check_not_older(const char *what, time_t this_update, time_t held, char *err,
                         size_t errlen)
{
    if (held <= 0 || this_update >= held)
        return 0;
    char got[32] = "?", have[32] = "?";
    struct tm tm;
    if (gmtime_r(&this_update, &tm))
        strftime(got, sizeof(got), "%Y-%m-%dT%H:%M:%SZ", &tm);
    if (gmtime_r(&held, &tm))
        strftime(have, sizeof(have), "%Y-%m-%dT%H:%M:%SZ", &tm);
    return ocsp_errf(err, errlen,
                     "the %s (thisUpdate %s) is older than the one already held (thisUpdate %s): "
                     "a replayed or cached old %s does not replace a newer one",
                     what, got, have, what);
}

time_t ocsp_serve_until(time_t this_update, time_t next_update, time_t margin)
{
    time_t quarter = (next_update - this_update) / 4;
    return next_update - (margin < quarter ? margin : quarter);
}

time_t ocsp_staple_until(time_t this_update, time_t next_update, time_t not_after, time_t margin)
{
    time_t until = ocsp_serve_until(this_update, next_update, margin);
    return not_after != (time_t)-1 && not_after < until ? not_after : until;
}

time_t ocsp_refresh_at(time_t this_update, time_t next_update, time_t serve_until, time_t now,
                       time_t min_gap, unsigned jitter_permille)
{
    time_t span = next_update - this_update;
    /* In 64 bits: with a 32-bit time_t (armhf) span / 10 times 1000 wraps
     * once an answer is valid for more than about 497 days. */
    time_t at = this_update + span / 2 +
                (time_t)((int64_t)(span / 10) * (int64_t)(jitter_permille % 1001) / 1000);
    if (at < now + min_gap)
        at = now + min_gap;
    if (at > serve_until - 1)
        at = serve_until - 1;
    if (at < now + 1)
        at = now + 1;
    return at;
}

time_t ocsp_backoff(unsigned failures, time_t min, time_t max)
{
    time_t d = min > 0 ? min : 1;
    for (unsigned i = 1; i < failures && d < max; i++)
        d *= 2;
    return d < max ? d : max;
}

const char *ocsp_status_name(enum ocsp_cert_status s)
{
    switch (s) {
    case OCSP_STATUS_GOOD:
        return "good";
    case OCSP_STATUS_REVOKED:
        return "revoked";
    default:
        return "unknown";
    }
}

int ocsp_errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -EINVAL;
}
