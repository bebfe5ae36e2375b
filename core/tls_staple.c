/* OCSP staples the TLS bundle loads (see tls_staple.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/ocsp.h>
#include <gnutls/x509.h>

#include "core/store.h"
#include "core/tls_cert.h"
#include "core/tls_staple.h"
#include "core/xalloc.h"

/* The leaf of @p name and its hex serial.  0, -ENOENT, -EIO. */
static int staple_leaf(sqlite3 *db, const char *name, gnutls_x509_crt_t *leaf, char **serial)
{
    char *chain = NULL;
    int rc = tls_cert_chain(db, name, &chain);
    if (rc < 0)
        return rc;
    gnutls_datum_t d = {(unsigned char *)chain, (unsigned)strlen(chain)};
    gnutls_x509_crt_init(leaf);
    rc = gnutls_x509_crt_import(*leaf, &d, GNUTLS_X509_FMT_PEM) < 0 ? -EIO : 0;
    free(chain);
    if (rc == 0) {
        unsigned char buf[64];
        size_t n = sizeof(buf);
        if (gnutls_x509_crt_get_serial(*leaf, buf, &n) < 0)
            return -EIO;
        *serial = xmalloc(n * 2 + 1);
        for (size_t i = 0; i < n; i++)
            snprintf(*serial + 2 * i, 3, "%02x", buf[i]);
    }
    return rc;
}

/* Check @p der answers "good" for @p leaf, first, and is fresh at @p now. */
static int staple_check(const unsigned char *der, size_t len, gnutls_x509_crt_t leaf, time_t now,
                        time_t *this_update, time_t *next_update, char **err)
{
    gnutls_ocsp_resp_t resp = NULL;
    gnutls_datum_t d = {(unsigned char *)der, (unsigned)len};
    int rc = -EINVAL;
    gnutls_ocsp_resp_init(&resp);
    if (gnutls_ocsp_resp_import2(resp, &d, GNUTLS_X509_FMT_DER) < 0 ||
        gnutls_ocsp_resp_get_status(resp) != GNUTLS_OCSP_RESP_SUCCESSFUL) {
        *err = xstrdup("not a successful OCSP response");
        goto out;
    }
    /* Only the first SingleResponse: GnuTLS staples a response only when
     * that one is for the certificate (and judges its times by it), and
     * drops any other when the bundle loads it. */
    unsigned status = 0;
    time_t revoked_at;
    if (gnutls_ocsp_resp_get_single(resp, 0, NULL, NULL, NULL, NULL, &status, this_update,
                                    next_update, &revoked_at, NULL) < 0 ||
        gnutls_ocsp_resp_check_crt(resp, 0, leaf) != 0) {
        *err = xstrdup("the OCSP response's first answer is not for this certificate (only "
                       "such a response can be stapled)");
    } else if (status != GNUTLS_OCSP_CERT_GOOD) {
        *err = xstrdup("the OCSP response does not say good");
    } else if (*next_update == (time_t)-1 || *next_update <= now) {
        *err = xstrdup("the OCSP response has no nextUpdate or is past it");
    } else {
        rc = 0;
    }
out:
    gnutls_ocsp_resp_deinit(resp);
    return rc;
}

static int staple_delete(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    if (sqlite3_prepare_v2(db, "DELETE FROM tls_staples WHERE cert_name = ?", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_DONE)
            rc = sqlite3_changes(db) > 0 ? 0 : -ENOENT;
    }
    sqlite3_finalize(st);
    return rc;
}

int tls_staple_store(sqlite3 *db, const char *name, const unsigned char *der, size_t len,
                     time_t serve_until, time_t now, char **err)
{
    gnutls_x509_crt_t leaf = NULL;
    char *serial = NULL;
    sqlite3_stmt *st = NULL;
    time_t tu = 0, nu = 0;
    int rc;

    *err = NULL;
    if (!der)
        return staple_delete(db, name);
    if ((rc = staple_leaf(db, name, &leaf, &serial)) < 0)
        goto out;
    if ((rc = staple_check(der, len, leaf, now, &tu, &nu, err)) < 0)
        goto out;
    /* Never past the answer's nextUpdate, nor past the leaf's expiry: an
     * answer may hold longer than its certificate, a staple must not. */
    time_t not_after = gnutls_x509_crt_get_expiration_time(leaf);
    if (serve_until > nu)
        serve_until = nu;
    if (not_after != (time_t)-1 && serve_until > not_after)
        serve_until = not_after;
    if (serve_until <= now) {
        *err = xstrdup("the OCSP response would be served for no time at all");
        rc = -EINVAL;
        goto out;
    }
    rc = -EIO;
    if (sqlite3_prepare_v2(db,
                           "INSERT OR REPLACE INTO tls_staples (cert_name, serial, response, "
                           "this_update, next_update, serve_until, stored_at) "
                           "VALUES (?, ?, ?, ?, ?, ?, ?)",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, serial, -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 3, der, (int)len, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)tu);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)nu);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)serve_until);
    sqlite3_bind_int64(st, 7, (sqlite3_int64)now);
    if (sqlite3_step(st) == SQLITE_DONE)
        rc = 0;
out:
    if (rc == -EIO && !*err)
        *err = xasprintf("store: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    if (leaf)
        gnutls_x509_crt_deinit(leaf);
    free(serial);
    return rc;
}

int tls_staple_load(sqlite3 *db, const char *name, time_t now, gnutls_datum_t *der,
                    time_t *serve_until)
{
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    der->data = NULL;
    der->size = 0;
    /* The serial check guards a staple against a certificate replaced
     * without going through tls_cert_store. */
    if (sqlite3_prepare_v2(db,
                           "SELECT s.response, s.serve_until FROM tls_staples s "
                           "JOIN certificates c ON c.name = s.cert_name AND c.serial = s.serial "
                           "WHERE s.cert_name = ? AND s.serve_until > ?",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (sqlite3_int64)now);
    if ((rc = store_step_row(st)) < 0)
        goto out;
    int n = sqlite3_column_bytes(st, 0);
    der->data = gnutls_malloc((size_t)n ? (size_t)n : 1);
    memcpy(der->data, sqlite3_column_blob(st, 0), (size_t)n);
    der->size = (unsigned)n;
    *serve_until = (time_t)sqlite3_column_int64(st, 1);
out:
    sqlite3_finalize(st);
    return rc;
}
