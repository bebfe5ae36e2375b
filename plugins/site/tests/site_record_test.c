/*
 * site_record.c against real GnuTLS on both ends: a server session whose
 * records are sealed by site_rec_seal (and some by gnutls_record_send, as
 * the site mixes them) and a GnuTLS client that must decrypt every byte, over
 * a socketpair, with a certificate made here (the client does not verify it:
 * only the record layer is under test).  Covers the
 * three ciphers, the peer's record_size_limit, our own key updates, a
 * KeyUpdate from the client that asks for ours, and TLS 1.2 (never sealed).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "../../../tests/tap.h"
#include "site.h"

#include "tls_pair.h"

/*
 * One record of @p n bytes (pattern @p seed) from the server, sealed here
 * when site_rec_wanted says so, else by gnutls_record_send as the site does;
 * then the client reads it all and compares.  *sealed counts our records.
 * Returns the plaintext bytes that arrived intact, or -1.
 */
static long send_one(struct pair *p, size_t n, unsigned seed, int *sealed)
{
    /* One byte more than a record: sealing may borrow the byte after the
     * plaintext (spare), and must give it back. */
    static uint8_t plain[SITE_REC_PLAIN_MAX + 1], got[SITE_REC_PLAIN_MAX];
    ssize_t took;

    fill(plain, n, seed);
    int own = site_rec_wanted(&p->rec, p->srv);
    if (own < 0) {
        diag("site_rec_wanted: %s", gnutls_strerror(own));
        return -1;
    }
    if (own) {
        size_t len = n < p->rec.max ? n : p->rec.max;
        /* Both ways of sealing: contiguous (spare byte) and scattered. */
        bool spare = seed & 1;
        uint8_t after = (uint8_t)(0xA5 ^ seed);
        plain[len] = after;
        took = site_rec_seal(&p->rec, p->srv, plain, len, spare, p->wbuf);
        if (took < 0) {
            diag("site_rec_seal: %s", gnutls_strerror((int)took));
            return -1;
        }
        if (plain[len] != after) {
            diag("site_rec_seal changed the byte after the plaintext (spare %d)", spare);
            return -1;
        }
        size_t wl = (size_t)took + SITE_REC_OVERHEAD;
        if (write(p->sfd, p->wbuf, wl) != (ssize_t)wl)
            return -1;
        (*sealed)++;
    } else {
        took = gnutls_record_send(p->srv, plain, n);
        if (took < 0) {
            diag("gnutls_record_send: %s", gnutls_strerror((int)took));
            return -1;
        }
        site_rec_sent_by_gnutls(&p->rec, n, (size_t)took);
    }
    size_t have = 0;
    for (int spins = 0; have < (size_t)took && spins < 1000; spins++) {
        ssize_t r = gnutls_record_recv(p->cli, got + have, sizeof(got) - have);
        if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED)
            continue;
        if (r <= 0) {
            diag("client recv: %s", r ? gnutls_strerror((int)r) : "EOF");
            return -1;
        }
        have += (size_t)r;
    }
    if (have != (size_t)took || memcmp(got, plain, have) != 0) {
        diag("client got %zu bytes, %s", have, have == (size_t)took ? "different" : "short");
        return -1;
    }
    return (long)took;
}

/* @p count full (16 KB) records, patterns from @p seed on; the last result. */
static long send_full(struct pair *p, int count, unsigned seed, int *sealed)
{
    long r = 0;
    for (int i = 0; i < count && r >= 0; i++)
        r = send_one(p, SITE_REC_PLAIN_MAX, seed + (unsigned)i, sealed);
    return r;
}

/* The server's write key and sequence number at one moment. */
struct keyseen {
    uint8_t key[32];
    uint64_t seq;
};

static struct keyseen write_key(gnutls_session_t s)
{
    struct keyseen ks = {{0}, 0};
    gnutls_datum_t k;
    uint8_t sq[8];
    gnutls_record_get_state(s, 0, NULL, NULL, &k, sq);
    memcpy(ks.key, k.data, k.size < 32 ? k.size : 32);
    for (int i = 0; i < 8; i++)
        ks.seq = ks.seq << 8 | sq[i];
    return ks;
}

#define PRIO13 "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:"

/* @p impl: which code seals AES-GCM, for the test names. */
static void test_ciphers(const char *impl)
{
    static const char *ciphers[] = {"+AES-128-GCM", "+AES-256-GCM", "+CHACHA20-POLY1305"};
    static const size_t sizes[] = {16384, 1, 100, 16383, 16384, 5000, 16384, 2, 16384, 777};

    for (size_t ci = 0; ci < 3; ci++) {
        char prio[256], name[128];
        struct pair p;
        snprintf(prio, sizeof(prio), PRIO13 "%s", ciphers[ci]);
        snprintf(name, sizeof(name), "%s (%s)", ciphers[ci], ci < 2 ? impl : "GnuTLS");
        if (!ok(pair_open(&p, prio, 0), "%s: handshake", name))
            continue;
        ok(p.rec.own, "%s: TLS 1.3 records may be sealed here", name);
        int sealed = 0;
        long total = 0, r = 0;
        /* Before a full chunk went through GnuTLS the peer's limit is not
         * known: records go through GnuTLS. */
        r = send_one(&p, 500, 1, &sealed);
        is_int(sealed, 0, "%s: a record before the limit is known goes through GnuTLS", name);
        for (int round = 0; round < 3 && r >= 0; round++) {
            for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]) && r >= 0; i++) {
                r = send_one(&p, sizes[i], (unsigned)(round * 100 + i), &sealed);
                total += r;
            }
            /* GnuTLS sends one in between: the sequence numbers must agree. */
            if (r >= 0) {
                gnutls_record_send(p.srv, "between", 7);
                char b[16];
                ssize_t g = GNUTLS_E_AGAIN;
                for (int s = 0; s < 100 && g == GNUTLS_E_AGAIN; s++)
                    g = gnutls_record_recv(p.cli, b, sizeof(b));
                r = g == 7 && memcmp(b, "between", 7) == 0 ? 0 : -1;
            }
        }
        ok(r >= 0, "%s: the client decrypted every record intact (%ld bytes)", name, total);
        is_int(sealed, 29, "%s: records sealed here after the first full chunk", name);
        is_int(p.rec.max, 16384, "%s: 16 KB records without a record_size_limit", name);
        pair_close(&p);
    }
}

static void test_record_size_limit(void)
{
    struct pair p;
    int sealed = 0;
    long r;

    if (!ok(pair_open(&p, PRIO13 "+AES-128-GCM", 4096), "record_size_limit 4096: handshake"))
        return;
    r = send_one(&p, 16384, 1, &sealed); /* GnuTLS takes what fits */
    ok(r > 0 && r < 16384, "GnuTLS takes part of a full chunk (%ld bytes)", r);
    is_int(p.rec.max, r, "the limit is learnt from what it took");
    if (r > 0)
        r = send_full(&p, 5, 2, &sealed);
    ok(r > 0 && r <= p.rec.max, "sealed records stay within the client's limit (%ld bytes)", r);
    is_int(sealed, 5, "the records after the first were sealed here");
    pair_close(&p);
}

static void test_rekey(void)
{
    struct pair p;
    struct keyseen k0, k1;
    int sealed = 0;
    long r;

    site_rec_set_rekey_after(5);
    if (!ok(pair_open(&p, PRIO13 "+AES-256-GCM", 0), "rekey: handshake")) {
        site_rec_set_rekey_after(0);
        return;
    }
    r = send_full(&p, 1, 1, &sealed);
    k0 = write_key(p.srv);
    r = r < 0 ? r : send_full(&p, 12, 2, &sealed);
    k1 = write_key(p.srv);
    ok(r >= 0, "the client decrypted 12 sealed records across our key updates");
    is_int(sealed, 12, "all 12 were sealed here");
    ok(memcmp(k0.key, k1.key, 32) != 0, "our write key changed");
    ok(k1.seq < 5, "the sequence number restarted with the new key (%llu)",
       (unsigned long long)k1.seq);
    site_rec_set_rekey_after(0);
    pair_close(&p);
}

static void test_peer_key_update(void)
{
    char b[64];
    struct keyseen k0, k1;
    struct pair p;
    int sealed = 0;
    long r;

    if (!ok(pair_open(&p, PRIO13 "+AES-128-GCM", 0), "peer KeyUpdate: handshake"))
        return;
    r = send_full(&p, 2, 1, &sealed);
    k0 = write_key(p.srv);
    /* The client updates its keys and asks for ours. */
    ok(gnutls_session_key_update(p.cli, GNUTLS_KU_PEER) == 0, "the client sends a KeyUpdate");
    ssize_t g = gnutls_record_recv(p.srv, b, sizeof(b));
    is_int(g, GNUTLS_E_AGAIN, "the server takes it (no data)");
    is_int(site_rec_wanted(&p.rec, p.srv), 0, "the next record goes through GnuTLS");
    r = r < 0 ? r : send_full(&p, 1, 3, &sealed);
    k1 = write_key(p.srv);
    ok(memcmp(k0.key, k1.key, 32) != 0, "GnuTLS sent our KeyUpdate with it: our key changed");
    r = r < 0 ? r : send_full(&p, 4, 4, &sealed);
    ok(r >= 0, "the client decrypted every record before and after");
    is_int(sealed, 5, "records before and after the update were sealed here");
    /* And the client's new keys reach the server. */
    ok(gnutls_record_send(p.cli, "ping", 4) == 4, "the client sends with its new key");
    g = GNUTLS_E_AGAIN;
    for (int s = 0; s < 100 && g == GNUTLS_E_AGAIN; s++)
        g = gnutls_record_recv(p.srv, b, sizeof(b));
    is_int(g, 4, "the server reads it");
    pair_close(&p);
}

static void test_tls12(void)
{
    struct pair p;
    int sealed = 0;
    long r = 0;

    if (!ok(pair_open(&p, "NORMAL:-VERS-ALL:+VERS-TLS1.2", 0), "TLS 1.2: handshake"))
        return;
    ok(!p.rec.own, "TLS 1.2 records are never sealed here");
    r = send_full(&p, 3, 0, &sealed);
    ok(r >= 0 && sealed == 0, "TLS 1.2 records all go through GnuTLS");
    pair_close(&p);
}

int main(void)
{
    if (!ok(creds_make(), "a server certificate made in memory"))
        return done_testing();
    /* Where the build has intel-ipsec-mb and the CPU AES-NI, it seals
     * AES-GCM; the same records then again with GnuTLS's code. */
    const char *impl = site_rec_aes_impl();
#if defined(HAVE_IPSEC_MB) && defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("aes"))
        ok(strncmp(impl, "intel-ipsec-mb (", 16) == 0, "the build and the CPU seal AES-GCM with %s",
           impl);
    else
        is_str(impl, "GnuTLS", "no AES-NI: AES-GCM sealed by GnuTLS");
#else
    is_str(impl, "GnuTLS", "a build without intel-ipsec-mb: AES-GCM sealed by GnuTLS");
#endif
    test_ciphers(impl);
    site_rec_set_fast_aes(false);
    is_str(site_rec_aes_impl(), "GnuTLS", "GnuTLS's AES-GCM when asked");
    test_ciphers("GnuTLS");
    site_rec_set_fast_aes(true);
    test_record_size_limit();
    test_rekey();
    test_peer_key_update();
    test_tls12();
    gnutls_certificate_free_credentials(scred);
    gnutls_certificate_free_credentials(ccred);
    return done_testing();
}
