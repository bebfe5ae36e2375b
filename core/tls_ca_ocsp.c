/* The internal CA's OCSP responder (see tls_ca_ocsp.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/ocsp.h>
#include <gnutls/x509.h>

#include "core/store.h"
#include "core/tls_ca.h"
#include "core/tls_ca_ocsp.h"
#include "core/tls_cert.h"
#include "core/xalloc.h"

/* A growing DER buffer. */
struct der {
    unsigned char *p;
    size_t n;
};

static void der_raw(struct der *d, const void *x, size_t n)
{
    d->p = xrealloc(d->p, d->n + n + 1);
    memcpy(d->p + d->n, x, n);
    d->n += n;
}

/* Append tag, definite length and @p n bytes of content. */
static void der_tlv(struct der *d, unsigned char tag, const void *v, size_t n)
{
    unsigned char h[6];
    size_t hl = 0;
    h[hl++] = tag;
    if (n < 0x80) {
        h[hl++] = (unsigned char)n;
    } else if (n < 0x100) {
        h[hl++] = 0x81;
        h[hl++] = (unsigned char)n;
    } else if (n < 0x10000) {
        h[hl++] = 0x82;
        h[hl++] = (unsigned char)(n >> 8);
        h[hl++] = (unsigned char)n;
    } else {
        h[hl++] = 0x83;
        h[hl++] = (unsigned char)(n >> 16);
        h[hl++] = (unsigned char)(n >> 8);
        h[hl++] = (unsigned char)n;
    }
    der_raw(d, h, hl);
    der_raw(d, v, n);
}

/* Wrap everything in @p inner as one TLV appended to @p d; frees inner. */
static void der_wrap(struct der *d, unsigned char tag, struct der *inner)
{
    der_tlv(d, tag, inner->p, inner->n);
    free(inner->p);
    inner->p = NULL;
    inner->n = 0;
}

static void der_time(struct der *d, time_t t)
{
    struct tm tm;
    char buf[32];
    gmtime_r(&t, &tm);
    strftime(buf, sizeof(buf), "%Y%m%d%H%M%SZ", &tm);
    der_tlv(d, 0x18, buf, strlen(buf)); /* GeneralizedTime */
}

static const unsigned char oid_sha1[] = {0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a};
static const unsigned char oid_ecdsa_sha256[] = {0x06, 0x08, 0x2a, 0x86, 0x48,
                                                 0xce, 0x3d, 0x04, 0x03, 0x02};
static const unsigned char oid_ocsp_basic[] = {0x06, 0x09, 0x2b, 0x06, 0x01, 0x05,
                                               0x05, 0x07, 0x30, 0x01, 0x01};

/* CertID of @p leaf under @p root (SHA-1, as clients ask); *key_hash too. */
static int cert_id(gnutls_x509_crt_t leaf, gnutls_x509_crt_t root, struct der *out,
                   gnutls_datum_t *key_hash)
{
    gnutls_ocsp_req_t req = NULL;
    gnutls_datum_t name_hash = {NULL, 0}, serial = {NULL, 0};
    gnutls_digest_algorithm_t dig;
    struct der alg = {NULL, 0}, id = {NULL, 0};
    int r;
    gnutls_ocsp_req_init(&req);
    /* GnuTLS computes both hashes exactly as its own stapling matches them. */
    if ((r = gnutls_ocsp_req_add_cert(req, GNUTLS_DIG_SHA1, root, leaf)) < 0 ||
        (r = gnutls_ocsp_req_get_cert_id(req, 0, &dig, &name_hash, key_hash, &serial)) < 0)
        goto out;
    der_raw(&alg, oid_sha1, sizeof(oid_sha1));
    der_tlv(&alg, 0x05, "", 0);
    der_wrap(&id, 0x30, &alg);
    der_tlv(&id, 0x04, name_hash.data, name_hash.size);
    der_tlv(&id, 0x04, key_hash->data, key_hash->size);
    der_tlv(&id, 0x02, serial.data, serial.size);
    der_wrap(out, 0x30, &id);
out:
    gnutls_free(name_hash.data);
    gnutls_free(serial.data);
    gnutls_ocsp_req_deinit(req);
    return r;
}

/* ResponseData with one SingleResponse: good, thisUpdate..nextUpdate. */
static int response_data(gnutls_x509_crt_t leaf, gnutls_x509_crt_t root, time_t now,
                         struct der *out)
{
    struct der single = {NULL, 0}, singles = {NULL, 0}, rd = {NULL, 0}, rid = {NULL, 0},
               next = {NULL, 0};
    gnutls_datum_t key_hash = {NULL, 0};
    int r = cert_id(leaf, root, &single, &key_hash);
    if (r < 0)
        goto out;
    time_t until = now + TLS_CA_OCSP_VALIDITY;
    time_t expiry = gnutls_x509_crt_get_expiration_time(leaf);
    if (expiry != (time_t)-1 && expiry < until)
        until = expiry;
    der_tlv(&single, 0x80, "", 0); /* certStatus good: [0] IMPLICIT NULL */
    der_time(&single, now - 300);  /* thisUpdate, a little early for slow clocks */
    der_time(&next, until);
    der_wrap(&single, 0xa0, &next); /* nextUpdate [0] EXPLICIT */
    der_wrap(&singles, 0x30, &single);

    /* responderID byName [1]: GnuTLS clients look a responder up in their
     * trust list by name only (byKey leaves them "signer not found"). */
    gnutls_datum_t dn = {NULL, 0};
    if ((r = gnutls_x509_crt_get_raw_dn(root, &dn)) < 0)
        goto out;
    der_raw(&rid, dn.data, dn.size);
    gnutls_free(dn.data);
    der_wrap(&rd, 0xa1, &rid);
    der_time(&rd, now); /* producedAt */
    der_wrap(&rd, 0x30, &singles);
    der_wrap(out, 0x30, &rd);
out:
    gnutls_free(key_hash.data);
    free(single.p);
    free(singles.p);
    free(rd.p);
    free(rid.p);
    return r;
}

int tls_ca_ocsp_sign(gnutls_x509_crt_t leaf, gnutls_x509_crt_t root, gnutls_x509_privkey_t root_key,
                     time_t now, unsigned char **der, size_t *der_len)
{
    struct der tbs = {NULL, 0}, basic = {NULL, 0}, sigbits = {NULL, 0}, alg = {NULL, 0},
               bytes = {NULL, 0}, outer = {NULL, 0}, wrapped = {NULL, 0}, seq = {NULL, 0};
    gnutls_privkey_t key = NULL;
    gnutls_datum_t sig = {NULL, 0};
    int r;
    *der = NULL;
    *der_len = 0;
    if ((r = response_data(leaf, root, now, &tbs)) < 0)
        goto out;
    gnutls_privkey_init(&key);
    gnutls_datum_t t = {tbs.p, (unsigned)tbs.n};
    if ((r = gnutls_privkey_import_x509(key, root_key, 0)) < 0 ||
        (r = gnutls_privkey_sign_data(key, GNUTLS_DIG_SHA256, 0, &t, &sig)) < 0)
        goto out;
    der_raw(&basic, tbs.p, tbs.n);
    der_raw(&alg, oid_ecdsa_sha256, sizeof(oid_ecdsa_sha256));
    der_wrap(&basic, 0x30, &alg);
    der_raw(&sigbits, "", 1); /* no unused bits */
    der_raw(&sigbits, sig.data, sig.size);
    der_wrap(&basic, 0x03, &sigbits);
    der_wrap(&seq, 0x30, &basic); /* BasicOCSPResponse */

    der_raw(&bytes, oid_ocsp_basic, sizeof(oid_ocsp_basic));
    der_wrap(&bytes, 0x04, &seq);
    der_wrap(&wrapped, 0x30, &bytes); /* ResponseBytes */
    der_tlv(&outer, 0x0a, "\0", 1);   /* responseStatus successful */
    der_wrap(&outer, 0xa0, &wrapped);
    struct der resp = {NULL, 0};
    der_wrap(&resp, 0x30, &outer);
    *der = resp.p;
    *der_len = resp.n;
    r = 0;
out:
    free(tbs.p);
    free(basic.p);
    gnutls_free(sig.data);
    if (key)
        gnutls_privkey_deinit(key);
    return r;
}

static int import_pem(gnutls_x509_crt_t *crt, const char *pem)
{
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)strlen(pem)};
    gnutls_x509_crt_init(crt);
    return gnutls_x509_crt_import(*crt, &d, GNUTLS_X509_FMT_PEM);
}

int tls_ca_ocsp_response(sqlite3 *db, const char *name, time_t now, unsigned char **der,
                         size_t *der_len, char **issuer_pem, char **err)
{
    char *chain = NULL, *ca_pem = NULL, *ca_key_pem = NULL;
    gnutls_x509_crt_t leaf = NULL, root = NULL;
    gnutls_x509_privkey_t key = NULL;
    unsigned status = 0;
    int rc;

    *err = NULL;
    *der = NULL;
    if (issuer_pem)
        *issuer_pem = NULL;
    if ((rc = tls_cert_chain(db, name, &chain)) < 0 ||
        (rc = tls_ca_root_load(db, &ca_pem, &ca_key_pem)) < 0)
        goto out;
    rc = -EIO;
    if (import_pem(&leaf, chain) < 0 || import_pem(&root, ca_pem) < 0)
        goto out;
    /* Only what this root signed: never vouch for an imported certificate. */
    if (gnutls_x509_crt_verify(leaf, &root, 1, GNUTLS_VERIFY_DISABLE_TIME_CHECKS, &status) < 0 ||
        status != 0) {
        *err = xasprintf("certificate %s was not issued by the internal CA", name);
        rc = -EINVAL;
        goto out;
    }
    gnutls_datum_t k = {(unsigned char *)ca_key_pem, (unsigned)strlen(ca_key_pem)};
    gnutls_x509_privkey_init(&key);
    if (gnutls_x509_privkey_import2(key, &k, GNUTLS_X509_FMT_PEM, NULL, 0) < 0 ||
        tls_ca_ocsp_sign(leaf, root, key, now, der, der_len) < 0)
        goto out;
    if (issuer_pem) {
        *issuer_pem = ca_pem;
        ca_pem = NULL;
    }
    rc = 0;
out:
    if (rc == -EIO && !*err)
        *err = xasprintf("internal CA: cannot sign the OCSP response of %s", name);
    free(chain);
    free(ca_pem);
    wipe_free_str(ca_key_pem);
    if (leaf)
        gnutls_x509_crt_deinit(leaf);
    if (root)
        gnutls_x509_crt_deinit(root);
    if (key)
        gnutls_x509_privkey_deinit(key);
    return rc;
}
