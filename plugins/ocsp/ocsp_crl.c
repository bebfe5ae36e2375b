/* Revocation without OCSP: the leaf's CRL distribution point, and checking
 * a CRL fetched from it (see ocsp.h).  The CRL comes from the network: its
 * signature, issuer, scope and times are checked before its list is
 * believed, and a CRL that only covers part of the issuer's certificates
 * (another shard, a delta, only some reasons) is refused rather than read
 * as "not listed, so good". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ocsp/ocsp.h"

static bool fetchable(const char *s, size_t len)
{
    return strlen(s) == len && (strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0);
}

char *ocsp_crl_url(gnutls_x509_crt_t leaf)
{
    for (unsigned seq = 0; seq < 16; seq++) {
        char buf[1024];
        size_t size = sizeof(buf) - 1;
        unsigned reasons = 0, critical = 0;
        int r = gnutls_x509_crt_get_crl_dist_points(leaf, seq, buf, &size, &reasons, &critical);
        if (r == GNUTLS_E_SHORT_MEMORY_BUFFER)
            continue; /* a URL longer than any CA writes */
        if (r < 0)
            return NULL;
        buf[size] = 0;
        /* A point limited to some reasons would not list the others. */
        if (r == GNUTLS_SAN_URI && reasons == 0 && fetchable(buf, size))
            return strdup(buf);
    }
    return NULL;
}

/* One DER element: tag, content start and length.  0, or -1 when it does
 * not fit in [p, end). */
struct der {
    unsigned tag;
    const unsigned char *val;
    size_t len;
};

static int der_next(const unsigned char **p, const unsigned char *end, struct der *d)
{
    const unsigned char *q = *p;
    if (end - q < 2)
        return -1;
    d->tag = *q++;
    size_t len = *q++;
    if (len & 0x80) {
        unsigned n = len & 0x7f;
        if (n == 0 || n > 3 || (size_t)(end - q) < n)
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

/* A [n] BOOLEAN inside the IDP: true when its content is non-zero. */
static bool der_true(const struct der *d)
{
    return d->len == 1 && d->val[0] != 0;
}

/* The Issuing Distribution Point (RFC 5280 5.2.5): the CRL covers the
 * certificates whose distribution point is @p url, all of them, for every
 * reason, and only the issuer's own.  Hand-read: GnuTLS has no parser for
 * it.  Every length is checked against its container. */
int ocsp_crl_idp_check(const unsigned char *der, size_t len, const char *url, char *err,
                       size_t errlen)
{
    const unsigned char *p = der, *end = der + len;
    struct der seq, f;
    bool named = false, matched = false;
    if (der_next(&p, end, &seq) < 0 || seq.tag != 0x30)
        return ocsp_errf(err, errlen, "unreadable issuing distribution point");
    p = seq.val;
    end = seq.val + seq.len;
    while (p < end) {
        if (der_next(&p, end, &f) < 0)
            return ocsp_errf(err, errlen, "unreadable issuing distribution point");
        if (f.tag == 0xa0) { /* distributionPoint */
            const unsigned char *q = f.val;
            struct der name, gn;
            if (der_next(&q, f.val + f.len, &name) < 0 || name.tag != 0xa0)
                return ocsp_errf(err, errlen,
                                 "the CRL names its distribution point relative to the issuer: "
                                 "cannot tell whether it covers this certificate");
            named = true;
            q = name.val;
            while (q < name.val + name.len) {
                if (der_next(&q, name.val + name.len, &gn) < 0)
                    return ocsp_errf(err, errlen, "unreadable issuing distribution point");
                if (gn.tag == 0x86 && gn.len == strlen(url) && memcmp(gn.val, url, gn.len) == 0)
                    matched = true;
            }
        } else if (f.tag == 0x82 && der_true(&f)) {
            return ocsp_errf(err, errlen, "the CRL lists CA certificates only");
        } else if (f.tag == 0x83) {
            return ocsp_errf(err, errlen, "the CRL covers only some revocation reasons");
        } else if (f.tag == 0x84 && der_true(&f)) {
            return ocsp_errf(err, errlen, "an indirect CRL (entries for other issuers)");
        } else if (f.tag == 0x85 && der_true(&f)) {
            return ocsp_errf(err, errlen, "the CRL lists attribute certificates only");
        }
    }
    if (named && !matched)
        return ocsp_errf(err, errlen,
                         "the CRL is for another distribution point (another shard), not %s", url);
    return 0;
}

/* Every critical extension understood (RFC 5280: else the CRL must not be
 * used), no delta CRL, and the distribution point checked. */
static int check_extensions(gnutls_x509_crl_t crl, const char *url, char *err, size_t errlen)
{
    for (unsigned i = 0; i < 64; i++) {
        char oid[128];
        size_t oidlen = sizeof(oid);
        unsigned critical = 0;
        int r = gnutls_x509_crl_get_extension_info(crl, i, oid, &oidlen, &critical);
        if (r == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            return 0;
        if (r < 0)
            return ocsp_errf(err, errlen, "unreadable CRL extension %u", i);
        if (strcmp(oid, "2.5.29.27") == 0)
            return ocsp_errf(err, errlen, "a delta CRL, not a complete one");
        if (strcmp(oid, "2.5.29.28") == 0) {
            gnutls_datum_t d = {NULL, 0};
            if (gnutls_x509_crl_get_extension_data2(crl, i, &d) < 0)
                return ocsp_errf(err, errlen, "unreadable issuing distribution point");
            r = ocsp_crl_idp_check(d.data, d.size, url, err, errlen);
            gnutls_free(d.data);
            if (r < 0)
                return r;
        } else if (critical && strcmp(oid, "2.5.29.20") != 0 && strcmp(oid, "2.5.29.35") != 0) {
            return ocsp_errf(err, errlen, "unknown critical CRL extension %s", oid);
        }
    }
    return ocsp_errf(err, errlen, "too many CRL extensions");
}

static const char *verify_why(unsigned v)
{
    if (v & GNUTLS_CERT_SIGNER_NOT_FOUND)
        return "not signed by the certificate's issuer (another CA's CRL)";
    if (v & GNUTLS_CERT_SIGNER_NOT_CA)
        return "the signer is not a CA";
    if (v & GNUTLS_CERT_SIGNER_CONSTRAINTS_FAILURE)
        return "the issuer may not sign CRLs (key usage)";
    if (v & GNUTLS_CERT_INSECURE_ALGORITHM)
        return "signed with an insecure algorithm";
    if (v & GNUTLS_CERT_SIGNATURE_FAILURE)
        return "the signature does not verify (wrong key)";
    return NULL; /* times: checked against our own clock below */
}

/* The serial's INTEGER content without leading zero octets. */
static void serial_trim(const unsigned char **p, size_t *n)
{
    while (*n > 1 && (*p)[0] == 0) {
        (*p)++;
        (*n)--;
    }
}

/* Is @p leaf's serial listed?  1 with *when, 0, or -1. */
static int find_serial(gnutls_x509_crl_t crl, gnutls_x509_crt_t leaf, time_t *when)
{
    unsigned char want[64];
    size_t wlen = sizeof(want);
    if (gnutls_x509_crt_get_serial(leaf, want, &wlen) < 0)
        return -1;
    const unsigned char *w = want;
    serial_trim(&w, &wlen);
    gnutls_x509_crl_iter_t it = NULL;
    int found = 0;
    for (;;) {
        unsigned char buf[128];
        size_t blen = sizeof(buf);
        time_t t = 0;
        int r = gnutls_x509_crl_iter_crt_serial(crl, &it, buf, &blen, &t);
        if (r == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            break;
        if (r < 0) { /* also a serial over 128 octets (RFC 5280: at most 20) */
            found = -1;
            break;
        }
        const unsigned char *b = buf;
        serial_trim(&b, &blen);
        if (blen == wlen && memcmp(b, w, wlen) == 0) {
            *when = t;
            found = 1;
            break;
        }
    }
    gnutls_x509_crl_iter_deinit(it);
    return found;
}

int ocsp_crl_check(const unsigned char *data, size_t len, const char *url, gnutls_x509_crt_t leaf,
                   gnutls_x509_crt_t issuer, time_t now, struct ocsp_answer *out, char *err,
                   size_t errlen)
{
    gnutls_x509_crl_t crl = NULL;
    gnutls_datum_t d = {(unsigned char *)data, (unsigned)len};
    unsigned v = 0;
    int rc;
    if (gnutls_x509_crl_init(&crl) < 0)
        return -ENOMEM;
    if (!data || len == 0 ||
        (gnutls_x509_crl_import(crl, &d, GNUTLS_X509_FMT_DER) < 0 &&
         gnutls_x509_crl_import(crl, &d, GNUTLS_X509_FMT_PEM) < 0)) {
        ocsp_errf(err, errlen, "not a CRL (neither DER nor PEM)");
        rc = -EBADMSG;
        goto out;
    }
    if (gnutls_x509_crl_check_issuer(crl, issuer) != 1) {
        rc = ocsp_errf(err, errlen, "the CRL is from another issuer than the certificate's");
        goto out;
    }
    const char *why = NULL;
    if (gnutls_x509_crl_verify(crl, &issuer, 1, 0, &v) < 0 || (why = verify_why(v))) {
        rc = ocsp_errf(err, errlen, "%s", why ? why : "the signature does not verify");
        goto out;
    }
    if ((rc = check_extensions(crl, url, err, errlen)) < 0)
        goto out;
    memset(out, 0, sizeof(*out));
    out->this_update = gnutls_x509_crl_get_this_update(crl);
    out->next_update = gnutls_x509_crl_get_next_update(crl);
    out->produced_at = out->this_update;
    out->revocation_reason = -1;
    if (out->this_update == (time_t)-1 || out->this_update > now + OCSP_CLOCK_SKEW) {
        rc = ocsp_errf(err, errlen, "thisUpdate is in the future (%lld s ahead)",
                       (long long)(out->this_update - now));
        goto out;
    }
    if (out->next_update == (time_t)-1) {
        rc = ocsp_errf(err, errlen, "no nextUpdate: cannot tell how long the CRL holds");
        goto out;
    }
    if (out->next_update <= now) {
        rc = ocsp_errf(err, errlen, "expired: nextUpdate was %lld s ago",
                       (long long)(now - out->next_update));
        goto out;
    }
    time_t when = 0;
    int found = find_serial(crl, leaf, &when);
    if (found < 0) {
        rc = ocsp_errf(err, errlen, "unreadable CRL entries");
        goto out;
    }
    out->status = found ? OCSP_STATUS_REVOKED : OCSP_STATUS_GOOD;
    out->revoked_at = found ? when : 0;
    rc = 0;
out:
    gnutls_x509_crl_deinit(crl);
    return rc;
}
