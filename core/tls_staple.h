/* OCSP staples the TLS bundle loads: the tls_staples table (migration 0005).
 * The ocsp plugin fetches and verifies; the core checks again what it is
 * given, keeps one staple per certificate and never serves one past its
 * serve_until (itself never past nextUpdate nor the leaf's expiry). */
#ifndef TLSBOX_CORE_TLS_STAPLE_H
#define TLSBOX_CORE_TLS_STAPLE_H

#include <stddef.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <sqlite3.h>

/*
 * Store @p der (a DER OCSPResponse) as the staple of certificate @p name, to
 * be served until @p serve_until (clipped to the response's nextUpdate and to
 * the leaf's expiry: a nextUpdate after it is allowed), or
 * delete the staple when @p der is NULL.  The response must be successful,
 * answer for the stored leaf (CertID) with status good, and have a nextUpdate
 * after @p now.  Returns 0; -ENOENT (no certificate of that name, or nothing
 * to delete); -EINVAL with *err (caller frees) and nothing written; -EIO.
 */
int tls_staple_store(sqlite3 *db, const char *name, const unsigned char *der, size_t len,
                     time_t serve_until, time_t now, char **err);

/*
 * The staple of @p name still servable at @p now: 0 with *der (gnutls_free
 * its data) and *serve_until; -ENOENT when there is none; -EIO.
 */
int tls_staple_load(sqlite3 *db, const char *name, time_t now, gnutls_datum_t *der,
                    time_t *serve_until);

#endif
