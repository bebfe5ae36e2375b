/* Diffie-Hellman parameters of the TLS bundle: checking a PEM, the core table
 * tls_dh (the parameters to serve; no row = the RFC 7919 groups), loading
 * the right parameters into a bundle, and the host calls dh_set/dh_served. */
#ifndef TLSBOX_CORE_TLS_DH_H
#define TLSBOX_CORE_TLS_DH_H

#include <stdbool.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <jansson.h>
#include <sqlite3.h>
#include <tlsbox/host.h>

/* Smallest and largest prime accepted (RFC 7919 starts at 2048; 1024-bit
 * groups fall to precomputation, see Logjam). */
#define TLS_DH_MIN_BITS 2048
#define TLS_DH_MAX_BITS 8192

/* What tls_dh_check found out about a PEM. */
struct tls_dh_check {
    int bits;             /* size of the prime */
    bool safe_prime;      /* (p-1)/2 is prime too (openssl dhparam makes these) */
    char fingerprint[17]; /* SHA-256 of the PKCS#3 DER, first 16 hex digits */
};

/*
 * Check PKCS#3 parameters in @p pem: a "DH PARAMETERS" PEM that GnuTLS
 * imports, a prime of TLS_DH_MIN_BITS..TLS_DH_MAX_BITS bits that is prime
 * (probabilistic test), a generator within 2..p-2.  Returns 0 and fills @p
 * out, or -EINVAL with *err (caller frees) saying what is wrong.  Any thread;
 * a 4096-bit prime takes tens of milliseconds.
 */
int tls_dh_check(const char *pem, struct tls_dh_check *out, char **err);

/*
 * Load into @p cred what the bundle serves under @p policy and its compiled
 * @p prio.  dh_mode off: no parameters.  A policy that lists FFDHE groups:
 * the first of them (GnuTLS negotiates it for TLS 1.2 DHE as well, for every
 * client).  Otherwise the tls_dh row when dh_mode is auto and the row is
 * usable, else ffdhe2048.  *dh receives parameters the caller frees after
 * @p cred.  Returns a description (new reference): source, group, bits,
 * fingerprint (of what TLS 1.2 DHE gets), policy_min_bits, policy_groups,
 * dhe_tls12, ffdhe_tls13, tls13_groups, stored (the tls_dh row's source,
 * bits, fingerprint, set_at, or null), stored_used.  Never fails the build.
 */
json_t *tls_dh_load(sqlite3 *db, gnutls_certificate_credentials_t cred, json_t *policy,
                    gnutls_priority_t prio, gnutls_dh_params_t *dh);

/* Host call dh_set (see <tlsbox/host.h>). */
int tls_dh_set(struct tlsbox_plugin *self, const char *pem, const char *source, unsigned flags,
               char **err);
/* Host call dh_served (see <tlsbox/host.h>). */
char *tls_dh_served(struct tlsbox_plugin *self);

#endif
