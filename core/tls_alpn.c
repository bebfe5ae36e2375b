/* ACME tls-alpn-01 validation certificates: making them, and the table. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gnutls/crypto.h>
#include <gnutls/x509.h>

#include "core/tls_alpn.h"
#include "core/xalloc.h"

/* id-pe-acmeIdentifier (RFC 8737 section 6.1) */
#define OID_ACME_IDENTIFIER "1.3.6.1.5.5.7.1.31"
#define VALID_DAYS 7

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct tls_alpn_cert *table[TLS_ALPN_MAX];
static size_t ntable;

/* A host name as ACME orders it: lowercase labels of [a-z0-9-], no
 * wildcard (RFC 8737 section 3 forbids tls-alpn-01 for one). */
static bool host_name_ok(const char *s)
{
    size_t len = strlen(s), label = 0;
    if (len == 0 || len > 253)
        return false;
    for (const char *p = s; *p; p++) {
        if (*p == '.') {
            if (label == 0)
                return false;
            label = 0;
        } else if ((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-') {
            if (++label > 63)
                return false;
        } else {
            return false;
        }
    }
    return label > 0;
}

/* The address in @p s: its bytes (4 or 16, *len) and canonical text. */
static bool parse_ip(const char *s, unsigned char bin[16], size_t *len, char canon[46])
{
    if (inet_pton(AF_INET, s, bin) == 1)
        *len = 4;
    else if (inet_pton(AF_INET6, s, bin) == 1)
        *len = 16;
    else
        return false;
    return inet_ntop(*len == 4 ? AF_INET : AF_INET6, bin, canon, 46) != NULL;
}

char *tls_alpn_sni(const char *ident, char **err)
{
    unsigned char ip[16];
    size_t len;
    char canon[46];
    if (parse_ip(ident, ip, &len, canon)) {
        if (len == 4)
            return xasprintf("%u.%u.%u.%u.in-addr.arpa", ip[3], ip[2], ip[1], ip[0]);
        /* 32 nibbles, last first, each followed by a dot, then "ip6.arpa" */
        char *s = xmalloc(32 * 2 + sizeof("ip6.arpa"));
        char *p = s;
        static const char hex[] = "0123456789abcdef";
        for (int i = 15; i >= 0; i--) {
            *p++ = hex[ip[i] & 15];
            *p++ = '.';
            *p++ = hex[ip[i] >> 4];
            *p++ = '.';
        }
        memcpy(p, "ip6.arpa", sizeof("ip6.arpa"));
        return s;
    }
    if (!host_name_ok(ident)) {
        *err = xstrdup("a lowercase host name (no wildcard) or an IP address is expected");
        return NULL;
    }
    return xstrdup(ident);
}

/* The identifier as the table keeps it: addresses in canonical text. */
static char *ident_key(const char *ident)
{
    unsigned char ip[16];
    size_t len;
    char canon[46];
    return xstrdup(parse_ip(ident, ip, &len, canon) ? canon : ident);
}

gnutls_pk_algorithm_t tls_alpn_key_for(gnutls_priority_t prio)
{
    const unsigned *list = NULL;
    int n = prio ? gnutls_priority_sign_list(prio, &list) : 0;
    bool rsa = false;
    if (n <= 0)
        return GNUTLS_PK_ECDSA; /* no list: GnuTLS' defaults, ECDSA among them */
    for (int i = 0; i < n; i++) {
        if (gnutls_sign_supports_pk_algorithm(list[i], GNUTLS_PK_ECDSA))
            return GNUTLS_PK_ECDSA;
        /* PKCS#1 and RSA-PSS-RSAE sign with an RSA key (RSA-PSS-SHA256
         * needs an RSA-PSS key, which validators need not take). */
        rsa |= gnutls_sign_supports_pk_algorithm(list[i], GNUTLS_PK_RSA) != 0;
    }
    return rsa ? GNUTLS_PK_RSA : GNUTLS_PK_UNKNOWN;
}

static int make_cred(const char *ident, const unsigned char digest[32], gnutls_pk_algorithm_t pk,
                     time_t now, gnutls_certificate_credentials_t *out)
{
    gnutls_x509_privkey_t key = NULL;
    gnutls_x509_crt_t crt = NULL;
    unsigned char serial[16], ip[16], ext[34];
    size_t iplen;
    char canon[46];
    int r;
    *out = NULL;
    /* The extension's value is the DER OCTET STRING of the digest. */
    ext[0] = 0x04;
    ext[1] = 32;
    memcpy(ext + 2, digest, 32);

    if ((r = gnutls_x509_privkey_init(&key)) < 0 ||
        (r = gnutls_x509_privkey_generate2(
             key, pk, pk == GNUTLS_PK_RSA ? 2048 : GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1),
             0, NULL, 0)) < 0 ||
        (r = gnutls_x509_crt_init(&crt)) < 0 ||
        (r = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial))) < 0)
        goto out;
    serial[0] = (unsigned char)((serial[0] & 0x7f) | 0x01); /* positive, no zero byte to strip */
    /* Computed wide: armhf's time_t is 32 bits, and past 2038 the sum
     * would wrap (as core/tls_ca.c's expiry_after). */
    int64_t until = (int64_t)now + (int64_t)VALID_DAYS * 86400;
    if (sizeof(time_t) < sizeof(int64_t) && until > INT32_MAX)
        until = INT32_MAX;
    if ((r = gnutls_x509_crt_set_version(crt, 3)) < 0 ||
        (r = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial))) < 0 ||
        (r = gnutls_x509_crt_set_activation_time(crt, now - 3600)) < 0 ||
        (r = gnutls_x509_crt_set_expiration_time(crt, (time_t)until)) < 0 ||
        (r = gnutls_x509_crt_set_key(crt, key)) < 0 ||
        (r = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0,
                                           "tlsbox ACME tls-alpn-01", 23)) < 0)
        goto out;
    if (parse_ip(ident, ip, &iplen, canon))
        r = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, (unsigned)iplen,
                                                 GNUTLS_FSAN_SET);
    else
        r = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, ident,
                                                 (unsigned)strlen(ident), GNUTLS_FSAN_SET);
    if (r < 0 ||
        (r = gnutls_x509_crt_set_extension_by_oid(crt, OID_ACME_IDENTIFIER, ext, sizeof(ext), 1)) <
            0 ||
        (r = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0)) < 0 ||
        (r = gnutls_certificate_allocate_credentials(out)) < 0)
        goto out;
    if ((r = gnutls_certificate_set_x509_key(*out, &crt, 1, key)) < 0) {
        gnutls_certificate_free_credentials(*out);
        *out = NULL;
        goto out;
    }
    r = 0;
out:
    if (crt)
        gnutls_x509_crt_deinit(crt);
    if (key)
        gnutls_x509_privkey_deinit(key); /* wipes it; the credentials hold their own copy */
    return r < 0 ? -EIO : 0;
}

static void cert_free(struct tls_alpn_cert *c)
{
    if (c->cred)
        gnutls_certificate_free_credentials(c->cred);
    free(c->ident);
    free(c->sni);
    free(c);
}

void tls_alpn_release(struct tls_alpn_cert *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&lock);
    bool last = --c->refs == 0;
    pthread_mutex_unlock(&lock);
    if (last)
        cert_free(c);
}

/* Under the lock: the index of @p key in the table, or -1. */
static long table_index(const char *key)
{
    for (size_t i = 0; i < ntable; i++)
        if (strcmp(table[i]->ident, key) == 0)
            return (long)i;
    return -1;
}

int tls_alpn_put(const char *ident, const unsigned char digest[32], gnutls_pk_algorithm_t pk,
                 time_t now, char **err)
{
    *err = NULL;
    if (pk != GNUTLS_PK_ECDSA && pk != GNUTLS_PK_RSA) {
        *err = xstrdup("the validation certificate's key is ECDSA P-256 or RSA-2048");
        return -EINVAL;
    }
    char *sni = tls_alpn_sni(ident, err);
    if (!sni)
        return -EINVAL;
    struct tls_alpn_cert *c = xcalloc(1, sizeof(*c));
    c->refs = 1;
    c->sni = sni;
    c->ident = ident_key(ident);
    if (make_cred(c->ident, digest, pk, now, &c->cred) < 0) {
        *err = xstrdup("cannot make the validation certificate");
        cert_free(c);
        return -EIO;
    }
    struct tls_alpn_cert *old = NULL;
    int rc = 0;
    pthread_mutex_lock(&lock);
    long i = table_index(c->ident);
    if (i >= 0) {
        old = table[i];
        table[i] = c;
    } else if (ntable < TLS_ALPN_MAX) {
        table[ntable++] = c;
    } else {
        rc = -ENOSPC;
    }
    pthread_mutex_unlock(&lock);
    if (rc < 0) {
        *err = xasprintf("%d tls-alpn-01 answers are waiting already", TLS_ALPN_MAX);
        cert_free(c);
        return rc;
    }
    tls_alpn_release(old);
    return 0;
}

int tls_alpn_del(const char *ident)
{
    char *key = ident_key(ident);
    struct tls_alpn_cert *c = NULL;
    pthread_mutex_lock(&lock);
    long i = table_index(key);
    if (i >= 0) {
        c = table[i];
        table[i] = table[--ntable];
        table[ntable] = NULL;
    }
    pthread_mutex_unlock(&lock);
    free(key);
    if (!c)
        return -ENOENT;
    tls_alpn_release(c);
    return 0;
}

size_t tls_alpn_snapshot(struct tls_alpn_cert ***out)
{
    *out = NULL;
    pthread_mutex_lock(&lock);
    size_t n = ntable;
    if (n) {
        *out = xcalloc(n, sizeof(**out));
        for (size_t i = 0; i < n; i++) {
            table[i]->refs++;
            (*out)[i] = table[i];
        }
    }
    pthread_mutex_unlock(&lock);
    return n;
}

struct tls_alpn_cert *tls_alpn_find(struct tls_alpn_cert *const *v, size_t n, const char *sni)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(v[i]->sni, sni) == 0)
            return v[i];
    return NULL;
}

void tls_alpn_clear(void)
{
    struct tls_alpn_cert *v[TLS_ALPN_MAX];
    pthread_mutex_lock(&lock);
    size_t n = ntable;
    memcpy(v, table, n * sizeof(*v));
    memset(table, 0, sizeof(table));
    ntable = 0;
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < n; i++)
        tls_alpn_release(v[i]);
}
