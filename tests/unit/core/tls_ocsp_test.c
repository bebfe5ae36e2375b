/* The core's OCSP parts: the internal CA's responder (its DER must satisfy
 * GnuTLS and OpenSSL) and the tls_staples table the bundle loads. */
#include <errno.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <gnutls/ocsp.h>
#include <gnutls/x509.h>

#include "core/tls_ca.h"
#include "core/tls_ca_ocsp.h"
#include "core/tls_cert.h"
#include "core/tls_staple.h"
#include "tests/tap.h"
#include "tests/unit/core/tls_test_util.h"

static gnutls_x509_crt_t crt_of(const char *pem)
{
    gnutls_x509_crt_t c;
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)strlen(pem)};
    gnutls_x509_crt_init(&c);
    if (gnutls_x509_crt_import(c, &d, GNUTLS_X509_FMT_PEM) < 0)
        return NULL;
    return c;
}

static void write_file(const char *name, const void *p, size_t n)
{
    char *path = xasprintf("%s/%s", tt_dir, name);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(p, 1, n, f);
        fclose(f);
    }
    free(path);
}

static char *leaf_chain(sqlite3 *db)
{
    char *chain = NULL;
    tls_cert_chain(db, TLS_CA_LEAF_NAME, &chain);
    return chain;
}

/* The internal responder's answer, checked the way the ocsp plugin does. */
static void check_response(sqlite3 *db, time_t now, unsigned char **der_out, size_t *len_out)
{
    unsigned char *der = NULL;
    size_t len = 0;
    char *issuer = NULL, *err = NULL;
    int rc = tls_ca_ocsp_response(db, TLS_CA_LEAF_NAME, now, &der, &len, &issuer, &err);
    ok(rc == 0 && der && len > 100 && issuer, "internal CA signs an OCSP response (%d, %zu bytes)",
       rc, len);
    char *chain = leaf_chain(db);
    gnutls_x509_crt_t leaf = crt_of(chain), root = crt_of(issuer);
    gnutls_ocsp_resp_t resp;
    gnutls_ocsp_resp_init(&resp);
    gnutls_datum_t d = {der, (unsigned)len};
    ok(gnutls_ocsp_resp_import2(resp, &d, GNUTLS_X509_FMT_DER) == 0 &&
           gnutls_ocsp_resp_get_status(resp) == GNUTLS_OCSP_RESP_SUCCESSFUL,
       "GnuTLS reads it: successful");
    unsigned v = 99;
    int vr = gnutls_ocsp_resp_verify_direct(resp, root, &v, 0);
    ok(vr == 0 && v == 0, "signature verifies against the internal root (verify status %u)", v);
    ok(gnutls_ocsp_resp_check_crt(resp, 0, leaf) == 0, "CertID matches the internal leaf");
    unsigned status = 99;
    time_t tu = 0, nu = 0;
    gnutls_ocsp_resp_get_single(resp, 0, NULL, NULL, NULL, NULL, &status, &tu, &nu, NULL, NULL);
    ok(status == GNUTLS_OCSP_CERT_GOOD, "status good");
    ok(tu == now - 300, "thisUpdate five minutes before now (%lld)", (long long)(tu - now));
    ok(nu == now + TLS_CA_OCSP_VALIDITY, "nextUpdate four days on (%lld)", (long long)(nu - now));
    gnutls_ocsp_resp_deinit(resp);

    /* OpenSSL's own verdict, as a client checking the staple would. */
    write_file("resp.der", der, len);
    write_file("root.pem", issuer, strlen(issuer));
    write_file("leaf.pem", chain, strlen(chain));
    ok(tt_sh("openssl ocsp -respin resp.der -issuer root.pem -cert leaf.pem -CAfile root.pem "
             ">ossl.txt 2>&1; grep -q 'leaf.pem: good' ossl.txt && "
             "grep -q 'Response verify OK' ossl.txt") == 0,
       "openssl ocsp: Response verify OK, leaf.pem: good");
    gnutls_x509_crt_deinit(leaf);
    gnutls_x509_crt_deinit(root);
    free(chain);
    free(issuer);
    free(err);
    *der_out = der;
    *len_out = len;
}

static void check_url(sqlite3 *db)
{
    char *chain = leaf_chain(db);
    gnutls_x509_crt_t leaf = crt_of(chain);
    gnutls_datum_t uri = {NULL, 0};
    int r = gnutls_x509_crt_get_authority_info_access(leaf, 0, GNUTLS_IA_OCSP_URI, &uri, NULL);
    const char *want = "http://box.example" TLS_CA_OCSP_PATH;
    ok(r == 0 && uri.size == strlen(want) && memcmp(uri.data, want, uri.size) == 0,
       "internal leaf names its OCSP URL (%.*s)", (int)uri.size, uri.data ? (char *)uri.data : "");
    gnutls_free(uri.data);
    gnutls_x509_crt_deinit(leaf);
    free(chain);
}

/* A good answer whose nextUpdate is after the leaf expires (100-day
 * answers, a 90-day leaf), made by `openssl ocsp` with the test's own
 * root: stored, and served until the leaf expires, not after. */
static void check_outliving(sqlite3 *db, const char *leaf_pem, const char *root_pem,
                            const char *root_key, time_t not_after, time_t now)
{
    char *err = NULL;
    write_file("late_leaf.pem", leaf_pem, strlen(leaf_pem));
    write_file("late_root.pem", root_pem, strlen(root_pem));
    write_file("late_root.key", root_key, strlen(root_key));
    int sh = tt_sh("set -e; s=$(openssl x509 -in late_leaf.pem -noout -serial | cut -d= -f2)\n"
                   "printf 'V\\t%%s\\t\\t%%s\\tunknown\\t/CN=x\\n' 301231000000Z $s >late.idx\n"
                   "openssl ocsp -issuer late_root.pem -cert late_leaf.pem -no_nonce "
                   "-reqout late.req\n"
                   "openssl ocsp -index late.idx -CA late_root.pem -rsigner late_root.pem "
                   "-rkey late_root.key -reqin late.req -respout late.der -ndays 100\n"
                   "rm -f late_root.key");
    gnutls_datum_t der = {NULL, 0};
    char *path = xasprintf("%s/late.der", tt_dir);
    ok(sh == 0 && gnutls_load_file(path, &der) == 0 && der.size > 0,
       "openssl ocsp made a 100-day answer for the 90-day leaf");
    free(path);
    int rc =
        tls_staple_store(db, TLS_CA_LEAF_NAME, der.data, der.size, now + 100 * 86400, now, &err);
    ok(rc == 0, "an answer whose nextUpdate is after the leaf expires is stored (%s)",
       err ? err : "ok");
    ok(tt_int(db, "SELECT next_update FROM tls_staples") > (long long)not_after,
       "its nextUpdate, as it is, is after the leaf expires");
    is_int(tt_int(db, "SELECT serve_until FROM tls_staples"), (long long)not_after,
           "served until the leaf expires, not after");
    free(err);
    gnutls_free(der.data);
    tls_staple_store(db, TLS_CA_LEAF_NAME, NULL, 0, 0, now, &err); /* as it was */
}

static void check_staples(sqlite3 *db, const unsigned char *der, size_t len, time_t now)
{
    char *err = NULL;
    gnutls_datum_t got = {NULL, 0};
    time_t until = 0;
    int rc = tls_staple_store(db, TLS_CA_LEAF_NAME, der, len, now + 10 * 86400, now, &err);
    ok(rc == 0, "staple stored (%s)", err ? err : "ok");
    ok(tls_staple_load(db, TLS_CA_LEAF_NAME, now, &got, &until) == 0 && got.size == len &&
           memcmp(got.data, der, len) == 0,
       "the same bytes load back");
    ok(until == now + TLS_CA_OCSP_VALIDITY, "serve_until clipped to nextUpdate");
    gnutls_free(got.data);
    ok(tls_staple_load(db, TLS_CA_LEAF_NAME, until, &got, &until) == -ENOENT,
       "not loaded at serve_until: never served stale");
    free(err);
    err = NULL;

    unsigned char junk[] = {0x30, 0x03, 0x0a, 0x01, 0x03}; /* tryLater */
    rc = tls_staple_store(db, TLS_CA_LEAF_NAME, junk, sizeof(junk), now + 60, now, &err);
    ok(rc == -EINVAL && err && strstr(err, "not a successful"), "tryLater refused: %s",
       err ? err : "");
    ok(tt_int(db, "SELECT length(response) FROM tls_staples") == (long long)len,
       "the refused one changed nothing");
    free(err);
    err = NULL;
    rc = tls_staple_store(db, "nosuch", der, len, now + 60, now, &err);
    ok(rc == -ENOENT, "a staple for an unknown certificate: -ENOENT");
    free(err);
    err = NULL;
    rc = tls_staple_store(db, TLS_CA_LEAF_NAME, der, len, now + 60, now + TLS_CA_OCSP_VALIDITY,
                          &err);
    ok(rc == -EINVAL, "a response past nextUpdate is refused: %s", err ? err : "");
    free(err);
    err = NULL;

    /* A new leaf (as after a renewal) takes the old staple with it. */
    json_t *names = json_pack("[s]", "box.example");
    char *chain = NULL, *key = NULL, *ca = NULL, *ca_key = NULL;
    struct tls_cert_info info;
    tls_ca_root_load(db, &ca, &ca_key);
    tls_ca_make_leaf(ca, ca_key, names, now, 90, &chain, &key, &err);
    tls_cert_check(chain, key, now, &info, &err);
    rc = tls_cert_store(db, TLS_CA_LEAF_NAME, &info, key, "internal", NULL, NULL, "test", &err);
    ok(rc == 0 && tt_int(db, "SELECT count(*) FROM tls_staples") == 0,
       "replacing the certificate drops its staple");
    rc = tls_staple_store(db, TLS_CA_LEAF_NAME, der, len, now + 60, now, &err);
    ok(rc == -EINVAL, "the old leaf's response does not fit the new leaf: %s", err ? err : "");
    check_outliving(db, chain, ca, ca_key, info.not_after, now);
    tls_cert_info_clear(&info);
    free(err);
    free(chain);
    wipe_free_str(key);
    free(ca);
    wipe_free_str(ca_key);
    json_decref(names);
    ok(tls_staple_store(db, TLS_CA_LEAF_NAME, NULL, 0, 0, now, &err) == -ENOENT,
       "clearing an absent staple: -ENOENT");
}

int main(void)
{
    tt_tmpdir();
    gnutls_global_init();
    sqlite3 *db = tt_store("t.db");
    time_t now = time(NULL);
    json_t *names = json_pack("[s,s]", "box.example", "127.0.0.1");
    char *err = NULL;
    bool issued = false;
    int rc = tls_ca_ensure(db, "box.example", names, now, true, &issued, &err);
    ok(rc == 0 && issued, "internal CA and leaf made (%s)", err ? err : "ok");
    free(err);
    json_decref(names);
    ok(tt_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'ocsp'") == 0,
       "migration 0005 dropped the placeholder table ocsp");

    check_url(db);
    unsigned char *der = NULL;
    size_t len = 0;
    check_response(db, now, &der, &len);
    check_staples(db, der, len, now);

    /* An imported certificate (another CA) gets no response from ours. */
    err = NULL;
    unsigned char *d2 = NULL;
    size_t l2 = 0;
    ok(tls_ca_ocsp_response(db, "nosuch", now, &d2, &l2, NULL, &err) == -ENOENT,
       "no response for an unknown certificate");
    free(err);
    free(der);
    sqlite3_close(db);
    return done_testing();
}
