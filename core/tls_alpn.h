/*
 * ACME tls-alpn-01 answers (RFC 8737, RFC 8738 for addresses): the
 * validation certificates the TLS bundle serves to a client that offers only
 * ALPN "acme-tls/1".  They live in memory only (a challenge lasts seconds
 * and its key is thrown away), in a table a plugin fills through the host
 * calls tls_alpn_challenge_put/del (core/tls.c, which also rebuilds the
 * bundle); each bundle takes a reference on the certificates of its time.
 */
#ifndef TLSBOX_CORE_TLS_ALPN_H
#define TLSBOX_CORE_TLS_ALPN_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <gnutls/gnutls.h>

/** The ALPN protocol id of the challenge (RFC 8737 section 6.2). */
#define TLS_ALPN_ACME "acme-tls/1"

/** At most this many answers at once (one per identifier of an order). */
#define TLS_ALPN_MAX 100

/* One validation certificate, shared by the table and the bundles built
 * while it was there; freed with its last reference. */
struct tls_alpn_cert {
    long refs;   /* under the table's lock */
    char *ident; /* the identifier: a lowercase host name or canonical address */
    char *sni;   /* what a validator sends as SNI: the host name, or the
                  * address's in-addr.arpa / ip6.arpa name */
    gnutls_certificate_credentials_t cred;
};

/*
 * The SNI a validator sends for @p ident: the name itself, or for an address
 * its reverse name (RFC 8738 section 6).  Caller frees; NULL when @p ident is
 * neither a host name nor an address (then *err says why, caller frees).
 */
char *tls_alpn_sni(const char *ident, char **err);

/*
 * The key a validation certificate needs to be served under the TLS policy
 * @p prio: GNUTLS_PK_ECDSA (P-256, the cheapest) when its signature
 * algorithms have an ECDSA one or @p prio is NULL, else GNUTLS_PK_RSA
 * (2048 bits) when they have an RSA one (PKCS#1 or RSA-PSS with an RSA
 * key), else GNUTLS_PK_UNKNOWN: no key this file makes can be served.
 */
gnutls_pk_algorithm_t tls_alpn_key_for(gnutls_priority_t prio);

/*
 * Make the validation certificate for @p ident with @p digest (SHA-256 of the
 * key authorization) and put it in the table, replacing one for the same
 * identifier.  The certificate: a fresh key (@p pk: GNUTLS_PK_ECDSA for
 * P-256, GNUTLS_PK_RSA for RSA-2048), self-signed, its one SAN the
 * identifier (dNSName or iPAddress), the critical id-pe-acmeIdentifier
 * extension holding the digest, valid from an hour before @p now for 7 days.
 * Returns 0; -EINVAL with *err (a host name or address is expected, or
 * another @p pk); -ENOSPC when TLS_ALPN_MAX answers are waiting; -EIO.
 * Any thread.
 */
int tls_alpn_put(const char *ident, const unsigned char digest[32], gnutls_pk_algorithm_t pk,
                 time_t now, char **err);

/* Take the answer for @p ident out of the table (bundles that hold it keep
 * it until they go).  0, or -ENOENT.  Any thread. */
int tls_alpn_del(const char *ident);

/* Every answer in the table, each with a reference taken, in *out (caller
 * frees the array after releasing each).  Returns the count (0: *out NULL). */
size_t tls_alpn_snapshot(struct tls_alpn_cert ***out);

/* Drop a reference. */
void tls_alpn_release(struct tls_alpn_cert *c);

/* The answer in @p v for a client that sent SNI @p sni (compared without
 * case), or NULL. */
struct tls_alpn_cert *tls_alpn_find(struct tls_alpn_cert *const *v, size_t n, const char *sni);

/* Empty the table (daemon stop, tests). */
void tls_alpn_clear(void);

#endif
