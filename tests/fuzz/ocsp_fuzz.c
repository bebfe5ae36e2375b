/* libFuzzer target: the OCSP response reader and verifier of the ocsp
 * plugin, and its CRL checker (the CRL and its Issuing Distribution Point
 * reader, which is hand-written DER).  Responses come from a responder over the network (plain
 * HTTP, usually): untrusted.  The leaf and issuer are made once, in memory, at the first call (no
 * key or certificate is committed); inputs signed by anyone else stop at the signature check, so
 * the target also walks every SingleResponse the way the verifier does after it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/gnutls.h>
#include <gnutls/ocsp.h>
#include <gnutls/x509.h>

#include "plugins/ocsp/ocsp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static gnutls_x509_crt_t leaf, issuer;

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
    gnutls_x509_privkey_deinit(ik);
    gnutls_x509_privkey_deinit(lk);
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
