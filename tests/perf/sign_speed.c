/* The handshake signature's cost through GnuTLS: GnuTLS's own key (nettle)
 * against the libcrypto key of core/tls_sign.c, in alternated rounds on one
 * core.  Prints numbers (make perf-sign); never a pass/fail test.
 *   sign_speed [ROUNDS [SIGNATURES_PER_ROUND]]   default 8 x 3000 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "core/tls_sign.h"

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* CPU seconds for @p n signatures of a 64-byte message, as TLS 1.3 asks. */
static double sign_n(gnutls_privkey_t key, gnutls_sign_algorithm_t algo, int n)
{
    static const gnutls_datum_t msg = {
        (unsigned char *)"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 64};
    double t0 = cpu_seconds();
    for (int i = 0; i < n; i++) {
        gnutls_datum_t sig;
        if (gnutls_privkey_sign_data2(key, algo, 0, &msg, &sig) < 0) {
            fprintf(stderr, "sign_speed: a signature failed\n");
            exit(1);
        }
        gnutls_free(sig.data);
    }
    return cpu_seconds() - t0;
}

#ifdef HAVE_OPENSSL_SIGN
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

/* CPU seconds for @p n libcrypto signatures of a SHA-256 digest with the key
 * in @p pem, as core/tls_sign.c makes them. */
static double evp_sign_n(const gnutls_datum_t *pem, int n)
{
    BIO *bio = BIO_new_mem_buf(pem->data, (int)pem->size);
    EVP_PKEY *pk = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (!pk) {
        fprintf(stderr, "sign_speed: libcrypto cannot read the key\n");
        exit(1);
    }
    unsigned char digest[32] = {1}, sig[160];
    double t0 = cpu_seconds();
    for (int i = 0; i < n; i++) {
        size_t len = sizeof(sig);
        EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL);
        if (!c || EVP_PKEY_sign_init(c) <= 0 ||
            EVP_PKEY_sign(c, sig, &len, digest, sizeof(digest)) <= 0) {
            fprintf(stderr, "sign_speed: a libcrypto signature failed\n");
            exit(1);
        }
        EVP_PKEY_CTX_free(c);
    }
    double t = cpu_seconds() - t0;
    EVP_PKEY_free(pk);
    return t;
}
#endif

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void curve(const char *name, gnutls_ecc_curve_t c, gnutls_sign_algorithm_t algo, int rounds,
                  int n)
{
    gnutls_x509_privkey_t x;
    gnutls_datum_t pem = {NULL, 0};
    gnutls_privkey_t own, fast;
    gnutls_x509_privkey_init(&x);
    gnutls_x509_privkey_generate(x, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(c), 0);
    gnutls_x509_privkey_export2_pkcs8(x, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, &pem);
    gnutls_privkey_init(&own);
    gnutls_privkey_import_x509(own, x, GNUTLS_PRIVKEY_IMPORT_AUTO_RELEASE);
    if (tls_sign_key_load(&pem, &fast) < 0) {
#ifdef HAVE_OPENSSL_SIGN
        /* Not taken by tls_sign: show why, with libcrypto called directly. */
        double t1 = sign_n(own, algo, n), t2 = evp_sign_n(&pem, n);
        printf("| %s (left to GnuTLS) | %.1f | %.1f (EVP directly) | %.2f |\n", name, t1 / n * 1e6,
               t2 / n * 1e6, t2 / t1);
#else
        printf("| %s | libcrypto not built in (configure --with-openssl-sign) | | |\n", name);
#endif
        gnutls_privkey_deinit(own);
        gnutls_free(pem.data);
        return;
    }
    gnutls_free(pem.data);
    double *ratio = calloc((size_t)rounds, sizeof(double)), a = 0, b = 0;
    for (int r = 0; r < rounds; r++) {
        /* Alternate which goes first: the host's speed drifts. */
        double t1, t2;
        if (r % 2) {
            t2 = sign_n(fast, algo, n);
            t1 = sign_n(own, algo, n);
        } else {
            t1 = sign_n(own, algo, n);
            t2 = sign_n(fast, algo, n);
        }
        a += t1;
        b += t2;
        ratio[r] = t2 / t1;
    }
    qsort(ratio, (size_t)rounds, sizeof(double), cmp_double);
    printf("| %s | %.1f | %.1f | %.2f (rounds %.2f-%.2f) |\n", name, a / rounds / n * 1e6,
           b / rounds / n * 1e6, b / a, ratio[0], ratio[rounds - 1]);
    free(ratio);
    gnutls_privkey_deinit(own);
    gnutls_privkey_deinit(fast);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 8, n = argc > 2 ? atoi(argv[2]) : 3000;
    if (rounds < 1 || n < 1) {
        fprintf(stderr, "usage: sign_speed [ROUNDS [SIGNATURES_PER_ROUND]]\n");
        return 2;
    }
    gnutls_global_init();
    printf("# %d alternated rounds of %d signatures each, CPU time per signature\n\n", rounds, n);
    printf("| key | GnuTLS (nettle), us | libcrypto, us | libcrypto / GnuTLS |\n");
    printf("|---|---:|---:|---:|\n");
    curve("ECDSA P-256", GNUTLS_ECC_CURVE_SECP256R1, GNUTLS_SIGN_ECDSA_SECP256R1_SHA256, rounds, n);
    curve("ECDSA P-384", GNUTLS_ECC_CURVE_SECP384R1, GNUTLS_SIGN_ECDSA_SECP384R1_SHA384, rounds, n);
    gnutls_global_deinit();
    return 0;
}
