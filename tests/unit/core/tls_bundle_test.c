/* The bundle: built from a store holding the internal CA leaf, served in
 * real handshakes over socketpairs (verified against the root), dual
 * ECDSA + RSA certificates, ticket resumption across GnuTLS's key steps and
 * across a restart, master key rotation, the TLS 1.2 session cache, failing
 * builds, and the reference count under concurrent acquire/publish (run
 * this test in an --enable-asan build too). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "core/tls.h"
#include "core/tls_bundle.h"
#include "core/tls_ca.h"
#include "core/tls_cert.h"
#include "core/tls_policy.h"
#include "core/tls_policy_store.h"
#include "core/tls_session_cache.h"
#include "core/tls_sign.h"
#include "core/tls_tickets.h"
#include "tests/tap.h"
#include "tests/unit/core/tls_test_server.h"
#include "tests/unit/core/tls_test_util.h"

#ifdef HAVE_OPENSSL_SIGN
#define HAVE_FAST_SIGN 1
#else
#define HAVE_FAST_SIGN 0
#endif

static time_t fake_now;
static time_t fake_time(time_t *t)
{
    time_t v = fake_now ? fake_now : time(NULL);
    if (t)
        *t = v;
    return v;
}

struct result {
    int rc;        /* client handshake result */
    int verified;  /* certificate verified against the root for "localhost" */
    int resumed;   /* as seen by the server */
    char alpn[16]; /* selected protocol */
    int pk;        /* peer certificate's key algorithm */
    gnutls_protocol_t version;
};

static char *root_pem;

/* One connection: client with @p prio, trusting the internal root, offering
 * @p sess_in (may be NULL); saves the session into *sess_out (may be NULL). */
static struct result handshake(const struct tlsbox_bundle *b, const char *prio,
                               gnutls_datum_t *sess_in, gnutls_datum_t *sess_out)
{
    struct result res = {.rc = -1};
    struct tt_pair pair;
    tt_pair_start(&pair, b, true);

    gnutls_certificate_credentials_t cc;
    gnutls_certificate_allocate_credentials(&cc);
    gnutls_datum_t rd = {(unsigned char *)root_pem, (unsigned)strlen(root_pem)};
    gnutls_certificate_set_x509_trust_mem(cc, &rd, GNUTLS_X509_FMT_PEM);
    gnutls_session_t c;
    gnutls_init(&c, GNUTLS_CLIENT);
    gnutls_priority_set_direct(c, prio ? prio : "NORMAL", NULL);
    gnutls_credentials_set(c, GNUTLS_CRD_CERTIFICATE, cc);
    gnutls_server_name_set(c, GNUTLS_NAME_DNS, "localhost", 9);
    gnutls_datum_t protos[2] = {{(unsigned char *)"h2", 2}, {(unsigned char *)"http/1.1", 8}};
    gnutls_alpn_set_protocols(c, protos, 2, 0);
    if (sess_in && sess_in->data)
        gnutls_session_set_data(c, sess_in->data, sess_in->size);
    gnutls_transport_set_int(c, pair.fd);
    int r;
    do
        r = gnutls_handshake(c);
    while (r < 0 && !gnutls_error_is_fatal(r));
    res.rc = r;
    if (r == 0) {
        unsigned status = 1;
        res.verified =
            gnutls_certificate_verify_peers3(c, "localhost", &status) == 0 && status == 0;
        gnutls_datum_t sel;
        if (gnutls_alpn_get_selected_protocol(c, &sel) == 0 && sel.size < sizeof(res.alpn))
            memcpy(res.alpn, sel.data, sel.size);
        res.version = gnutls_protocol_get_version(c);
        unsigned n = 0;
        const gnutls_datum_t *peer = gnutls_certificate_get_peers(c, &n);
        if (peer && n) {
            gnutls_x509_crt_t crt;
            gnutls_x509_crt_init(&crt);
            gnutls_x509_crt_import(crt, &peer[0], GNUTLS_X509_FMT_DER);
            res.pk = gnutls_x509_crt_get_pk_algorithm(crt, NULL);
            gnutls_x509_crt_deinit(crt);
        }
        gnutls_record_send(c, "hi", 2);
        char buf[16];
        gnutls_record_recv(c, buf, sizeof(buf)); /* TLS 1.3 tickets arrive here */
        if (sess_out)
            gnutls_session_get_data2(c, sess_out);
        gnutls_bye(c, GNUTLS_SHUT_RDWR);
    }
    gnutls_deinit(c);
    tt_pair_end(&pair);
    gnutls_certificate_free_credentials(cc);
    res.resumed = pair.server.resumed;
    return res;
}

static struct tlsbox_bundle *build(sqlite3 *db, struct tls_session_cache *cache, const char *what)
{
    struct tlsbox_bundle *b = NULL;
    char *err = NULL;
    int r = tls_bundle_build(db, time(NULL), cache, &b, &err);
    if (!ok(r == 0, "bundle built: %s", what))
        diag("  %s", err);
    free(err);
    return b;
}

static void drop_data(gnutls_datum_t *d)
{
    gnutls_free(d->data);
    d->data = NULL;
    d->size = 0;
}

/* ---- reference count under concurrency ----------------------------------- */

/* Readers acquire, use, describe and release bundles while the main thread
 * publishes 100 new ones: under ThreadSanitizer, no data race. */

/* Set by the main thread, read by the readers: an atomic, as volatile
 * orders nothing between threads (ThreadSanitizer reports it). */
static atomic_int stop_readers;
static long acquired_total;
static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;

static void *reader(void *arg)
{
    (void)arg;
    long n = 0;
    while (!atomic_load_explicit(&stop_readers, memory_order_relaxed)) {
        struct tlsbox_bundle *b = tls_bundle_acquire();
        if (b) {
            /* Touch it as a connection would. */
            if (tls_bundle_generation(b) == 0 || !tls_bundle_hsts(b))
                abort();
            n++;
        }
        /* And describe it as GET /api/v1/certs does: the description is
         * written out after the bundle is released (and may be freed by a
         * publish on the main thread meanwhile). */
        json_t *d = b && n % 16 == 0 ? tls_bundle_describe(b) : NULL;
        tls_bundle_release(b);
        if (d) {
            char *s = json_dumps(d, JSON_COMPACT);
            if (!s || !strstr(s, "\"certificates\":[\""))
                abort();
            free(s);
            json_decref(d);
        }
    }
    pthread_mutex_lock(&total_lock);
    acquired_total += n;
    pthread_mutex_unlock(&total_lock);
    return NULL;
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    tt_tmpdir();
    gnutls_global_init();
    gnutls_global_set_time_function(fake_time);

    sqlite3 *db = tt_store("bundle.db");
    char *err = NULL;
    bool issued = false, rotated = false;
    json_t *names = json_pack("[s, s]", "localhost", "127.0.0.1");
    tls_policy_store_ensure_default(db, &err);
    tls_tickets_rotate(db, time(NULL), TLS_TICKET_MASTER_HOURS * 3600, false, &rotated, &err);
    ok(rotated, "first ticket key made");
    tls_ca_ensure(db, "localhost", names, time(NULL), true, &issued, &err);
    ok(issued, "internal leaf issued");
    tls_ca_root_pem(db, &root_pem);
    struct tls_session_cache *cache = tls_session_cache_new(4096, 21600);

    struct tlsbox_bundle *b1 = build(db, cache, "internal CA + default policy");
    is_int(tls_bundle_live(), 1, "one bundle alive");
    is_str(tls_bundle_hsts(b1), "max-age=31536000", "HSTS from the policy");

    /* Full handshakes. */
    gnutls_datum_t t13 = {NULL, 0}, t12 = {NULL, 0}, sid = {NULL, 0};
    /* With libcrypto, each full handshake's signature is its (and the
     * client verifies it); without, GnuTLS makes them all. */
    const uint64_t per_full = HAVE_FAST_SIGN;
    uint64_t signed0 = tls_sign_count();
    struct result r = handshake(b1, NULL, NULL, &t13);
    is_int(r.rc, 0, "TLS 1.3 handshake");
    ok(r.verified, "leaf verifies against the internal root for localhost");
    is_str(r.alpn, "h2", "ALPN h2 preferred");
    is_int(r.version, GNUTLS_TLS1_3, "TLS 1.3 negotiated");
    is_int(r.pk, GNUTLS_PK_ECDSA, "ECDSA certificate served");
    is_int((int)(tls_sign_count() - signed0), (int)per_full,
           "TLS 1.3 signature made by libcrypto (when built with it)");
    signed0 = tls_sign_count();
    r = handshake(b1, "NORMAL:-VERS-TLS1.3", NULL, &t12);
    is_int(r.rc, 0, "TLS 1.2 handshake");
    is_int(r.version, GNUTLS_TLS1_2, "TLS 1.2 negotiated");
    ok(r.verified, "TLS 1.2 ECDHE-ECDSA signature verifies");
    is_int((int)(tls_sign_count() - signed0), (int)per_full,
           "TLS 1.2 signature made by libcrypto (when built with it)");
    r = handshake(b1, "NORMAL:-VERS-TLS-ALL:+VERS-TLS1.1", NULL, NULL);
    ok(r.rc < 0, "TLS 1.1 refused by the intermediate policy");
    r = handshake(b1, "NORMAL:-VERS-TLS1.3:-AES-128-GCM:-AES-256-GCM:-CHACHA20-POLY1305", NULL,
                  NULL);
    ok(r.rc < 0, "TLS 1.2 CBC-only client refused (AEAD only)");

    /* Resumption: tickets (1.3 and 1.2) and the session-id cache (1.2). */
    signed0 = tls_sign_count();
    r = handshake(b1, NULL, &t13, NULL);
    ok(r.rc == 0 && r.resumed, "TLS 1.3 ticket resumes");
    is_int((int)(tls_sign_count() - signed0), 0, "a resumed handshake signs nothing");
    r = handshake(b1, "NORMAL:-VERS-TLS1.3", &t12, NULL);
    ok(r.rc == 0 && r.resumed, "TLS 1.2 ticket resumes");
    r = handshake(b1, "NORMAL:-VERS-TLS1.3:%NO_TICKETS", NULL, &sid);
    ok(r.rc == 0 && tls_session_cache_count(cache) >= 1, "TLS 1.2 session id cached");
    r = handshake(b1, "NORMAL:-VERS-TLS1.3:%NO_TICKETS", &sid, NULL);
    ok(r.rc == 0 && r.resumed, "TLS 1.2 session id resumes from the cache");
    drop_data(&sid);

    /* GnuTLS's key step: the policy's 12 h period, the previous one accepted. */
    time_t step = 12 * 3600, now = time(NULL);
    fake_now = (now / step + 1) * step - 60; /* a minute before a step boundary */
    gnutls_datum_t edge = {NULL, 0};
    handshake(b1, NULL, NULL, &edge);
    fake_now += 120;
    r = handshake(b1, NULL, &edge, NULL);
    ok(r.rc == 0 && r.resumed, "ticket from the previous period still resumes");
    drop_data(&edge);
    fake_now = (now / step + 1) * step - 60;
    handshake(b1, NULL, NULL, &edge);
    fake_now += 60 + step + 60;
    r = handshake(b1, NULL, &edge, NULL);
    ok(r.rc == 0 && !r.resumed, "ticket two periods old does not resume");
    drop_data(&edge);
    fake_now = 0;

    /* A restart: a new bundle from the same store takes the old tickets. */
    struct tlsbox_bundle *b2 = build(db, cache, "same store again (restart)");
    r = handshake(b2, NULL, &t13, NULL);
    ok(r.rc == 0 && r.resumed, "ticket survives a restart (stored master key)");

    /* Master rotation: new key used, two rows kept, old tickets fall back. */
    tls_tickets_rotate(db, time(NULL), TLS_TICKET_MASTER_HOURS * 3600, false, &rotated, &err);
    ok(!rotated, "no rotation before the master period");
    tls_tickets_rotate(db, time(NULL) + TLS_TICKET_MASTER_HOURS * 3600,
                       TLS_TICKET_MASTER_HOURS * 3600, false, &rotated, &err);
    ok(rotated, "rotation once the master period passed");
    tls_tickets_rotate(db, time(NULL), 3600, true, &rotated, &err);
    is_int(tt_int(db, "SELECT count(*) FROM ticket_keys"), 2, "two master keys kept");
    struct tlsbox_bundle *b3 = build(db, cache, "after rotation");
    gnutls_datum_t t3 = {NULL, 0};
    r = handshake(b3, NULL, &t13, NULL);
    ok(r.rc == 0 && !r.resumed, "ticket of a replaced master falls back to a full handshake");
    handshake(b3, NULL, NULL, &t3);
    r = handshake(b3, NULL, &t3, NULL);
    ok(r.rc == 0 && r.resumed, "new master's tickets resume");
    drop_data(&t3);

    /* Dual certificates: an RSA leaf from the same root, chosen per client. */
    {
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(db, "SELECT key_pem FROM internal_ca", -1, &st, NULL);
        sqlite3_step(st);
        char *cakey = xstrndup(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0));
        sqlite3_finalize(st);
        char *p = xasprintf("%s/ca.key", tt_dir), *q = xasprintf("%s/ca.pem", tt_dir);
        FILE *a = fopen(p, "w"), *c = fopen(q, "w");
        fputs(cakey, a);
        fputs(root_pem, c);
        fclose(a);
        fclose(c);
        free(p);
        free(q);
        wipe_free_str(cakey);
        is_int(tt_sh("printf 'cn = localhost\\ndns_name = localhost\\ntls_www_server\\n"
                     "encryption_key\\nsigning_key\\nexpiration_days = 30\\n' > rsa.tmpl && "
                     "certtool --generate-privkey --key-type rsa --bits 2048 --no-text "
                     "--outfile rsa.key && certtool --generate-certificate --load-privkey "
                     "rsa.key --load-ca-certificate ca.pem --load-ca-privkey ca.key --template "
                     "rsa.tmpl --outfile rsa.pem"),
               0, "RSA leaf made with certtool");
        char *rc = tt_slurp("rsa.pem"), *rk = tt_slurp("rsa.key");
        struct tls_cert_info info;
        /* Without certtool's files the checks after this fail, not crash. */
        int checked = rc && rk ? tls_cert_check(rc, rk, time(NULL), &info, &err) : -ENOENT;
        is_int(checked, 0, "RSA leaf checks");
        if (checked == 0) {
            is_int(tls_cert_store(db, "localhost-rsa", &info, rk, "import", NULL, NULL, "t", &err),
                   0, "RSA leaf stored");
            tls_cert_info_clear(&info);
        }
        free(rc);
        wipe_free_str(rk);
    }
    struct tlsbox_bundle *b4 = build(db, cache, "ECDSA + RSA");
    r = handshake(b4, NULL, NULL, NULL);
    is_int(r.pk, GNUTLS_PK_ECDSA, "modern client gets ECDSA");
    signed0 = tls_sign_count();
    r = handshake(b4, "NORMAL:-VERS-TLS1.3:-SIGN-ALL:+SIGN-RSA-SHA256:-ECDHE-ECDSA:+ECDHE-RSA",
                  NULL, NULL);
    ok(r.rc == 0 && r.verified, "RSA-only client handshakes");
    is_int((int)(tls_sign_count() - signed0), 0, "GnuTLS signs for the RSA key");
    is_int(r.pk, GNUTLS_PK_RSA, "RSA-only client gets RSA");
    json_t *d = tls_bundle_describe(b4);
    char *ds = json_dumps(json_object_get(d, "certificates"), JSON_COMPACT);
    is_str(ds, "[\"internal\",\"localhost-rsa\"]", "ECDSA before RSA");
    free(ds);
    json_decref(d);

    /* Policy key_types drops RSA; a policy with no servable type fails. */
    {
        json_t *cur = NULL;
        tls_policy_store_active(db, &cur, NULL, NULL);
        json_t *f = json_pack("{s:s}", "key_types", "rsa");
        json_t *p = tls_policy_apply_fields(cur, f, &err);
        tls_policy_store_save(db, p, "t", "rsa only", NULL, &err);
        struct tlsbox_bundle *b5 = build(db, cache, "RSA only");
        r = handshake(b5, NULL, NULL, NULL);
        is_int(r.pk, GNUTLS_PK_RSA, "key_types rsa: RSA served to everyone");
        tls_bundle_release(b5);
        sqlite3_exec(db, "UPDATE certificates SET status = 'disabled' WHERE name = 'localhost-rsa'",
                     NULL, NULL, NULL);
        struct tlsbox_bundle *bad = NULL;
        int rr = tls_bundle_build(db, time(NULL), cache, &bad, &err);
        ok(rr < 0 && !bad, "no servable certificate: build fails");
        like(err, "no active certificate of an allowed key type", "and says why");
        free(err);
        err = NULL;
        tls_policy_store_rollback(db, 1, "t", NULL, &err);
        json_decref(cur);
        json_decref(f);
        json_decref(p);
    }

    /* Staples and DH rows that cannot be used are ignored, not fatal. */
    sqlite3_exec(db,
                 "INSERT INTO tls_staples (cert_name, serial, response, this_update, "
                 "next_update, serve_until, stored_at) SELECT 'internal', serial, "
                 "x'3003020100', 1, 4102444800, 4102444800, 1 FROM certificates "
                 "WHERE name = 'internal';"
                 "INSERT INTO tls_dh (id, pem, bits, fingerprint, safe_prime, source, set_by, "
                 "set_at) VALUES (1, 'not a pem', 2048, '', 0, 'import', 't', 0);",
                 NULL, NULL, NULL);
    struct tlsbox_bundle *b6 = build(db, cache, "bad staple and bad DH ignored");
    r = handshake(b6, NULL, NULL, NULL);
    is_int(r.rc, 0, "and it serves");
    tls_bundle_release(b6);
    sqlite3_exec(db, "DELETE FROM tls_staples; DELETE FROM tls_dh;", NULL, NULL, NULL);

    /* A broken certificate row fails the build; nothing else changes. */
    sqlite3_exec(db,
                 "UPDATE certificates SET status = 'active', key_pem = (SELECT key_pem FROM "
                 "internal_ca) WHERE name = 'localhost-rsa'",
                 NULL, NULL, NULL);
    struct tlsbox_bundle *bad = NULL;
    int rr = tls_bundle_build(db, time(NULL), cache, &bad, &err);
    ok(rr < 0 && !bad, "mismatched key in the store: build fails");
    like(err, "certificate localhost-rsa", "the error names the certificate");
    free(err);
    err = NULL;

    /* Reference counting: the old bundle lives until its last release. */
    long base_live = tls_bundle_live();
    uint64_t gen1 = tls_bundle_generation(b1);
    tls_bundle_publish(b1); /* the store's reference moves to "current" */
    struct tlsbox_bundle *conn = tls_bundle_acquire();
    ok(conn == b1, "acquire returns the current bundle");
    tls_bundle_publish(b2); /* b1 replaced: still referenced by conn */
    is_int(tls_bundle_live(), base_live, "replaced bundle alive while a connection holds it");
    r = handshake(conn, NULL, NULL, NULL);
    is_int(r.rc, 0, "old bundle still serves its connection");
    tls_bundle_release(conn);
    is_int(tls_bundle_live(), base_live - 1, "freed at the last release");
    struct tlsbox_bundle *cur = tls_bundle_acquire();
    ok(cur == b2 && tls_bundle_generation(b2) > gen1, "new handshakes get the new bundle");
    tls_bundle_release(cur);

    /* Concurrent acquire/release while bundles are swapped. */
    {
        struct timespec a, z;
        struct tlsbox_bundle *nb = NULL;
        sqlite3_exec(db, "UPDATE certificates SET status = 'disabled' WHERE name = 'localhost-rsa'",
                     NULL, NULL, NULL);
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (int i = 0; i < 20; i++) {
            if (tls_bundle_build(db, time(NULL), cache, &nb, &err) == 0)
                tls_bundle_release(nb);
            free(err);
            err = NULL;
        }
        clock_gettime(CLOCK_MONOTONIC, &z);
        diag("build alone: %.2f ms each",
             ((z.tv_sec - a.tv_sec) * 1e3 + (z.tv_nsec - a.tv_nsec) / 1e6) / 20);
    }
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, reader, NULL);
    int swaps = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sqlite3_exec(db, "UPDATE certificates SET status = 'disabled' WHERE name = 'localhost-rsa'",
                 NULL, NULL, NULL);
    for (int i = 0; i < 100; i++) {
        struct tlsbox_bundle *nb = NULL;
        if (tls_bundle_build(db, time(NULL), cache, &nb, &err) == 0) {
            tls_bundle_publish(nb);
            swaps++;
        }
        free(err);
        err = NULL;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    diag("build + publish: %.2f ms each under load",
         ((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6) / 100);
    atomic_store_explicit(&stop_readers, 1, memory_order_relaxed);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    is_int(swaps, 100, "100 swaps under 4 reader threads");
    ok(acquired_total > 0, "readers acquired %ld times", acquired_total);
    tls_bundle_release(b3);
    tls_bundle_release(b4);
    is_int(tls_bundle_live(), 1, "only the current bundle is alive");
    tls_bundle_publish(NULL);
    is_int(tls_bundle_live(), 0, "none after clearing");

    /* The session cache is bounded and LRU. */
    struct tls_session_cache *small = tls_session_cache_new(3, 3600);
    unsigned char k[4][8] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++) {
        gnutls_datum_t key = {k[i], 8}, val = {(unsigned char *)"secret", 6};
        if (i == 3) {
            gnutls_datum_t a = tls_session_cache_retrieve(small, (gnutls_datum_t){k[0], 8});
            gnutls_free(a.data); /* touch "a": now "b" is the oldest */
        }
        tls_session_cache_store(small, key, val);
    }
    is_int(tls_session_cache_count(small), 3, "bounded to 3 entries");
    gnutls_datum_t gb = tls_session_cache_retrieve(small, (gnutls_datum_t){k[1], 8});
    gnutls_datum_t ga = tls_session_cache_retrieve(small, (gnutls_datum_t){k[0], 8});
    ok(gb.data == NULL && ga.size == 6, "least recently used evicted, recent kept");
    gnutls_free(ga.data);
    is_int(tls_session_cache_remove(small, (gnutls_datum_t){k[0], 8}), 0, "remove");
    is_int(tls_session_cache_count(small), 2, "removed");
    tls_session_cache_free(small);

    drop_data(&t13);
    drop_data(&t12);
    tls_session_cache_free(cache);
    json_decref(names);
    free(root_pem);
    free(err);
    sqlite3_close(db);
    gnutls_global_deinit();
    return done_testing();
}
