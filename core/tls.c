/* The TLS part of the core: start/stop, rebuilding the bundle on events,
 * the ticket-rotation and internal-leaf timers, certificate installation. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/events.h"
#include "core/jobs.h"
#include "core/log.h"
#include "core/plugin_loader.h"
#include "core/settings.h"
#include "core/store.h"
#include "core/tls.h"
#include "core/tls_alpn.h"
#include "core/tls_api.h"
#include "core/tls_bundle.h"
#include "core/tls_ca.h"
#include "core/tls_cert.h"
#include "core/tls_policy.h"
#include "core/tls_policy_store.h"
#include "core/tls_session_cache.h"
#include "core/tls_tickets.h"
#include "core/xalloc.h"

#define SESSION_CACHE_ENTRIES 4096
#define SESSION_CACHE_LIFETIME 21600 /* GnuTLS's default session expiry */
#define TICKET_CHECK_MS (3600 * 1000ULL)
#define LEAF_CHECK_MS (6 * 3600 * 1000ULL)

static struct tls_session_cache *cache;
static pthread_mutex_t rebuild_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *const watched[] = {"cert.changed", "ocsp.changed", "dh.changed",
                                      "policy.changed", "settings.changed"};
static int64_t subs[sizeof(watched) / sizeof(watched[0])];
static int64_t ticket_timer, leaf_timer;
/* One-shot: rebuild when the earliest staple must stop being served, so a
 * staple leaves the bundle on time even if no plugin asks. */
static int64_t staple_timer;
static bool tls_running;

char *tls_hostname(void)
{
    char *h = settings_get("core.hostname");
    if (h && *h)
        return h;
    free(h);
    char buf[256];
    if (gethostname(buf, sizeof(buf)) == 0 && buf[0]) {
        buf[sizeof(buf) - 1] = 0;
        return xstrdup(buf);
    }
    return xstrdup("localhost");
}

static void on_staple_expiry(void *arg, struct tlsbox_job *job)
{
    (void)arg;
    (void)job;
    tls_rebuild(NULL, "OCSP staple expiry");
}

/* Under rebuild_lock, after publishing a bundle whose staples end at @p until. */
static void staple_timer_set(time_t until)
{
    if (staple_timer > 0)
        timers_cancel(staple_timer);
    staple_timer = 0;
    if (until <= 0 || !tls_running)
        return;
    time_t now = time(NULL);
    uint64_t ms = until > now ? (uint64_t)(until - now) * 1000 + 200 : 200;
    staple_timer = timers_add(core_self(), "tls.staple-expiry", ms, 0, 0, on_staple_expiry, NULL);
}

/* Seconds before a rebuild that failed with a staple due to go is tried again. */
#define STAPLE_RETRY_SECONDS 60

/* Under rebuild_lock, after a failed rebuild: the bundle in service stays,
 * staples included.  When one of them is due to go, the expiry timer has
 * fired already, and without another nothing would drop it: try again. */
static void staple_retry_if_due(void)
{
    struct tlsbox_bundle *cur = tls_bundle_acquire();
    time_t until = tls_bundle_staple_until(cur), now = time(NULL);
    tls_bundle_release(cur);
    if (until > 0 && until <= now)
        staple_timer_set(now + STAPLE_RETRY_SECONDS);
}

int tls_rebuild(sqlite3 *db, const char *why)
{
    struct tlsbox_bundle *b = NULL;
    char *err = NULL;
    sqlite3 *own = NULL;
    int rc;

    pthread_mutex_lock(&rebuild_lock);
    if (!db)
        db = own = store_connect();
    if (!db) {
        log_err("tls: rebuild after %s: no store connection; keeping the current bundle", why);
        staple_retry_if_due();
        rc = -EIO;
        goto out;
    }
    rc = tls_bundle_build(db, time(NULL), cache, &b, &err);
    if (rc < 0) {
        struct tlsbox_bundle *cur = tls_bundle_acquire();
        log_err("tls: rebuild after %s failed, keeping bundle %llu: %s", why,
                (unsigned long long)tls_bundle_generation(cur), err);
        tls_bundle_release(cur);
        staple_retry_if_due();
        goto out;
    }
    json_t *d = tls_bundle_describe(b);
    char *txt = json_dumps(json_object_get(d, "certificates"), JSON_COMPACT);
    char *fast = json_dumps(json_object_get(d, "signed_by_libcrypto"), JSON_COMPACT);
    log_info("tls: bundle %llu after %s: certificates %s (libcrypto signs for %s), priority %s",
             (unsigned long long)tls_bundle_generation(b), why, txt, fast,
             json_string_value(json_object_get(d, "priority")));
    free(fast);
    free(txt);
    json_decref(d);
    time_t until = tls_bundle_staple_until(b);
    tls_bundle_publish(b);
    staple_timer_set(until);
out:
    if (own)
        store_disconnect(own);
    pthread_mutex_unlock(&rebuild_lock);
    free(err);
    return rc;
}

/* Check (and reissue) the internal leaf; publish cert.changed when issued. */
static int leaf_check(sqlite3 *db, bool want_leaf)
{
    char *host = tls_hostname(), *err = NULL;
    json_t *names = tls_ca_local_names(host);
    bool issued = false;
    int rc = tls_ca_ensure(db, host, names, time(NULL), want_leaf, &issued, &err);
    if (rc < 0)
        log_err("tls: %s", err);
    else if (issued) {
        log_info("tls: internal CA issued a new leaf for %s", host);
        events_publish("cert.changed", "{\"name\":\"" TLS_CA_LEAF_NAME "\"}");
    }
    free(err);
    free(host);
    json_decref(names);
    return rc;
}

static void on_leaf_timer(void *arg, struct tlsbox_job *job)
{
    (void)arg;
    (void)job;
    sqlite3 *db = store_connect();
    if (!db)
        return;
    leaf_check(db, false);
    store_disconnect(db);
}

/* Replace the master key once it is TLS_TICKET_MASTER_HOURS old, judged by
 * its stored creation time so a restart neither resets nor skips it.  The
 * per-period rotation itself happens inside GnuTLS (see tls_tickets.h). */
static int tickets_check(sqlite3 *db, bool *rotated)
{
    char *err = NULL;
    int rc =
        tls_tickets_rotate(db, time(NULL), TLS_TICKET_MASTER_HOURS * 3600, false, rotated, &err);
    if (rc < 0)
        log_err("tls: %s", err);
    else if (*rotated)
        log_info("tls: new session ticket master key");
    free(err);
    return rc;
}

static void on_ticket_timer(void *arg, struct tlsbox_job *job)
{
    (void)arg;
    (void)job;
    bool rotated = false;
    sqlite3 *db = store_connect();
    if (!db)
        return;
    if (tickets_check(db, &rotated) == 0 && rotated)
        tls_rebuild(db, "ticket key rotation");
    store_disconnect(db);
}

static void on_event(void *arg, const char *event, const char *data)
{
    (void)arg;
    if (strcmp(event, "settings.changed") == 0) {
        /* A new host name needs a new internal leaf (which then publishes
         * cert.changed); key generation is quick but not for this thread. */
        if (data && strstr(data, "\"core.hostname\""))
            jobs_submit(core_self(), "tls.internal-leaf", on_leaf_timer, NULL, NULL);
        return;
    }
    tls_rebuild(NULL, event);
}

static const char *source_name(enum tlsbox_cert_source s)
{
    switch (s) {
    case TLSBOX_CERT_INTERNAL:
        return "internal";
    case TLSBOX_CERT_ACME:
        return "acme";
    default:
        return "import";
    }
}

int tls_cert_install_as(const char *actor, const struct tlsbox_cert_install *in, char **name_out,
                        char **err)
{
    struct tls_cert_info info;
    char *name = NULL;
    sqlite3 *db = NULL;
    int rc;

    *err = NULL;
    if (name_out)
        *name_out = NULL;
    if (!in || in->source >= TLSBOX_CERT_SOURCE_MAX) {
        *err = xstrdup("certificate install: bad request");
        return -EINVAL;
    }
    if ((rc = tls_cert_check(in->chain_pem, in->key_pem, time(NULL), &info, err)) < 0)
        return rc;
    if (in->name && *in->name) {
        name = xstrdup(in->name);
    } else {
        /* Default: the first name, with "-rsa" so an RSA certificate can sit
         * next to the ECDSA one of the same name. */
        const char *base =
            info.first_name && tls_cert_name_ok(info.first_name) ? info.first_name : "imported";
        name = xasprintf("%s%s", base, strcmp(info.family, "rsa") == 0 ? "-rsa" : "");
    }
    rc = -EINVAL;
    if (!tls_cert_name_ok(name)) {
        *err = xasprintf("certificate name '%s' is not valid (1-128 of A-Z a-z 0-9 . - _ *)", name);
        goto out;
    }
    if (strcmp(name, TLS_CA_LEAF_NAME) == 0 && in->source != TLSBOX_CERT_INTERNAL) {
        *err = xstrdup("certificate name 'internal' is reserved for the internal CA's leaf");
        goto out;
    }
    if (in->meta_json) {
        json_t *m = json_loads(in->meta_json, 0, NULL);
        bool obj = json_is_object(m);
        json_decref(m);
        if (!obj) {
            *err = xstrdup("certificate install: meta_json is not a JSON object");
            goto out;
        }
    }
    rc = -EIO;
    if (!(db = store_connect())) {
        *err = xstrdup("store: cannot open a connection");
        goto out;
    }
    if ((rc = tls_cert_store(db, name, &info, in->key_pem, source_name(in->source), in->ari_id,
                             in->meta_json, actor, err)) < 0)
        goto out;
    log_info("tls: installed certificate %s (%s, %s, serial %s, from %s)", name, info.key_type,
             info.first_name ? info.first_name : "-", info.serial, source_name(in->source));
    json_t *ev = json_pack("{s:s, s:s}", "name", name, "source", source_name(in->source));
    char *evs = json_dumps(ev, JSON_COMPACT);
    events_publish("cert.changed", evs);
    free(evs);
    json_decref(ev);
    if (name_out) {
        *name_out = name;
        name = NULL;
    }
    rc = 0;
out:
    if (db)
        store_disconnect(db);
    tls_cert_info_clear(&info);
    free(name);
    return rc;
}

int tls_cert_install(struct tlsbox_plugin *self, const struct tlsbox_cert_install *in, char **err)
{
    return tls_cert_install_as(self && self->name ? self->name : "plugin", in, NULL, err);
}

char *tls_cert_list_json(struct tlsbox_plugin *self)
{
    (void)self;
    sqlite3 *db = store_connect();
    if (!db)
        return NULL;
    json_t *list = tls_cert_list(db, time(NULL));
    store_disconnect(db);
    char *out = list ? json_dumps(list, JSON_COMPACT) : NULL;
    json_decref(list);
    return out;
}

/* The element of @p list named @p name, dumped (caller frees), or NULL. */
static char *cert_entry_json(json_t *list, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        const char *n = json_string_value(json_object_get(e, "name"));
        if (n && strcmp(n, name) == 0)
            return json_dumps(e, JSON_COMPACT);
    }
    return NULL;
}

int tls_cert_get(struct tlsbox_plugin *self, const char *name, char **chain_pem, char **info_json)
{
    (void)self;
    *chain_pem = NULL;
    if (info_json)
        *info_json = NULL;
    if (!name)
        return -ENOENT;
    sqlite3 *db = store_connect();
    if (!db)
        return -EIO;
    int rc = tls_cert_chain(db, name, chain_pem);
    if (rc == 0 && info_json) {
        json_t *list = tls_cert_list(db, time(NULL));
        *info_json = list ? cert_entry_json(list, name) : NULL;
        json_decref(list);
        if (!*info_json) {
            free(*chain_pem);
            *chain_pem = NULL;
            rc = -EIO;
        }
    }
    store_disconnect(db);
    return rc;
}

int tls_alpn_challenge_put(struct tlsbox_plugin *self, const char *identifier,
                           const unsigned char digest[32])
{
    char *err = NULL, *why;
    int rc;
    if (!identifier || !digest)
        return -EINVAL;
    /* A key the policy can sign with: the validator's handshake uses it. */
    struct tlsbox_bundle *cur = tls_bundle_acquire();
    gnutls_pk_algorithm_t pk = tls_alpn_key_for(cur ? tls_bundle_priority(cur) : NULL);
    tls_bundle_release(cur);
    if (pk == GNUTLS_PK_UNKNOWN) {
        log_warn("tls: %s: no tls-alpn-01 answer for \"%.80s\": the TLS policy's signature "
                 "algorithms have no ECDSA or RSA one, so no validation certificate could be "
                 "served (add one to sigalgs, or use http-01 or dns-01)",
                 self ? self->name : "core", identifier);
        return -ENOTSUP;
    }
    rc = tls_alpn_put(identifier, digest, pk, time(NULL), &err);
    if (rc < 0) {
        log_warn("tls: %s: no tls-alpn-01 answer for \"%.80s\": %s", self ? self->name : "core",
                 identifier, err);
        free(err);
        return rc;
    }
    log_info("tls: tls-alpn-01 validation certificate for %s: %s", identifier,
             pk == GNUTLS_PK_RSA ? "rsa-2048" : "ecdsa-p256");
    why = xasprintf("tls-alpn-01 answer for %s", identifier);
    rc = tls_rebuild(NULL, why);
    free(why);
    if (rc < 0) {
        /* Not served: the caller must not tell the CA to look. */
        tls_alpn_del(identifier);
        return -EIO;
    }
    return 0;
}

int tls_alpn_challenge_del(struct tlsbox_plugin *self, const char *identifier)
{
    (void)self;
    if (!identifier || tls_alpn_del(identifier) < 0)
        return -ENOENT;
    char *why = xasprintf("tls-alpn-01 answer for %s withdrawn", identifier);
    tls_rebuild(NULL, why);
    free(why);
    return 0;
}

int tls_start(void)
{
    sqlite3 *db = store_main();
    char *err = NULL;
    bool rotated;
    int rc = -EIO;

    if (!db) {
        log_err("tls: no store");
        return -ENODEV;
    }
    if (tls_policy_store_ensure_default(db, &err) < 0) {
        log_err("tls: %s", err);
        goto out;
    }
    if (tickets_check(db, &rotated) < 0)
        goto out;
    /* The internal CA serves when nothing else exists, so a LAN box works
     * out of the box; an existing internal leaf is renewed here too. */
    if (leaf_check(db, !tls_cert_any(db)) < 0)
        goto out;
    if (!cache)
        cache = tls_session_cache_new(SESSION_CACHE_ENTRIES, SESSION_CACHE_LIFETIME);
    tls_running = true;
    /* A first bundle that cannot be built (a stored policy a newer tlsbox
     * refuses, no certificate of an allowed key type) leaves HTTPS down, but
     * the events, timers and routes start anyway: `tlsboxctl policy` and
     * `cert import` are how it is fixed, and their change rebuilds. */
    int built = tls_rebuild(db, "start");
    for (size_t i = 0; i < sizeof(watched) / sizeof(watched[0]); i++)
        subs[i] = events_subscribe(core_self(), watched[i], on_event, NULL);
    ticket_timer = timers_add(core_self(), "tls.ticket-rotation", TICKET_CHECK_MS, TICKET_CHECK_MS,
                              60 * 1000, on_ticket_timer, NULL);
    leaf_timer = timers_add(core_self(), "tls.internal-leaf", LEAF_CHECK_MS, LEAF_CHECK_MS,
                            10 * 60 * 1000, on_leaf_timer, NULL);
    tls_api_register();
    rc = built < 0 ? built : 0;
out:
    free(err);
    return rc;
}

void tls_stop(void)
{
    for (size_t i = 0; i < sizeof(watched) / sizeof(watched[0]); i++) {
        if (subs[i] > 0)
            events_unsubscribe(subs[i]);
        subs[i] = 0;
    }
    if (ticket_timer > 0)
        timers_cancel(ticket_timer);
    if (leaf_timer > 0)
        timers_cancel(leaf_timer);
    ticket_timer = leaf_timer = 0;
    pthread_mutex_lock(&rebuild_lock);
    tls_running = false;
    staple_timer_set(0);
    tls_bundle_publish(NULL);
    pthread_mutex_unlock(&rebuild_lock);
    tls_alpn_clear();
    /* Bundles still referenced point at the cache: a leak beats a crash. */
    if (tls_bundle_live() == 0) {
        tls_session_cache_free(cache);
        cache = NULL;
    } else {
        log_warn("tls: %ld bundle(s) still referenced at stop", tls_bundle_live());
    }
}
