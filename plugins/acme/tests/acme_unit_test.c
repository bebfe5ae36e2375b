/* Unit tests of the ACME building blocks: JOSE, CSR, renewal policy. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>

#include "plugins/acme/acme.h"
#include "tests/tap.h"

static void test_b64url(void)
{
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const enc[] = {"", "Zg", "Zm8", "Zm9v", "Zm9vYg", "Zm9vYmE", "Zm9vYmFy"};
    for (size_t i = 0; i < 7; i++) {
        char *s = acme_b64url(plain[i], strlen(plain[i]));
        is_str(s, enc[i], "base64url('%s')", plain[i]);
        unsigned char *d = NULL;
        size_t n = 0;
        ok(acme_b64url_decode(enc[i], &d, &n) == 0 && n == strlen(plain[i]) &&
               memcmp(d, plain[i], n) == 0,
           "decode '%s'", enc[i]);
        free(d);
        free(s);
    }
    unsigned char bin[] = {0xfb, 0xff, 0xbf};
    char *s = acme_b64url(bin, 3);
    is_str(s, "-_-_", "url alphabet, no padding");
    free(s);
    unsigned char *d = NULL;
    size_t n;
    ok(acme_b64url_decode("Zm9v!", &d, &n) < 0, "bad character refused");
    ok(acme_b64url_decode("Z", &d, &n) < 0, "impossible length refused");
    ok(acme_b64url_decode("Zm8=", &d, &n) == 0 && n == 2, "padding accepted");
    free(d);
}

static void test_thumbprint(void)
{
    /* RFC 7638 section 3.1. */
    json_t *jwk = json_pack(
        "{s:s,s:s,s:s,s:s}", "kty", "RSA", "n",
        "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_"
        "BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-"
        "65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-"
        "bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-"
        "csFCur-kEgU8awapJzKnqDKgw",
        "e", "AQAB", "alg", "RS256");
    char *t = acme_jwk_thumbprint(jwk);
    is_str(t, "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs", "RFC 7638 example thumbprint");
    free(t);
    json_decref(jwk);

    /* EC: thumbprint of exactly {"crv","kty","x","y"} sorted, computed independently. */
    jwk = json_pack("{s:s,s:s,s:s,s:s,s:s}", "y", "Y", "x", "X", "kty", "EC", "crv", "P-256", "use",
                    "sig");
    const char *canon = "{\"crv\":\"P-256\",\"kty\":\"EC\",\"x\":\"X\",\"y\":\"Y\"}";
    unsigned char dg[32];
    gnutls_hash_fast(GNUTLS_DIG_SHA256, canon, strlen(canon), dg);
    char *want = acme_b64url(dg, 32);
    t = acme_jwk_thumbprint(jwk);
    is_str(t, want, "EC thumbprint uses only crv,kty,x,y in order");
    free(t);
    free(want);
    json_decref(jwk);
}

static void test_rs(void)
{
    unsigned char in33[33], in31[31], out[32];
    memset(in33, 0x80, sizeof(in33));
    in33[0] = 0;
    ok(acme_fixed_width(in33, 33, out, 32) == 0 && out[0] == 0x80 && out[31] == 0x80,
       "33 bytes with leading zero -> 32");
    memset(in31, 0x7f, sizeof(in31));
    ok(acme_fixed_width(in31, 31, out, 32) == 0 && out[0] == 0 && out[1] == 0x7f && out[31] == 0x7f,
       "31 bytes -> left-padded 32");
    memset(in33, 0x11, sizeof(in33));
    ok(acme_fixed_width(in33, 33, out, 32) == -ERANGE, "33 significant bytes refused");

    /* DER round trip with a short r and a long s. */
    unsigned char r[31], s[33], rs[64];
    memset(r, 0x22, sizeof(r));
    memset(s, 0xee, sizeof(s));
    s[0] = 0;
    gnutls_datum_t dr = {r, 31}, ds = {s, 33}, der = {0};
    ok(gnutls_encode_rs_value(&der, &dr, &ds) == 0, "DER signature made");
    ok(acme_ecdsa_der_to_rs(&der, 32, rs) == 0 && rs[0] == 0 && rs[1] == 0x22 && rs[32] == 0xee &&
           rs[63] == 0xee,
       "DER -> r||s of 64 bytes (31-byte r padded, 33-byte s stripped)");
    gnutls_free(der.data);
}

static void test_jws(void)
{
    gnutls_privkey_t key;
    ok(acme_key_generate("ecdsa-p256", &key) == 0, "P-256 key generated");
    json_t *jwk = acme_jwk(key);
    unsigned char *x = NULL;
    size_t xn = 0;
    acme_b64url_decode(json_string_value(json_object_get(jwk, "x")), &x, &xn);
    is_int(xn, 32, "JWK x is exactly 32 bytes");
    free(x);
    char *jws = acme_jws(key, NULL, "NONCE", "https://ca/new-acct", "{\"a\":1}");
    json_t *j = json_loads(jws, 0, NULL);
    unsigned char *hdr = NULL, *sig = NULL;
    size_t hn = 0, sn = 0;
    acme_b64url_decode(json_string_value(json_object_get(j, "protected")), &hdr, &hn);
    acme_b64url_decode(json_string_value(json_object_get(j, "signature")), &sig, &sn);
    json_t *h = json_loadb((char *)hdr, hn, 0, NULL);
    is_str(json_string_value(json_object_get(h, "alg")), "ES256", "alg ES256");
    is_str(json_string_value(json_object_get(h, "nonce")), "NONCE", "nonce in header");
    ok(json_equal(json_object_get(h, "jwk"), jwk), "jwk in header when no kid");
    is_int(sn, 64, "signature is r||s, 64 bytes");

    /* Verify with GnuTLS after turning r||s back into DER. */
    gnutls_datum_t dr = {sig, 32}, ds = {sig + 32, 32}, der = {0};
    gnutls_encode_rs_value(&der, &dr, &ds);
    char *input = tlsbox_xasprintf("%s.%s", json_string_value(json_object_get(j, "protected")),
                                   json_string_value(json_object_get(j, "payload")));
    gnutls_pubkey_t pub;
    gnutls_pubkey_init(&pub);
    gnutls_pubkey_import_privkey(pub, key, 0, 0);
    gnutls_datum_t data = {(unsigned char *)input, (unsigned)strlen(input)};
    ok(gnutls_pubkey_verify_data2(pub, GNUTLS_SIGN_ECDSA_SHA256, 0, &data, &der) >= 0,
       "ES256 signature verifies");
    gnutls_pubkey_deinit(pub);
    gnutls_free(der.data);
    free(input);
    free(hdr);
    free(sig);
    json_decref(h);
    json_decref(j);
    free(jws);

    jws = acme_jws(key, "https://ca/acct/1", "N2", "https://ca/order", NULL);
    j = json_loads(jws, 0, NULL);
    is_str(json_string_value(json_object_get(j, "payload")), "", "POST-as-GET: empty payload");
    acme_b64url_decode(json_string_value(json_object_get(j, "protected")), &hdr, &hn);
    h = json_loadb((char *)hdr, hn, 0, NULL);
    is_str(json_string_value(json_object_get(h, "kid")), "https://ca/acct/1", "kid header");
    ok(!json_object_get(h, "jwk"), "no jwk with kid");
    free(hdr);
    json_decref(h);
    json_decref(j);
    free(jws);

    char *err = NULL;
    json_t *eab =
        acme_eab("kid-1", "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W", jwk,
                 "https://ca/new-acct", &err);
    ok(eab && json_string_value(json_object_get(eab, "signature")), "EAB made");
    json_decref(eab);
    eab = acme_eab("kid-1", "not base64!", jwk, "https://ca/new-acct", &err);
    ok(!eab && err && strstr(err, "acme.eab_hmac"), "bad EAB key refused with a clear message");
    free(err);

    char *pem = NULL;
    gnutls_privkey_t back = NULL; /* deinit(NULL) is a no-op if the round trip fails */
    ok(acme_key_export_pem(key, &pem) == 0 && acme_key_import_pem(pem, &back) == 0,
       "key PEM round trip");
    json_t *jwk2 = acme_jwk(back);
    ok(json_equal(jwk, jwk2), "same public key after round trip");
    json_decref(jwk2);
    gnutls_privkey_deinit(back);
    tlsbox_wipe_free_str(pem);
    json_decref(jwk);
    gnutls_privkey_deinit(key);

    ok(acme_key_generate("ecdsa-p384", &key) == 0, "P-384 key");
    jwk = acme_jwk(key);
    is_str(json_string_value(json_object_get(jwk, "crv")), "P-384", "P-384 JWK");
    json_decref(jwk);
    gnutls_privkey_deinit(key);
    ok(acme_key_generate("dsa-1024", &key) == -EINVAL, "unknown key type refused");
}

/* The CSR of base64url @p b64 (made by acme_csr_make), or NULL when it does
 * not parse or its self-signature does not verify. */
static gnutls_x509_crq_t csr_parse(const char *b64)
{
    unsigned char *der = NULL;
    size_t n = 0;
    gnutls_x509_crq_t crq = NULL;
    if (acme_b64url_decode(b64, &der, &n) < 0)
        return NULL;
    gnutls_datum_t d = {der, (unsigned)n};
    if (gnutls_x509_crq_init(&crq) < 0 ||
        gnutls_x509_crq_import(crq, &d, GNUTLS_X509_FMT_DER) < 0 ||
        gnutls_x509_crq_verify(crq, 0) < 0) {
        gnutls_x509_crq_deinit(crq);
        crq = NULL;
    }
    free(der);
    return crq;
}

static void test_csr(void)
{
    gnutls_privkey_t key;
    acme_key_generate("ecdsa-p256", &key);
    const char *names[] = {"a.example.org", "b.example.org"};
    char *b64 = NULL, *err = NULL;
    ok(acme_csr_make(key, names, 2, &b64, &err) == 0, "CSR made");
    gnutls_x509_crq_t crq = csr_parse(b64);
    if (!ok(crq != NULL, "CSR parses back and its self-signature verifies"))
        return;
    char san[256];
    size_t sl;
    unsigned type, crit;
    int got = 0;
    for (unsigned i = 0;; i++) {
        sl = sizeof(san);
        if (gnutls_x509_crq_get_subject_alt_name(crq, i, san, &sl, &type, &crit) < 0)
            break;
        if (type == GNUTLS_SAN_DNSNAME && i < 2 && strcmp(san, names[i]) == 0)
            got++;
    }
    is_int(got, 2, "both names are DNS SANs, in order");
    char cn[128];
    size_t cl = sizeof(cn);
    ok(gnutls_x509_crq_get_dn_by_oid(crq, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &cl) == 0 &&
           strcmp(cn, "a.example.org") == 0,
       "CN is the first name");
    gnutls_x509_crq_deinit(crq);
    free(b64);
    ok(acme_csr_make(key, names, 0, &b64, &err) < 0 && err, "no names refused");
    free(err);
    gnutls_privkey_deinit(key);
}

static void test_backoff(void)
{
    is_int(acme_backoff_delay(0), 0, "no failure, no wait");
    is_int(acme_backoff_delay(1), 60, "1st failure: 1 min");
    is_int(acme_backoff_delay(2), 120, "2nd: 2 min");
    is_int(acme_backoff_delay(3), 120, "3rd: 2 min");
    is_int(acme_backoff_delay(4), 300, "4th: 5 min");
    is_int(acme_backoff_delay(5), 600, "5th: 10 min");
    is_int(acme_backoff_delay(8), 1200, "8th: 20 min");
    is_int(acme_backoff_delay(12), 1800, "12th: 30 min");
    is_int(acme_backoff_delay(18), 3600, "18th: 1 h");
    is_int(acme_backoff_delay(21), 7200, "21st: 2 h");
    is_int(acme_backoff_delay(23), 10800, "23rd: 3 h");
    is_int(acme_backoff_delay(25), 21600, "25th: 6 h");
    is_int(acme_backoff_delay(1000), 21600, "stays at 6 h");
    long sum = 0;
    for (unsigned i = 1; i <= 24; i++)
        sum += acme_backoff_delay(i);
    is_int(sum,
           60 + 120 + 120 + 300 + 3 * 600 + 4 * 1200 + 6 * 1800 + 3 * 3600 + 2 * 7200 + 2 * 10800,
           "schedule sums to the reference's");
}

/* A self-signed leaf with @p serial, naming @p sans when not NULL (NULL-ended:
 * an address as an IP name, "user@x" as an e-mail name, else a DNS name). */
static gnutls_x509_crt_t test_make_cert_naming(const unsigned char *serial, size_t sn,
                                               const char *const *sans)
{
    static const unsigned char aki[] = {0x69, 0x88, 0x5B, 0x6B, 0x87, 0x46, 0x40, 0x41, 0xE1, 0xB3,
                                        0x7B, 0x84, 0x7B, 0xA0, 0xAE, 0x2C, 0xDE, 0x01, 0xC8, 0xD4};
    gnutls_privkey_t key;
    gnutls_x509_crt_t crt;
    acme_key_generate("ecdsa-p256", &key);
    gnutls_x509_crt_init(&crt);
    gnutls_x509_crt_set_version(crt, 3);
    gnutls_x509_crt_set_serial(crt, serial, sn);
    gnutls_x509_crt_set_activation_time(crt, time(NULL));
    gnutls_x509_crt_set_expiration_time(crt, time(NULL) + 3600);
    gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "t", 1);
    gnutls_x509_crt_set_issuer_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "i", 1);
    gnutls_x509_crt_set_authority_key_id(crt, aki, sizeof(aki));
    for (size_t i = 0; sans && sans[i]; i++) {
        unsigned char ip[16];
        size_t iplen = 0;
        if (acme_ip(sans[i], ip, &iplen, NULL))
            gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_IPADDRESS, ip, (unsigned)iplen,
                                                 GNUTLS_FSAN_APPEND);
        else
            gnutls_x509_crt_set_subject_alt_name(
                crt, strchr(sans[i], '@') ? GNUTLS_SAN_RFC822NAME : GNUTLS_SAN_DNSNAME, sans[i],
                (unsigned)strlen(sans[i]), GNUTLS_FSAN_APPEND);
    }
    gnutls_pubkey_t pub;
    gnutls_pubkey_init(&pub);
    gnutls_pubkey_import_privkey(pub, key, 0, 0);
    gnutls_x509_crt_set_pubkey(crt, pub);
    gnutls_x509_crt_privkey_sign(crt, crt, key, GNUTLS_DIG_SHA256, 0);
    gnutls_pubkey_deinit(pub);
    gnutls_privkey_deinit(key);
    return crt;
}

static gnutls_x509_crt_t test_make_cert(const unsigned char *serial, size_t sn)
{
    return test_make_cert_naming(serial, sn, NULL);
}

/* A self-signed leaf naming @p sans, PEM. */
static char *test_cert_naming(const char *const *sans)
{
    static const unsigned char serial[] = {0x01};
    gnutls_x509_crt_t crt = test_make_cert_naming(serial, 1, sans);
    gnutls_datum_t pem = {0};
    gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &pem);
    gnutls_x509_crt_deinit(crt);
    char *out = tlsbox_xstrdup((const char *)pem.data);
    gnutls_free(pem.data);
    return out;
}

/* names_check(SANS, NAMES...): acme_cert_names_check of a leaf naming SANS. */
static int names_check(const char *const *sans, const char *const *names, char **why)
{
    size_t n = 0;
    while (names[n])
        n++;
    char *pem = test_cert_naming(sans);
    int r = acme_cert_names_check(pem, names, n, why);
    free(pem);
    return r;
}

static void test_names_check(void)
{
    char *why = NULL;
    is_int(names_check((const char *[]){"b.test", "a.test", NULL},
                       (const char *[]){"a.test", "b.test", NULL}, &why),
           0, "the names ordered, in another order: the certificate is taken");
    ok(why == NULL, "  with nothing to say");
    is_int(names_check((const char *[]){"A.Test", NULL}, (const char *[]){"a.test", NULL}, &why), 0,
           "a name in capitals is the same name");
    is_int(names_check((const char *[]){"a.test", "192.0.2.7", "2001:db8::1", NULL},
                       (const char *[]){"2001:db8::1", "a.test", "192.0.2.7", NULL}, &why),
           0, "IP addresses match as the SAN list says them");
    is_int(names_check((const char *[]){"a.test", "ops@a.test", NULL},
                       (const char *[]){"a.test", NULL}, &why),
           0, "an e-mail name beside them serves no host: ignored");
    is_int(names_check((const char *[]){"a.test", "www.a.test", NULL},
                       (const char *[]){"a.test", NULL}, &why),
           -EINVAL, "a name the CA added: refused");
    is_str(why, "it is for a.test, www.a.test, not for the names ordered (a.test)",
           "  saying what it is for, and what was ordered");
    free(why);
    why = NULL;
    is_int(names_check((const char *[]){"a.test", NULL}, (const char *[]){"a.test", "b.test", NULL},
                       &why),
           -EINVAL, "a name the CA dropped: refused");
    is_str(why, "it is for a.test, not for the names ordered (a.test, b.test)", "  saying so");
    free(why);
    why = NULL;
    is_int(
        names_check((const char *[]){"192.0.2.8", NULL}, (const char *[]){"192.0.2.7", NULL}, &why),
        -EINVAL, "another address: refused");
    free(why);
    why = NULL;
    is_int(acme_cert_names_check("not a certificate", (const char *[]){"a.test"}, 1, &why), -EINVAL,
           "a chain that cannot be read: refused");
    is_str(why, "its first certificate cannot be read", "  saying so");
    free(why);
}

static void test_ari(void)
{
    /* RFC 9773 section 4.1 example. */
    static const unsigned char serial[] = {0x00, 0x87, 0x65, 0x43, 0x21};
    gnutls_x509_crt_t crt = test_make_cert(serial, sizeof(serial));
    char *id = NULL;
    ok(acme_ari_cert_id(crt, &id) == 0, "ARI id computed");
    is_str(id, "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE", "RFC 9773 example id (leading 0x00 kept)");
    free(id);
    gnutls_datum_t pem = {0};
    gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &pem);
    char *text = tlsbox_xstrndup((char *)pem.data, pem.size);
    ok(acme_ari_cert_id_pem(text, &id) == 0 &&
           strcmp(id, "aYhba4dGQEHhs3uEe6CuLN4ByNQ.AIdlQyE") == 0,
       "same id from PEM");
    free(id);
    free(text);
    gnutls_free(pem.data);
    gnutls_x509_crt_deinit(crt);

    time_t nb = 1000000, day = 86400, na = nb + 90 * day;
    is_int(acme_renew_time(nb, na, 0, 0, "s", nb), na - 30 * day, "no ARI: one third left");
    time_t ws = nb + 50 * day, we = nb + 52 * day;
    time_t t1 = acme_renew_time(nb, na, ws, we, "serial-1", nb + day);
    time_t t2 = acme_renew_time(nb, na, ws, we, "serial-1", nb + 2 * day);
    ok(t1 >= ws && t1 < we, "ARI: a time inside the window");
    is_int(t1, t2, "stable across checks");
    int differ = 0;
    for (int i = 0; i < 20; i++) {
        char seed[16];
        snprintf(seed, sizeof(seed), "s%d", i);
        time_t t = acme_renew_time(nb, na, ws, we, seed, nb + day);
        if (t != t1)
            differ++;
        if (t < ws || t >= we)
            differ = -100;
    }
    ok(differ > 10, "spread across certificates, always in the window");
    is_int(acme_renew_time(nb, na, nb + day, nb + 2 * day, "x", nb + 3 * day), nb + 3 * day,
           "window already over: renew now");
    is_int(acme_renew_time(nb, na, na + day, na + 2 * day, "x", na - 2 * day), na - 30 * day,
           "less than 1/20 of the lifetime left: ARI ignored");
}

static void test_retry_after(void)
{
    time_t now = 1445412000; /* 2015-10-21 07:20:00 UTC */
    is_int(acme_parse_retry_after("120", now), now + 120, "delay-seconds");
    is_int(acme_parse_retry_after(" 5 ", now), now + 5, "spaces around seconds");
    is_int(acme_parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now), now + 480, "HTTP-date");
    is_int(acme_parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now), now, "past date = now");
    is_int(acme_parse_retry_after("99999999", now), now + 86400, "capped at a day");
    is_int(acme_parse_retry_after("soon", now), 0, "garbage ignored");
    is_int(acme_parse_retry_after("12abc", now), 0, "trailing garbage ignored");
    is_int(acme_parse_retry_after(NULL, now), 0, "missing");
    is_int(acme_parse_rfc3339("2015-10-21T07:28:00Z"), now + 480, "RFC 3339 Z");
    is_int(acme_parse_rfc3339("2015-10-21T07:28:00.123456Z"), now + 480, "RFC 3339 fraction");
    is_int(acme_parse_rfc3339("2015-10-21T09:28:00+02:00"), now + 480, "RFC 3339 offset");
    is_int(acme_parse_rfc3339("yesterday"), 0, "bad RFC 3339");
}

/* IP addresses (RFC 8738): IP SANs with their bytes, no CN; read, made
 * canonical, and named without colons. */
static void test_csr_ip(void)
{
    char canon[46];
    unsigned char bin[16];
    size_t len = 0;
    ok(acme_ip("192.0.2.7", bin, &len, canon) && len == 4 && bin[0] == 192 && bin[3] == 7 &&
           strcmp(canon, "192.0.2.7") == 0,
       "an IPv4 address: 4 bytes, as written");
    ok(acme_ip("2001:db8:0:0:0:0:0:1", bin, &len, canon) && len == 16 &&
           strcmp(canon, "2001:db8::1") == 0,
       "an IPv6 address: 16 bytes, canonical as RFC 5952 writes it (%s)", canon);
    ok(!acme_ip("a.example.org", NULL, NULL, NULL) && !acme_ip("1.2.3", NULL, NULL, NULL) &&
           !acme_ip("2001:db8:::1", NULL, NULL, NULL),
       "a host name, a short dotted quad and a triple colon are no IP address");
    char *name = acme_cert_name("2001:db8::1");
    is_str(name, "2001-db8--1", "an IPv6 certificate's name has '-' for ':'");
    free(name);
    name = acme_cert_name("192.0.2.7");
    is_str(name, "192.0.2.7", "an IPv4 one's is the address");
    free(name);

    gnutls_privkey_t key;
    acme_key_generate("ecdsa-p256", &key);
    const char *names[] = {"192.0.2.7", "2001:db8::1", "a.example.org"};
    char *b64 = NULL, *err = NULL;
    ok(acme_csr_make(key, names, 3, &b64, &err) == 0, "CSR with two addresses and a name made");
    gnutls_x509_crq_t crq = csr_parse(b64);
    if (!ok(crq != NULL, "it parses back and verifies"))
        return;
    unsigned char san[256];
    size_t sl;
    unsigned type, crit;
    int ips = 0, dns = 0;
    for (unsigned i = 0;; i++) {
        sl = sizeof(san);
        if (gnutls_x509_crq_get_subject_alt_name(crq, i, san, &sl, &type, &crit) < 0)
            break;
        if (type == GNUTLS_SAN_IPADDRESS && i == 0 && sl == 4 && san[0] == 192 && san[3] == 7)
            ips++;
        if (type == GNUTLS_SAN_IPADDRESS && i == 1 && sl == 16 && san[0] == 0x20 && san[15] == 1)
            ips++;
        if (type == GNUTLS_SAN_DNSNAME && i == 2 && strcmp((char *)san, "a.example.org") == 0)
            dns++;
    }
    is_int(ips * 10 + dns, 21, "IP SANs with the addresses' bytes, then the DNS name, in order");
    char cn[128];
    size_t cl = sizeof(cn);
    ok(gnutls_x509_crq_get_dn_by_oid(crq, GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &cl) ==
           GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE,
       "no CN: the first identifier is an address");
    gnutls_x509_crq_deinit(crq);
    free(b64);
    gnutls_privkey_deinit(key);
}

/* An error set anew carries nothing of the one before it. */
static void test_err(void)
{
    struct acme_err e = {0};
    /* As http_problem leaves a refused request: status and Retry-After set after the text. */
    acme_err_set(&e, "order", "urn:ietf:params:acme:error:alreadyReplaced", "replaced already");
    e.http_status = 409;
    e.retry_after = 1234567890;
    snprintf(e.challenge, sizeof(e.challenge), "http-01");
    acme_err_set(&e, "download", "tlsbox:connection", "%s: %s", "https://ca.test/cert/1", "reset");
    is_str(e.step, "download", "step replaced");
    is_str(e.type, "tlsbox:connection", "type replaced");
    is_str(e.detail, "https://ca.test/cert/1: reset", "detail replaced");
    ok(e.http_status == 0, "no HTTP status left from the earlier error (%ld)", e.http_status);
    ok(e.retry_after == 0, "no Retry-After left from the earlier error (%lld)",
       (long long)e.retry_after);
    is_str(e.challenge, "", "no failed challenge left from the earlier error");
    acme_err_set(&e, NULL, NULL, "no step given");
    is_str(e.step, "download", "a NULL step keeps the step");
    ok(e.type == NULL, "a NULL type is none");
    acme_err_clear(&e);
    ok(e.detail == NULL && e.step[0] == '\0', "cleared");
}

int main(void)
{
    test_err();
    test_b64url();
    test_thumbprint();
    test_rs();
    test_jws();
    test_csr();
    test_csr_ip();
    test_backoff();
    test_ari();
    test_retry_after();
    test_names_check();
    return done_testing();
}
