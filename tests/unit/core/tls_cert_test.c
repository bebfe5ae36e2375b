/* Certificate import checks (good and each kind of bad input, fixtures made
 * by certtool/openssl at test time) and the internal CA. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "core/tls_ca.h"
#include "core/tls_cert.h"
#include "tests/tap.h"
#include "tests/unit/core/tls_test_util.h"

/* certtool templates and keys; every file lands in the temp dir only. */
static const char fixtures[] =
    "set -e\n"
    "printf 'cn = Test Root\\nca\\ncert_signing_key\\nexpiration_days = 3650\\n' > ca.tmpl\n"
    "printf 'cn = Test Intermediate\\nca\\ncert_signing_key\\nexpiration_days = 1000\\n' > "
    "int.tmpl\n"
    "printf 'cn = example.test\\ndns_name = example.test\\ndns_name = www.example.test\\n"
    "ip_address = 192.0.2.7\\ntls_www_server\\nsigning_key\\nexpiration_days = 60\\n' > "
    "leaf.tmpl\n"
    "printf 'cn = old.test\\ndns_name = old.test\\ntls_www_server\\nsigning_key\\n"
    "activation_date = \"2019-01-01 00:00:00\"\\nexpiration_date = \"2020-01-01 00:00:00\"\\n' "
    "> expired.tmpl\n"
    "printf 'cn = future.test\\ndns_name = future.test\\ntls_www_server\\nsigning_key\\n"
    "activation_date = \"2090-01-01 00:00:00\"\\nexpiration_date = \"2091-01-01 00:00:00\"\\n' "
    "> future.tmpl\n"
    "gen() { certtool --generate-privkey --no-text \"$@\"; }\n"
    "gen --key-type ecdsa --curve secp256r1 --outfile ca.key\n"
    "certtool --generate-self-signed --load-privkey ca.key --template ca.tmpl --outfile ca.pem\n"
    "gen --key-type ecdsa --curve secp384r1 --outfile int.key\n"
    "certtool --generate-certificate --load-privkey int.key --load-ca-certificate ca.pem "
    "--load-ca-privkey ca.key --template int.tmpl --outfile int.pem\n"
    "issue() { certtool --generate-certificate --load-privkey $1.key --load-ca-certificate "
    "int.pem --load-ca-privkey int.key --template $2.tmpl --outfile $1.pem; }\n"
    "gen --key-type ecdsa --curve secp256r1 --outfile leaf.key; issue leaf leaf\n"
    "cat leaf.pem int.pem > fullchain.pem; cp int.pem chain.pem\n"
    "gen --key-type rsa --bits 2048 --outfile rsa.key; issue rsa leaf\n"
    "gen --key-type ed25519 --outfile ed.key; issue ed leaf\n"
    "gen --key-type ecdsa --curve secp256r1 --outfile other.key\n"
    "gen --key-type ecdsa --curve secp521r1 --outfile p521.key; issue p521 leaf\n"
    "gen --key-type rsa --bits 1024 --outfile rsa1024.key; issue rsa1024 leaf\n"
    "gen --key-type ecdsa --outfile expired.key; issue expired expired\n"
    "gen --key-type ecdsa --outfile future.key; issue future future\n"
    "cat int.pem leaf.pem > ooo.pem\n"
    "gen --key-type ecdsa --outfile ca2.key\n"
    "certtool --generate-self-signed --load-privkey ca2.key --template ca.tmpl --outfile "
    "ca2.pem\n"
    "cat leaf.pem ca2.pem > notchain.pem\n"
    "cat leaf.pem int.pem ca.pem int.pem > dup.pem\n"
    "cp leaf.pem long.pem; for i in $(seq 16); do cat int.pem >> long.pem; done\n"
    "openssl pkcs8 -topk8 -v2 aes-256-cbc -passout pass:secret -in leaf.key -out enc.key\n"
    "openssl ec -in leaf.key -out leaf-trad.key\n"
    "printf -- '-----BEGIN CERTIFICATE-----\\nbm90IGEgY2VydA==!!\\n-----END "
    "CERTIFICATE-----\\n' > garbage.pem\n"
    "cat leaf.pem leaf.key > certwithkey.pem\n"
    "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 "
    "-keyout badeku.key -out badeku.pem -subj /CN=badeku.test "
    "-addext subjectAltName=DNS:badeku.test -addext extendedKeyUsage=DER:30:03:06:01 "
    "2>/dev/null\n";

static char *F(const char *name)
{
    char *s = tt_slurp(name);
    if (!s) {
        diag("fixture %s missing", name);
        s = xstrdup("");
    }
    return s;
}

/* The base64 body line of a key: what must never appear in a message. */
static char *key_line(const char *key)
{
    const char *p = strchr(key, '\n');
    if (!p)
        return xstrdup("@@none@@");
    p++;
    const char *q = strchr(p, '\n');
    return xstrndup(p, q ? (size_t)(q - p) : strlen(p));
}

static void refuse(const char *chain_file, const char *key_file, const char *want, const char *what)
{
    char *chain = F(chain_file), *key = F(key_file), *err = NULL;
    struct tls_cert_info info;
    int r = tls_cert_check(chain, key, time(NULL), &info, &err);
    is_int(r, -EINVAL, "%s: refused", what);
    like(err, want, "%s: says why", what);
    char *kl = key_line(key);
    ok(err && strlen(kl) > 8 && !strstr(err, kl), "%s: message holds no key material", what);
    free(kl);
    free(err);
    free(chain);
    free(key);
}

static void accept(const char *chain_text, const char *key_file, const char *type, int len,
                   const char *what)
{
    char *key = F(key_file), *err = NULL;
    struct tls_cert_info info;
    int r = tls_cert_check(chain_text, key, time(NULL), &info, &err);
    is_int(r, 0, "%s: accepted", what);
    if (r < 0)
        diag("  %s", err);
    is_str(info.key_type, type, "%s: key type", what);
    is_int(info.chain_len, len, "%s: chain length", what);
    tls_cert_info_clear(&info);
    free(err);
    free(key);
}

int main(void)
{
    tt_tmpdir();
    gnutls_global_init();
    if (tt_sh("%s", fixtures) != 0) {
        char *log = tt_slurp("sh.log");
        diag("fixture generation failed:\n%s", log ? log : "");
        ok(0, "fixtures made with certtool/openssl");
        return done_testing();
    }
    ok(1, "fixtures made with certtool/openssl");

    /* Good input: certbot's layout, separate cert + chain, RSA, Ed25519. */
    char *full = F("fullchain.pem");
    accept(full, "leaf.key", "ecdsa-p256", 2, "certbot fullchain.pem + privkey.pem");
    char *leaf = F("leaf.pem"), *chain = F("chain.pem");
    char *joined = xasprintf("%s%s", leaf, chain);
    accept(joined, "leaf.key", "ecdsa-p256", 2, "cert.pem + chain.pem");
    accept(full, "leaf-trad.key", "ecdsa-p256", 2, "traditional EC key PEM");
    char *dup = F("dup.pem");
    accept(dup, "leaf.key", "ecdsa-p256", 3, "repeated intermediates dropped (fullchain + chain)");
    char *rsa = F("rsa.pem"), *ed = F("ed.pem");
    char *rsa_full = xasprintf("%s%s", rsa, chain), *ed_full = xasprintf("%s%s", ed, chain);
    accept(rsa_full, "rsa.key", "rsa-2048", 2, "RSA 2048");
    accept(ed_full, "ed.key", "ed25519", 2, "Ed25519");

    /* What it learned. */
    {
        struct tls_cert_info info;
        char *key = F("leaf.key"), *err = NULL;
        tls_cert_check(full, key, time(NULL), &info, &err);
        char *sans = json_dumps(info.sans, JSON_COMPACT);
        is_str(sans, "[\"example.test\",\"www.example.test\",\"192.0.2.7\"]", "SANs read");
        is_str(info.first_name, "example.test", "first name");
        like(info.issuer, "Test Intermediate", "issuer");
        ok(info.not_after - info.not_before > 59 * 86400, "validity read");
        ok(info.chain_pem && !strstr(info.chain_pem, "PRIVATE"), "stored chain holds no key");
        free(sans);
        tls_cert_info_clear(&info);
        free(key);
        free(err);
    }

    /* Each kind of bad input. */
    refuse("fullchain.pem", "other.key", "does not match", "key of another certificate");
    refuse("ooo.pem", "leaf.key", "out of order", "chain out of order");
    refuse("notchain.pem", "leaf.key", "does not chain", "chain not chaining");
    refuse("expired.pem", "expired.key", "expired on 2020-01-01", "expired certificate");
    refuse("future.pem", "future.key", "not yet valid", "not-yet-valid certificate");
    refuse("rsa1024.pem", "rsa1024.key", "1024 bits is too short", "RSA 1024");
    refuse("p521.pem", "p521.key", "SECP521R1 is not supported", "ECDSA P-521");
    refuse("garbage.pem", "leaf.key", "unreadable PEM", "unreadable certificate PEM");
    refuse("leaf.key", "leaf.key", "no PEM certificate", "no certificate at all");
    refuse("fullchain.pem", "enc.key", "encrypted", "encrypted key");
    refuse("fullchain.pem", "leaf.pem", "not a private key", "certificate given as key");
    refuse("certwithkey.pem", "leaf.key", "contains a private key", "key inside the chain file");
    /* 17 certificates: once taken (the repeats dropped), though thousands
     * of distinct ones kept the API thread busy for tens of seconds. */
    refuse("long.pem", "leaf.key", "17 certificates given; a chain has at most 16",
           "more certificates than a chain holds");
    /* GnuTLS imports it, then fails to read the EKU at every index: this
     * once looped for ever (the alarm fails the test instead). */
    alarm(60);
    refuse("badeku.pem", "badeku.key", "extended key usage is unreadable", "malformed EKU");
    alarm(0);

    /* Storing: one row per name, replaced in place, OCSP staple dropped. */
    sqlite3 *db = tt_store("cert.db");
    {
        struct tls_cert_info info;
        char *key = F("leaf.key"), *err = NULL;
        tls_cert_check(full, key, time(NULL), &info, &err);
        sqlite3_exec(db,
                     "INSERT INTO tls_staples (cert_name, serial, response, this_update, "
                     "next_update, serve_until, stored_at) "
                     "VALUES ('example.test', '01', x'00', 1, 2, 2, 1)",
                     NULL, NULL, NULL);
        is_int(tls_cert_store(db, "example.test", &info, key, "import", NULL, NULL, "test", &err),
               0, "stored");
        is_int(tls_cert_store(db, "example.test", &info, key, "import", NULL, NULL, "test", &err),
               0, "stored again");
        is_int(tt_int(db, "SELECT count(*) FROM certificates"), 1, "one row per name");
        is_int(tt_int(db, "SELECT count(*) FROM tls_staples"), 0, "old staple dropped");
        json_t *list = tls_cert_list(db, time(NULL));
        char *txt = json_dumps(list, JSON_COMPACT);
        ok(strstr(txt, "\"days_left\":59") || strstr(txt, "\"days_left\":60"),
           "list has days left");
        ok(!strstr(txt, "PRIVATE"), "list holds no key");
        free(txt);
        json_decref(list);
        char *pem = NULL;
        is_int(tls_cert_chain(db, "example.test", &pem), 0, "chain export");
        ok(pem && !strstr(pem, "PRIVATE") && strstr(pem, "BEGIN CERTIFICATE"),
           "export is the chain only");
        free(pem);
        is_int(tls_cert_chain(db, "nope", &pem), -ENOENT, "unknown name");
        tls_cert_info_clear(&info);
        free(key);
        free(err);
    }
    ok(tls_cert_name_ok("example.org-rsa") && !tls_cert_name_ok("../x") &&
           !tls_cert_name_ok("a b") && !tls_cert_name_ok(""),
       "name check");

    /* Internal CA: root once, leaf for the names, verifiable with certtool. */
    sqlite3 *cdb = tt_store("ca.db");
    json_t *names = tls_ca_local_names("box.example");
    char *ns = json_dumps(names, JSON_COMPACT);
    like(ns, "\"box.example\",\"box.local\",\"localhost\",\"127.0.0.1\",\"::1\"", "local names");
    free(ns);
    bool issued = false;
    char *err = NULL;
    time_t now = time(NULL);
    is_int(tls_ca_ensure(cdb, "box.example", names, now, true, &issued, &err), 0, "CA ensure");
    ok(issued, "leaf issued");
    is_int(tls_ca_ensure(cdb, "box.example", names, now, true, &issued, &err), 0, "again");
    ok(!issued, "a fresh leaf is kept");
    is_int(tt_int(cdb, "SELECT count(*) FROM internal_ca"), 1, "one root");
    is_int(tls_ca_ensure(cdb, "box.example", names, now + 61 * 86400, true, &issued, &err), 0,
           "ensure with less than a third left");
    ok(issued, "renewed when a third of the lifetime is left");
    json_array_append_new(names, json_string("new.example"));
    tls_ca_ensure(cdb, "box.example", names, now, true, &issued, &err);
    ok(issued, "reissued when a name is new");
    {
        /* A validity past 2038 (100 years): never a wrapped, already past
         * date, which a 32-bit time_t (armhf) would make of the sum. */
        char *cpem = NULL, *kpem = NULL, *cerr = NULL;
        is_int(tls_ca_make_root("box.example", now, 36500, &cpem, &kpem, &cerr), 0,
               "root valid for 100 years");
        gnutls_x509_crt_t crt;
        gnutls_x509_crt_init(&crt);
        gnutls_datum_t d = {(unsigned char *)cpem, cpem ? (unsigned)strlen(cpem) : 0};
        is_int(gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM), 0, "it parses");
        time_t na = gnutls_x509_crt_get_expiration_time(crt);
        if (sizeof(time_t) < 8)
            ok(na > now, "32-bit time_t: it ends at the last date it can name, not in the past");
        else
            ok((int64_t)na == (int64_t)now + 36500LL * 86400, "it ends 100 years from now");
        gnutls_x509_crt_deinit(crt);
        free(cpem);
        if (kpem)
            gnutls_memset(kpem, 0, strlen(kpem));
        free(kpem);
        free(cerr);
    }
    char *root = NULL, *lchain = NULL;
    is_int(tls_ca_root_pem(cdb, &root), 0, "root PEM");
    tls_cert_chain(cdb, TLS_CA_LEAF_NAME, &lchain);
    {
        char *p1 = xasprintf("%s/root.pem", tt_dir), *p2 = xasprintf("%s/ileaf.pem", tt_dir);
        FILE *a = fopen(p1, "w"), *b = fopen(p2, "w");
        fputs(root ? root : "", a);
        fputs(lchain ? lchain : "", b);
        fclose(a);
        fclose(b);
        free(p1);
        free(p2);
    }
    is_int(tt_sh("certtool --verify --load-ca-certificate root.pem --infile ileaf.pem"), 0,
           "certtool --verify: internal leaf chains to the root");
    is_int(tt_sh("openssl verify -CAfile root.pem -purpose sslserver ileaf.pem"), 0,
           "openssl verify: internal leaf is a server certificate of the root");
    is_int(tt_sh("openssl x509 -in root.pem -noout -text | grep -q 'CA:TRUE'"), 0, "root is a CA");
    is_int(tt_sh("openssl x509 -in ileaf.pem -noout -ext subjectAltName | "
                 "grep -q 'IP Address:127.0.0.1'"),
           0, "leaf has 127.0.0.1");
    is_int(tt_sh("openssl x509 -in ileaf.pem -noout -ext subjectAltName | "
                 "grep -q 'DNS:box.local'"),
           0, "leaf has <host>.local");
    is_int(tt_sh("openssl x509 -in ileaf.pem -noout -text | grep -q 'prime256v1'"), 0,
           "leaf key is P-256");
    free(root);
    free(lchain);
    free(err);
    json_decref(names);
    sqlite3_close(cdb);
    sqlite3_close(db);
    free(full);
    free(leaf);
    free(chain);
    free(joined);
    free(dup);
    free(rsa);
    free(ed);
    free(rsa_full);
    free(ed_full);
    gnutls_global_deinit();
    return done_testing();
}
