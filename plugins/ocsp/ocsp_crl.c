/* Revocation without OCSP: the leaf's CRL distribution point, and checking
 * a CRL fetched from it (see ocsp.h).  The CRL comes from the network: its
 * signature, issuer, scope and times are checked before its list is
 * believed, and a CRL that only covers part of the issuer's certificates
 * (another shard, a delta, only some reasons) is refused rather than read
 * as "not listed, so good".  The CRL is read by hand (ocsp_der.c) in one
 * pass over the fetched bytes: GnuTLS's reader decodes every entry into a
 * tree (about 3 KB each), too much for a large CRL on a small board. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/abstract.h>
#include <gnutls/crypto.h>

#include "plugins/ocsp/ocsp.h"
#include "plugins/ocsp/ocsp_der.h"

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
    if (der_next(&p, end, &seq) < 0 || seq.tag != DER_SEQUENCE || p != end)
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

/* The top of a CRL (RFC 5280 5.1), located in its bytes. */
struct crl {
    struct der tbs, sig_alg, sig;
    struct der tbs_alg, issuer, entries, exts;
    int64_t this_update, next_update;
    int has_next, has_entries, has_exts;
};

/* Locate the parts of DER @p data.  0, or -EBADMSG. */
static int crl_parse(const unsigned char *data, size_t len, struct crl *c)
{
    const unsigned char *p = data, *end = data + len;
    struct der top, d;
    memset(c, 0, sizeof *c);
    if (der_next(&p, end, &top) < 0 || top.tag != DER_SEQUENCE || p != end)
        return -EBADMSG;
    p = top.val;
    end = der_end(&top);
    if (der_next(&p, end, &c->tbs) < 0 || c->tbs.tag != DER_SEQUENCE ||
        der_next(&p, end, &c->sig_alg) < 0 || c->sig_alg.tag != DER_SEQUENCE ||
        der_next(&p, end, &c->sig) < 0 || c->sig.tag != DER_BIT_STRING || p != end)
        return -EBADMSG;
    p = c->tbs.val;
    end = der_end(&c->tbs);
    if (der_next(&p, end, &d) < 0)
        return -EBADMSG;
    if (d.tag == DER_INTEGER) { /* version: v2 (1) */
        if (d.len != 1 || d.val[0] != 1 || der_next(&p, end, &d) < 0)
            return -EBADMSG;
    }
    c->tbs_alg = d;
    if (c->tbs_alg.tag != DER_SEQUENCE || der_next(&p, end, &c->issuer) < 0 ||
        c->issuer.tag != DER_SEQUENCE || der_next(&p, end, &d) < 0 ||
        der_time(&d, &c->this_update) < 0)
        return -EBADMSG;
    while (p < end) {
        if (der_next(&p, end, &d) < 0)
            return -EBADMSG;
        if ((d.tag == DER_UTC_TIME || d.tag == DER_GENERALIZED_TIME) && !c->has_next &&
            !c->has_entries && !c->has_exts) {
            if (der_time(&d, &c->next_update) < 0)
                return -EBADMSG;
            c->has_next = 1;
        } else if (d.tag == DER_SEQUENCE && !c->has_entries && !c->has_exts) {
            c->entries = d;
            c->has_entries = 1;
        } else if (d.tag == 0xa0 && !c->has_exts) {
            const unsigned char *q = d.val;
            if (der_next(&q, der_end(&d), &c->exts) < 0 || c->exts.tag != DER_SEQUENCE ||
                q != der_end(&d))
                return -EBADMSG;
            c->has_exts = 1;
        } else {
            return -EBADMSG;
        }
    }
    return 0;
}

/* One Extension at *p: its OID as text, criticality and value.  0 or -1. */
static int ext_next(const unsigned char **p, const unsigned char *end, char *oid, size_t oidlen,
                    int *critical, struct der *value)
{
    struct der e, d;
    if (der_next(p, end, &e) < 0 || e.tag != DER_SEQUENCE)
        return -1;
    const unsigned char *q = e.val;
    if (der_next(&q, der_end(&e), &d) < 0 || der_oid_text(&d, oid, oidlen) < 0 ||
        der_next(&q, der_end(&e), &d) < 0)
        return -1;
    *critical = 0;
    if (d.tag == DER_BOOLEAN) {
        *critical = d.len == 1 && d.val[0] != 0;
        if (der_next(&q, der_end(&e), &d) < 0)
            return -1;
    }
    if (d.tag != DER_OCTET_STRING || q != der_end(&e))
        return -1;
    *value = d;
    return 0;
}

/* Every critical extension understood (RFC 5280: else the CRL must not be
 * used), no delta CRL, and the distribution point checked. */
static int check_extensions(const struct crl *c, const char *url, char *err, size_t errlen)
{
    if (!c->has_exts)
        return 0;
    const unsigned char *p = c->exts.val, *end = der_end(&c->exts);
    while (p < end) {
        char oid[64];
        int critical = 0, r;
        struct der v;
        if (ext_next(&p, end, oid, sizeof oid, &critical, &v) < 0)
            return ocsp_errf(err, errlen, "unreadable CRL extension");
        if (strcmp(oid, "2.5.29.27") == 0)
            return ocsp_errf(err, errlen, "a delta CRL, not a complete one");
        if (strcmp(oid, "2.5.29.28") == 0) {
            if ((r = ocsp_crl_idp_check(v.val, v.len, url, err, errlen)) < 0)
                return r;
        } else if (critical && strcmp(oid, "2.5.29.20") != 0 && strcmp(oid, "2.5.29.35") != 0) {
            return ocsp_errf(err, errlen, "unknown critical CRL extension %s", oid);
        }
    }
    return 0;
}

/* GnuTLS declares its OID lookups __attribute__((const)), as if they did
 * not read the string they are given.  With two lookups on one stack
 * buffer rewritten in between, GCC 12 -O2 gave the first a wrong answer:
 * SHA-256 in RSA-PSS parameters came out unknown.  Called through volatile
 * pointers, every lookup runs, after its buffer is written. */
static gnutls_digest_algorithm_t (*volatile const oid_to_digest)(const char *) =
    gnutls_oid_to_digest;
static gnutls_sign_algorithm_t (*volatile const oid_to_sign)(const char *) = gnutls_oid_to_sign;

/* The hash named by an AlgorithmIdentifier SEQUENCE at *p, or
 * GNUTLS_DIG_UNKNOWN. */
static gnutls_digest_algorithm_t alg_digest(const unsigned char **p, const unsigned char *end)
{
    struct der seq, oid;
    char txt[64];
    const unsigned char *q;
    if (der_next(p, end, &seq) < 0 || seq.tag != DER_SEQUENCE)
        return GNUTLS_DIG_UNKNOWN;
    q = seq.val;
    if (der_next(&q, der_end(&seq), &oid) < 0 || oid.tag != DER_OID ||
        der_oid_text(&oid, txt, sizeof txt) < 0)
        return GNUTLS_DIG_UNKNOWN;
    return oid_to_digest(txt);
}

#define OID_RSA_PSS "1.2.840.113549.1.1.10"
#define OID_MGF1 "1.2.840.113549.1.1.8"

/* RSASSA-PSS names its hash in the algorithm's parameters (RFC 4055 3.1),
 * which gnutls_oid_to_sign() does not read: for the bare OID it answers
 * SHA-256, and a CRL signed with SHA-384 or SHA-512 would "not verify".
 * Reads hashAlgorithm [0] (SHA-1 when absent), checks that the mask is MGF1
 * with the same hash and that the salt is the hash's length (the only salt
 * GnuTLS checks with a plain RSA key), and names the signature algorithm. */
static int pss_sign_alg(const struct der *params, gnutls_sign_algorithm_t *sa, char *err,
                        size_t errlen)
{
    gnutls_digest_algorithm_t dig = GNUTLS_DIG_SHA1, mgf = GNUTLS_DIG_SHA1;
    unsigned long salt = 20;
    const unsigned char *p = params->val, *end = der_end(params);
    struct der f, x;
    if (params->tag != DER_SEQUENCE)
        return ocsp_errf(err, errlen, "unreadable RSA-PSS parameters");
    while (p < end) {
        if (der_next(&p, end, &f) < 0)
            return ocsp_errf(err, errlen, "unreadable RSA-PSS parameters");
        const unsigned char *q = f.val, *fend = der_end(&f);
        if (f.tag == 0xa0) {
            dig = alg_digest(&q, fend);
        } else if (f.tag == 0xa1) {
            struct der oid;
            char txt[64];
            if (der_next(&q, fend, &x) < 0 || x.tag != DER_SEQUENCE)
                return ocsp_errf(err, errlen, "unreadable RSA-PSS mask generation");
            q = x.val;
            if (der_next(&q, der_end(&x), &oid) < 0 || der_oid_text(&oid, txt, sizeof txt) < 0 ||
                strcmp(txt, OID_MGF1) != 0)
                return ocsp_errf(err, errlen, "an RSA-PSS mask generation other than MGF1");
            mgf = alg_digest(&q, der_end(&x));
        } else if (f.tag == 0xa2) {
            if (der_next(&q, fend, &x) < 0 || x.tag != DER_INTEGER || x.len == 0 || x.len > 4 ||
                (x.val[0] & 0x80))
                return ocsp_errf(err, errlen, "unreadable RSA-PSS salt length");
            salt = 0;
            for (size_t i = 0; i < x.len; i++)
                salt = salt << 8 | x.val[i];
        } else if (f.tag == 0xa3) {
            /* trailerField: 1, the only value RFC 4055 defines */
            if (der_next(&q, fend, &x) < 0 || x.tag != DER_INTEGER || x.len != 1 || x.val[0] != 1)
                return ocsp_errf(err, errlen, "an RSA-PSS trailer field other than 1");
        } else {
            return ocsp_errf(err, errlen, "unreadable RSA-PSS parameters");
        }
    }
    if (mgf != dig)
        return ocsp_errf(err, errlen, "RSA-PSS with MGF1 over another hash than the signature's");
    *sa = gnutls_pk_to_sign(GNUTLS_PK_RSA_PSS, dig);
    if (*sa == GNUTLS_SIGN_UNKNOWN)
        return ocsp_errf(err, errlen, "unsupported RSA-PSS hash %s",
                         dig == GNUTLS_DIG_UNKNOWN ? "(unknown)" : gnutls_digest_get_name(dig));
    if (salt != gnutls_hash_get_len(dig))
        return ocsp_errf(err, errlen, "unsupported RSA-PSS salt length %lu (want %u, the hash's)",
                         salt, gnutls_hash_get_len(dig));
    return 0;
}

/* Issued by @p issuer (its subject, byte for byte), which is a CA allowed
 * to sign CRLs, and signed with its key over the exact tbsCertList bytes. */
static int check_signature(const struct crl *c, gnutls_x509_crt_t issuer, char *err, size_t errlen)
{
    gnutls_datum_t dn = {NULL, 0};
    char oid[64];
    unsigned ku = 0;
    const unsigned char *q = c->sig_alg.val;
    struct der alg;
    if (gnutls_x509_crt_get_raw_dn(issuer, &dn) < 0)
        return ocsp_errf(err, errlen, "cannot read the issuer certificate's name");
    size_t ilen = (size_t)(der_end(&c->issuer) - c->issuer.tlv);
    int same = dn.size == ilen && memcmp(dn.data, c->issuer.tlv, ilen) == 0;
    gnutls_free(dn.data);
    if (!same)
        return ocsp_errf(err, errlen, "the CRL is from another issuer than the certificate's");
    if (gnutls_x509_crt_get_ca_status(issuer, NULL) <= 0)
        return ocsp_errf(err, errlen, "the signer is not a CA");
    if (gnutls_x509_crt_get_key_usage(issuer, &ku, NULL) == 0 && !(ku & GNUTLS_KEY_CRL_SIGN))
        return ocsp_errf(err, errlen, "the issuer may not sign CRLs (key usage)");
    /* RFC 5280 5.1.1.2: the same algorithm inside and outside. */
    size_t alen = (size_t)(der_end(&c->sig_alg) - c->sig_alg.tlv);
    if ((size_t)(der_end(&c->tbs_alg) - c->tbs_alg.tlv) != alen ||
        memcmp(c->tbs_alg.tlv, c->sig_alg.tlv, alen) != 0 ||
        der_next(&q, der_end(&c->sig_alg), &alg) < 0 || der_oid_text(&alg, oid, sizeof oid) < 0)
        return ocsp_errf(err, errlen, "unreadable or inconsistent signature algorithm");
    gnutls_sign_algorithm_t sa = oid_to_sign(oid);
    if (strcmp(oid, OID_RSA_PSS) == 0) {
        struct der params;
        if (der_next(&q, der_end(&c->sig_alg), &params) < 0)
            return ocsp_errf(err, errlen, "RSA-PSS without its parameters");
        int r = pss_sign_alg(&params, &sa, err, errlen);
        if (r < 0)
            return r;
    }
    if (sa == GNUTLS_SIGN_UNKNOWN)
        return ocsp_errf(err, errlen, "unsupported signature algorithm %s", oid);
    if (c->sig.len < 2 || c->sig.val[0] != 0)
        return ocsp_errf(err, errlen, "unreadable signature");
    gnutls_pubkey_t pk = NULL;
    gnutls_datum_t tbs = {(unsigned char *)c->tbs.tlv, (unsigned)(der_end(&c->tbs) - c->tbs.tlv)};
    gnutls_datum_t sig = {(unsigned char *)c->sig.val + 1, (unsigned)c->sig.len - 1};
    int r = gnutls_pubkey_init(&pk);
    if (r == 0)
        r = gnutls_pubkey_import_x509(pk, issuer, 0);
    if (r == 0)
        r = gnutls_pubkey_verify_data2(pk, sa, 0, &tbs, &sig);
    gnutls_pubkey_deinit(pk);
    if (r == GNUTLS_E_INSUFFICIENT_SECURITY)
        return ocsp_errf(err, errlen, "signed with an insecure algorithm");
    if (r < 0)
        return ocsp_errf(err, errlen, "the signature does not verify (wrong key)");
    return 0;
}

/* The serial's INTEGER content without leading zero octets. */
static void serial_trim(const unsigned char **p, size_t *n)
{
    while (*n > 1 && (*p)[0] == 0) {
        (*p)++;
        (*n)--;
    }
}

/* The entry extensions of a listed certificate: the reason code read, any
 * other critical one refused (a certificateIssuer would make the entry
 * another CA's).  0 or -EINVAL. */
static int entry_extensions(const struct der *exts, struct ocsp_answer *out, char *err,
                            size_t errlen)
{
    const unsigned char *p = exts->val, *end = der_end(exts);
    while (p < end) {
        char oid[64];
        int critical = 0;
        struct der v, r;
        if (ext_next(&p, end, oid, sizeof oid, &critical, &v) < 0)
            return ocsp_errf(err, errlen, "unreadable CRL entry extension");
        const unsigned char *q = v.val;
        if (strcmp(oid, "2.5.29.21") == 0 && der_next(&q, der_end(&v), &r) == 0 &&
            r.tag == DER_ENUMERATED && r.len == 1)
            out->revocation_reason = r.val[0];
        else if (strcmp(oid, "2.5.29.29") == 0)
            return ocsp_errf(err, errlen, "an entry for another issuer's certificate");
        else if (critical && strcmp(oid, "2.5.29.24") != 0 && strcmp(oid, "2.5.29.21") != 0)
            return ocsp_errf(err, errlen, "unknown critical CRL entry extension %s", oid);
    }
    return 0;
}

/* Is @p leaf's serial listed?  1 with out->revoked_at, 0, or -EINVAL /
 * -EBADMSG with the reason in @p err. */
static int find_serial(const struct crl *c, gnutls_x509_crt_t leaf, struct ocsp_answer *out,
                       char *err, size_t errlen)
{
    unsigned char want[64];
    size_t wlen = sizeof(want);
    if (gnutls_x509_crt_get_serial(leaf, want, &wlen) < 0)
        return ocsp_errf(err, errlen, "cannot read the certificate's serial");
    const unsigned char *w = want;
    serial_trim(&w, &wlen);
    if (!c->has_entries)
        return 0;
    const unsigned char *p = c->entries.val, *end = der_end(&c->entries);
    while (p < end) {
        struct der e, serial, when, exts;
        if (der_next(&p, end, &e) < 0 || e.tag != DER_SEQUENCE)
            goto bad;
        const unsigned char *q = e.val;
        if (der_next(&q, der_end(&e), &serial) < 0 || serial.tag != DER_INTEGER ||
            serial.len == 0 || der_next(&q, der_end(&e), &when) < 0)
            goto bad;
        const unsigned char *s = serial.val;
        size_t slen = serial.len;
        serial_trim(&s, &slen);
        if (slen != wlen || memcmp(s, w, wlen) != 0)
            continue;
        int64_t t = 0;
        if (der_time(&when, &t) < 0)
            goto bad;
        out->revoked_at = (time_t)t;
        if (q < der_end(&e)) {
            if (der_next(&q, der_end(&e), &exts) < 0 || exts.tag != DER_SEQUENCE ||
                q != der_end(&e))
                goto bad;
            int r = entry_extensions(&exts, out, err, errlen);
            if (r < 0)
                return r;
        }
        return 1;
    }
    return 0;
bad:
    ocsp_errf(err, errlen, "unreadable CRL entries");
    return -EBADMSG;
}

/* A time for struct ocsp_answer: clamped where time_t is 32 bits. */
static time_t clamp_time(int64_t t)
{
    if (sizeof(time_t) < 8 && t > INT32_MAX)
        return (time_t)INT32_MAX;
    return (time_t)t;
}

/* The CRL's nextUpdate, judged by what it says of the leaf (@p found: its
 * serial is listed, for @p reason).  "Not listed" holds only until
 * nextUpdate: it must be present and ahead.  A revocation is final (RFC
 * 5280 3.3): a CRL that lists the serial proves it however old, as a
 * REVOKED OCSP answer does whatever its nextUpdate.  Except a hold, which
 * may be lifted since: on hold is believed only from a current CRL. */
static int crl_check_next(const struct crl *c, int found, int reason, time_t now, char *err,
                          size_t errlen)
{
    if (found && reason != OCSP_REASON_CERTIFICATE_HOLD)
        return 0;
    const char *held =
        found ? " (it lists the certificate on hold, which may have been lifted)" : "";
    if (!c->has_next)
        return ocsp_errf(err, errlen, "no nextUpdate: cannot tell how long the CRL holds%s", held);
    if (c->next_update <= (int64_t)now)
        return ocsp_errf(err, errlen, "expired: nextUpdate was %lld s ago%s",
                         (long long)((int64_t)now - c->next_update), held);
    return 0;
}

int ocsp_crl_check(const unsigned char *data, size_t len, const char *url, gnutls_x509_crt_t leaf,
                   gnutls_x509_crt_t issuer, time_t now, struct ocsp_answer *out, char *err,
                   size_t errlen)
{
    gnutls_datum_t der = {NULL, 0};
    struct crl c;
    int rc;
    /* PEM is decoded into a copy; DER is read where it lies. */
    if (data && len > 10 && memcmp(data, "-----BEGIN", 10) == 0) {
        gnutls_datum_t pem = {(unsigned char *)data, (unsigned)len};
        if (gnutls_pem_base64_decode2("X509 CRL", &pem, &der) < 0)
            der.data = NULL;
        else {
            data = der.data;
            len = der.size;
        }
    }
    if (!data || len == 0 || crl_parse(data, len, &c) < 0) {
        ocsp_errf(err, errlen, "not a CRL (neither DER nor PEM)");
        rc = -EBADMSG;
        goto out;
    }
    if ((rc = check_signature(&c, issuer, err, errlen)) < 0 ||
        (rc = check_extensions(&c, url, err, errlen)) < 0)
        goto out;
    memset(out, 0, sizeof(*out));
    out->this_update = clamp_time(c.this_update);
    out->next_update = c.has_next ? clamp_time(c.next_update) : (time_t)-1;
    out->produced_at = out->this_update;
    out->revocation_reason = -1;
    if (c.this_update > (int64_t)now + OCSP_CLOCK_SKEW) {
        rc = ocsp_errf(err, errlen, "thisUpdate is in the future (%lld s ahead)",
                       (long long)(c.this_update - (int64_t)now));
        goto out;
    }
    int found = find_serial(&c, leaf, out, err, errlen);
    if (found < 0) {
        rc = found;
        goto out;
    }
    if ((rc = crl_check_next(&c, found, out->revocation_reason, now, err, errlen)) < 0)
        goto out;
    out->status = found ? OCSP_STATUS_REVOKED : OCSP_STATUS_GOOD;
    if (!found)
        out->revoked_at = 0;
    rc = 0;
out:
    gnutls_free(der.data);
    return rc;
}
