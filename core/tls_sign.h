/*
 * The handshake signature of an ECDSA certificate, made by OpenSSL's
 * libcrypto instead of GnuTLS's nettle.
 *
 * Why: a full TLS 1.3 handshake costs the server one signature and one key
 * exchange.  nettle's ECDSA P-256 signature takes about 1.9 x the time of
 * libcrypto's (doc/performance.md, "where the rest goes"): the largest
 * single cost of a new connection that tlsbox can choose.  libcrypto is
 * already mapped into tlsboxd (libcurl-gnutls pulls it in through libssh2),
 * so this adds no memory and no package.  GnuTLS still does all of TLS,
 * the key exchange and every other algorithm; only the signature's
 * arithmetic moves, through GnuTLS's documented external-key interface
 * (gnutls_privkey_import_ext4).
 *
 * Built only when configure finds libcrypto (HAVE_OPENSSL_SIGN); without it
 * tls_sign_key_load always answers -ENOTSUP and GnuTLS signs.
 */
#ifndef TLSBOX_CORE_TLS_SIGN_H
#define TLSBOX_CORE_TLS_SIGN_H

#include <stdint.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>

/* One ECDSA key held by libcrypto, shared by the GnuTLS keys made from it
 * (one per set of credentials that serves the certificate, and the admin
 * server's copy).  Reference counted; freed, and its scalar cleared, with
 * the last reference. */
struct tls_signer;

/*
 * Read @p key_pem (PEM, as the store keeps it) into libcrypto.  Only ECDSA
 * on P-256 is taken (libcrypto 3.0's P-384 is several times slower than
 * nettle's): -ENOTSUP for any other key (RSA, Ed25519, P-384, P-521) and
 * when built without libcrypto, -EINVAL when libcrypto
 * cannot read the key, -ENOMEM; the caller then loads the key the usual way.
 * On 0, *out holds one reference (tls_signer_unref).  Never logs or returns
 * key material.
 *
 * Thread safety: any thread.
 */
int tls_signer_load(const gnutls_datum_t *key_pem, struct tls_signer **out);

/*
 * A new GnuTLS private key whose signatures @p s makes (it takes a
 * reference on @p s, dropped when the key is freed).  0, or a negative
 * errno with *out NULL.  The key is the caller's: gnutls_privkey_deinit it,
 * or hand it to gnutls_certificate_set_key, which takes it.
 *
 * Thread safety: any thread; the keys may sign from several threads at
 * once (each signature has its own libcrypto context).
 */
int tls_signer_privkey(struct tls_signer *s, gnutls_privkey_t *out);

/* Take / drop a reference.  NULL is allowed.  Any thread. */
struct tls_signer *tls_signer_ref(struct tls_signer *s);
void tls_signer_unref(struct tls_signer *s);

/* tls_signer_load + tls_signer_privkey in one call: the key holds the only
 * reference.  The same answers as tls_signer_load. */
int tls_sign_key_load(const gnutls_datum_t *key_pem, gnutls_privkey_t *out);

/* How many signatures libcrypto has made since start (the tests check
 * that a handshake's signature was its).  Thread safety: any thread. */
uint64_t tls_sign_count(void);

#endif
