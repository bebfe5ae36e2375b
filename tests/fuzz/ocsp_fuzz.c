/* libFuzzer target: the OCSP response reader and verifier of the ocsp
 * plugin, and its CRL checker (the CRL, its Issuing Distribution Point and
 * RSA-PSS parameter readers, which are hand-written DER).  Responses come
 * from a responder over the network (plain HTTP, usually): untrusted.  The
 * leaf and issuer are made once, in memory, at the first call (no key or
 * certificate is committed); inputs signed by anyone else stop at the
 * signature check, so the target also walks every SingleResponse the way
 * the verifier does after it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/ocsp.h>
#include <gnutls/x509.h>

#include "plugins/ocsp/ocsp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static gnutls_x509_crt_t leaf, issuer;
static gnutls_privkey_t issuer_key;

static gnutls_x509_crt_t make_crt(gnutls_x509_privkey_t key, const char *cn, gnutls_x509_crt_t ca,
                                  gnutls_x509_privkey_t ca_key)
{
    gnutls_x509_crt_t c;
    unsigned char serial[1] = {(unsigned char)(ca ? 2 : 1)};
    gnutls_x509_crt_init(&c);
    gnutls_x509_crt_set_version(c, 3);
    gnutls_x509_crt_set_serial(c, serial, 1);
    gnutls_x509_crt_set_activation_time(c, 1700000000);
    gnutls_x509_crt_set_expiration_time(c, 1900000000);
    gnutls_x509_crt_set_dn_by_oid(c, GNUTLS_OID_X520_COMMON_NAME, 0, cn, (unsigned)strlen(cn));
    gnutls_x509_crt_set_key(c, key);
    gnutls_x509_crt_set_basic_constraints(c, ca ? 0 : 1, -1);
    gnutls_x509_crt_sign2(c, ca ? ca : c, ca_key ? ca_key : key, GNUTLS_DIG_SHA256, 0);
    return c;
}

static void setup(void)
{
    gnutls_x509_privkey_t ik, lk;
    gnutls_global_init();
    gnutls_x509_privkey_init(&ik);
    gnutls_x509_privkey_init(&lk);
    gnutls_x509_privkey_generate(ik, GNUTLS_PK_ECDSA,
                                 GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
    gnutls_x509_privkey_generate(lk, GNUTLS_PK_ECDSA,
                                 GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
    issuer = make_crt(ik, "fuzz issuer", NULL, NULL);
    leaf = make_crt(lk, "fuzz leaf", issuer, ik);
    gnutls_privkey_init(&issuer_key);
    gnutls_privkey_import_x509(issuer_key, ik, GNUTLS_PRIVKEY_IMPORT_COPY);
    gnutls_x509_privkey_deinit(ik);
    gnutls_x509_privkey_deinit(lk);
}

/* Append a DER header (tag, length) for @p len content bytes to @p b. */
static size_t der_head(unsigned char *b, unsigned tag, size_t len)
{
    size_t n = 0;
    b[n++] = (unsigned char)tag;
    if (len < 128) {
        b[n++] = (unsigned char)len;
    } else if (len < 65536) {
        b[n++] = 0x82;
        b[n++] = (unsigned char)(len >> 8);
        b[n++] = (unsigned char)len;
    } else {
        b[n++] = 0x83;
        b[n++] = (unsigned char)(len >> 16);
        b[n++] = (unsigned char)(len >> 8);
        b[n++] = (unsigned char)len;
    }
    return n;
}

static const unsigned char crl_times[] = "\x17\x0d"
                                         "270101000000Z"
                                         "\x17\x0d"
                                         "271231000000Z";

/* A tbsCertList by the issuer's name: version 2, @p alg (a whole
 * AlgorithmIdentifier), the issuer, two times, then @p tail as is.
 * malloc'd; its length in *n. */
static unsigned char *tbs_build(const unsigned char *alg, size_t an, const gnutls_datum_t *dn,
                                const uint8_t *tail, size_t tn, size_t *n)
{
    size_t body = 3 + an + dn->size + sizeof crl_times - 1 + tn;
    unsigned char *tbs = malloc(body + 8);
    size_t k = der_head(tbs, 0x30, body);
    memcpy(tbs + k, "\x02\x01\x01", 3);
    k += 3;
    memcpy(tbs + k, alg, an);
    k += an;
    memcpy(tbs + k, dn->data, dn->size);
    k += dn->size;
    memcpy(tbs + k, crl_times, sizeof crl_times - 1);
    k += sizeof crl_times - 1;
    if (tn)
        memcpy(tbs + k, tail, tn);
    *n = k + tn;
    return tbs;
}

/* Wrap @p tbs into a CertificateList with @p alg and the signature bytes
 * @p sig, and run the CRL check on it. */
static void crl_check_built(const unsigned char *tbs, size_t n, const unsigned char *alg, size_t an,
                            const unsigned char *sig, size_t sn)
{
    unsigned char bits[8];
    size_t bh = der_head(bits, 0x03, sn + 1);
    size_t all = n + an + bh + 1 + sn;
    unsigned char *crl = malloc(all + 8);
    size_t m = der_head(crl, 0x30, all);
    memcpy(crl + m, tbs, n);
    m += n;
    memcpy(crl + m, alg, an);
    m += an;
    memcpy(crl + m, bits, bh);
    m += bh;
    crl[m++] = 0;
    memcpy(crl + m, sig, sn);
    m += sn;
    struct ocsp_answer a;
    char err[256];
    (void)ocsp_crl_check(crl, m, "http://127.0.0.1:9/1.crl", leaf, issuer, 1800000000, &a, err,
                         sizeof(err));
    free(crl);
}

/* The input as what follows nextUpdate in a CRL (its entries, its
 * extensions) that the issuer really signed: the checks after the
 * signature, and the hand-written entry reader, see fuzzed bytes too. */
static void signed_crl(const uint8_t *data, size_t size)
{
    static const unsigned char alg[] = {0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86,
                                        0x48, 0xce, 0x3d, 0x04, 0x03, 0x02}; /* ecdsa-with-SHA256 */
    gnutls_datum_t dn = {NULL, 0}, sig = {NULL, 0};
    if (size > 1 << 20 || gnutls_x509_crt_get_raw_dn(issuer, &dn) < 0)
        return;
    size_t n;
    unsigned char *tbs = tbs_build(alg, sizeof alg, &dn, data, size, &n);
    gnutls_datum_t t = {tbs, (unsigned)n};
    if (gnutls_privkey_sign_data2(issuer_key, GNUTLS_SIGN_ECDSA_SHA256, 0, &t, &sig) == 0)
        crl_check_built(tbs, n, alg, sizeof alg, sig.data, sig.size);
    free(tbs);
    gnutls_free(sig.data);
    gnutls_free(dn.data);
}

/* The input as the parameters of an RSASSA-PSS signature algorithm, in a
 * CRL of the issuer's name: the hand-written PSS parameter reader (the
 * signature itself then fails, the issuer's key being ECDSA). */
static void pss_params_crl(const uint8_t *data, size_t size)
{
    static const unsigned char pss[] = {0x06, 0x09, 0x2a, 0x86, 0x48, 0x86,
                                        0xf7, 0x0d, 0x01, 0x01, 0x0a}; /* id-RSASSA-PSS */
    unsigned char alg[4096 + 32], sig[64];
    gnutls_datum_t dn = {NULL, 0};
    if (size > 4096 || gnutls_x509_crt_get_raw_dn(issuer, &dn) < 0)
        return;
    size_t an = der_head(alg, 0x30, sizeof pss + size);
    memcpy(alg + an, pss, sizeof pss);
    an += sizeof pss;
    memcpy(alg + an, data, size);
    an += size;
    memset(sig, 0x5a, sizeof sig); /* a signature of the right size, never valid */
    size_t n;
    unsigned char *tbs = tbs_build(alg, an, &dn, NULL, 0, &n);
    crl_check_built(tbs, n, alg, an, sig, sizeof sig);
    free(tbs);
    gnutls_free(dn.data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!leaf)
        setup();
    struct ocsp_answer a;
    char err[256];
    (void)ocsp_verify(data, size, leaf, issuer, 1800000000, &a, err, sizeof(err));
    (void)ocsp_crl_check(data, size, "http://127.0.0.1:9/1.crl", leaf, issuer, 1800000000, &a, err,
                         sizeof(err));
    (void)ocsp_crl_idp_check(data, size, "http://127.0.0.1:9/1.crl", err, sizeof(err));
    signed_crl(data, size);
    pss_params_crl(data, size);

    gnutls_ocsp_resp_t resp;
    gnutls_datum_t d = {(unsigned char *)data, (unsigned)size};
    gnutls_ocsp_resp_init(&resp);
    if (gnutls_ocsp_resp_import2(resp, &d, GNUTLS_X509_FMT_DER) == 0) {
        (void)gnutls_ocsp_resp_get_status(resp);
        (void)gnutls_ocsp_resp_get_produced(resp);
        for (unsigned i = 0; i < 16; i++) {
            unsigned status;
            time_t tu, nu, rt;
            unsigned reason;
            if (gnutls_ocsp_resp_get_single(resp, i, NULL, NULL, NULL, NULL, &status, &tu, &nu, &rt,
                                            &reason) < 0)
                break;
            (void)gnutls_ocsp_resp_check_crt(resp, i, leaf);
        }
    }
    gnutls_ocsp_resp_deinit(resp);
    return 0;
}
