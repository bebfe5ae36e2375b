/* Fixtures for the ocsp plugin's unit tests: a temp dir where a shell
 * script (openssl) makes the CA, leaves, responses and CRLs at test time
 * (no key is committed), and readers for what it made.  Single-threaded
 * test programs only. */
#ifndef TLSBOX_PLUGINS_OCSP_TESTS_FIXTURES_H
#define TLSBOX_PLUGINS_OCSP_TESTS_FIXTURES_H

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

/* Initialise GnuTLS, make a temp dir (removed at exit) and run @p script
 * in it (sh; set -e is up to the script).  0, or -1 after printing the
 * script's log as TAP diagnostics.  (It makes no TAP check itself: each
 * test program counts its own.) */
int fx_make(const char *script);
/* Run @p script in the fixtures dir: its exit status. */
int fx_sh(const char *script);
/* The file @p name of the fixtures dir (gnutls_free data; empty if none). */
gnutls_datum_t fx_slurp(const char *name);
/* The PEM certificate @p name of the fixtures dir (caller deinits). */
gnutls_x509_crt_t fx_crt(const char *name);

#endif
