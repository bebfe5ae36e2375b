/*
 * How a cached body leaves in TLS records (site_conn_seal_cached and
 * site_conn_flush), read by a real GnuTLS client over a socketpair.  In
 * front of the body go the bytes already queued in c->out (h1: the response
 * head; h2: HEADERS frames) and, for h2, a 9-byte DATA frame header; the
 * whole is sealed where the cache holds the body, in the room in front of it
 * that is borrowed and put back.  When the queued bytes are few (at most
 * SITE_CE_ROOM with the frame header) and the whole is over a record, the
 * first record is cut full and the body's last bytes follow in a record of
 * their own (the h2 path puts them in front of the next DATA frame; here
 * the flush seals them).
 *
 * For each case: the client gets exactly the queued bytes, the frame header
 * and the body, in order; no record is over the client's limit; few queued
 * bytes mean one record when the whole fits and two (the first full) when it
 * does not; and the cache's bytes, the borrowed room included, are as before.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tlsbox/mock_host.h>

#include "../../../tests/tap.h"
#include "site.h"

#include "tls_pair.h"

static struct site S;
static struct site_worker W;

/* Everything the client can read now: the plaintext into @p got (room
 * @p cap), each record's length into @p recs (at most @p nrec); returns the
 * byte count, and the record count in *nr. */
static size_t client_read(gnutls_session_t cli, uint8_t *got, size_t cap, size_t *recs, size_t nrec,
                          size_t *nr)
{
    size_t n = 0;
    *nr = 0;
    for (;;) {
        ssize_t r = gnutls_record_recv(cli, got + n, cap - n);
        if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED || r <= 0)
            break;
        if (*nr < nrec)
            recs[*nr] = (size_t)r;
        (*nr)++;
        n += (size_t)r;
    }
    return n;
}

/* The cache's copy: SITE_CE_ROOM bytes of room, the body, one spare byte. */
#define BODY_MAX SITE_REC_PLAIN_MAX
static uint8_t cache[SITE_CE_ROOM + BODY_MAX + 1], before[sizeof(cache)];
static uint8_t queued[24000], expect[24000 + 9 + BODY_MAX], got[sizeof(expect)];

/* One case: @p pend queued bytes, a frame header when @p hdn (9), a body of
 * @p n bytes.  Returns false (after diagnostics) when a check failed; *what
 * counts the checks that passed. */
static int sealed; /* cases sealed in place (site_conn_seal_cached returned 1) */

static bool one_case(struct site_conn *c, gnutls_session_t cli, size_t pend, size_t hdn, size_t n,
                     unsigned seed, int *checks)
{
    const uint8_t hd[9] = {0, 0x3f, 0x07, 0, 1, 0, 0, 0, 3};
    uint8_t *body = cache + SITE_CE_ROOM;
    size_t recs[64], nr = 0;

    fill(cache, sizeof(cache), seed);
    fill(queued, pend, seed * 7 + 1);
    memcpy(before, cache, sizeof(cache));
    if (pend)
        site_out_append(c, queued, pend);
    int r = site_conn_seal_cached(c, hdn ? hd : NULL, hdn, (char *)body, n);
    if (hdn + n > c->rec.max) {
        /* Not for this path: the caller copies the body instead. */
        if (r != 0 || c->out_len - c->out_off != pend || c->enc_len != c->enc_off) {
            diag("pend %zu hdn %zu n %zu: returned %d, %u queued, %u sealed (want 0, %zu, 0)", pend,
                 hdn, n, r, c->out_len - c->out_off, c->enc_len - c->enc_off, pend);
            return false;
        }
        c->out_off = c->out_len = 0;
        site_out_release_if_empty(c);
        (*checks)++;
        return true;
    }
    if (r != 1) {
        diag("pend %zu hdn %zu n %zu: site_conn_seal_cached returned %d", pend, hdn, n, r);
        return false;
    }
    sealed++;
    if (memcmp(cache, before, sizeof(cache)) != 0) {
        diag("pend %zu hdn %zu n %zu: the cache's bytes (or the room in front) changed", pend, hdn,
             n);
        return false;
    }
    if (site_conn_flush(c) < 0) {
        diag("pend %zu hdn %zu n %zu: site_conn_flush failed", pend, hdn, n);
        return false;
    }
    size_t total = client_read(cli, got, sizeof(got), recs, 64, &nr);
    memcpy(expect, queued, pend);
    memcpy(expect + pend, hd, hdn);
    memcpy(expect + pend + hdn, before + SITE_CE_ROOM, n);
    if (total != pend + hdn + n || memcmp(got, expect, total) != 0) {
        diag("pend %zu hdn %zu n %zu: the client got %zu bytes, %s", pend, hdn, n, total,
             total == pend + hdn + n ? "not the ones sent" : "not as many as sent");
        return false;
    }
    for (size_t i = 0; i < nr && i < 64; i++)
        if (recs[i] > c->rec.max) {
            diag("pend %zu hdn %zu n %zu: record %zu has %zu bytes, over %u", pend, hdn, n, i,
                 recs[i], c->rec.max);
            return false;
        }
    if (pend + hdn <= SITE_CE_ROOM) {
        bool fits = pend + hdn + n <= c->rec.max;
        size_t want = fits ? 1 : 2;
        if (nr != want || (!fits && recs[0] != c->rec.max)) {
            diag("pend %zu hdn %zu n %zu: %zu records (first %zu), want %zu%s", pend, hdn, n, nr,
                 nr ? recs[0] : 0, want, fits ? "" : ", the first full");
            return false;
        }
    }
    (*checks)++;
    return true;
}

int main(void)
{
    struct pair p;
    struct site_conn c;

    if (gnutls_global_init() < 0 || !creds_make()) {
        printf("Bail out! no credentials\n");
        return 1;
    }
    W.s = &S;
    W.now_ms = 1000000;
    if (!pair_open(&p, "NORMAL:-VERS-ALL:+VERS-TLS1.3", 0)) {
        printf("Bail out! no TLS pair\n");
        return 1;
    }
    int sz = 1 << 20;
    setsockopt(p.sfd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
    setsockopt(p.cfd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
    memset(&c, 0, sizeof(c));
    c.w = &W;
    c.fd = p.sfd;
    c.tls = true;
    c.session = p.srv;
    /* No protocol to refill from: the flush seals and sends what is there. */
    c.state = SITE_CS_LINGER;
    gnutls_transport_set_ptr(p.srv, &c);
    gnutls_transport_set_push_function(p.srv, site_tls_push);
    site_rec_start(&c.rec, p.srv);
    /* The first full record goes through GnuTLS and tells the client's
     * limit (site_rec_sent_by_gnutls); records are sealed here after it. */
    size_t recs[4], nr;
    fill(queued, 20000, 99);
    site_out_append(&c, queued, 20000);
    is_int(site_conn_flush(&c), 0, "20,000 bytes queued are flushed");
    is_int((int)client_read(p.cli, got, sizeof(got), recs, 4, &nr), 20000, "the client reads them");
    ok(memcmp(got, queued, 20000) == 0 && nr == 2 && recs[0] == SITE_REC_PLAIN_MAX,
       "in two records, the first full (%zu records)", nr);
    is_int(site_rec_wanted(&c.rec, p.srv), 1, "TLS 1.3 with AES-GCM: records are now sealed here");
    is_int(c.rec.max, SITE_REC_PLAIN_MAX, "%d bytes of plaintext each", SITE_REC_PLAIN_MAX);

    /* The edges: h1 (a head, no frame header) and h2 (HEADERS frames and a
     * DATA frame header) around a record's 16,384 bytes, queued bytes
     * around SITE_CE_ROOM, and a body too long for one DATA frame here. */
    static const size_t cases[][3] = {
        {0, 0, 1000},    {363, 0, 16127}, {363, 0, 16021}, {363, 0, 16022}, {512, 0, 15872},
        {512, 0, 15873}, {513, 0, 16000}, {0, 9, 16375},   {0, 9, 16376},   {477, 9, 16127},
        {503, 9, 16384}, {503, 9, 16375}, {503, 9, 15872}, {504, 9, 16000}, {600, 9, 16000},
        {600, 9, 16375}, {5000, 0, 8000}, {20000, 9, 100}, {1, 9, 16375},   {1, 0, 16384},
    };
    int good = 0, n = (int)(sizeof(cases) / sizeof(cases[0]));
    for (int i = 0; i < n; i++)
        one_case(&c, p.cli, cases[i][0], cases[i][1], cases[i][2], (unsigned)i + 1, &good);
    is_int(good, n, "%d edge cases: the client reads every byte in order, in the fewest records",
           n);
    is_int(sealed, n - 2, "all but the two whose DATA frame is over a record were sealed in place");

    /* And 400 drawn at random: queued 0-1,200 bytes, with or without a
     * frame header, bodies of 1 byte to a whole record. */
    unsigned seed = 12345;
    good = 0;
    sealed = 0;
    for (int i = 0; i < 400; i++) {
        seed = seed * 1103515245u + 12345u;
        size_t pend = (seed >> 8) % 1201;
        seed = seed * 1103515245u + 12345u;
        size_t hdn = (seed >> 9) & 1 ? 9 : 0;
        seed = seed * 1103515245u + 12345u;
        size_t len = 1 + (seed >> 4) % BODY_MAX;
        /* Half of them near the edge, where a record is cut. */
        if (i % 2 && pend + hdn <= SITE_CE_ROOM && SITE_REC_PLAIN_MAX > pend + hdn + 8)
            len = SITE_REC_PLAIN_MAX - pend - hdn - 8 + (seed >> 12) % 17;
        if (len > BODY_MAX)
            len = BODY_MAX;
        one_case(&c, p.cli, pend, hdn, len, seed, &good);
    }
    is_int(good, 400, "400 random cases around the record's edge: every byte, fewest records");
    is_int(sealed, 400, "all 400 sealed in place");

    site_timer_set(&c, SITE_T_NONE);
    site_out_release_if_empty(&c);
    site_rec_free(&c.rec);
    while (W.outpool.n)
        free(W.outpool.b[--W.outpool.n]);
    while (W.encpool.n)
        free(W.encpool.b[--W.encpool.n]);
    pair_close(&p);
    gnutls_certificate_free_credentials(scred);
    gnutls_certificate_free_credentials(ccred);
    gnutls_global_deinit();
    return done_testing();
}
