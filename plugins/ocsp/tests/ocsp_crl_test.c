/* The ocsp plugin's CRL check against CRLs made by the real `openssl ca
 * -gencrl` (fixtures made at test time in a temp dir; no key is
 * committed): the distribution point read from a leaf, a listed and an
 * unlisted serial, CRLs signed with RSA (PKCS#1 v1.5 and RSA-PSS with
 * each hash), and every refusal: another CA, a forged signature, another
 * shard, partial scopes, a delta, an unknown critical extension, PSS
 * parameters GnuTLS cannot check, stale or future times, garbage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>

#include "plugins/ocsp/ocsp.h"
#include "plugins/ocsp/ocsp_der.h"
#include "plugins/ocsp/tests/ocsp_fixtures.h"
#include "tests/tap.h"

/* The distribution point the leaf names. */
#define URL "http://127.0.0.1:9/1.crl"

/* A root, an intermediate that issues the leaves and signs the CRLs, a
 * rogue CA with the intermediate's name, and one CRL per case. */
static const char fixtures[] =
    "set -e\n"
    "ec() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out $1.key; }\n"
    "ec root; ec inter; ec leaf; ec other; ec rogue; ec bare; ec nocrl\n"
    "ca() { openssl req -x509 -new -key $1.key -subj /CN=$2 -days 30 -out $1.pem "
    "  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign; }\n"
    "ca root Root; ca rogue Inter\n"
    "openssl req -x509 -new -key nocrl.key -subj /CN=NoCRL -days 30 -out nocrl.pem "
    "  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign\n"
    "printf 'basicConstraints=critical,CA:TRUE\\nkeyUsage=critical,keyCertSign,cRLSign\\n' "
    ">ca.ext\n"
    "openssl req -new -key inter.key -subj /CN=Inter | openssl x509 -req -CA root.pem "
    "  -CAkey root.key -CAcreateserial -days 30 -extfile ca.ext -out inter.pem\n"
    "printf 'crlDistributionPoints=URI:" URL "\\nbasicConstraints=CA:FALSE\\n' >leaf.ext\n"
    "printf 'crlDistributionPoints=URI:ldap://x/cn=crl,URI:https://127.0.0.1:9/2.crl\\n' "
    "  >other.ext\n"
    "printf 'basicConstraints=CA:FALSE\\n' >bare.ext\n"
    "leaf() { openssl req -new -key $1.key -subj /CN=$1 | openssl x509 -req -CA inter.pem "
    "  -CAkey inter.key -CAcreateserial -days 20 -extfile $1.ext -out $1.pem; }\n"
    "leaf leaf; leaf other; leaf bare\n"
    /* An RSA intermediate and its leaf, for CRLs signed with RSA */
    "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out rinter.key\n"
    "openssl req -new -key rinter.key -subj /CN=RInter | openssl x509 -req -CA root.pem "
    "  -CAkey root.key -CAcreateserial -days 30 -extfile ca.ext -out rinter.pem\n"
    "openssl req -new -key leaf.key -subj /CN=rleaf | openssl x509 -req -CA rinter.pem "
    "  -CAkey rinter.key -CAcreateserial -days 20 -extfile leaf.ext -out rleaf.pem\n"
    "cat >ca.cnf <<'EOF'\n"
    "[ca]\n"
    "default_ca = d\n"
    "[d]\n"
    "database = crl.idx\n"
    "crlnumber = crlnum\n"
    "default_md = sha256\n"
    "default_crl_days = 7\n"
    "[plain]\n"
    "authorityKeyIdentifier = keyid:always\n"
    "[idp]\n"
    "issuingDistributionPoint = critical, @idp_this\n"
    "[idp_this]\n"
    "fullname = URI:" URL "\n"
    "onlyuser = TRUE\n"
    "[shard]\n"
    "issuingDistributionPoint = critical, @idp_other\n"
    "[idp_other]\n"
    "fullname = URI:http://127.0.0.1:9/2.crl\n"
    "[reasons]\n"
    "issuingDistributionPoint = critical, @idp_reasons\n"
    "[idp_reasons]\n"
    "fullname = URI:" URL "\n"
    "onlysomereasons = keyCompromise\n"
    "[indirect]\n"
    "issuingDistributionPoint = critical, @idp_ind\n"
    "[idp_ind]\n"
    "fullname = URI:" URL "\n"
    "indirectCRL = TRUE\n"
    "[onlyca]\n"
    "issuingDistributionPoint = critical, @idp_ca\n"
    "[idp_ca]\n"
    "onlyCA = TRUE\n"
    "[delta]\n"
    "2.5.29.27 = critical, DER:02:01:01\n"
    "[unknown]\n"
    "1.2.3.4 = critical, DER:05:00\n"
    "EOF\n"
    ": >crl.idx; echo 01 >crlnum\n"
    "g() { openssl ca -config ca.cnf -gencrl -keyfile $3.key -cert $3.pem -crlexts $1 "
    "  -out $2.pem $4; openssl crl -in $2.pem -outform DER -out $2.der; }\n"
    "g plain good inter; g idp idp inter; g shard shard inter; g reasons reasons inter\n"
    "g indirect indirect inter; g onlyca onlyca inter; g delta delta inter\n"
    "g unknown unknown inter; g plain root root; g plain rogue rogue\n"
    "g plain byleaf other; g plain nocrlsig nocrl\n"
    /* RSA-PSS CRLs: their hash is in the algorithm's parameters */
    "pss() { g plain $1 rinter \"-md $2 -sigopt rsa_padding_mode:pss $3\"; }\n"
    "g plain rsa384 rinter '-md sha384'\n"
    "pss pss256 sha256 '-sigopt rsa_pss_saltlen:digest'\n"
    "pss pss384 sha384 '-sigopt rsa_pss_saltlen:digest'\n"
    "pss pss512 sha512 '-sigopt rsa_pss_saltlen:digest'\n"
    "pss psssalt sha384 '-sigopt rsa_pss_saltlen:max'\n"
    "pss pssmgf sha384 '-sigopt rsa_pss_saltlen:digest -sigopt rsa_mgf1_md:sha256'\n"
    "openssl ca -config ca.cnf -revoke leaf.pem -keyfile inter.key -cert inter.pem "
    "  -crl_reason keyCompromise\n"
    "g idp revoked inter\n"
    /* other.pem put on hold: a revocation that may be lifted */
    "openssl ca -config ca.cnf -revoke other.pem -keyfile inter.key -cert inter.pem "
    "  -crl_hold holdInstructionNone\n"
    "g plain held inter\n"
    "openssl crl -in revoked.pem -noout -text | sed -n 's/.*Revocation Date: //p' | head -1 "
    "  >revoked.when\n";

static gnutls_x509_crt_t leaf, inter;

/* Check CRL file @p name for @p crt at @p now: its return code, *a, err. */
static int check_crt(const char *name, gnutls_x509_crt_t crt, time_t now, struct ocsp_answer *a,
                     char *err, size_t errlen)
{
    gnutls_datum_t d = fx_slurp(name);
    err[0] = 0;
    int rc = ocsp_crl_check(d.data, d.size, URL, crt, inter, now, a, err, errlen);
    gnutls_free(d.data);
    return rc;
}

/* The same for the leaf. */
static int check(const char *name, time_t now, struct ocsp_answer *a, char *err, size_t errlen)
{
    return check_crt(name, leaf, now, a, err, errlen);
}

static void refused(const char *file, const char *why, const char *want)
{
    struct ocsp_answer a;
    char err[256];
    int rc = check(file, time(NULL), &a, err, sizeof(err));
    ok(rc < 0 && strstr(err, want) != NULL, "%s refused: %s", why, err);
}

static void test_url(void)
{
    char *u = ocsp_crl_url(leaf);
    ok(u && strcmp(u, URL) == 0, "distribution point read (%s)", u ? u : "none");
    free(u);
    gnutls_x509_crt_t o = fx_crt("other.pem"), b = fx_crt("bare.pem");
    u = ocsp_crl_url(o);
    ok(u && strcmp(u, "https://127.0.0.1:9/2.crl") == 0,
       "an ldap: point is skipped for the https one (%s)", u ? u : "none");
    free(u);
    ok(ocsp_crl_url(b) == NULL, "no distribution point: no URL");
    gnutls_x509_crt_deinit(o);
    gnutls_x509_crt_deinit(b);
}

static void test_check(void)
{
    struct ocsp_answer a;
    char err[256];
    time_t now = time(NULL);
    int rc = check("good.der", now, &a, err, sizeof(err));
    ok(rc == 0 && a.status == OCSP_STATUS_GOOD, "an empty CRL: good (%s)", err);
    ok(a.this_update <= now && a.this_update > now - 120, "thisUpdate is now");
    is_int((long long)(a.next_update - a.this_update), 7 * 86400, "nextUpdate 7 days on");
    rc = check("good.pem", now, &a, err, sizeof(err));
    ok(rc == 0 && a.status == OCSP_STATUS_GOOD, "the same CRL in PEM: good (%s)", err);
    rc = check("idp.der", now, &a, err, sizeof(err));
    ok(rc == 0 && a.status == OCSP_STATUS_GOOD,
       "a CRL whose distribution point is the leaf's: good (%s)", err);
    rc = check("revoked.der", now, &a, err, sizeof(err));
    ok(rc == 0 && a.status == OCSP_STATUS_REVOKED, "the leaf's serial listed: REVOKED (%s)", err);
    gnutls_datum_t w = fx_slurp("revoked.when");
    char when[64] = "";
    snprintf(when, sizeof(when), "%.*s", w.size > 0 ? (int)w.size - 1 : 0, (char *)w.data);
    gnutls_free(w.data);
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    time_t want = strptime(when, "%b %d %H:%M:%S %Y GMT", &tm) ? timegm(&tm) : -1;
    is_int((long long)a.revoked_at, (long long)want, "revocation time read (%s)", when);
    is_int(a.revocation_reason, 1, "and its reason code (keyCompromise)");

    refused("root.der", "a CRL of another CA", "another issuer");
    gnutls_x509_crt_t o = fx_crt("other.pem"), n = fx_crt("nocrl.pem");
    gnutls_datum_t b = fx_slurp("byleaf.der"), k = fx_slurp("nocrlsig.der");
    rc = ocsp_crl_check(b.data, b.size, URL, leaf, o, now, &a, err, sizeof(err));
    ok(rc < 0 && strstr(err, "not a CA"), "a CRL signed by a certificate that is no CA: %s", err);
    rc = ocsp_crl_check(k.data, k.size, URL, leaf, n, now, &a, err, sizeof(err));
    ok(rc < 0 && strstr(err, "may not sign CRLs"), "a CA without cRLSign in its key usage: %s",
       err);
    gnutls_free(b.data);
    gnutls_free(k.data);
    gnutls_x509_crt_deinit(o);
    gnutls_x509_crt_deinit(n);
    refused("rogue.der", "a CRL with the issuer's name and another key", "signature");
    refused("shard.der", "a CRL for another distribution point", "another shard");
    refused("reasons.der", "a CRL for some reasons only", "some revocation reasons");
    refused("indirect.der", "an indirect CRL", "indirect");
    refused("onlyca.der", "a CRL of CA certificates only", "CA certificates only");
    refused("delta.der", "a delta CRL", "delta");
    refused("unknown.der", "a CRL with an unknown critical extension",
            "unknown critical CRL extension 1.2.3.4");
    rc = check("good.der", now + 8 * 86400, &a, err, sizeof(err));
    ok(rc < 0 && strstr(err, "expired"), "the same CRL 8 days later: %s", err);
    rc = check("good.der", now - 3600, &a, err, sizeof(err));
    ok(rc < 0 && strstr(err, "in the future"), "the CRL seen from an hour ago: %s", err);
    gnutls_datum_t d = fx_slurp("good.der");
    rc = ocsp_crl_check(d.data, d.size / 2, URL, leaf, inter, now, &a, err, sizeof(err));
    ok(rc == -EBADMSG && strstr(err, "not a CRL"), "a truncated CRL: %s", err);
    gnutls_free(d.data);
    rc = ocsp_crl_check((const unsigned char *)"<html>", 6, URL, leaf, inter, now, &a, err,
                        sizeof(err));
    ok(rc == -EBADMSG, "an HTML page: %s", err);
}

/* A CRL past its nextUpdate cannot say "not listed, so good" any more,
 * but one that lists the leaf still proves it revoked: a revocation is
 * final, as a REVOKED OCSP answer is whatever its nextUpdate.  Not a hold,
 * which may have been lifted since: that needs a current CRL. */
static void test_stale(void)
{
    struct ocsp_answer a;
    char err[256];
    time_t now = time(NULL), later = now + 8 * 86400;
    int rc = check("revoked.der", later, &a, err, sizeof(err));
    ok(rc == 0 && a.status == OCSP_STATUS_REVOKED,
       "a CRL 8 days stale listing the leaf (keyCompromise): REVOKED (%s)", err);
    is_int(a.revocation_reason, 1, "its reason read (keyCompromise)");
    ok(a.next_update > 0 && a.next_update < later, "its nextUpdate is kept as it is, past");
    rc = check("held.der", later, &a, err, sizeof(err));
    ok(rc == 0 && a.status == OCSP_STATUS_REVOKED,
       "a stale CRL that also lists another certificate on hold: the leaf REVOKED (%s)", err);
    gnutls_x509_crt_t o = fx_crt("other.pem");
    rc = check_crt("held.der", o, now, &a, err, sizeof(err));
    ok(rc == 0 && a.status == OCSP_STATUS_REVOKED, "on hold in a current CRL: REVOKED (%s)", err);
    is_int(a.revocation_reason, OCSP_REASON_CERTIFICATE_HOLD, "reason certificateHold (6)");
    rc = check_crt("held.der", o, later, &a, err, sizeof(err));
    ok(rc < 0 && strstr(err, "expired: nextUpdate was") && strstr(err, "on hold"),
       "on hold in a stale CRL: refused, saying why: %s", err);
    gnutls_x509_crt_deinit(o);
    rc = check("revoked.der", now - 3600, &a, err, sizeof(err));
    ok(rc < 0 && strstr(err, "in the future"),
       "a CRL listing the leaf, seen from an hour ago: thisUpdate in the future: %s", err);
}

/* CRLs of an RSA CA: PKCS#1 v1.5, and RSA-PSS with each hash GnuTLS
 * verifies (read from the parameters, not assumed SHA-256); a salt or mask
 * GnuTLS cannot check is named, and a changed signature does not verify. */
static void test_rsa(void)
{
    static const struct {
        const char *file, *why;
    } good[] = {{"rsa384.der", "RSA PKCS#1 v1.5 with SHA-384"},
                {"pss256.der", "RSA-PSS with SHA-256"},
                {"pss384.der", "RSA-PSS with SHA-384"},
                {"pss512.der", "RSA-PSS with SHA-512"}};
    gnutls_x509_crt_t rl = fx_crt("rleaf.pem"), ri = fx_crt("rinter.pem");
    time_t now = time(NULL);
    struct ocsp_answer a;
    char err[256];
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        gnutls_datum_t d = fx_slurp(good[i].file);
        err[0] = 0;
        int rc = ocsp_crl_check(d.data, d.size, URL, rl, ri, now, &a, err, sizeof(err));
        ok(rc == 0 && a.status == OCSP_STATUS_GOOD, "a CRL signed with %s: good (%s)", good[i].why,
           err);
        if (i == 2 && d.size > 0) {
            d.data[d.size - 1] ^= 1; /* the signature's last byte */
            rc = ocsp_crl_check(d.data, d.size, URL, rl, ri, now, &a, err, sizeof(err));
            ok(rc < 0 && strstr(err, "does not verify"),
               "the RSA-PSS SHA-384 CRL with one signature bit changed: %s", err);
        }
        gnutls_free(d.data);
    }
    static const struct {
        const char *file, *why, *want;
    } bad[] = {{"psssalt.der", "RSA-PSS with the longest salt", "salt length 206 (want 48"},
               {"pssmgf.der", "RSA-PSS SHA-384 with MGF1 over SHA-256", "MGF1 over another hash"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        gnutls_datum_t d = fx_slurp(bad[i].file);
        err[0] = 0;
        int rc = ocsp_crl_check(d.data, d.size, URL, rl, ri, now, &a, err, sizeof(err));
        ok(rc < 0 && strstr(err, bad[i].want), "%s refused: %s", bad[i].why, err);
        gnutls_free(d.data);
    }
    gnutls_x509_crt_deinit(rl);
    gnutls_x509_crt_deinit(ri);
}

/* The hand-written DER times and OIDs (ocsp_der.c). */
static void test_der(void)
{
    static const struct {
        unsigned tag;
        const char *text;
        long long want;
    } t[] = {{DER_UTC_TIME, "700101000000Z", 0},
             {DER_UTC_TIME, "491231235959Z", 2524607999},
             {DER_UTC_TIME, "500101000000Z", -631152000},
             {DER_GENERALIZED_TIME, "20500101000000Z", 2524608000},
             {DER_GENERALIZED_TIME, "20240229120000Z", 1709208000},
             {DER_UTC_TIME, "700101000000", -1},
             {DER_UTC_TIME, "701301000000Z", -1},
             {DER_GENERALIZED_TIME, "2024022912000Z", -1}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        struct der d = {
            .tag = t[i].tag, .val = (const unsigned char *)t[i].text, .len = strlen(t[i].text)};
        int64_t v = -1;
        int rc = der_time(&d, &v);
        if (t[i].want == -1)
            is_int(rc, -1, "time %s refused", t[i].text);
        else
            ok(rc == 0 && v == t[i].want, "time %s = %lld (%lld)", t[i].text, t[i].want,
               (long long)v);
    }
    const unsigned char oid[] = {0x55, 0x1d, 0x1c},
                        big[] = {0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02},
                        cut[] = {0x2a, 0x86};
    char txt[64];
    struct der d = {.tag = DER_OID, .val = oid, .len = sizeof oid};
    ok(der_oid_text(&d, txt, sizeof txt) == 0 && strcmp(txt, "2.5.29.28") == 0, "OID %s", txt);
    d.val = big;
    d.len = sizeof big;
    ok(der_oid_text(&d, txt, sizeof txt) == 0 && strcmp(txt, "1.2.840.10045.4.3.2") == 0, "OID %s",
       txt);
    d.val = cut;
    d.len = sizeof cut;
    is_int(der_oid_text(&d, txt, sizeof txt), -1, "an OID cut in its last arc is refused");
}

static void test_idp(void)
{
    char err[256];
    /* SEQUENCE { [0] { [0] { [6] "http://a" } } } */
    const unsigned char good[] = {0x30, 0x0e, 0xa0, 0x0c, 0xa0, 0x0a, 0x86, 0x08,
                                  'h',  't',  't',  'p',  ':',  '/',  '/',  'a'};
    is_int(ocsp_crl_idp_check(good, sizeof(good), "http://a", err, sizeof(err)), 0,
           "IDP naming the URL accepted");
    ok(ocsp_crl_idp_check(good, sizeof(good), "http://b", err, sizeof(err)) < 0 &&
           strstr(err, "another shard"),
       "IDP naming another URL: %s", err);
    for (size_t n = 0; n < sizeof(good); n++)
        if (ocsp_crl_idp_check(good, n, "http://a", err, sizeof(err)) == 0) {
            ok(0, "IDP cut to %zu bytes accepted", n);
            return;
        }
    ok(1, "every truncation of the IDP refused");
    /* A length that points past its container. */
    const unsigned char bad[] = {0x30, 0x04, 0xa0, 0x7f, 0x00, 0x00};
    ok(ocsp_crl_idp_check(bad, sizeof(bad), "http://a", err, sizeof(err)) < 0,
       "an inner length past its container refused: %s", err);
}

int main(void)
{
    if (!ok(fx_make(fixtures) == 0, "fixtures made with openssl"))
        return done_testing();
    leaf = fx_crt("leaf.pem");
    inter = fx_crt("inter.pem");
    test_url();
    test_check();
    test_stale();
    test_rsa();
    test_der();
    test_idp();
    gnutls_x509_crt_deinit(leaf);
    gnutls_x509_crt_deinit(inter);
    return done_testing();
}
