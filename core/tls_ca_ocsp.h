/* The internal CA's OCSP responder, without network: the core signs, with
 * the internal root's key, the OCSP response for a leaf that root issued.
 * GnuTLS 3.7 reads OCSP responses but cannot write one, so the DER is built
 * here (RFC 6960 BasicOCSPResponse, responder by name, ECDSA-SHA256). */
#ifndef TLSBOX_CORE_TLS_CA_OCSP_H
#define TLSBOX_CORE_TLS_CA_OCSP_H

#include <stddef.h>
#include <time.h>

#include <gnutls/x509.h>
#include <sqlite3.h>

/* How long an internal response is valid (capped at the leaf's expiry). */
#define TLS_CA_OCSP_VALIDITY (4 * 86400)
/* Path of the OCSP URL the internal CA writes into its leaves. */
#define TLS_CA_OCSP_PATH "/.well-known/tlsbox-ocsp"

/*
 * A "good" response for certificate @p name signed by the internal root:
 * thisUpdate now - 5 min, nextUpdate min(now + TLS_CA_OCSP_VALIDITY, leaf
 * expiry).  *der (free()) and *der_len; *issuer_pem (free(); may be NULL to
 * skip) the root.  Returns 0; -ENOENT (no such certificate, or no internal
 * CA); -EINVAL when the internal root did not issue it, with *err; -EIO.
 */
int tls_ca_ocsp_response(sqlite3 *db, const char *name, time_t now, unsigned char **der,
                         size_t *der_len, char **issuer_pem, char **err);

/* The signing step alone, on imported certificates (unit tests).  0 or a
 * negative GnuTLS error. */
int tls_ca_ocsp_sign(gnutls_x509_crt_t leaf, gnutls_x509_crt_t root, gnutls_x509_privkey_t root_key,
                     time_t now, unsigned char **der, size_t *der_len);

#endif
