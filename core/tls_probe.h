/* Which client families a TLS policy lets in, answered by GnuTLS itself: for
 * each family, a real handshake in memory between a client session that
 * offers what that client offers and a server session with the candidate
 * priority string and the box's certificates. */
#ifndef TLSBOX_CORE_TLS_PROBE_H
#define TLSBOX_CORE_TLS_PROBE_H

#include <gnutls/gnutls.h>
#include <jansson.h>

/*
 * Handshake every client family against a server using priority string
 * @p server_prio and credentials @p cred (borrowed; read only, so the live
 * bundle's may be used while connections use it).  Returns a new array, one
 * object per family:
 *   {"family", "clients", "offers", "ok": true, "protocol", "cipher", "kx",
 *    "group", "sigalg"}
 *   {"family", "clients", "offers", "ok": false, "error", "error_code",
 *    "side"}
 * where "error" is GnuTLS' message (and "error_code" its name) of the side
 * ("server" or "client") that failed first.  The same priority string and
 * credentials always give the same answer (no timings in it: the audit
 * compares the preview before and after a POST).  No key material is ever
 * part of the answer.  Each handshake is bounded in rounds.  NULL with *err
 * (caller frees) only when the server priority string does not initialise
 * or a socket pair cannot be made.  Any thread.
 */
json_t *tls_probe_families(const char *server_prio, gnutls_certificate_credentials_t cred,
                           char **err);

/*
 * Whether any client at all can complete a handshake with a server using
 * @p server_prio and @p cred: one client offering every version, cipher,
 * MAC, key exchange, group and signature algorithm GnuTLS has.  0, or
 * -EINVAL with *err (caller frees) giving GnuTLS' reason and the side that
 * failed.  Any thread.
 */
int tls_probe_any(const char *server_prio, gnutls_certificate_credentials_t cred, char **err);

#endif
