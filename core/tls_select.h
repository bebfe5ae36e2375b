/*
 * Which certificate a TLS client gets, where GnuTLS alone would pick wrong.
 * GnuTLS picks the certificate whose name equals the client's SNI exactly,
 * else the first that fits the client.  Some clients then get the
 * first certificate whatever they asked for:
 *   - one that connects by IP address: it sends no SNI (RFC 6066 allows no
 *     address there), so the address it reached is the only name it asks for;
 *   - one whose SNI only a wildcard certificate matches ("*.example.org" for
 *     "www.example.org"): GnuTLS does not match wildcards;
 *   - one that spells its SNI in another case than the certificate does
 *     ("WWW.Example.org"): GnuTLS compares names byte for byte;
 *   - one that ends its SNI with a dot ("www.example.org."): RFC 6066
 *     forbids it, some clients send it; one such dot is dropped before
 *     matching, as nginx does ("a.example.." and "." name nothing).
 * For each such address, wildcard and name whose certificates do not already
 * lead the bundle (an RSA-only client would get the first RSA certificate,
 * not the RSA one that names it), the bundle keeps credentials holding the
 * same certificates with the ones that name it first; a session is switched to them, by the local
 * address of its connection at setup and by its SNI after the ClientHello.
 * A client whose SNI names a certificate exactly still gets that one.
 *
 * A TLS 1.2 client may list in supported_groups only some of the curves of
 * the bundle's ECDSA certificates: RFC 8422 lets it use a key on those only
 * (the signature algorithm names no curve in TLS 1.2), and GnuTLS does not
 * look, so it got the first one and failed ("wrong curve").  For each such
 * set of curves, the bundle's credentials and each of the above have a
 * variant in which, among the certificates they put first and among the
 * rest, those on these curves (and those not ECDSA) come first; after the
 * ClientHello a session is switched to the variant of the credentials it
 * would use (core/tls_hello.h reads the curves).  A client listing none of
 * them keeps the bundle's order.
 *
 * Built once with a bundle and read-only after: every call but build and
 * free may run on any thread.
 */
#ifndef TLSBOX_CORE_TLS_SELECT_H
#define TLSBOX_CORE_TLS_SELECT_H

#include <stdbool.h>
#include <stddef.h>

#include <gnutls/gnutls.h>
#include <jansson.h>

#include "core/tls_addr.h"
#include "core/tls_hello.h"

/* The most wildcards chosen by (more are served as before). */
#define TLS_WILD_MAX 16
/* The most exact names chosen by when a client spells them in another case
 * (more are served as before). */
#define TLS_NAME_MAX 32
/* Proper subsets of the three TLS_CURVE_* curves. */
#define TLS_CURVE_SETS_MAX 6

/* One certificate of the bundle, in its credentials' order. */
struct tls_select_cert {
    const char *name;      /* the certificate's name in the store */
    const char *sans_json; /* its certificates.sans: DNS names and addresses */
    const char *key_type;  /* its certificates.key_type ("ecdsa-p384"), or NULL */
};

/* Load certificate @p i into @p cred (with its staple); 0 or a negative
 * errno with *err (caller frees). */
typedef int (*tls_select_load_fn)(void *arg, gnutls_certificate_credentials_t cred, size_t i,
                                  char **err);

/* Credentials that put the certificates naming one address or wildcard first. */
struct tls_select_pref {
    struct tls_addr addr; /* by address, or: */
    char *wild; /* by wildcard ("*.example.org") or by name ("www.example.org"), lower case */
    char *name; /* the certificate such a client gets */
    gnutls_certificate_credentials_t cred; /* NULL: the bundle's own serve it */
    bool shared; /* cred is an earlier name's: not freed with this (nor by_curve) */
    /* cred's variants for the sets of curves of tls_select.curve_sets (NULL:
     * cred serves as is; see tls_select_by_curve). */
    gnutls_certificate_credentials_t by_curve[TLS_CURVE_SETS_MAX];
};

struct tls_select {
    struct tls_select_pref addrs[TLS_ADDR_MAX], wilds[TLS_WILD_MAX], names[TLS_NAME_MAX];
    size_t naddrs, nwilds, nnames;
    size_t naddr_creds; /* addresses with credentials of their own */
    size_t nwild_creds; /* wildcards with credentials of their own */
    size_t nname_creds; /* names with credentials other than the bundle's */
    char **exact;       /* every certificate's DNS names but wildcards, as spelt */
    size_t nexact;
    unsigned curves; /* the TLS_CURVE_* curves of the ECDSA certificates */
    /* With more than one: its proper subsets, and the bundle's credentials'
     * variant for each (as tls_select_pref.by_curve). */
    unsigned curve_sets[TLS_CURVE_SETS_MAX];
    size_t ncurve_sets;
    gnutls_certificate_credentials_t main_by_curve[TLS_CURVE_SETS_MAX];
};

/* Fill @p s (zeroed by the caller) for the @p n certificates of @p certs,
 * making credentials by @p load (flags GNUTLS_CERTIFICATE_API_V2).  A
 * failure costs that address or wildcard only (logged): its clients get
 * the first certificate. */
void tls_select_build(struct tls_select *s, const struct tls_select_cert *certs, size_t n,
                      tls_select_load_fn load, void *arg);
/* Give every credentials of @p s the bundle's DH parameters @p dh (NULL: none). */
void tls_select_set_dh(struct tls_select *s, gnutls_dh_params_t dh);
void tls_select_free(struct tls_select *s);

/* Whether @p cred is credentials of @p s. */
bool tls_select_owns(const struct tls_select *s, const void *cred);
/* Whether a session by address may switch (so the caller may skip getsockname). */
static inline bool tls_select_by_address_needed(const struct tls_select *s)
{
    return s->naddr_creds > 0;
}
/* The credentials for a client that reached @p a, or NULL: keep the bundle's. */
gnutls_certificate_credentials_t tls_select_by_address(const struct tls_select *s,
                                                       const struct tls_addr *a);
/* Whether a session's SNI may call for other credentials: a wildcard or a
 * name whose certificates do not lead the bundle, or any of them while a session may
 * have been given an address's credentials. */
static inline bool tls_select_by_name_needed(const struct tls_select *s)
{
    return s->nwild_creds > 0 || s->nname_creds > 0 ||
           ((s->nwilds > 0 || s->nnames > 0) && s->naddr_creds > 0);
}
/* For a client that sent @p sni: NULL (keep the session's) when a
 * certificate spells it so (GnuTLS compares names byte for byte); for a name
 * a certificate spells in another case (RFC 6066: case does not matter) or
 * with one trailing dot, the credentials that put the certificates naming it
 * first; else the credentials of the wildcard it matches.  @p main stands
 * for the first certificate's. */
gnutls_certificate_credentials_t tls_select_by_name(const struct tls_select *s,
                                                    gnutls_certificate_credentials_t main,
                                                    const char *sni);
/* Whether sessions need the client's curves: certificates on more than one. */
static inline bool tls_select_by_curve_needed(const struct tls_select *s)
{
    return s->ncurve_sets > 0;
}
/* For a TLS 1.2 client that lists the TLS_CURVE_* @p curves and would get
 * credentials @p cred (the bundle's, @p main, or one of @p s's): their
 * variant that puts the certificates it can use first, each group in their
 * order, or NULL (keep @p cred: it lists all of the bundle's curves, or none
 * of them, or @p cred already puts those first). */
gnutls_certificate_credentials_t tls_select_by_curve(const struct tls_select *s,
                                                     gnutls_certificate_credentials_t main,
                                                     gnutls_certificate_credentials_t cred,
                                                     unsigned curves);
/* {"address": "certificate name", ...} and {"*.wildcard": "certificate name", ...}
 * (new references) for status. */
json_t *tls_select_describe_addresses(const struct tls_select *s);
json_t *tls_select_describe_wildcards(const struct tls_select *s);

#endif
