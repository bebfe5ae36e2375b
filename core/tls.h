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
 * timers (ticket rotation, internal leaf renewal).  Returns 0 or a negative errno (logged).
 */
int tls_start(void);
/* Main thread, after the plugins stopped: drop the current bundle. */
void tls_stop(void);

struct tlsbox_bundle *tls_bundle_acquire(void);
void tls_bundle_release(struct tlsbox_bundle *b);
int tls_bundle_session_setup(const struct tlsbox_bundle *b, gnutls_session_t session);
const char *tls_bundle_hsts(const struct tlsbox_bundle *b);
int tls_bundle_session_address(const struct tlsbox_bundle *b, gnutls_session_t session, int fd);
uint64_t tls_bundle_generation(const struct tlsbox_bundle *b);
int tls_cert_install(struct tlsbox_plugin *self, const struct tlsbox_cert_install *in, char **err);
/* Host calls cert_list and cert_get (see <tlsbox/host.h>). */
char *tls_cert_list_json(struct tlsbox_plugin *self);
int tls_cert_get(struct tlsbox_plugin *self, const char *name, char **chain_pem, char **info_json);

/* Host calls staple_set and internal_ocsp (see <tlsbox/host.h>; core/tls_ocsp.c). */
int tls_staple_set(struct tlsbox_plugin *self, const char *cert_name, const void *der,
                   size_t der_len, int64_t serve_until);
int tls_internal_ocsp(struct tlsbox_plugin *self, const char *cert_name, void **der,
                      size_t *der_len, char **issuer_pem);

/* Host calls tls_alpn_challenge_put and _del (see <tlsbox/host.h>; core/tls.c). */
int tls_alpn_challenge_put(struct tlsbox_plugin *self, const char *identifier,
                           const unsigned char digest[32]);
int tls_alpn_challenge_del(struct tlsbox_plugin *self, const char *identifier);

/* tls_cert_install recording @p actor in the audit log; the stored name
 * (derived from the certificate when in->name is empty) in *name_out. */
int tls_cert_install_as(const char *actor, const struct tlsbox_cert_install *in, char **name_out,
                        char **err);
/*
 * Build a bundle from the store and publish it; on failure keep the current
 * one and log why (naming @p why, e.g. the event).  @p db may be NULL (a
 * connection is opened for the call).  Any thread but a site worker;
 * serialised.  0 or a negative errno.
 */
int tls_rebuild(sqlite3 *db, const char *why);
/* core.hostname, or the system host name when it is empty (caller frees). */
char *tls_hostname(void);

#endif
