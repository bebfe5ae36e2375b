/* Building and publishing the TLS bundle (the acquire/release side is in
 * core/tls.h and host.h).  A bundle is immutable once built; the current one
 * sits behind one atomic pointer and is reference-counted. */
#ifndef TLSBOX_CORE_TLS_BUNDLE_H
#define TLSBOX_CORE_TLS_BUNDLE_H

#include <stdint.h>
#include <time.h>

#include <jansson.h>
#include <sqlite3.h>

#include "core/tls.h"
#include "core/tls_session_cache.h"

/*
 * Build a bundle from the store at time @p now: active policy compiled to a
 * priority cache, every active certificate allowed by the policy's key_types
 * (others before the internal one; within each, ECDSA, then Ed25519, then
 * RSA), OCSP staples not yet past nextUpdate, DH parameters per dh_mode
 * (core/tls_dh.h),
 * ticket keys, HSTS.  @p cache (may be NULL) serves TLS 1.2 session ids.
 * Returns 0 with *out holding one reference, or a negative errno with *err.
 */
int tls_bundle_build(sqlite3 *db, time_t now, struct tls_session_cache *cache,
                     struct tlsbox_bundle **out, char **err);

/* Make @p b (its reference is taken over) the current bundle; the previous
 * one is released and freed once its last connection releases it.
 * @p b NULL clears the current bundle.  One publisher at a time (tls.c
 * holds its rebuild lock); acquire and release run on any thread. */
void tls_bundle_publish(struct tlsbox_bundle *b);

/* For status and tests: {generation, certificates, priority, policy_id,
 * tickets, hsts, dh, tls_alpn_challenges, certificates_by_address,
 * certificates_by_wildcard}.  New reference. */
json_t *tls_bundle_describe(const struct tlsbox_bundle *b);

/* The bundle's credentials (every certificate, in preference order), borrowed
 * for as long as the caller holds its reference on @p b (admin server). */
gnutls_certificate_credentials_t tls_bundle_credentials(const struct tlsbox_bundle *b);
/* A new private key for certificate @p idx of tls_bundle_credentials(b)
 * (the admin server serves the same certificates): a GnuTLS copy, or one
 * more handle on libcrypto's (core/tls_sign.h).  0, or -ENOENT (no such
 * certificate) / -ENOMEM with *out NULL.  The key is the caller's and
 * outlives @p b.  Any thread, while the caller holds @p b. */
int tls_bundle_privkey(const struct tlsbox_bundle *b, unsigned idx, gnutls_privkey_t *out);
/* The bundle's compiled TLS policy, borrowed like tls_bundle_credentials
 * (the tls-alpn-01 validation certificate's key type follows it). */
gnutls_priority_t tls_bundle_priority(const struct tlsbox_bundle *b);
/* What the bundle serves for Diffie-Hellman (see tls_dh_load), as JSON text
 * with "bundle": generation; borrowed for the reference's life.  Any thread. */
const char *tls_bundle_dh_text(const struct tlsbox_bundle *b);
/** Why the stored policy was refused and the default serves instead, or
 *  NULL; owned by @p b (valid while the caller holds it). */
const char *tls_bundle_policy_refused(const struct tlsbox_bundle *b);
/** The stored policy version @p b was built from. */
int64_t tls_bundle_policy_id(const struct tlsbox_bundle *b);
/* The earliest moment a staple in @p b must stop being served (0: no staple). */
time_t tls_bundle_staple_until(const struct tlsbox_bundle *b);

/* Number of bundles built and not yet freed (tests, leak checks). */
long tls_bundle_live(void);

#endif
