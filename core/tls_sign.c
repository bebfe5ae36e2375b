/* ECDSA handshake signatures made by libcrypto (core/tls_sign.h says why). */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/tls_sign.h"

static atomic_uint_fast64_t signatures;

uint64_t tls_sign_count(void)
{
    return atomic_load_explicit(&signatures, memory_order_relaxed);
}

int tls_sign_key_load(const gnutls_datum_t *key_pem, gnutls_privkey_t *out)
{
    struct tls_signer *s;
    *out = NULL;
    int r = tls_signer_load(key_pem, &s);
    if (r < 0)
        return r;
    r = tls_signer_privkey(s, out);
    tls_signer_unref(s);
    return r;
}

#ifndef HAVE_OPENSSL_SIGN

int tls_signer_load(const gnutls_datum_t *key_pem, struct tls_signer **out)
{
    (void)key_pem;
    *out = NULL;
    return -ENOTSUP;
}

int tls_signer_privkey(struct tls_signer *s, gnutls_privkey_t *out)
{
    (void)s;
    *out = NULL;
    return -ENOTSUP;
}

struct tls_signer *tls_signer_ref(struct tls_signer *s)
{
    return s;
}

void tls_signer_unref(struct tls_signer *s)
{
    (void)s;
}

#else

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

struct tls_signer {
    atomic_long refs;
    EVP_PKEY *pkey;
    gnutls_ecc_curve_t curve;
};

struct tls_signer *tls_signer_ref(struct tls_signer *s)
{
    if (s)
        atomic_fetch_add(&s->refs, 1);
    return s;
}

void tls_signer_unref(struct tls_signer *s)
{
    if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
        return;
    EVP_PKEY_free(s->pkey); /* libcrypto clears the private scalar */
    free(s);
}

/* The store's keys are never encrypted: refuse a passphrase rather than
 * let libcrypto's default callback prompt on a terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return -1;
}

/* What GnuTLS asks of an external key: its algorithm, size, and whether it
 * can make a given signature.  TLS 1.3 names the curve in the scheme
 * (ecdsa_secp256r1_sha256), so those must match ours; the TLS 1.2 schemes
 * name only the hash, and any hash suits ECDSA. */
static int signer_info(gnutls_privkey_t key, unsigned int flags, void *userdata)
{
    const struct tls_signer *s = userdata;
    (void)key;
    if (flags & GNUTLS_PRIVKEY_INFO_HAVE_SIGN_ALGO) {
        gnutls_sign_algorithm_t algo = GNUTLS_FLAGS_TO_SIGN_ALGO(flags);
        if (gnutls_sign_get_pk_algorithm(algo) != GNUTLS_PK_ECDSA)
            return 0;
        switch (algo) {
        case GNUTLS_SIGN_ECDSA_SECP256R1_SHA256:
            return s->curve == GNUTLS_ECC_CURVE_SECP256R1;
        case GNUTLS_SIGN_ECDSA_SECP384R1_SHA384:
        case GNUTLS_SIGN_ECDSA_SECP521R1_SHA512:
            return 0;
        default:
            return 1;
        }
    }
    if (flags & GNUTLS_PRIVKEY_INFO_PK_ALGO_BITS)
        return (int)gnutls_ecc_curve_get_size(s->curve) * 8;
    if (flags & GNUTLS_PRIVKEY_INFO_PK_ALGO)
        return GNUTLS_PK_ECDSA;
    if (flags & GNUTLS_PRIVKEY_INFO_SIGN_ALGO)
        return 0; /* no preference: GnuTLS picks from the peer's list */
    return -1;
}

/* GnuTLS hashes the data with the scheme's hash and hands us the digest;
 * the answer is the DER ECDSA-Sig-Value, in memory GnuTLS frees. */
static int signer_sign_hash(gnutls_privkey_t key, gnutls_sign_algorithm_t algo, void *userdata,
                            unsigned int flags, const gnutls_datum_t *hash, gnutls_datum_t *sig)
{
    const struct tls_signer *s = userdata;
    (void)key, (void)algo, (void)flags;
    int rc = GNUTLS_E_PK_SIGN_FAILED;
    size_t len = 0;
    sig->data = NULL;
    sig->size = 0;
    /* A new context each time: keeping them between handshakes saved
     * about 2 us of 30 in a loop, not worth a pool. */
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, s->pkey, NULL);
    if (!c || EVP_PKEY_sign_init(c) <= 0 ||
        EVP_PKEY_sign(c, NULL, &len, hash->data, hash->size) <= 0)
        goto out;
    if (!(sig->data = gnutls_malloc(len))) {
        rc = GNUTLS_E_MEMORY_ERROR;
        goto out;
    }
    if (EVP_PKEY_sign(c, sig->data, &len, hash->data, hash->size) <= 0) {
        gnutls_free(sig->data);
        sig->data = NULL;
        goto out;
    }
    sig->size = (unsigned)len;
    atomic_fetch_add_explicit(&signatures, 1, memory_order_relaxed);
    rc = 0;
out:
    if (rc < 0)
        ERR_clear_error(); /* the thread's queue: not left for the next caller */
    EVP_PKEY_CTX_free(c);
    return rc;
}

static void signer_release(gnutls_privkey_t key, void *userdata)
{
    (void)key;
    tls_signer_unref(userdata);
}

/* Our curve for libcrypto's group name; INVALID for a curve we leave to
 * GnuTLS.  P-256 only: libcrypto 3.0's signature took 0.5 x nettle's time
 * for P-256 but 6.9 x for P-384 (make perf-sign). */
static gnutls_ecc_curve_t curve_of(EVP_PKEY *pk)
{
    char group[64];
    size_t n = 0;
    if (EVP_PKEY_get_base_id(pk) != EVP_PKEY_EC ||
        EVP_PKEY_get_group_name(pk, group, sizeof(group), &n) != 1)
        return GNUTLS_ECC_CURVE_INVALID;
    if (strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0)
        return GNUTLS_ECC_CURVE_SECP256R1;
    return GNUTLS_ECC_CURVE_INVALID;
}

int tls_signer_load(const gnutls_datum_t *key_pem, struct tls_signer **out)
{
    *out = NULL;
    if (!key_pem || !key_pem->data || key_pem->size == 0 || key_pem->size > INT32_MAX)
        return -EINVAL;
    BIO *bio = BIO_new_mem_buf(key_pem->data, (int)key_pem->size);
    EVP_PKEY *pk = bio ? PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL) : NULL;
    BIO_free(bio);
    /* libcrypto's decoders may leave what the formats they tried said on
     * the thread's queue, even on success: not for the next caller. */
    ERR_clear_error();
    if (!pk)
        return -EINVAL;
    gnutls_ecc_curve_t curve = curve_of(pk);
    if (curve == GNUTLS_ECC_CURVE_INVALID) {
        EVP_PKEY_free(pk);
        return -ENOTSUP;
    }
    struct tls_signer *s = malloc(sizeof(*s));
    if (!s) {
        EVP_PKEY_free(pk);
        return -ENOMEM;
    }
    atomic_init(&s->refs, 1);
    s->pkey = pk;
    s->curve = curve;
    *out = s;
    return 0;
}

int tls_signer_privkey(struct tls_signer *s, gnutls_privkey_t *out)
{
    gnutls_privkey_t key = NULL;
    *out = NULL;
    if (gnutls_privkey_init(&key) < 0)
        return -ENOMEM;
    /* AUTO_RELEASE: gnutls_privkey_deinit calls signer_release. */
    if (gnutls_privkey_import_ext4(key, tls_signer_ref(s), NULL, signer_sign_hash, NULL,
                                   signer_release, signer_info,
                                   GNUTLS_PRIVKEY_IMPORT_AUTO_RELEASE) < 0) {
        gnutls_privkey_deinit(key);
        tls_signer_unref(s);
        return -EINVAL;
    }
    *out = key;
    return 0;
}

#endif
