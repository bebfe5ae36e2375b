/* libcrypto's handshake signatures (core/tls_sign.c): which keys it takes,
 * that GnuTLS verifies what it signs for every ECDSA scheme a handshake can
 * ask for, what it refuses, and signing from several threads at once. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "core/tls_sign.h"
#include "tests/tap.h"

/* A new key of @p pk / @p bits as PEM (PKCS#8, as the store keeps keys) and
 * its public key. */
static gnutls_datum_t new_key(gnutls_pk_algorithm_t pk, unsigned bits, gnutls_pubkey_t *pub)
{
    gnutls_x509_privkey_t x;
    gnutls_datum_t pem = {NULL, 0};
    gnutls_x509_privkey_init(&x);
    if (gnutls_x509_privkey_generate(x, pk, bits, 0) == 0)
        gnutls_x509_privkey_export2_pkcs8(x, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, &pem);
    if (pub) {
        gnutls_privkey_t p;
        gnutls_privkey_init(&p);
        gnutls_privkey_import_x509(p, x, 0);
        gnutls_pubkey_init(pub);
        gnutls_pubkey_import_privkey(*pub, p, 0, 0);
        gnutls_privkey_deinit(p);
    }
    gnutls_x509_privkey_deinit(x);
    return pem;
}

#ifdef HAVE_OPENSSL_SIGN
static const gnutls_datum_t msg = {(unsigned char *)"the handshake transcript", 24};

/* Sign @p msg with @p key under @p algo; 1 when @p pub verifies it. */
static int signs_and_verifies(gnutls_privkey_t key, gnutls_pubkey_t pub,
                              gnutls_sign_algorithm_t algo)
{
    gnutls_datum_t sig = {NULL, 0};
    int ok = gnutls_privkey_sign_data2(key, algo, 0, &msg, &sig) == 0 &&
             gnutls_pubkey_verify_data2(pub, algo, 0, &msg, &sig) >= 0;
    gnutls_free(sig.data);
    return ok;
}

struct worker {
    gnutls_privkey_t key;
    gnutls_pubkey_t pub;
    int good;
};

static void *sign_many(void *arg)
{
    struct worker *w = arg;
    for (int i = 0; i < 200; i++)
        w->good += signs_and_verifies(w->key, w->pub, GNUTLS_SIGN_ECDSA_SECP256R1_SHA256);
    return NULL;
}

static void test_with_libcrypto(void)
{
    gnutls_pubkey_t pub, other;
    const unsigned p256 = GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1);
    gnutls_datum_t pem = new_key(GNUTLS_PK_ECDSA, p256, &pub);
    gnutls_datum_t pem2 = new_key(GNUTLS_PK_ECDSA, p256, &other);
    gnutls_privkey_t k = NULL;
    is_int(tls_sign_key_load(&pem, &k), 0, "P-256 key taken");
    if (!k) {
        ok(0, "no key to sign with");
        return;
    }
    unsigned bits = 0;
    is_int(gnutls_privkey_get_pk_algorithm(k, &bits), GNUTLS_PK_ECDSA, "GnuTLS sees ECDSA");
    is_int((int)bits, 256, "of 256 bits");

    uint64_t before = tls_sign_count();
    /* TLS 1.3 (the curve is in the scheme) and TLS 1.2 (the hash only). */
    ok(signs_and_verifies(k, pub, GNUTLS_SIGN_ECDSA_SECP256R1_SHA256),
       "ecdsa_secp256r1_sha256 verifies");
    ok(signs_and_verifies(k, pub, GNUTLS_SIGN_ECDSA_SHA256), "TLS 1.2 ECDSA with SHA-256 verifies");
    ok(signs_and_verifies(k, pub, GNUTLS_SIGN_ECDSA_SHA384), "TLS 1.2 ECDSA with SHA-384 verifies");
    ok(signs_and_verifies(k, pub, GNUTLS_SIGN_ECDSA_SHA1), "TLS 1.2 ECDSA with SHA-1 verifies");
    is_int((int)(tls_sign_count() - before), 4, "the four signatures were libcrypto's");

    /* The signature is of this key: another P-256 key does not verify it. */
    ok(!signs_and_verifies(k, other, GNUTLS_SIGN_ECDSA_SHA256),
       "the signature does not verify under another key");

    /* Schemes of another curve or algorithm are refused before anything is
     * signed, so GnuTLS never picks them for this key. */
    before = tls_sign_count();
    gnutls_datum_t sig = {NULL, 0};
    ok(gnutls_privkey_sign_data2(k, GNUTLS_SIGN_RSA_SHA256, 0, &msg, &sig) < 0,
       "RSA scheme refused for an ECDSA key");
    gnutls_free(sig.data);
    is_int((int)(tls_sign_count() - before), 0, "nothing signed for a refused scheme");

    /* Several threads, one key: each signature has its own context. */
    struct worker w[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){k, pub, 0};
        pthread_create(&t[i], NULL, sign_many, &w[i]);
    }
    int good = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        good += w[i].good;
    }
    is_int(good, 800, "800 signatures from 4 threads at once all verify");

    /* Keys made from one signer outlive it and each other. */
    struct tls_signer *s = NULL;
    gnutls_privkey_t k1 = NULL, k2 = NULL;
    is_int(tls_signer_load(&pem2, &s), 0, "signer loaded");
    ok(s && tls_signer_privkey(s, &k1) == 0 && tls_signer_privkey(s, &k2) == 0,
       "two keys from one signer");
    tls_signer_unref(s);
    gnutls_privkey_deinit(k1);
    ok(k2 && signs_and_verifies(k2, other, GNUTLS_SIGN_ECDSA_SECP256R1_SHA256),
       "the second still signs after the signer and the first are dropped");
    gnutls_privkey_deinit(k2);

    gnutls_privkey_deinit(k);
    gnutls_pubkey_deinit(pub);
    gnutls_pubkey_deinit(other);
    gnutls_free(pem.data);
    gnutls_free(pem2.data);
}
#endif

/* Keys libcrypto does not sign for here: GnuTLS keeps them. */
static void test_left_to_gnutls(void)
{
    struct {
        gnutls_pk_algorithm_t pk;
        unsigned bits;
        const char *what;
    } keys[] = {
        {GNUTLS_PK_RSA, 2048, "RSA"},
        {GNUTLS_PK_EDDSA_ED25519, 256, "Ed25519"},
        /* libcrypto 3.0's P-384 signature is several times slower than nettle's. */
        {GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP384R1), "P-384"},
        {GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP521R1), "P-521"},
    };
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        gnutls_datum_t pem = new_key(keys[i].pk, keys[i].bits, NULL);
        gnutls_privkey_t k = (gnutls_privkey_t)1;
        is_int(tls_sign_key_load(&pem, &k), -ENOTSUP, "%s key left to GnuTLS", keys[i].what);
        ok(k == NULL, "%s: no key returned", keys[i].what);
        gnutls_free(pem.data);
    }
}

static void test_bad_input(void)
{
    gnutls_privkey_t k = (gnutls_privkey_t)1;
    gnutls_datum_t junk = {(unsigned char *)"-----BEGIN PRIVATE KEY-----\nnot base64\n", 40};
    int r = tls_sign_key_load(&junk, &k);
#ifdef HAVE_OPENSSL_SIGN
    is_int(r, -EINVAL, "junk PEM refused");
#else
    is_int(r, -ENOTSUP, "without libcrypto nothing is taken");
#endif
    ok(k == NULL, "junk: no key returned");
    gnutls_datum_t empty = {NULL, 0};
    ok(tls_sign_key_load(&empty, &k) < 0 && k == NULL, "empty key refused");

    /* An encrypted key: refused at once, no passphrase prompt (stdin is
     * not read: the test would hang on a terminal otherwise). */
    gnutls_x509_privkey_t x;
    gnutls_datum_t enc = {NULL, 0};
    gnutls_x509_privkey_init(&x);
    gnutls_x509_privkey_generate(x, GNUTLS_PK_ECDSA,
                                 GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0);
    gnutls_x509_privkey_export2_pkcs8(x, GNUTLS_X509_FMT_PEM, "secret", GNUTLS_PKCS_PBES2_AES_256,
                                      &enc);
    gnutls_x509_privkey_deinit(x);
    ok(tls_sign_key_load(&enc, &k) < 0 && k == NULL, "encrypted key refused without a prompt");
    gnutls_free(enc.data);
}

int main(void)
{
    gnutls_global_init();
#ifdef HAVE_OPENSSL_SIGN
    test_with_libcrypto();
#endif
    test_left_to_gnutls();
    test_bad_input();
    gnutls_global_deinit();
    return done_testing();
}
