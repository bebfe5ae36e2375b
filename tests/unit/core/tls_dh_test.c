/* tls_dh_check: what DH parameters the core accepts, and why it refuses the
 * rest (PEMs made here from GnuTLS's RFC 7919 constants, altered). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/gnutls.h>

#include "core/tls_dh.h"
#include "tests/tap.h"

/* PKCS#3 PEM of (p, g), p being @p prime with @p add added to its last byte
 * (which is 0xff in every RFC 7919 prime: (unsigned)-2 gives p - 2 without a
 * borrow).  Caller frees; NULL on failure. */
static char *pem_of(const gnutls_datum_t *prime, unsigned add, unsigned g)
{
    unsigned char *pb = malloc(prime->size), gb[1] = {(unsigned char)g};
    memcpy(pb, prime->data, prime->size);
    pb[prime->size - 1] = (unsigned char)(pb[prime->size - 1] + add);
    gnutls_datum_t p = {pb, prime->size}, gd = {gb, 1}, out = {NULL, 0};
    gnutls_dh_params_t dh;
    char *s = NULL;
    gnutls_dh_params_init(&dh);
    if (gnutls_dh_params_import_raw(dh, &p, &gd) == 0 &&
        gnutls_dh_params_export2_pkcs3(dh, GNUTLS_X509_FMT_PEM, &out) == 0) {
        s = calloc(1, out.size + 1);
        memcpy(s, out.data, out.size);
    }
    gnutls_free(out.data);
    gnutls_dh_params_deinit(dh);
    free(pb);
    return s;
}

static void refused(const char *pem, const char *why, const char *desc)
{
    struct tls_dh_check c;
    char *err = NULL;
    is_int(tls_dh_check(pem, &c, &err), -EINVAL, "%s: refused (-EINVAL)", desc);
    like(err, why, "%s: says why", desc);
    free(err);
}

int main(void)
{
    struct tls_dh_check c;
    char *err = NULL;

    char *pem = pem_of(&gnutls_ffdhe_3072_group_prime, 0, 2);
    is_int(tls_dh_check(pem, &c, &err), 0, "ffdhe3072 as PKCS#3: accepted");
    is_int(c.bits, 3072, "3072 bits");
    ok(c.safe_prime, "a safe prime");
    is_int(strlen(c.fingerprint), 16, "16-digit fingerprint");
    struct tls_dh_check again;
    tls_dh_check(pem, &again, &err);
    is_str(again.fingerprint, c.fingerprint, "the fingerprint is stable");
    free(pem);

    /* The last byte of every RFC 7919 prime is 0xff: subtracting 2 keeps
     * the size and makes an odd number that is not prime (checked by GMP). */
    pem = pem_of(&gnutls_ffdhe_2048_group_prime, (unsigned)-2, 2);
    refused(pem, "the 2048-bit modulus is not a prime", "a composite modulus");
    free(pem);
    pem = pem_of(&gnutls_ffdhe_2048_group_prime, 0, 1);
    refused(pem, "the generator is outside 2..p-2", "generator 1");
    free(pem);

    gnutls_dh_params_t small;
    gnutls_datum_t out = {NULL, 0};
    gnutls_dh_params_init(&small);
    gnutls_dh_params_generate2(small, 1024);
    gnutls_dh_params_export2_pkcs3(small, GNUTLS_X509_FMT_PEM, &out);
    pem = calloc(1, out.size + 1);
    memcpy(pem, out.data, out.size);
    refused(pem, "DH parameters of 1024 bits are too small: at least 2048", "1024 bits");
    free(pem);
    gnutls_free(out.data);
    gnutls_dh_params_deinit(small);

    refused("hello", "not DH parameters", "garbage");
    pem = pem_of(&gnutls_ffdhe_2048_group_prime, 0, 2);
    char *with_key = calloc(1, strlen(pem) + 200);
    strcpy(with_key, pem);
    strcat(with_key, "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n");
    refused(with_key, "holds a private key", "parameters followed by a private key");
    free(with_key);
    free(pem);
    refused("-----BEGIN X9.42 DH PARAMETERS-----\nMIIB\n-----END X9.42 DH PARAMETERS-----\n",
            "X9.42 DH parameters", "X9.42");
    refused("-----BEGIN DH PARAMETERS-----\n!!!\n-----END DH PARAMETERS-----\n",
            "DH parameters do not parse", "a broken body");
    refused(NULL, "none given", "NULL");
    char *big = calloc(1, 20000);
    memset(big, 'A', 19999);
    refused(big, "more than 16 KiB", "20 KB of text");
    free(big);
    return done_testing();
}
