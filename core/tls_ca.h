/* The internal CA: an ECDSA P-256 root made on first start, and the LAN leaf
 * it issues for the box's names and addresses (certificate "internal"). */
#ifndef TLSBOX_CORE_TLS_CA_H
#define TLSBOX_CORE_TLS_CA_H

#include <stdbool.h>
#include <time.h>

#include <jansson.h>
#include <sqlite3.h>

#define TLS_CA_LEAF_NAME "internal"
#define TLS_CA_ROOT_DAYS 3650
#define TLS_CA_LEAF_DAYS 90

/* A self-signed root, valid from now - 1 h for @p days.  0 or -EIO with *err. */
int tls_ca_make_root(const char *hostname, time_t now, unsigned days, char **cert_pem,
                     char **key_pem, char **err);

/* A leaf for @p names (DNS names and IP address strings) signed by the root,
 * valid from now - 1 h for @p days, with an OCSP URL (AIA) naming the first
 * DNS name; chain = the leaf alone.  0 or -EIO. */
int tls_ca_make_leaf(const char *ca_cert_pem, const char *ca_key_pem, json_t *names, time_t now,
                     unsigned days, char **chain_pem, char **key_pem, char **err);

/* hostname, <first label>.local, localhost, 127.0.0.1, ::1 and the machine's
 * addresses (getifaddrs; no link-local).  New reference. */
json_t *tls_ca_local_names(const char *hostname);

/* The root certificate PEM (caller frees).  0, -ENOENT, -EIO. */
int tls_ca_root_pem(sqlite3 *db, char **pem);
/* The root certificate and its key (both caller frees; wipe the key). */
int tls_ca_root_load(sqlite3 *db, char **cert_pem, char **key_pem);

/*
 * Make the root when absent.  Then (re)issue the "internal" leaf when
 * @p want_leaf and it is absent, when it has less than a third of its life
 * left, or when @p names has a name it lacks.  *issued tells whether a new
 * leaf was stored.  0 or negative errno with *err.
 */
int tls_ca_ensure(sqlite3 *db, const char *hostname, json_t *names, time_t now, bool want_leaf,
                  bool *issued, char **err);

#endif
