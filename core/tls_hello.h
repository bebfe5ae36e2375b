/*
 * What a ClientHello says that GnuTLS does not tell a server: the ECDSA
 * curves of its supported_groups extension.  In TLS 1.2 a signature
 * algorithm names no curve, and RFC 8422 section 5.1 lets the server use an
 * ECDSA key only on a curve the client lists there; GnuTLS picks a
 * certificate without looking (a client that lists P-384 alone got a P-256
 * certificate and failed the handshake: OpenSSL's "wrong curve").
 *
 * A ClientHello handshake hook reads the extension (tls_hello_note); the
 * certificate choice, later in the same gnutls_handshake() call on the same
 * thread (post-ClientHello callback or certificate callback), asks for it
 * (tls_hello_curves).  GnuTLS keeps no pointer of ours per session (the
 * session pointer is the caller's), so the note is per thread, for the
 * session that made it.
 */
#ifndef TLSBOX_CORE_TLS_HELLO_H
#define TLSBOX_CORE_TLS_HELLO_H

#include <stddef.h>

#include <gnutls/gnutls.h>

/* The curves, as bits of a mask. */
#define TLS_CURVE_P256 1u
#define TLS_CURVE_P384 2u
#define TLS_CURVE_P521 4u

/* The TLS_CURVE_* bits of @p curve, 0 for any other. */
unsigned tls_hello_curve_bit(gnutls_ecc_curve_t curve);

/*
 * The ECDSA curves a ClientHello body (@p msg, @p n bytes, as a GnuTLS
 * handshake hook gets it) lists in supported_groups, as TLS_CURVE_* bits
 * into *curves (0: it lists none of them, e.g. X25519 only).  0, -ENOENT
 * when it sent no such extension (any curve will do), -EINVAL when the
 * message does not parse.
 */
int tls_hello_groups(const unsigned char *msg, size_t n, unsigned *curves);

/* A GnuTLS handshake hook for GNUTLS_HANDSHAKE_CLIENT_HELLO, GNUTLS_HOOK_PRE:
 * notes the curves of the ClientHello for @p session on this thread. */
int tls_hello_note(gnutls_session_t session, unsigned htype, unsigned when, unsigned incoming,
                   const gnutls_datum_t *msg);

/*
 * For the certificate choice of @p session: 0 with the curves its TLS 1.2
 * client lists (TLS_CURVE_* bits, possibly 0), or -ENOENT when any curve
 * will do: TLS 1.3 (its ECDSA signature algorithms name the curve), no
 * supported_groups, or no note of this session's ClientHello on this thread.
 */
int tls_hello_curves(gnutls_session_t session, unsigned *curves);

#endif
