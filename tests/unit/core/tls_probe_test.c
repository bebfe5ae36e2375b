/* The client-family probe: real in-memory handshakes of each family against
 * the presets compiled by tls_policy, with an ECDSA and an RSA certificate
 * made by certtool at test time.  Timings are printed, never asserted. */
#include <errno.h>
#include <time.h>

#include <gnutls/gnutls.h>

#include "core/tls_policy.h"
#include "core/tls_probe.h"
#include "tests/tap.h"
#include "tests/unit/core/tls_test_util.h"

/* Self-signed leaf of @p type ("ecdsa" or "rsa") as NAME.pem / NAME.key. */
static int make_leaf(const char *name, const char *type)
{
    return tt_sh("printf 'cn = localhost\\ndns_name = localhost\\ntls_www_server\\n"
                 "encryption_key\\nsigning_key\\nexpiration_days = 30\\n' > %s.tmpl && "
                 "certtool --generate-privkey --key-type %s %s --no-text --outfile %s.key && "
                 "certtool --generate-self-signed --load-privkey %s.key --template %s.tmpl "
                 "--outfile %s.pem",
                 name, type, strcmp(type, "rsa") == 0 ? "--bits 2048" : "", name, name, name, name);
}

static gnutls_certificate_credentials_t creds(int ecdsa, int rsa)
{
    gnutls_certificate_credentials_t c;
    gnutls_certificate_allocate_credentials(&c);
    gnutls_certificate_set_flags(c, GNUTLS_CERTIFICATE_API_V2);
    char *pem, *key;
    if (ecdsa) {
        pem = xasprintf("%s/ecdsa.pem", tt_dir), key = xasprintf("%s/ecdsa.key", tt_dir);
        ok(gnutls_certificate_set_x509_key_file(c, pem, key, GNUTLS_X509_FMT_PEM) >= 0,
           "ECDSA leaf loaded");
        free(pem);
        free(key);
    }
    if (rsa) {
        pem = xasprintf("%s/rsa.pem", tt_dir), key = xasprintf("%s/rsa.key", tt_dir);
        ok(gnutls_certificate_set_x509_key_file(c, pem, key, GNUTLS_X509_FMT_PEM) >= 0,
           "RSA leaf loaded");
        free(pem);
        free(key);
    }
    gnutls_certificate_set_known_dh_params(c, GNUTLS_SEC_PARAM_MEDIUM);
    return c;
}

/* Probe preset @p preset; @p label names the case in the output. */
static json_t *probe_preset(const char *label, const char *preset,
                            gnutls_certificate_credentials_t c)
{
    char *err = NULL;
    json_t *p = tls_policy_preset(preset);
    char *prio = tls_policy_compile(p, NULL, &err);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    json_t *r = tls_probe_families(prio, c, &err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ok(r != NULL, "%s: every family probed (%s)", label, err ? err : "no error");
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    diag("%s: %zu families in %.1f ms", label, json_array_size(r), ms);
    size_t i;
    json_t *e;
    json_array_foreach(r, i, e)
    {
        char *s = json_dumps(e, JSON_COMPACT);
        diag("  %s", s);
        free(s);
    }
    json_decref(p);
    free(prio);
    free(err);
    return r;
}

static json_t *family(json_t *r, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(r, i, e) if (strcmp(json_string_value(json_object_get(e, "family")), name) ==
                                    0) return e;
    return NULL;
}

static const char *s(json_t *r, const char *fam, const char *key)
{
    const char *v = json_string_value(json_object_get(family(r, fam), key));
    return v ? v : "(null)";
}

/* @p fam handshook with @p proto, @p group (NULL: none) and @p sig (NULL: any). */
static void succeeds(json_t *r, const char *fam, const char *proto, const char *group,
                     const char *sig, const char *what)
{
    ok(json_is_true(json_object_get(family(r, fam), "ok")), "%s: %s connects", what, fam);
    is_str(s(r, fam, "protocol"), proto, "%s: %s negotiates %s", what, fam, proto);
    is_str(s(r, fam, "group"), group ? group : "(null)", "%s: %s key exchange group", what, fam);
    if (sig)
        is_str(s(r, fam, "sigalg"), sig, "%s: %s signature algorithm", what, fam);
}

/* @p fam is refused by the server with GnuTLS error @p code (name @p name). */
static void refused(json_t *r, const char *fam, int code, const char *name, const char *what)
{
    ok(json_is_false(json_object_get(family(r, fam), "ok")), "%s: %s is refused", what, fam);
    is_str(s(r, fam, "side"), "server", "%s: %s: by the server", what, fam);
    is_str(s(r, fam, "error_code"), name, "%s: %s: GnuTLS' reason", what, fam);
    is_str(s(r, fam, "error"), gnutls_strerror(code), "%s: %s: with GnuTLS' own message", what,
           fam);
}

int main(void)
{
    tt_tmpdir();
    is_int(make_leaf("ecdsa", "ecdsa"), 0, "ECDSA P-256 leaf made with certtool");
    is_int(make_leaf("rsa", "rsa"), 0, "RSA 2048 leaf made with certtool");
    gnutls_certificate_credentials_t both = creds(1, 1), rsa = creds(0, 1);

    json_t *m = probe_preset("modern", "modern", both);
    is_int((int)json_array_size(m), 6, "modern: six client families");
    succeeds(m, "modern-browsers", "TLS1.3", "X25519", "ECDSA-SECP256R1-SHA256", "modern");
    ok(strstr(s(m, "modern-browsers", "cipher"), "GCM") ||
           strstr(s(m, "modern-browsers", "cipher"), "CHACHA"),
       "modern: browsers get an AEAD cipher (%s)", s(m, "modern-browsers", "cipher"));
    for (const char *const *f = (const char *const[]){"android-7", "android-4.4-ie11", "java-8",
                                                      "openssl-1.0.2", NULL};
         *f; f++)
        refused(m, *f, GNUTLS_E_NO_CIPHER_SUITES, "GNUTLS_E_NO_CIPHER_SUITES", "modern");
    /* A TLS 1.0 ClientHello is refused for its version before any suite. */
    refused(m, "tls1.0-only", GNUTLS_E_UNSUPPORTED_VERSION_PACKET,
            "GNUTLS_E_UNSUPPORTED_VERSION_PACKET", "modern");
    char *dump = json_dumps(m, JSON_COMPACT);
    ok(!strstr(dump, "PRIVATE") && !strstr(dump, "BEGIN"), "no key or certificate in the answer");
    free(dump);
    json_decref(m);

    json_t *i = probe_preset("intermediate", "intermediate", both);
    succeeds(i, "modern-browsers", "TLS1.3", "X25519", NULL, "intermediate");
    succeeds(i, "android-7", "TLS1.2", "X25519", "ECDSA-SHA256", "intermediate");
    is_str(s(i, "android-7", "kx"), "ECDHE-ECDSA", "intermediate: android-7 uses ECDHE-ECDSA");
    succeeds(i, "android-4.4-ie11", "TLS1.2", "SECP256R1", NULL, "intermediate");
    succeeds(i, "java-8", "TLS1.2", "SECP256R1", NULL, "intermediate");
    succeeds(i, "openssl-1.0.2", "TLS1.2", "SECP256R1", NULL, "intermediate");
    ok(strstr(s(i, "openssl-1.0.2", "cipher"), "GCM") != NULL,
       "intermediate: OpenSSL 1.0.2 gets AES-GCM (%s)", s(i, "openssl-1.0.2", "cipher"));
    refused(i, "tls1.0-only", GNUTLS_E_UNSUPPORTED_VERSION_PACKET,
            "GNUTLS_E_UNSUPPORTED_VERSION_PACKET", "intermediate");
    json_decref(i);

    json_t *c = probe_preset("compat", "compat", both);
    succeeds(c, "tls1.0-only", "TLS1.0", "SECP256R1", NULL, "compat");
    succeeds(c, "modern-browsers", "TLS1.3", "X25519", NULL, "compat");
    json_decref(c);

    /* The same policy with only an RSA certificate: browsers sign with PSS. */
    json_t *r = probe_preset("intermediate, RSA 2048 only", "intermediate", rsa);
    succeeds(r, "modern-browsers", "TLS1.3", "X25519", "RSA-PSS-RSAE-SHA256", "RSA only");
    succeeds(r, "java-8", "TLS1.2", "SECP256R1", "RSA-SHA256", "RSA only");
    json_decref(r);

    /* A priority string GnuTLS refuses is an error, not a family result. */
    char *err = NULL;
    json_t *bad = tls_probe_families("NORMAL:+BOGUS", both, &err);
    ok(bad == NULL && err, "bad server string: %s", err ? err : "no error");
    free(err);

    /* tls_probe_any: does any client at all get through? */
    gnutls_certificate_credentials_t ec = creds(1, 0);
    json_t *cp = tls_policy_preset("compat");
    char *p = tls_policy_compile(cp, NULL, &err);
    json_decref(cp);
    is_int(tls_probe_any(p, ec, &err), 0, "any: compat with an ECDSA key");
    free(p);
    is_int(tls_probe_any("SECURE256:-VERS-TLS1.0:-VERS-TLS1.1", ec, &err), 0,
           "any: SECURE256 with a P-256 key (TLS 1.2 only)");
    static const char rsa_sigs[] =
        "NONE:+VERS-TLS1.3:+VERS-TLS1.2:+AES-128-GCM:+AEAD:+ECDHE-ECDSA:+ECDHE-RSA:+GROUP-X25519:"
        "+SIGN-RSA-SHA256:+SIGN-RSA-PSS-RSAE-SHA256:+COMP-NULL:+CTYPE-X509";
    is_int(tls_probe_any(rsa_sigs, ec, &err), -EINVAL, "any: RSA signatures with an ECDSA key");
    like(err, "TLS1.3: No supported cipher suites", "  the newest version's reason: %s",
         err ? err : "-");
    free(err);
    is_int(tls_probe_any(rsa_sigs, rsa, &err), 0, "any: the same with an RSA key");
    is_int(tls_probe_any("NONE:+VERS-TLS1.2:+AES-128-GCM:+AEAD:+ECDHE-ECDSA:+GROUP-FFDHE2048:"
                         "+SIGN-ALL:+COMP-NULL:+CTYPE-X509",
                         ec, &err),
           -EINVAL, "any: TLS 1.2 ECDHE with only FFDHE groups");
    like(err, "TLS1.2: ", "  names TLS 1.2: %s", err ? err : "-");
    free(err);
    gnutls_certificate_free_credentials(ec);

    gnutls_certificate_free_credentials(both);
    gnutls_certificate_free_credentials(rsa);
    return done_testing();
}
