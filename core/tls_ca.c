/* The internal CA (see tls_ca.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "core/store.h"
#include "core/tls_ca.h"
#include "core/tls_ca_ocsp.h"
#include "core/tls_cert.h"
#include "core/xalloc.h"

static char *export_key(gnutls_x509_privkey_t key)
{
    gnutls_datum_t d = {NULL, 0};
    if (gnutls_x509_privkey_export2_pkcs8(key, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, &d) <
        0)
        return NULL;
    char *s = xstrndup((const char *)d.data, d.size);
    gnutls_memset(d.data, 0, d.size);
    gnutls_free(d.data);
    return s;
}

static char *export_crt(gnutls_x509_crt_t crt)
{
    gnutls_datum_t d = {NULL, 0};
    if (gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &d) < 0)
        return NULL;
    char *s = xstrndup((const char *)d.data, d.size);
    gnutls_free(d.data);
    return s;
}

static int new_key(gnutls_x509_privkey_t *key)
{
    gnutls_x509_privkey_init(key);
    return gnutls_x509_privkey_generate2(
        *key, GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0, NULL, 0);
}

/*
 * @p days after @p now.  Debian 12's armhf has a 32-bit time_t, which ends
 * on 2038-01-19: past it the sum would wrap to a date in 1901 and the box
 * would make an already expired certificate.  There the validity ends at
 * the last second a time_t can name instead (GnuTLS reads any later date
 * back as 2037-12-31 on such systems anyway).
 */
static time_t expiry_after(time_t now, unsigned days)
{
    int64_t t = (int64_t)now + (int64_t)days * 86400;
    if (sizeof(time_t) < sizeof(int64_t) && t > INT32_MAX)
        t = INT32_MAX;
    return (time_t)t;
}

/* Common fields: version, random positive serial, validity, key, subject key id. */
static int crt_base(gnutls_x509_crt_t crt, gnutls_x509_privkey_t key, time_t now, unsigned days)
{
    unsigned char serial[16], kid[64];
    size_t kid_size = sizeof(kid);
    int r;
    if ((r = gnutls_rnd(GNUTLS_RND_NONCE, serial, sizeof(serial))) < 0)
        return r;
    serial[0] &= 0x7f; /* positive */
    serial[0] |= 0x01; /* and no leading zero byte to strip */
    if ((r = gnutls_x509_crt_set_version(crt, 3)) < 0 ||
        (r = gnutls_x509_crt_set_serial(crt, serial, sizeof(serial))) < 0 ||
        (r = gnutls_x509_crt_set_activation_time(crt, now - 3600)) < 0 ||
        (r = gnutls_x509_crt_set_expiration_time(crt, expiry_after(now, days))) < 0 ||
        (r = gnutls_x509_crt_set_key(crt, key)) < 0)
        return r;
    if ((r = gnutls_x509_crt_get_key_id(crt, 0, kid, &kid_size)) < 0 ||
        (r = gnutls_x509_crt_set_subject_key_id(crt, kid, kid_size)) < 0)
        return r;
    return 0;
}

int tls_ca_make_root(const char *hostname, time_t now, unsigned days, char **cert_pem,
                     char **key_pem, char **err)
{
    gnutls_x509_privkey_t key = NULL;
    gnutls_x509_crt_t crt = NULL;
    int r;
    *cert_pem = *key_pem = NULL;
    char *cn = xasprintf("tlsbox local CA (%s)", hostname && *hostname ? hostname : "tlsbox");
    if ((r = new_key(&key)) < 0)
        goto fail;
    gnutls_x509_crt_init(&crt);
    if ((r = crt_base(crt, key, now, days)) < 0)
        goto fail;
    if ((r = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
                                           (unsigned)strlen(cn))) < 0 ||
        (r = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_ORGANIZATION_NAME, 0, "tlsbox",
                                           6)) < 0 ||
        (r = gnutls_x509_crt_set_basic_constraints(crt, 1, 0)) < 0 ||
        (r = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_KEY_CERT_SIGN | GNUTLS_KEY_CRL_SIGN)) <
            0 ||
        (r = gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0)) < 0)
        goto fail;
    *cert_pem = export_crt(crt);
    *key_pem = export_key(key);
    if (!*cert_pem || !*key_pem) {
        r = GNUTLS_E_INTERNAL_ERROR;
        goto fail;
    }
    r = 0;
    goto out;
fail:
    *err = xasprintf("internal CA: cannot make the root: %s", gnutls_strerror(r));
    free(*cert_pem);
    wipe_free_str(*key_pem);
    *cert_pem = *key_pem = NULL;
    r = -EIO;
out:
    free(cn);
    if (crt)
        gnutls_x509_crt_deinit(crt);
    if (key)
        gnutls_x509_privkey_deinit(key);
    return r;
}

static int import_ca(const char *cert_pem, const char *key_pem, gnutls_x509_crt_t *crt,
                     gnutls_x509_privkey_t *key)
{
    gnutls_datum_t c = {(unsigned char *)cert_pem, (unsigned)strlen(cert_pem)};
    gnutls_datum_t k = {(unsigned char *)key_pem, (unsigned)strlen(key_pem)};
    int r;
    gnutls_x509_crt_init(crt);
    gnutls_x509_privkey_init(key);
    if ((r = gnutls_x509_crt_import(*crt, &c, GNUTLS_X509_FMT_PEM)) < 0)
        return r;
    return gnutls_x509_privkey_import2(*key, &k, GNUTLS_X509_FMT_PEM, NULL, 0);
}

/* The AIA OCSP URL: the core answers for its leaves itself (the ocsp plugin
 * asks it, no network), but clients and tools expect the extension. */
static int set_ocsp_url(gnutls_x509_crt_t crt, const char *host)
{
    char *url = xasprintf("http://%s" TLS_CA_OCSP_PATH, host);
    gnutls_datum_t d = {(unsigned char *)url, (unsigned)strlen(url)};
    int r = gnutls_x509_crt_set_authority_info_access(crt, GNUTLS_IA_OCSP_URI, &d);
    free(url);
    return r;
}

int tls_ca_make_leaf(const char *ca_cert_pem, const char *ca_key_pem, json_t *names, time_t now,
                     unsigned days, char **chain_pem, char **key_pem, char **err)
{
    gnutls_x509_crt_t ca = NULL, crt = NULL;
    gnutls_x509_privkey_t ca_key = NULL, key = NULL;
    unsigned char akid[64];
    size_t akid_size = sizeof(akid);
    const char *cn = NULL;
    int r;
    *chain_pem = *key_pem = NULL;

    if ((r = import_ca(ca_cert_pem, ca_key_pem, &ca, &ca_key)) < 0)
        goto fail;
    if ((r = new_key(&key)) < 0)
        goto fail;
    gnutls_x509_crt_init(&crt);
    if ((r = crt_base(crt, key, now, days)) < 0)
        goto fail;
    size_t i;
    json_t *e;
    json_array_foreach(names, i, e)
    {
        const char *s = json_string_value(e);
        unsigned char ip[16];
        if (!s)
            continue;
        if (inet_pton(AF_INET, s, ip) == 1)
            r = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 4,
                                                     GNUTLS_FSAN_APPEND);
        else if (inet_pton(AF_INET6, s, ip) == 1)
            r = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, 16,
                                                     GNUTLS_FSAN_APPEND);
        else {
            if (!cn)
                cn = s;
            r = gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, s,
                                                     (unsigned)strlen(s), GNUTLS_FSAN_APPEND);
        }
        if (r < 0)
            goto fail;
    }
    if (!cn)
        cn = "localhost";
    if ((r = gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, cn,
                                           (unsigned)strlen(cn))) < 0 ||
        (r = gnutls_x509_crt_set_basic_constraints(crt, 0, -1)) < 0 ||
        (r = gnutls_x509_crt_set_key_usage(crt, GNUTLS_KEY_DIGITAL_SIGNATURE)) < 0 ||
        (r = gnutls_x509_crt_set_key_purpose_oid(crt, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0 ||
        (r = set_ocsp_url(crt, cn)) < 0)
        goto fail;
    if (gnutls_x509_crt_get_subject_key_id(ca, akid, &akid_size, NULL) >= 0 &&
        (r = gnutls_x509_crt_set_authority_key_id(crt, akid, akid_size)) < 0)
        goto fail;
    if ((r = gnutls_x509_crt_sign2(crt, ca, ca_key, GNUTLS_DIG_SHA256, 0)) < 0)
        goto fail;
    *chain_pem = export_crt(crt);
    *key_pem = export_key(key);
    if (!*chain_pem || !*key_pem) {
        r = GNUTLS_E_INTERNAL_ERROR;
        goto fail;
    }
    r = 0;
    goto out;
fail:
    *err = xasprintf("internal CA: cannot issue the leaf: %s", gnutls_strerror(r));
    free(*chain_pem);
    wipe_free_str(*key_pem);
    *chain_pem = *key_pem = NULL;
    r = -EIO;
out:
    if (ca)
        gnutls_x509_crt_deinit(ca);
    if (crt)
        gnutls_x509_crt_deinit(crt);
    if (ca_key)
        gnutls_x509_privkey_deinit(ca_key);
    if (key)
        gnutls_x509_privkey_deinit(key);
    return r;
}

static void add_name(json_t *a, const char *s)
{
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) if (strcasecmp(json_string_value(e), s) == 0) return;
    json_array_append_new(a, json_string(s));
}

json_t *tls_ca_local_names(const char *hostname)
{
    json_t *a = json_array();
    if (hostname && *hostname) {
        add_name(a, hostname);
        char *label = xstrdup(hostname);
        char *dot = strchr(label, '.');
        if (dot)
            *dot = 0;
        if (strcasecmp(label, "localhost") != 0) {
            char *local = xasprintf("%s.local", label);
            add_name(a, local);
            free(local);
        }
        free(label);
    }
    add_name(a, "localhost");
    add_name(a, "127.0.0.1");
    add_name(a, "::1");
    struct ifaddrs *ifa = NULL;
    if (getifaddrs(&ifa) == 0) {
        for (struct ifaddrs *p = ifa; p; p = p->ifa_next) {
            char ip[INET6_ADDRSTRLEN];
            if (!p->ifa_addr || !(p->ifa_flags & IFF_UP))
                continue;
            if (p->ifa_addr->sa_family == AF_INET) {
                const struct sockaddr_in *s = (const struct sockaddr_in *)p->ifa_addr;
                if (inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip)))
                    add_name(a, ip);
            } else if (p->ifa_addr->sa_family == AF_INET6) {
                const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)p->ifa_addr;
                /* Link-local addresses need a zone id that a URL cannot carry well. */
                if (IN6_IS_ADDR_LINKLOCAL(&s->sin6_addr))
                    continue;
                if (inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip)))
                    add_name(a, ip);
            }
        }
        freeifaddrs(ifa);
    }
    return a;
}

static int load_root(sqlite3 *db, char **cert_pem, char **key_pem)
{
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    *cert_pem = NULL;
    if (key_pem)
        *key_pem = NULL;
    if (sqlite3_prepare_v2(db, "SELECT cert_pem, key_pem FROM internal_ca WHERE id = 1", -1, &st,
                           NULL) != SQLITE_OK)
        goto out;
    int s = store_step_row(st);
    if (s < 0) {
        rc = s;
        goto out;
    }
    *cert_pem = xstrdup((const char *)sqlite3_column_text(st, 0));
    if (key_pem)
        *key_pem = xstrndup(sqlite3_column_blob(st, 1), (size_t)sqlite3_column_bytes(st, 1));
    rc = 0;
out:
    sqlite3_finalize(st);
    return rc;
}

int tls_ca_root_pem(sqlite3 *db, char **pem)
{
    return load_root(db, pem, NULL);
}

int tls_ca_root_load(sqlite3 *db, char **cert_pem, char **key_pem)
{
    return load_root(db, cert_pem, key_pem);
}

/* Leaf state: 1 = needs (re)issue, 0 = fine, -1 = absent. */
static int leaf_state(sqlite3 *db, json_t *names, time_t now)
{
    sqlite3_stmt *st = NULL;
    int state = -1;
    if (sqlite3_prepare_v2(db,
                           "SELECT sans, not_before, not_after, source FROM certificates "
                           "WHERE name = ?",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_text(st, 1, TLS_CA_LEAF_NAME, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW)
        goto out;
    if (strcmp((const char *)sqlite3_column_text(st, 3), "internal") != 0) {
        state = 0; /* someone imported under that name: not ours to renew */
        goto out;
    }
    int64_t nb = sqlite3_column_int64(st, 1), na = sqlite3_column_int64(st, 2);
    state = (na - (int64_t)now) * 3 < (na - nb) ? 1 : 0;
    json_t *sans = json_loads((const char *)sqlite3_column_text(st, 0), 0, NULL);
    size_t i;
    json_t *e;
    json_array_foreach(names, i, e)
    {
        bool found = false;
        size_t j;
        json_t *f;
        json_array_foreach(sans, j, f) if (json_equal(e, f)) found = true;
        if (!found)
            state = 1;
    }
    json_decref(sans);
out:
    sqlite3_finalize(st);
    return state;
}

int tls_ca_ensure(sqlite3 *db, const char *hostname, json_t *names, time_t now, bool want_leaf,
                  bool *issued, char **err)
{
    char *ca_cert = NULL, *ca_key = NULL, *chain = NULL, *key = NULL;
    struct tls_cert_info info;
    sqlite3_stmt *st = NULL;
    int rc;

    memset(&info, 0, sizeof(info));
    *issued = false;
    *err = NULL;
    rc = load_root(db, &ca_cert, &ca_key);
    if (rc == -ENOENT) {
        if ((rc = tls_ca_make_root(hostname, now, TLS_CA_ROOT_DAYS, &ca_cert, &ca_key, err)) < 0)
            goto out;
        rc = -EIO;
        if (sqlite3_prepare_v2(db,
                               "INSERT INTO internal_ca (id, cert_pem, key_pem, created_at) "
                               "VALUES (1, ?, ?, ?)",
                               -1, &st, NULL) != SQLITE_OK)
            goto dberr;
        sqlite3_bind_text(st, 1, ca_cert, -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 2, ca_key, (int)strlen(ca_key), SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)now);
        if (sqlite3_step(st) != SQLITE_DONE)
            goto dberr;
        store_audit(db, "system", "ca.create", "internal_ca", "ECDSA P-256 root");
    } else if (rc < 0) {
        goto dberr;
    }
    int state = leaf_state(db, names, now);
    if (state == 0 || (state < 0 && !want_leaf)) {
        rc = 0;
        goto out;
    }
    if ((rc = tls_ca_make_leaf(ca_cert, ca_key, names, now, TLS_CA_LEAF_DAYS, &chain, &key, err)) <
        0)
        goto out;
    /* The same checks as any import: a leaf we cannot serve is never stored. */
    if ((rc = tls_cert_check(chain, key, now, &info, err)) < 0)
        goto out;
    if ((rc = tls_cert_store(db, TLS_CA_LEAF_NAME, &info, key, "internal", NULL, NULL, "system",
                             err)) < 0)
        goto out;
    *issued = true;
    rc = 0;
    goto out;
dberr:
    *err = xasprintf("internal CA: store: %s", sqlite3_errmsg(db));
    rc = -EIO;
out:
    sqlite3_finalize(st);
    tls_cert_info_clear(&info);
    free(ca_cert);
    wipe_free_str(ca_key);
    free(chain);
    wipe_free_str(key);
    return rc;
}
