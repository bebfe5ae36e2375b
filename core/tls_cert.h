/* Certificates: validating a chain and its key, and the certificates table. */
#ifndef TLSBOX_CORE_TLS_CERT_H
#define TLSBOX_CORE_TLS_CERT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>
#include <sqlite3.h>

/* What tls_cert_check learned about a chain (all strings owned, free with _clear). */
struct tls_cert_info {
    char *chain_pem;  /* the chain re-exported: leaf first, duplicates dropped */
    char *key_type;   /* "ecdsa-p256", "ecdsa-p384", "rsa-2048", "ed25519" */
    char *family;     /* "ecdsa", "rsa", "ed25519" (matches policy key_types) */
    json_t *sans;     /* array of DNS names and IP addresses */
    char *subject;    /* RFC 4514 */
    char *issuer;     /* RFC 4514 */
    char *serial;     /* hex */
    char *first_name; /* first DNS SAN, else the CN, else NULL */
    time_t not_before, not_after;
    int chain_len;
};

/* Most certificates a chain may hold as given, repeats included: a leaf and
 * a few intermediates, even sent twice (fullchain.pem + chain.pem), are far
 * fewer. */
#define TLS_CERT_MAX_CHAIN 16

/*
 * Validate @p chain_pem (leaf first) and @p key_pem at time @p now: readable
 * PEM of at most TLS_CERT_MAX_CHAIN certificates, key matches the leaf, each
 * certificate issued and signed by the next, every certificate within its
 * validity, supported key (ECDSA P-256/P-384, RSA >= 2048, Ed25519), and fit
 * for a web server as browsers require: leaf EKU (if any) with serverAuth,
 * leaf not CA:TRUE (a lone self-signed one may be), leaf keyUsage (if any)
 * with digitalSignature, a DNS or IP SAN, no SHA-1 or MD5 signature on the
 * leaf or an intermediate.  0 with @p info filled, or -EINVAL with *err
 * (caller frees), a specific message naming the certificate that never
 * contains key material.
 */
int tls_cert_check(const char *chain_pem, const char *key_pem, time_t now,
                   struct tls_cert_info *info, char **err);
void tls_cert_info_clear(struct tls_cert_info *info);

/*
 * Store a checked certificate under @p name in one transaction (replacing a
 * row of that name and dropping its old OCSP staple), with an audit row.
 * @p source: "internal", "import", "acme".  0, or -EIO with *err.
 */
int tls_cert_store(sqlite3 *db, const char *name, const struct tls_cert_info *info,
                   const char *key_pem, const char *source, const char *ari_id,
                   const char *meta_json, const char *actor, char **err);

/* True when at least one certificate row exists (any status). */
bool tls_cert_any(sqlite3 *db);

/* Every certificate, without keys: [{name, sans, key_type, issuer, serial,
 * not_before, not_after, days_left, source, status, ari_id}].  New reference. */
json_t *tls_cert_list(sqlite3 *db, time_t now);

/* The chain PEM of @p name (caller frees).  0, -ENOENT, -EIO. */
int tls_cert_chain(sqlite3 *db, const char *name, char **chain_pem);

/* A valid certificate store name: 1..128 of [A-Za-z0-9._*-], not starting with '.'. */
bool tls_cert_name_ok(const char *name);

#endif
