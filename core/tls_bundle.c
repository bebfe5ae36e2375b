/* The TLS bundle: build from the store, publish, acquire, release. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "core/log.h"
#include "core/tls.h"
#include "core/tls_addr.h"
#include "core/tls_alpn.h"
#include "core/tls_bundle.h"
#include "core/tls_dh.h"
#include "core/tls_hello.h"
#include "core/tls_policy.h"
#include "core/tls_policy_store.h"
#include "core/tls_select.h"
#include "core/tls_sign.h"
#include "core/tls_staple.h"
#include "core/tls_tickets.h"
#include "core/xalloc.h"

struct tlsbox_bundle {
    atomic_long refs;
    uint64_t generation;
    gnutls_certificate_credentials_t cred;
    gnutls_dh_params_t dh; /* not freed with cred: ours to free */
    gnutls_priority_t prio;
    char *priority;
    int64_t policy_id;
    char *policy_refused; /* why the stored policy was not used, or NULL */
    int ncerts;
    json_t *cert_names;
    /* By index in cred: the libcrypto key of that certificate, or NULL
     * where GnuTLS holds it (tls_bundle_privkey). */
    struct tls_signer **signers;
    bool tickets;
    struct tls_ticket_keys keys;
    unsigned ticket_lifetime;
    char *hsts;
    char *dh_text; /* what tls_dh_load said it serves, JSON */
    struct tls_session_cache *cache;
    time_t staple_until; /* earliest serve_until of a loaded staple, 0 = none */
    /* tls-alpn-01 answers of the bundle's time (references held). */
    struct tls_alpn_cert **alpn;
    size_t nalpn;
    /* Credentials by address and by wildcard (tls_select.h). */
    struct tls_select select;
    /* The link in the list of bundles whose sessions need the
     * post-ClientHello callback (hello_bundles): with tls-alpn-01 answers,
     * wildcard certificates or ECDSA certificates on several curves. */
    bool listed;
    struct tlsbox_bundle *hello_next;
};

/* The third only in a bundle with tls-alpn-01 answers: an ACME validator
 * offers it alone (RFC 8737), so it never wins over the others. */
static const gnutls_datum_t alpn[] = {
    {(unsigned char *)"h2", 2},
    {(unsigned char *)"http/1.1", 8},
    {(unsigned char *)TLS_ALPN_ACME, sizeof(TLS_ALPN_ACME) - 1},
};

/*
 * Bundles whose sessions need the post-ClientHello callback, which GnuTLS
 * gives no pointer of ours: it finds the session's bundle by its
 * credentials.  The session's connection holds that bundle, so it is on the
 * list while the callback runs.  Few (the current one and those older
 * connections still hold), so a list.
 */
static pthread_mutex_t hello_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tlsbox_bundle *hello_bundles;

static _Atomic(struct tlsbox_bundle *) current;
/*
 * Readers between loading `current` and taking their reference, counted in
 * one of two slots chosen by the parity of `epoch`.  publish swaps the
 * pointer, flips the epoch (new readers count in the other slot) and waits
 * for the old slot to drain before dropping the old bundle's reference: a
 * stream of new readers can never hold it up.
 */
static atomic_uint_fast64_t epoch;
static atomic_long inflight[2];
static atomic_uint_fast64_t generations;
static atomic_long live;

static void hello_unlist(struct tlsbox_bundle *b)
{
    pthread_mutex_lock(&hello_lock);
    for (struct tlsbox_bundle **p = &hello_bundles; *p; p = &(*p)->hello_next) {
        if (*p == b) {
            *p = b->hello_next;
            break;
        }
    }
    pthread_mutex_unlock(&hello_lock);
}

static void bundle_free(struct tlsbox_bundle *b)
{
    if (b->listed)
        hello_unlist(b);
    for (size_t i = 0; i < b->nalpn; i++)
        tls_alpn_release(b->alpn[i]);
    free(b->alpn);
    tls_select_free(&b->select);
    if (b->cred)
        gnutls_certificate_free_credentials(b->cred);
    if (b->dh)
        gnutls_dh_params_deinit(b->dh);
    if (b->prio)
        gnutls_priority_deinit(b->prio);
    free(b->priority);
    free(b->policy_refused);
    json_decref(b->cert_names);
    for (int i = 0; b->signers && i < b->ncerts; i++)
        tls_signer_unref(b->signers[i]);
    free(b->signers);
    free(b->hsts);
    free(b->dh_text);
    tls_tickets_wipe(&b->keys);
    wipe_free(b, sizeof(*b));
    atomic_fetch_sub(&live, 1);
}

struct tlsbox_bundle *tls_bundle_acquire(void)
{
    uint_fast64_t e;
    for (;;) {
        e = atomic_load(&epoch);
        atomic_fetch_add(&inflight[e & 1], 1);
        if (atomic_load(&epoch) == e)
            break;
        atomic_fetch_sub(&inflight[e & 1], 1); /* raced with a publish: retry */
    }
    struct tlsbox_bundle *b = atomic_load(&current);
    if (b)
        atomic_fetch_add(&b->refs, 1);
    atomic_fetch_sub(&inflight[e & 1], 1);
    return b;
}

void tls_bundle_release(struct tlsbox_bundle *b)
{
    if (b && atomic_fetch_sub(&b->refs, 1) == 1)
        bundle_free(b);
}

void tls_bundle_publish(struct tlsbox_bundle *b)
{
    struct tlsbox_bundle *old = atomic_exchange(&current, b);
    uint_fast64_t e = atomic_fetch_add(&epoch, 1);
    /* Every reader that may have loaded `old` counted itself in slot e & 1
     * before checking the epoch; once the slot drains, each has its reference. */
    while (atomic_load(&inflight[e & 1]) != 0)
        sched_yield();
    tls_bundle_release(old);
}

long tls_bundle_live(void)
{
    return atomic_load(&live);
}

/*
 * ClientHello hook: note the client's curves for the certificate choice
 * after it (tls_hello.h).  And a ticket issued under the previous master key
 * gets that master for this session, so the weekly master change does not
 * cost every client a full handshake.  The keys come from the current bundle
 * (a master change publishes a new one, whose previous key is the old
 * current).
 */
static int on_client_hello(gnutls_session_t session, unsigned htype, unsigned when,
                           unsigned incoming, const gnutls_datum_t *msg)
{
    const unsigned char *t;
    size_t tn;
    struct tlsbox_bundle *b;

    tls_hello_note(session, htype, when, incoming, msg);
    if (!incoming || !msg || tls_tickets_in_client_hello(msg->data, msg->size, &t, &tn) < 0)
        return 0;
    b = tls_bundle_acquire();
    if (b && b->tickets && b->keys.have_previous &&
        !tls_tickets_issued_under(b->keys.current, b->ticket_lifetime, time(NULL), t, tn) &&
        tls_tickets_issued_under(b->keys.previous, b->ticket_lifetime, time(NULL), t, tn)) {
        gnutls_datum_t k = {b->keys.previous, TLS_TICKET_KEY_SIZE};
        gnutls_session_ticket_enable_server(session, &k);
    }
    tls_bundle_release(b);
    return 0;
}

/* The listed bundle @p cred belongs to (its own or by address or
 * wildcard), or NULL.  hello_lock held. */
static struct tlsbox_bundle *hello_find(const void *cred)
{
    for (struct tlsbox_bundle *b = hello_bundles; b; b = b->hello_next)
        if ((const void *)b->cred == cred || tls_select_owns(&b->select, cred))
            return b;
    return NULL;
}

/* The client's bytes in a log line: only what a host name may hold. */
static void log_safe(char *sni)
{
    for (char *c = sni; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '.' || *c == '-'))
            *c = '?';
}

/*
 * After the ClientHello is parsed (SNI and ALPN known, no certificate chosen
 * yet).  A client that negotiated acme-tls/1 gets the validation certificate
 * for the name it sent, from the credentials of its bundle's answer, or the
 * handshake fails (RFC 8737 section 3: no such answer, no certificate).
 * Any other client whose name only a wildcard certificate matches gets the
 * credentials that put that certificate first (GnuTLS matches exact names
 * only).
 */
static int on_post_client_hello(gnutls_session_t session)
{
    gnutls_datum_t p;
    char sni[256];
    size_t len = sizeof(sni) - 1;
    unsigned type = 0;
    void *cred = NULL;
    struct tls_alpn_cert *answer = NULL;
    bool acme = gnutls_alpn_get_selected_protocol(session, &p) == 0 &&
                p.size == sizeof(TLS_ALPN_ACME) - 1 && memcmp(p.data, TLS_ALPN_ACME, p.size) == 0;

    bool has_sni =
        gnutls_server_name_get(session, sni, &len, &type, 0) == 0 && type == GNUTLS_NAME_DNS;
    if (!has_sni && acme) {
        log_info("tls: an %s handshake without a server name: refused", TLS_ALPN_ACME);
        return GNUTLS_E_NO_CERTIFICATE_FOUND;
    }
    sni[has_sni ? len : 0] = 0;
    gnutls_credentials_get(session, GNUTLS_CRD_CERTIFICATE, &cred);
    pthread_mutex_lock(&hello_lock);
    struct tlsbox_bundle *b = hello_find(cred);
    if (b && !acme) {
        /* Without SNI, by address: chosen at setup. */
        gnutls_certificate_credentials_t w =
            has_sni ? tls_select_by_name(&b->select, b->cred, sni) : NULL;
        unsigned curves;
        if (tls_select_by_curve_needed(&b->select) && tls_hello_curves(session, &curves) == 0) {
            gnutls_certificate_credentials_t c =
                tls_select_by_curve(&b->select, b->cred, w ? w : cred, curves);
            if (c)
                w = c;
        }
        if (w && (void *)w != cred)
            gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, w);
    } else if (b) {
        answer = tls_alpn_find(b->alpn, b->nalpn, sni);
        if (answer)
            gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, answer->cred);
    }
    pthread_mutex_unlock(&hello_lock);
    if (!acme)
        return 0;
    if (!answer) {
        log_safe(sni);
        log_info("tls: an %s handshake for %.80s: no challenge waits for that name", TLS_ALPN_ACME,
                 sni);
        return GNUTLS_E_NO_CERTIFICATE_FOUND;
    }
    log_info("tls: answered the tls-alpn-01 challenge for %s", answer->ident);
    return 0;
}

int tls_bundle_privkey(const struct tlsbox_bundle *b, unsigned idx, gnutls_privkey_t *out)
{
    *out = NULL;
    if (!b || idx >= (unsigned)b->ncerts)
        return -ENOENT;
    if (b->signers[idx])
        return tls_signer_privkey(b->signers[idx], out);
    gnutls_x509_privkey_t xkey = NULL;
    if (gnutls_certificate_get_x509_key(b->cred, idx, &xkey) < 0)
        return -ENOENT;
    if (gnutls_privkey_init(out) < 0 ||
        gnutls_privkey_import_x509(*out, xkey, GNUTLS_PRIVKEY_IMPORT_AUTO_RELEASE) < 0) {
        gnutls_privkey_deinit(*out); /* NULL-safe */
        gnutls_x509_privkey_deinit(xkey);
        *out = NULL;
        return -ENOMEM;
    }
    return 0;
}

gnutls_certificate_credentials_t tls_bundle_credentials(const struct tlsbox_bundle *b)
{
    return b->cred;
}

gnutls_priority_t tls_bundle_priority(const struct tlsbox_bundle *b)
{
    return b->prio;
}

int tls_bundle_session_address(const struct tlsbox_bundle *b, gnutls_session_t session, int fd)
{
    if (!b)
        return -EINVAL;
    if (!tls_select_by_address_needed(&b->select)) /* the common case: no syscall */
        return 0;
    struct tls_addr a;
    int r = tls_addr_local(fd, &a);
    if (r < 0)
        return r == -EAFNOSUPPORT ? 0 : r;
    gnutls_certificate_credentials_t cred = tls_select_by_address(&b->select, &a);
    if (cred && gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, cred) < 0)
        return -EIO;
    return 0;
}

int tls_bundle_session_setup(const struct tlsbox_bundle *b, gnutls_session_t session)
{
    int r;
    if (!b)
        return -EINVAL;
    if ((r = gnutls_priority_set(session, b->prio)) < 0 ||
        (r = gnutls_credentials_set(session, GNUTLS_CRD_CERTIFICATE, b->cred)) < 0)
        goto fail;
    gnutls_certificate_server_set_request(session, GNUTLS_CERT_IGNORE);
    if (b->tickets) {
        gnutls_datum_t k = {(unsigned char *)b->keys.current, TLS_TICKET_KEY_SIZE};
        if ((r = gnutls_session_ticket_enable_server(session, &k)) < 0)
            goto fail;
    }
    if ((b->tickets && b->keys.have_previous) || tls_select_by_curve_needed(&b->select))
        gnutls_handshake_set_hook_function(session, GNUTLS_HANDSHAKE_CLIENT_HELLO, GNUTLS_HOOK_PRE,
                                           on_client_hello);
    /* Ticket lifetime, session-cache lifetime and GnuTLS's key step (three
     * times this): see tls_tickets.h. */
    gnutls_db_set_cache_expiration(session, (int)b->ticket_lifetime);
    if (b->cache)
        tls_session_cache_attach(b->cache, session);
    if ((r = gnutls_alpn_set_protocols(session, alpn, b->nalpn ? 3 : 2,
                                       GNUTLS_ALPN_SERVER_PRECEDENCE)) < 0)
        goto fail;
    if (b->listed)
        gnutls_handshake_set_post_client_hello_function(session, on_post_client_hello);
    return 0;
fail:
    log_warn("tls: session setup: %s", gnutls_strerror(r));
    return -EIO;
}

const char *tls_bundle_hsts(const struct tlsbox_bundle *b)
{
    return b ? b->hsts : NULL;
}

uint64_t tls_bundle_generation(const struct tlsbox_bundle *b)
{
    return b ? b->generation : 0;
}

time_t tls_bundle_staple_until(const struct tlsbox_bundle *b)
{
    return b ? b->staple_until : 0;
}

json_t *tls_bundle_describe(const struct tlsbox_bundle *b)
{
    if (!b)
        return json_null();
    json_t *dh = b->dh_text ? json_loads(b->dh_text, 0, NULL) : NULL;
    json_t *alpn_names = json_array();
    for (size_t i = 0; i < b->nalpn; i++)
        json_array_append_new(alpn_names, json_string(b->alpn[i]->ident));
    /* A copy of the certificate names, not a reference: the description
     * outlives the caller's reference to the bundle (an API reply is written
     * after it is released), and a publish on another thread may free the
     * bundle meanwhile.  Shared, the array's last reference would be dropped
     * through jansson's count, which orders nothing for the thread that then
     * frees it (its decrement is a release only): the reply read the names
     * as that thread wiped and freed them. */
    /* The certificates whose handshake signature libcrypto makes
     * (core/tls_sign.h); the rest GnuTLS signs. */
    json_t *by_libcrypto = json_array();
    for (int i = 0; i < b->ncerts; i++)
        if (b->signers[i])
            json_array_append_new(by_libcrypto, json_string(json_string_value(
                                                    json_array_get(b->cert_names, (size_t)i))));
    return json_pack("{s:I, s:o, s:o, s:s, s:I, s:s?, s:b, s:s?, s:o, s:o, s:o, s:o}", "generation",
                     (json_int_t)b->generation, "certificates", json_deep_copy(b->cert_names),
                     "signed_by_libcrypto", by_libcrypto, "priority", b->priority, "policy_id",
                     (json_int_t)b->policy_id, "policy_refused", b->policy_refused, "tickets",
                     b->tickets, "hsts", b->hsts, "dh", dh ? dh : json_null(),
                     "tls_alpn_challenges", alpn_names, "certificates_by_address",
                     tls_select_describe_addresses(&b->select), "certificates_by_wildcard",
                     tls_select_describe_wildcards(&b->select));
}

const char *tls_bundle_dh_text(const struct tlsbox_bundle *b)
{
    return b ? b->dh_text : NULL;
}

const char *tls_bundle_policy_refused(const struct tlsbox_bundle *b)
{
    return b ? b->policy_refused : NULL;
}

int64_t tls_bundle_policy_id(const struct tlsbox_bundle *b)
{
    return b ? b->policy_id : 0;
}

/* Load the OCSP staple of @p name into certificate @p idx while it may be
 * served; remember the earliest end so the core can rebuild at that moment. */
static void load_staple(sqlite3 *db, struct tlsbox_bundle *b, gnutls_certificate_credentials_t cred,
                        const char *name, int idx, time_t now)
{
    gnutls_datum_t der = {NULL, 0};
    time_t until = 0;
    if (tls_staple_load(db, name, now, &der, &until) < 0)
        return;
    /* GnuTLS checks the CertID against the chain and refuses a response past
     * nextUpdate (it returns 1, not 0, on success). */
    int r = gnutls_certificate_set_ocsp_status_request_mem(cred, &der, (unsigned)idx,
                                                           GNUTLS_X509_FMT_DER);
    if (r < 0)
        log_info("tls: OCSP staple of %s not used: %s", name, gnutls_strerror(r));
    else if (b->staple_until == 0 || until < b->staple_until)
        b->staple_until = until;
    gnutls_free(der.data);
}

/* An active certificate of an allowed type, read once and loaded into each
 * credentials that serve it. */
struct cert_row {
    char *name;
    gnutls_datum_t chain, key; /* copies; the key wiped when freed */
    char *sans;                /* JSON: its DNS names and addresses */
    char *key_type;            /* "ecdsa-p256", ... */
    struct tls_signer *signer; /* libcrypto's copy of the key, or NULL */
};

static void rows_free(struct cert_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(rows[i].name);
        free(rows[i].chain.data);
        free(rows[i].sans);
        free(rows[i].key_type);
        tls_signer_unref(rows[i].signer);
        wipe_free(rows[i].key.data, rows[i].key.size);
    }
    free(rows);
}

static gnutls_datum_t datum_copy(const void *p, int n)
{
    gnutls_datum_t d = {xmalloc((size_t)n + 1), (unsigned)n};
    memcpy(d.data, p, (size_t)n);
    d.data[n] = 0;
    return d;
}

/* Load @p r into @p cred with a key that libcrypto signs for
 * (core/tls_sign.h): its index in @p cred, or -1 when the key is not one it
 * takes or GnuTLS refused the pair (*refused then says why); the caller
 * then loads it the usual way. */
static int load_row_fast_sign(gnutls_certificate_credentials_t cred, const struct cert_row *r,
                              int *refused)
{
    gnutls_privkey_t key;
    *refused = 0;
    if (!r->signer || tls_signer_privkey(r->signer, &key) < 0)
        return -1;
    gnutls_pcert_st pcerts[16]; /* a longer chain is left to GnuTLS's loader */
    unsigned n = 16;
    if (gnutls_pcert_list_import_x509_raw(pcerts, &n, &r->chain, GNUTLS_X509_FMT_PEM, 0) < 0) {
        gnutls_privkey_deinit(key);
        return -1;
    }
    /* Takes the key and the certificates on success only.  It signs once
     * and verifies that with the certificate's key, so a pair that does
     * not match, or a libcrypto that signs wrongly, never serves. */
    int idx = gnutls_certificate_set_key(cred, NULL, 0, pcerts, (int)n, key);
    if (idx < 0) {
        for (unsigned i = 0; i < n; i++)
            gnutls_pcert_deinit(&pcerts[i]);
        gnutls_privkey_deinit(key);
        *refused = idx;
        return -1;
    }
    return idx;
}

/* Load @p r into @p cred, with its staple; 0 or -EIO with *err. */
static int load_row(sqlite3 *db, struct tlsbox_bundle *b, gnutls_certificate_credentials_t cred,
                    const struct cert_row *r, bool staple, time_t now, char **err)
{
    gnutls_datum_t chain = r->chain, key = r->key;
    int refused;
    int idx = load_row_fast_sign(cred, r, &refused);
    bool fast = idx >= 0;
    if (!fast) {
        idx =
            gnutls_certificate_set_x509_key_mem2(cred, &chain, &key, GNUTLS_X509_FMT_PEM, NULL, 0);
        /* GnuTLS's own key works where libcrypto's did not: say so, as the
         * handshakes of this certificate now cost more. */
        if (idx >= 0 && refused < 0)
            log_warn("tls: certificate %s: libcrypto's signature refused (%s); GnuTLS signs",
                     r->name, gnutls_strerror(refused));
    }
    if (idx < 0) {
        *err = xasprintf("certificate %s: %s", r->name, gnutls_strerror(idx));
        return -EIO;
    }
    if (fast && cred == b->cred && idx == b->ncerts)
        b->signers[idx] = tls_signer_ref(r->signer);
    if (staple)
        load_staple(db, b, cred, r->name, idx, now);
    return 0;
}

/* tls_select_build's loader: row @p i of the bundle being built. */
struct load_ctx {
    sqlite3 *db;
    struct tlsbox_bundle *b;
    const struct cert_row *rows;
    bool staple;
    time_t now;
};

static int load_select_row(void *arg, gnutls_certificate_credentials_t cred, size_t i, char **err)
{
    struct load_ctx *c = arg;
    return load_row(c->db, c->b, cred, &c->rows[i], c->staple, c->now, err);
}

static int load_certs(sqlite3 *db, struct tlsbox_bundle *b, json_t *policy, time_t now, char **err)
{
    sqlite3_stmt *st = NULL;
    struct cert_row *rows = NULL;
    size_t n = 0;
    int rc = -EIO;
    bool staple = json_is_true(json_object_get(policy, "ocsp_stapling"));
    /* Order decides the pick when several fit a client: valid before
     * expired, then ECDSA, Ed25519, RSA (GnuTLS takes the first that fits,
     * so ECDSA must come first for dual certificates), then a real
     * certificate before the internal one, then one with an IP address
     * among its names: a client that connects by address sends no SNI
     * (RFC 6066 allows no address there) and gets the first, unless
     * tls_select made credentials for the address it reached. */
    if (sqlite3_prepare_v2(db,
                           "SELECT name, chain_pem, key_pem, key_type, sans FROM certificates "
                           "WHERE status = 'active' ORDER BY (not_after < ?), "
                           "CASE WHEN key_type LIKE 'ecdsa%' THEN 0 "
                           "WHEN key_type = 'ed25519' THEN 1 ELSE 2 END, "
                           "(source = 'internal'), "
                           "NOT EXISTS (SELECT 1 FROM json_each(CASE WHEN json_valid(sans) "
                           "THEN sans ELSE '[]' END) WHERE value GLOB '*:*' "
                           "OR (value GLOB '[0-9]*.[0-9]*.[0-9]*.[0-9]*' "
                           "AND value NOT GLOB '*[^0-9.]*')), name",
                           -1, &st, NULL) != SQLITE_OK) {
        *err = xasprintf("store: %s", sqlite3_errmsg(db));
        goto out;
    }
    sqlite3_bind_int64(st, 1, (sqlite3_int64)now);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *type = (const char *)sqlite3_column_text(st, 3);
        if (!tls_policy_key_type_allowed(policy, type))
            continue;
        rows = xrealloc(rows, (n + 1) * sizeof(*rows));
        struct cert_row *r = &rows[n++];
        r->name = xstrdup((const char *)sqlite3_column_text(st, 0));
        r->chain = datum_copy(sqlite3_column_text(st, 1), sqlite3_column_bytes(st, 1));
        r->key = datum_copy(sqlite3_column_blob(st, 2), sqlite3_column_bytes(st, 2));
        const char *sans = (const char *)sqlite3_column_text(st, 4);
        r->sans = xstrdup(sans ? sans : "[]");
        r->key_type = type ? xstrdup(type) : NULL;
        /* One libcrypto copy of the key for every credentials that serve it. */
        r->signer = NULL;
        tls_signer_load(&r->key, &r->signer);
        b->signers = xrealloc(b->signers, (size_t)(b->ncerts + 1) * sizeof(*b->signers));
        b->signers[b->ncerts] = NULL;
        if ((rc = load_row(db, b, b->cred, r, staple, now, err)) < 0)
            goto out;
        json_array_append_new(b->cert_names, json_string(r->name));
        b->ncerts++;
    }
    if (b->ncerts == 0) {
        *err = xstrdup("no active certificate of an allowed key type (policy key_types)");
        rc = -ENOENT;
        goto out;
    }
    struct tls_select_cert *sel = xcalloc(n, sizeof(*sel));
    for (size_t i = 0; i < n; i++)
        sel[i] = (struct tls_select_cert){rows[i].name, rows[i].sans, rows[i].key_type};
    struct load_ctx ctx = {db, b, rows, staple, now};
    tls_select_build(&b->select, sel, n, load_select_row, &ctx);
    free(sel);
    rc = 0;
out:
    sqlite3_finalize(st);
    rows_free(rows, n);
    return rc;
}

/*
 * The stored policy no longer compiles: a newer tlsbox refuses more (MD5
 * signatures, flags that turn protections off).  Taking HTTPS down after a
 * package upgrade would punish the admin for what the old version allowed,
 * so the default policy serves until another is set; the log says so at
 * each rebuild and the bundle's description names the refusal (*err, taken
 * over here).  -EINVAL only when the default does not compile either.
 */
static int fall_back_to_default(struct tlsbox_bundle *b, json_t **policy, char **err)
{
    json_t *def = tls_policy_default();
    char *err2 = NULL;
    b->priority = def ? tls_policy_compile(def, &b->prio, &err2) : NULL;
    if (!b->priority) {
        json_decref(def);
        free(err2);
        return -EINVAL;
    }
    log_err("tls: stored policy version %lld is refused (%s); serving the default "
            "policy until another is set",
            (long long)b->policy_id, *err ? *err : "?");
    b->policy_refused = *err;
    *err = NULL;
    json_decref(*policy);
    *policy = def;
    return 0;
}

int tls_bundle_build(sqlite3 *db, time_t now, struct tls_session_cache *cache,
                     struct tlsbox_bundle **out, char **err)
{
    json_t *policy = NULL, *dh = NULL;
    int rc;
    *out = NULL;
    *err = NULL;

    struct tlsbox_bundle *b = xcalloc(1, sizeof(*b));
    atomic_init(&b->refs, 1);
    atomic_fetch_add(&live, 1);
    b->cert_names = json_array();
    b->cache = cache;

    rc = tls_policy_store_active(db, &policy, &b->policy_id, NULL);
    if (rc < 0) {
        *err = xstrdup(rc == -ENOENT ? "no active TLS policy" : "cannot read the active policy");
        goto fail;
    }
    /* Compile again rather than trusting the stored string: the GnuTLS
     * library may have changed under an old row. */
    b->priority = tls_policy_compile(policy, &b->prio, err);
    if (!b->priority && (rc = fall_back_to_default(b, &policy, err)) < 0)
        goto fail;
    if ((rc = gnutls_certificate_allocate_credentials(&b->cred)) < 0) {
        *err = xasprintf("credentials: %s", gnutls_strerror(rc));
        rc = -ENOMEM;
        goto fail;
    }
    /* API v2: set_x509_key_* return the index that OCSP loading needs. */
    gnutls_certificate_set_flags(b->cred, GNUTLS_CERTIFICATE_API_V2);
    if ((rc = load_certs(db, b, policy, now, err)) < 0)
        goto fail;
    dh = tls_dh_load(db, b->cred, policy, b->prio, &b->dh);
    tls_select_set_dh(&b->select, b->dh); /* the same parameters for all credentials */

    b->tickets = json_is_true(json_object_get(policy, "tickets"));
    if (b->tickets) {
        rc = tls_tickets_load(db, &b->keys);
        if (rc < 0) {
            *err = xstrdup(rc == -ENOENT ? "no session ticket key stored"
                                         : "cannot read the session ticket keys");
            goto fail;
        }
    }
    /* GnuTLS steps its ticket key every 3 x expire_time: one step per period. */
    b->ticket_lifetime =
        (unsigned)json_integer_value(json_object_get(policy, "ticket_rotation_hours")) * 1200;
    b->hsts = tls_policy_hsts(policy);
    b->nalpn = tls_alpn_snapshot(&b->alpn);
    if (b->nalpn || tls_select_by_name_needed(&b->select) ||
        tls_select_by_curve_needed(&b->select)) {
        pthread_mutex_lock(&hello_lock);
        b->hello_next = hello_bundles;
        hello_bundles = b;
        b->listed = true;
        pthread_mutex_unlock(&hello_lock);
    }
    b->generation = atomic_fetch_add(&generations, 1) + 1;
    json_object_set_new(dh, "bundle", json_integer((json_int_t)b->generation));
    b->dh_text = json_dumps(dh, JSON_COMPACT);
    json_decref(dh);
    json_decref(policy);
    *out = b;
    return 0;
fail:
    json_decref(dh);
    json_decref(policy);
    tls_bundle_release(b);
    return rc < 0 ? rc : -EIO;
}
