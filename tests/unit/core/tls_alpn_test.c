/* tls-alpn-01 answers (RFC 8737, RFC 8738): the reverse names validators
 * send for addresses; the validation certificate a real GnuTLS client gets
 * over a socketpair from a bundle (one SAN, the critical acmeIdentifier
 * extension holding the digest, ALPN acme-tls/1); no answer for another
 * name or without SNI; ordinary clients unchanged; a withdrawn answer stays
 * usable by the bundle that holds it and is gone from the next. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "core/tls.h"
#include "core/tls_alpn.h"
#include "core/tls_bundle.h"
#include "core/tls_ca.h"
#include "core/tls_policy_store.h"
#include "core/tls_tickets.h"
#include "tests/tap.h"
#include "tests/unit/core/tls_test_server.h"
#include "tests/unit/core/tls_test_util.h"

struct result {
    int rc, server_rc;
    char alpn[16];
    char san[80];     /* the one SAN as text ("dns:x" / "ip:4" / "ip:16"), or "" */
    int nsans;        /* how many SANs the leaf has */
    int ext_critical; /* the acmeIdentifier extension: -1 absent */
    unsigned char ext[40];
    size_t ext_len;
    int pk; /* the leaf's key: GNUTLS_PK_ECDSA, GNUTLS_PK_RSA, ... */
};

/* One handshake: SNI @p sni (NULL: none), ALPN @p proto alone (NULL: h2 and
 * http/1.1); what the leaf says. */
static struct result handshake(const struct tlsbox_bundle *b, const char *sni, const char *proto)
{
    struct result res = {.rc = -1, .ext_critical = -1};
    struct tt_pair pair;
    tt_pair_start(&pair, b, false);

    gnutls_certificate_credentials_t cc;
    gnutls_certificate_allocate_credentials(&cc);
    gnutls_session_t c;
    gnutls_init(&c, GNUTLS_CLIENT);
    gnutls_priority_set_direct(c, "NORMAL", NULL);
    gnutls_credentials_set(c, GNUTLS_CRD_CERTIFICATE, cc);
    if (sni)
        gnutls_server_name_set(c, GNUTLS_NAME_DNS, sni, strlen(sni));
    gnutls_datum_t protos[2] = {{(unsigned char *)"h2", 2}, {(unsigned char *)"http/1.1", 8}};
    gnutls_datum_t one = {(unsigned char *)proto, proto ? (unsigned)strlen(proto) : 0};
    if (proto)
        gnutls_alpn_set_protocols(c, &one, 1, 0);
    else
        gnutls_alpn_set_protocols(c, protos, 2, 0);
    gnutls_transport_set_int(c, pair.fd);
    int r;
    do
        r = gnutls_handshake(c);
    while (r < 0 && !gnutls_error_is_fatal(r));
    res.rc = r;
    if (r == 0) {
        gnutls_datum_t sel;
        if (gnutls_alpn_get_selected_protocol(c, &sel) == 0 && sel.size < sizeof(res.alpn))
            memcpy(res.alpn, sel.data, sel.size);
        unsigned n = 0;
        const gnutls_datum_t *peer = gnutls_certificate_get_peers(c, &n);
        if (peer && n) {
            gnutls_x509_crt_t crt;
            gnutls_x509_crt_init(&crt);
            gnutls_x509_crt_import(crt, &peer[0], GNUTLS_X509_FMT_DER);
            for (unsigned i = 0;; i++) {
                char buf[64];
                size_t len = sizeof(buf) - 1;
                int type = gnutls_x509_crt_get_subject_alt_name(crt, i, buf, &len, NULL);
                if (type < 0)
                    break;
                res.nsans++;
                if (type == GNUTLS_SAN_DNSNAME) {
                    buf[len] = 0;
                    snprintf(res.san, sizeof(res.san), "dns:%s", buf);
                } else if (type == GNUTLS_SAN_IPADDRESS) {
                    snprintf(res.san, sizeof(res.san), "ip:%zu", len);
                }
            }
            unsigned critical = 0;
            res.ext_len = sizeof(res.ext);
            if (gnutls_x509_crt_get_extension_by_oid(crt, "1.3.6.1.5.5.7.1.31", 0, res.ext,
                                                     &res.ext_len, &critical) == 0)
                res.ext_critical = (int)critical;
            res.pk = gnutls_x509_crt_get_pk_algorithm(crt, NULL);
            gnutls_x509_crt_deinit(crt);
        }
        gnutls_bye(c, GNUTLS_SHUT_RDWR);
    }
    gnutls_deinit(c);
    tt_pair_end(&pair);
    gnutls_certificate_free_credentials(cc);
    res.server_rc = pair.server.rc;
    return res;
}

static struct tlsbox_bundle *build(sqlite3 *db, const char *what)
{
    struct tlsbox_bundle *b = NULL;
    char *err = NULL;
    int r = tls_bundle_build(db, time(NULL), NULL, &b, &err);
    if (!ok(r == 0, "bundle built: %s", what))
        diag("  %s", err);
    free(err);
    return b;
}

static void check_sni(const char *ident, const char *want)
{
    char *err = NULL;
    char *s = tls_alpn_sni(ident, &err);
    is_str(s, want, "SNI for %s", ident);
    free(s);
    free(err);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    tt_tmpdir();
    gnutls_global_init();

    /* The names a validator sends (RFC 8738 section 6). */
    check_sni("example.org", "example.org");
    check_sni("127.0.0.1", "1.0.0.127.in-addr.arpa");
    check_sni("192.0.2.10", "10.2.0.192.in-addr.arpa");
    check_sni("::1", "1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.ip6.arpa");
    check_sni("2001:db8::567:89ab",
              "b.a.9.8.7.6.5.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.8.b.d.0.1.0.0.2.ip6.arpa");
    const char *bad[] = {"*.example.org", "Example.org", "exa mple.org", "a..b", "", ".x", NULL};
    for (int i = 0; bad[i]; i++) {
        char *err = NULL;
        unsigned char d[32] = {0};
        is_int(tls_alpn_put(bad[i], d, GNUTLS_PK_ECDSA, time(NULL), &err), -EINVAL,
               "refused: \"%s\"", bad[i]);
        ok(err && strstr(err, "host name"), "  saying what is expected");
        free(err);
    }

    sqlite3 *db = tt_store("alpn.db");
    char *err = NULL;
    bool issued = false, rotated = false;
    json_t *names = json_pack("[s]", "localhost");
    tls_policy_store_ensure_default(db, &err);
    tls_tickets_rotate(db, time(NULL), TLS_TICKET_MASTER_HOURS * 3600, false, &rotated, &err);
    tls_ca_ensure(db, "localhost", names, time(NULL), true, &issued, &err);
    ok(issued, "internal leaf issued");
    json_decref(names);

    /* Without answers: acme-tls/1 is not even offered back. */
    struct tlsbox_bundle *b0 = build(db, "no answers");
    struct result r = handshake(b0, "alpn.example", "acme-tls/1");
    is_int(r.rc, 0, "no answers: an acme-tls/1 client completes a handshake");
    is_str(r.alpn, "", "  but no protocol is negotiated (a CA fails the challenge)");
    ok(r.ext_critical == -1, "  and the ordinary certificate has no acmeIdentifier");

    unsigned char d1[32], d2[32];
    for (int i = 0; i < 32; i++) {
        d1[i] = (unsigned char)i;
        d2[i] = (unsigned char)(0xff - i);
    }
    is_int(tls_alpn_put("alpn.example", d1, GNUTLS_PK_ECDSA, time(NULL), &err), 0,
           "answer for alpn.example");
    is_int(tls_alpn_put("127.0.0.1", d2, GNUTLS_PK_ECDSA, time(NULL), &err), 0,
           "answer for 127.0.0.1");
    struct tlsbox_bundle *b1 = build(db, "two answers");
    json_t *desc = tls_bundle_describe(b1);
    is_int((long)json_array_size(json_object_get(desc, "tls_alpn_challenges")), 2,
           "the bundle lists its two answers");
    json_decref(desc);

    r = handshake(b1, "alpn.example", "acme-tls/1");
    is_int(r.rc, 0, "acme-tls/1 handshake for alpn.example");
    is_str(r.alpn, "acme-tls/1", "  negotiates acme-tls/1");
    is_int(r.nsans, 1, "  the leaf has one SAN");
    is_str(r.san, "dns:alpn.example", "  the identifier, as a dNSName");
    is_int(r.pk, GNUTLS_PK_ECDSA, "  its key ECDSA, as asked");
    is_int(r.ext_critical, 1, "  the acmeIdentifier extension is critical");
    ok(r.ext_len == 34 && r.ext[0] == 0x04 && r.ext[1] == 32 && memcmp(r.ext + 2, d1, 32) == 0,
       "  and holds the digest as an OCTET STRING");

    r = handshake(b1, "ALPN.example", "acme-tls/1");
    ok(r.rc == 0 && r.ext_critical == 1 && memcmp(r.ext + 2, d1, 32) == 0,
       "the server name is compared without case");

    r = handshake(b1, "1.0.0.127.in-addr.arpa", "acme-tls/1");
    is_int(r.rc, 0, "acme-tls/1 handshake for 127.0.0.1 by its reverse name");
    is_str(r.san, "ip:4", "  its one SAN is an IPv4 iPAddress");
    is_int(r.nsans, 1, "  and only that");
    ok(r.ext_len == 34 && memcmp(r.ext + 2, d2, 32) == 0, "  with 127.0.0.1's digest");

    r = handshake(b1, "other.example", "acme-tls/1");
    ok(r.rc < 0 && r.server_rc < 0, "acme-tls/1 for a name without an answer: handshake refused");
    r = handshake(b1, NULL, "acme-tls/1");
    ok(r.rc < 0 && r.server_rc < 0, "acme-tls/1 without a server name: handshake refused");

    r = handshake(b1, "alpn.example", NULL);
    is_int(r.rc, 0, "an ordinary client asking for alpn.example");
    is_str(r.alpn, "h2", "  gets h2");
    ok(r.ext_critical == -1, "  and the ordinary certificate, not the validation one");
    r = handshake(b1, "alpn.example", "http/1.1");
    ok(r.rc == 0 && !strcmp(r.alpn, "http/1.1") && r.ext_critical == -1,
       "an http/1.1 client gets http/1.1 and the ordinary certificate");

    /* Replace, withdraw: the bundle that holds an answer keeps it. */
    is_int(tls_alpn_put("alpn.example", d2, GNUTLS_PK_ECDSA, time(NULL), &err), 0,
           "alpn.example answered again");
    is_int(tls_alpn_del("alpn.example"), 0, "then withdrawn");
    is_int(tls_alpn_del("alpn.example"), -ENOENT, "withdrawing twice: -ENOENT");
    is_int(tls_alpn_del("0:0::0:1"), -ENOENT, "withdrawing an address never answered: -ENOENT");
    r = handshake(b1, "alpn.example", "acme-tls/1");
    ok(r.rc == 0 && memcmp(r.ext + 2, d1, 32) == 0,
       "the bundle built before still answers with what it took");
    struct tlsbox_bundle *b2 = build(db, "one answer left");
    r = handshake(b2, "alpn.example", "acme-tls/1");
    ok(r.rc < 0, "the next bundle has no answer for alpn.example");
    r = handshake(b2, "1.0.0.127.in-addr.arpa", "acme-tls/1");
    is_int(r.rc, 0, "  but still the one for 127.0.0.1");

    /* IPv6, written another way: one identifier. */
    is_int(tls_alpn_put("0:0::1", d1, GNUTLS_PK_ECDSA, time(NULL), &err), 0,
           "answer for ::1 (as 0:0::1)");
    is_int(tls_alpn_del("::1"), 0, "withdrawn as ::1");

    /* The key follows the policy: RSA when its signature algorithms have no
     * ECDSA one (an ECDSA validation certificate could not be served). */
    const char *prios[][2] = {
        {"NORMAL", "ecdsa"},
        {"NORMAL:-SIGN-ALL:+SIGN-RSA-PSS-RSAE-SHA256:+SIGN-RSA-SHA256", "rsa"},
        {"NORMAL:-SIGN-ALL:+SIGN-RSA-PSS-RSAE-SHA256", "rsa"},
        {"NORMAL:-SIGN-ALL:+SIGN-RSA-SHA256:+SIGN-ECDSA-SHA256", "ecdsa"},
        {"NORMAL:-SIGN-ALL:+SIGN-EdDSA-Ed25519", "none"}};
    is_int(tls_alpn_key_for(NULL), GNUTLS_PK_ECDSA, "no policy: an ECDSA key");
    for (size_t i = 0; i < sizeof(prios) / sizeof(prios[0]); i++) {
        gnutls_priority_t p = NULL;
        int want = !strcmp(prios[i][1], "ecdsa") ? GNUTLS_PK_ECDSA
                   : !strcmp(prios[i][1], "rsa") ? GNUTLS_PK_RSA
                                                 : GNUTLS_PK_UNKNOWN;
        if (ok(gnutls_priority_init(&p, prios[i][0], NULL) == 0, "priority %s", prios[i][0]))
            is_int(tls_alpn_key_for(p), want, "  the validation key: %s", prios[i][1]);
        gnutls_priority_deinit(p);
    }
    is_int(tls_alpn_put("rsa.example", d1, GNUTLS_PK_RSA, time(NULL), &err), 0,
           "an answer for rsa.example with an RSA key");
    struct tlsbox_bundle *b3 = build(db, "an RSA answer");
    r = handshake(b3, "rsa.example", "acme-tls/1");
    is_int(r.rc, 0, "acme-tls/1 handshake for rsa.example");
    is_int(r.pk, GNUTLS_PK_RSA, "  the validation certificate's key is RSA");
    ok(r.ext_critical == 1 && r.ext_len == 34 && memcmp(r.ext + 2, d1, 32) == 0,
       "  with the digest in its critical acmeIdentifier");
    is_int(tls_alpn_del("rsa.example"), 0, "withdrawn");
    tls_bundle_release(b3);
    is_int(tls_alpn_put("dsa.example", d1, GNUTLS_PK_DSA, time(NULL), &err), -EINVAL,
           "a DSA key is refused");
    ok(err && strstr(err, "ECDSA P-256 or RSA-2048"), "  saying which keys are made");
    free(err);
    err = NULL;

    tls_bundle_release(b0);
    tls_bundle_release(b1);
    tls_bundle_release(b2);
    tls_alpn_clear();
    is_int(tls_bundle_live(), 0, "every bundle freed");
    unsigned char d[32] = {0};
    for (int i = 0; i < TLS_ALPN_MAX; i++) {
        char name[32];
        snprintf(name, sizeof(name), "n%d.example", i);
        if (tls_alpn_put(name, d, GNUTLS_PK_ECDSA, time(NULL), &err) < 0)
            break;
    }
    is_int(tls_alpn_put("one-more.example", d, GNUTLS_PK_ECDSA, time(NULL), &err), -ENOSPC,
           "answer %d refused: -ENOSPC", TLS_ALPN_MAX + 1);
    ok(err && strstr(err, "waiting"), "  saying so");
    free(err);
    tls_alpn_clear();
    sqlite3_close(db);
    gnutls_global_deinit();
    return done_testing();
}
