/* Which certificate a client gets: credentials by address and by wildcard,
 * the certificates' order in each (what GnuTLS picks first), the choice by
 * SNI (exact names win, a wildcard stands for one label, any case, one
 * trailing dot dropped), and a loader that fails costing only what it was
 * building. */
#include <arpa/inet.h>
#include <string.h>

#include "core/tls_select.h"
#include "tests/tap.h"

/* The loader records the order of each credentials it fills. */
static char order[16][16];
static gnutls_certificate_credentials_t made[16];
static size_t norders, fail_at = (size_t)-1;

static int record(void *arg, gnutls_certificate_credentials_t cred, size_t i, char **err)
{
    (void)arg;
    if (i == fail_at) {
        *err = strdup("no such key");
        return -22;
    }
    size_t len = strlen(order[norders]);
    made[norders] = cred;
    order[norders][len] = (char)('0' + i);
    if (len + 1 == 4) /* each credentials holds the 4 certificates */
        norders++;
    return 0;
}

static const char *addr_of(const struct tls_select *s, const char *text)
{
    struct tls_addr a = {{0}, 0};
    a.len = strchr(text, ':') ? 16 : 4;
    inet_pton(a.len == 4 ? AF_INET : AF_INET6, text, a.ip);
    gnutls_certificate_credentials_t c = tls_select_by_address(s, &a);
    for (size_t i = 0; c && i < s->naddrs; i++)
        if (s->addrs[i].cred == c)
            return s->addrs[i].name;
    return c ? "?" : "keep";
}

static const char *name_of(const struct tls_select *s, gnutls_certificate_credentials_t main,
                           const char *sni)
{
    gnutls_certificate_credentials_t c = tls_select_by_name(s, main, sni);
    if (!c)
        return "keep";
    if (c == main)
        return "main";
    for (size_t i = 0; i < s->nwilds; i++)
        if (s->wilds[i].cred == c)
            return s->wilds[i].name;
    for (size_t i = 0; i < s->nnames; i++)
        if (s->names[i].cred == c)
            return s->names[i].name;
    return "?";
}

/* The order of credentials @p c the loader filled, "keep" for NULL. */
static const char *order_of(gnutls_certificate_credentials_t c)
{
    for (size_t i = 0; c && i < norders; i++)
        if (made[i] == c)
            return order[i];
    return c ? "?" : "keep";
}

int main(void)
{
    const struct tls_select_cert certs[] = {
        {"c0", "[\"*.x.example\",\"a.example\",\"192.0.2.1\"]", NULL},
        {"c1", "[\"*.y.example\",\"192.0.2.2\"]", NULL},
        {"c2", "[\"*.X.example\",\"b.example\",\"c.example\"]", NULL},
        {"internal", "[\"localhost\",\"127.0.0.1\",\"192.0.2.2\"]", NULL},
    };
    struct tls_select s = {0};
    tls_select_build(&s, certs, 4, record, NULL);

    /* By address: the first certificate naming each, and credentials when
     * that is not the bundle's first. */
    is_int(s.naddrs, 3, "3 addresses among the names");
    is_int(s.naddr_creds, 2, "2 of them need credentials of their own");
    ok(tls_select_by_address_needed(&s), "so a session asks for its local address");
    is_str(addr_of(&s, "192.0.2.1"), "keep", "192.0.2.1: c0, the first, serves it as is");
    is_str(addr_of(&s, "192.0.2.2"), "c1", "192.0.2.2: c1, the first naming it");
    is_str(addr_of(&s, "127.0.0.1"), "internal", "127.0.0.1: the internal leaf");
    is_str(addr_of(&s, "10.0.0.1"), "keep", "10.0.0.1, named by none: kept");
    is_str(addr_of(&s, "::1"), "keep", "::1, named by none: kept");
    is_int(norders, 6, "6 credentials made (2 addresses, 2 wildcards, 2 for names)");
    is_str(order[0], "1302", "192.0.2.2's: c1 and internal first, then the others in order");
    is_str(order[1], "3012", "127.0.0.1's: internal first");

    /* By wildcard. */
    is_int(s.nwilds, 2, "2 wildcards (*.x.example in c0 and c2, any case, counts once)");
    ok(tls_select_by_name_needed(&s), "so sessions get the post-ClientHello check");
    /* c0 is first, but a client that cannot use c0's key would get the
     * first it can use (c1), not c2, which names *.x.example too. */
    is_str(order[2], "0213", "*.x.example's: c0 and c2 first");
    is_str(order[3], "1023", "*.y.example's: c1 first");
    gnutls_certificate_credentials_t main = (gnutls_certificate_credentials_t)&s; /* a token */
    is_str(name_of(&s, main, "q.x.example"), "c0", "q.x.example: c0, then c2");
    is_str(name_of(&s, main, "q.y.example"), "c1", "q.y.example: c1");
    is_str(name_of(&s, main, "Q.Y.Example"), "c1", "  in any case");
    is_str(name_of(&s, main, "a.example"), "keep", "a.example, a name of c0: GnuTLS finds it");
    is_str(name_of(&s, main, "b.example"), "keep", "b.example likewise");
    is_str(name_of(&s, main, "p.q.y.example"), "keep", "p.q.y.example: a wildcard is one label");
    is_str(name_of(&s, main, "y.example"), "keep", "y.example: not below the wildcard");
    is_str(name_of(&s, main, ".y.example"), "keep", ".y.example: an empty label");
    is_str(name_of(&s, main, "other.example"), "keep", "other.example: nothing to switch to");

    /* By name in another case: GnuTLS compares names byte for byte. */
    is_int(s.nnames, 4, "4 names (a.example, b.example, c.example, localhost)");
    is_str(order[4], "2013", "b.example's: c2 first");
    is_str(order[5], "3012", "localhost's: internal first");
    is_str(name_of(&s, main, "B.Example"), "c2", "B.Example: c2, which names b.example");
    is_str(name_of(&s, main, "C.example"), "c2", "C.example: c2 too");
    ok(tls_select_by_name(&s, main, "C.example") == tls_select_by_name(&s, main, "B.Example"),
       "  with the same credentials (one for the names of one certificate)");
    is_str(name_of(&s, main, "LOCALHOST"), "internal", "LOCALHOST: the internal leaf");
    is_str(name_of(&s, main, "A.EXAMPLE"), "main", "A.EXAMPLE: c0, the bundle's first");
    is_str(name_of(&s, main, "localhost"), "keep", "localhost as spelt: GnuTLS finds it");
    /* One trailing dot (RFC 6066 forbids it, some clients send it): the same
     * name, which GnuTLS, comparing bytes, would not find. */
    is_str(name_of(&s, main, "b.example."), "c2", "b.example.: c2, as b.example");
    is_str(name_of(&s, main, "C.Example."), "c2", "C.Example.: c2 too");
    is_str(name_of(&s, main, "localhost."), "internal", "localhost.: the internal leaf");
    is_str(name_of(&s, main, "a.example."), "main", "a.example.: c0, the bundle's first");
    is_str(name_of(&s, main, "q.y.example."), "c1", "q.y.example.: c1, by its wildcard");
    is_str(name_of(&s, main, "b.example.."), "keep", "b.example.. (two dots): no name, kept");
    is_str(name_of(&s, main, "."), "keep", ". alone: kept");
    is_str(name_of(&s, main, ".y.example."), "keep", ".y.example.: an empty label, kept");
    ok(tls_select_owns(&s, s.wilds[1].cred), "the wildcard's credentials are the bundle's");
    ok(!tls_select_owns(&s, main), "the bundle's own are not in the list");

    json_t *d = tls_select_describe_wildcards(&s);
    char *text = json_dumps(d, JSON_SORT_KEYS | JSON_COMPACT);
    is_str(text, "{\"*.x.example\":\"c0\",\"*.y.example\":\"c1\"}", "described by wildcard");
    free(text);
    json_decref(d);
    d = tls_select_describe_addresses(&s);
    text = json_dumps(d, JSON_SORT_KEYS | JSON_COMPACT);
    is_str(text, "{\"127.0.0.1\":\"internal\",\"192.0.2.1\":\"c0\",\"192.0.2.2\":\"c1\"}",
           "described by address");
    free(text);
    json_decref(d);
    tls_select_free(&s);
    is_int(s.naddrs + s.nwilds, 0, "freed");

    /* A loader that fails on one certificate: every credentials holds them
     * all, so none is made; the first's addresses remain. */
    norders = 0;
    memset(order, 0, sizeof(order));
    fail_at = 3;
    tls_select_build(&s, certs, 4, record, NULL);
    is_int(s.naddr_creds, 0, "a failing loader: no credentials by address");
    ok(!tls_select_by_address_needed(&s), "  so no local address is asked for");
    is_str(addr_of(&s, "192.0.2.2"), "keep", "  192.0.2.2 is served as is");
    is_int(s.nwilds, 0, "  nor by wildcard");
    is_str(name_of(&s, main, "q.x.example"), "keep", "  q.x.example: kept (c0, the first)");
    is_str(name_of(&s, main, "q.y.example"), "keep", "  q.y.example: kept");
    tls_select_free(&s);

    /* Only the first certificate's wildcard, no address of another: the
     * bundle's own credentials serve every client as they are. */
    tls_select_build(&s, certs, 1, record, NULL);
    is_int(s.nwilds, 1, "one certificate: its wildcard is known");
    ok(!tls_select_by_address_needed(&s) && !tls_select_by_name_needed(&s),
       "  but no session needs a switch (no getsockname, no post-ClientHello work)");
    tls_select_free(&s);

    /* ECDSA certificates on two curves, for a TLS 1.2 client that lists
     * one of them only in supported_groups (RFC 8422). */
    const struct tls_select_cert ec[] = {
        {"p256", "[\"c.example\"]", "ecdsa-p256"},
        {"rsa", "[\"c.example\"]", "rsa-2048"},
        {"p384", "[\"c.example\"]", "ecdsa-p384"},
        {"internal", "[\"localhost\",\"127.0.0.1\"]", "ecdsa-p256"},
    };
    norders = 0;
    memset(order, 0, sizeof(order));
    fail_at = (size_t)-1;
    tls_select_build(&s, ec, 4, record, NULL);
    ok(tls_select_by_curve_needed(&s), "P-256 and P-384 certificates: the curves matter");
    is_int(s.ncurve_sets, 2, "  two sets of curves: P-256 alone, P-384 alone");
    is_int(norders, 6, "  6 credentials (address, localhost, 2 of the bundle's, 2 more)");
    is_str(order_of(tls_select_by_curve(&s, main, main, TLS_CURVE_P384)), "1203",
           "P-384 only: RSA and P-384 first, then the P-256 ones");
    is_str(order_of(tls_select_by_curve(&s, main, main, TLS_CURVE_P384 | TLS_CURVE_P521)), "1203",
           "  as P-384 and P-521 (there is no P-521 certificate)");
    is_str(order_of(tls_select_by_curve(&s, main, main, TLS_CURVE_P256)), "0132",
           "P-256 only: the P-384 one last");
    is_str(order_of(tls_select_by_curve(&s, main, main, TLS_CURVE_P256 | TLS_CURVE_P384)), "keep",
           "both: the bundle's order");
    is_str(order_of(tls_select_by_curve(&s, main, main, 0)), "keep",
           "neither (X25519 only): the bundle's order");
    gnutls_certificate_credentials_t lo =
        tls_select_by_address(&s, &(struct tls_addr){{127, 0, 0, 1}, 4});
    is_str(order_of(lo), "3012", "127.0.0.1: the internal leaf first");
    is_str(order_of(tls_select_by_curve(&s, main, lo, TLS_CURVE_P384)), "3120",
           "  and for P-384 only: the internal leaf, then RSA and P-384 before P-256");
    is_str(order_of(tls_select_by_curve(&s, main, lo, TLS_CURVE_P256)), "keep",
           "  for P-256 only: as it is (P-384 already last)");
    ok(tls_select_owns(&s, tls_select_by_curve(&s, main, lo, TLS_CURVE_P384)),
       "  a variant is the bundle's, for the post-ClientHello callback");
    is_str(order_of(tls_select_by_curve(&s, main, (gnutls_certificate_credentials_t)&ec,
                                        TLS_CURVE_P384)),
           "keep", "credentials not of the bundle: kept");
    tls_select_free(&s);
    tls_select_build(&s, ec, 2, record, NULL);
    ok(!tls_select_by_curve_needed(&s), "one curve: the curves do not matter");
    tls_select_free(&s);

    tls_select_build(&s, certs, 0, record, NULL);
    ok(!tls_select_by_address_needed(&s) && !tls_select_by_name_needed(&s),
       "no certificates: nothing");
    tls_select_free(&s);
    return done_testing();
}
