/* The TLS bundle and everything that feeds it: certificates, internal CA,
 * policy, ticket keys, session cache.  See include/tlsbox/host.h for the
 * plugin-facing semantics of each call. */
#ifndef TLSBOX_CORE_TLS_H
#define TLSBOX_CORE_TLS_H

#include <stdint.h>

#include <gnutls/gnutls.h>
#include <tlsbox/host.h>

/*
 * Main thread, after store, settings, events, jobs and timers started:
 * make the internal CA and its leaf when no certificate exists, the default
 * policy when none is stored, the ticket key; build and publish the first
 * bundle; subscribe to cert/ocsp/dh/policy.changed; register API routes and
 * timers (ticket rotation, internal leaf renewal).  Returns 0 or -1 (logged).
 */
int tls_start(void);
/* Main thread, after the plugins stopped: drop the current bundle. */
void tls_stop(void);

struct tlsbox_bundle *tls_bundle_acquire(void);
void tls_bundle_release(struct tlsbox_bundle *b);
int tls_bundle_session_setup(const struct tlsbox_bundle *b, gnutls_session_t session);
const char *tls_bundle_hsts(const struct tlsbox_bundle *b);
uint64_t tls_bundle_generation(const struct tlsbox_bundle *b);
int tls_cert_install(struct tlsbox_plugin *self, const struct tlsbox_cert_install *in, char **err);

#endif
