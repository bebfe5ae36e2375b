/*
 * Certificates by the address a client connected to.  A client that connects
 * by IP address sends no server name (RFC 6066 allows no address in SNI), so
 * the address it reached is the only name it asks for: the bundle keeps, for
 * each address among its certificates' names, credentials that put the
 * certificates holding it first (tls_bundle.c), chosen by the connection's
 * local address.  These are the address helpers.  Pure functions; any thread.
 */
#ifndef TLSBOX_CORE_TLS_ADDR_H
#define TLSBOX_CORE_TLS_ADDR_H

#include <stdbool.h>
#include <stddef.h>

/* The most addresses a bundle chooses by (more are served as before: the
 * first certificate that fits). */
#define TLS_ADDR_MAX 16

/* An IPv4 (len 4) or IPv6 (len 16) address, in network order. */
struct tls_addr {
    unsigned char ip[16];
    unsigned char len;
};

/* The IP addresses in @p sans_json (a certificates.sans value: a JSON array
 * of names and addresses as inet_ntop writes them), at most @p cap into
 * @p out, each once; how many.  Not JSON, or no address: 0. */
size_t tls_addr_from_sans(const char *sans_json, struct tls_addr *out, size_t cap);

/* The local address of connected socket @p fd into @p out (an IPv4-mapped
 * IPv6 address as IPv4, as certificates name it).  0; -EAFNOSUPPORT for a
 * socket that is not IP (a socketpair); or -errno of getsockname. */
int tls_addr_local(int fd, struct tls_addr *out);

/* Whether @p a is among the @p n addresses of @p list. */
bool tls_addr_in(const struct tls_addr *a, const struct tls_addr *list, size_t n);

/* @p a as text (inet_ntop) into @p buf of @p cap bytes (46 hold any). */
const char *tls_addr_text(const struct tls_addr *a, char *buf, size_t cap);

#endif
