/* See mock_host.h. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_host.h"

extern const struct tlsbox_plugin_desc tlsbox_plugin_descriptor;

/* ---- settings ---------------------------------------------------------------- */

static struct {
    char *key, *value;
} overrides[64];
static int noverrides;

void mock_set(const char *key, const char *value)
{
    for (int i = 0; i < noverrides; i++)
        if (strcmp(overrides[i].key, key) == 0) {
            free(overrides[i].value);
            overrides[i].value = strdup(value);
            return;
        }
    if (noverrides < 64) {
        overrides[noverrides].key = strdup(key);
        overrides[noverrides++].value = strdup(value);
    }
}

static const char *lookup(const char *key)
{
    if (strncmp(key, "site.", 5) == 0)
        key += 5;
    for (int i = 0; i < noverrides; i++)
        if (strcmp(overrides[i].key, key) == 0)
            return overrides[i].value;
    for (const struct tlsbox_setting_def *d = tlsbox_plugin_descriptor.settings; d && d->key; d++)
        if (strcmp(d->key, key) == 0)
            return d->default_value;
    return NULL;
}

static char *m_setting_get(struct tlsbox_plugin *self, const char *key)
{
    const char *v = lookup(key);
    return v ? strdup(v) : NULL;
}

static long long m_setting_get_int(struct tlsbox_plugin *self, const char *key, long long dflt)
{
    const char *v = lookup(key);
    char *end;
    long long r;
    if (!v)
        return dflt;
    r = strtoll(v, &end, 10);
    return *end ? dflt : r;
}

static bool m_setting_get_bool(struct tlsbox_plugin *self, const char *key, bool dflt)
{
    const char *v = lookup(key);
    if (!v)
        return dflt;
    return strcmp(v, "true") == 0 || strcmp(v, "1") == 0 || strcmp(v, "on") == 0;
}

/* ---- log ------------------------------------------------------------------------ */

static void m_vlog(struct tlsbox_plugin *self, enum tlsbox_log_level level, const char *fmt,
                   va_list ap) __attribute__((format(printf, 3, 0)));
static void m_vlog(struct tlsbox_plugin *self, enum tlsbox_log_level level, const char *fmt,
                   va_list ap)
{
    fprintf(stderr, "[%d] ", level);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void m_log(struct tlsbox_plugin *self, enum tlsbox_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void m_log(struct tlsbox_plugin *self, enum tlsbox_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    m_vlog(self, level, fmt, ap);
    va_end(ap);
}

/* ---- metrics ---------------------------------------------------------------------- */

struct tlsbox_metric {
    char *name;
    enum tlsbox_metric_type type;
    _Atomic long long value;
};

static struct tlsbox_metric *metrics[512];
static int nmetrics;
static pthread_mutex_t metrics_lock = PTHREAD_MUTEX_INITIALIZER;

static struct tlsbox_metric *m_metric_register(struct tlsbox_plugin *self, const char *name,
                                               enum tlsbox_metric_type type, const char *help,
                                               const double *buckets, size_t nbuckets)
{
    struct tlsbox_metric *m = NULL;
    pthread_mutex_lock(&metrics_lock);
    for (int i = 0; i < nmetrics; i++)
        if (strcmp(metrics[i]->name, name) == 0) {
            m = metrics[i]->type == type ? metrics[i] : NULL;
            goto out;
        }
    if (nmetrics < 512) {
        m = calloc(1, sizeof(*m));
        m->name = strdup(name);
        m->type = type;
        metrics[nmetrics++] = m;
    }
out:
    pthread_mutex_unlock(&metrics_lock);
    return m;
}

static void m_metric_add(struct tlsbox_metric *m, int64_t d)
{
    atomic_fetch_add(&m->value, d);
}

static void m_metric_set(struct tlsbox_metric *m, int64_t v)
{
    atomic_store(&m->value, v);
}

static void m_metric_observe(struct tlsbox_metric *m, double v)
{
    atomic_fetch_add(&m->value, 1);
}

long long mock_metric(const char *name)
{
    long long v = -1;
    pthread_mutex_lock(&metrics_lock);
    for (int i = 0; i < nmetrics; i++)
        if (strcmp(metrics[i]->name, name) == 0)
            v = atomic_load(&metrics[i]->value);
    pthread_mutex_unlock(&metrics_lock);
    return v;
}

void mock_metrics_dump(void *stream)
{
    pthread_mutex_lock(&metrics_lock);
    for (int i = 0; i < nmetrics; i++)
        fprintf(stream, "%s %lld\n", metrics[i]->name, atomic_load(&metrics[i]->value));
    pthread_mutex_unlock(&metrics_lock);
}

/* ---- events ----------------------------------------------------------------------- */

static int64_t m_event_subscribe(struct tlsbox_plugin *self, const char *event, tlsbox_event_fn fn,
                                 void *arg)
{
    return 1;
}

static int m_event_unsubscribe(struct tlsbox_plugin *self, int64_t id)
{
    return 0;
}

/* ---- routes ------------------------------------------------------------------------- */

static struct {
    char *prefix;
    tlsbox_http_fn fn;
    void *arg;
} routes[8];
static int nroutes;

void mock_route(const char *prefix, tlsbox_http_fn fn, void *arg)
{
    routes[nroutes].prefix = strdup(prefix);
    routes[nroutes].fn = fn;
    routes[nroutes++].arg = arg;
}

static int m_http_route_dispatch(const char *method, const char *path,
                                 struct tlsbox_http_reply *reply)
{
    for (int i = 0; i < nroutes; i++)
        if (strncmp(path, routes[i].prefix, strlen(routes[i].prefix)) == 0 &&
            routes[i].fn(routes[i].arg, method, path, reply) == 0)
            return 0;
    return -ENOENT;
}

/* ---- bundles ------------------------------------------------------------------------- */

struct tlsbox_bundle {
    _Atomic int refs;
    gnutls_certificate_credentials_t cred;
    gnutls_priority_t prio;
    gnutls_datum_t ticket;
    char *hsts;
    uint64_t gen;
};

static struct tlsbox_bundle *current;
static pthread_mutex_t bundle_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int alive;
static uint64_t generation;

static void bundle_unref(struct tlsbox_bundle *b)
{
    if (atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    gnutls_certificate_free_credentials(b->cred);
    gnutls_priority_deinit(b->prio);
    gnutls_free(b->ticket.data);
    free(b->hsts);
    free(b);
    atomic_fetch_sub(&alive, 1);
}

int mock_bundle_load(const char *cert, const char *key, const char *cert2, const char *key2,
                     const char *priority, const char *hsts)
{
    struct tlsbox_bundle *b = calloc(1, sizeof(*b)), *old;
    int r;

    b->refs = 1;
    gnutls_certificate_allocate_credentials(&b->cred);
    gnutls_certificate_set_flags(b->cred, GNUTLS_CERTIFICATE_API_V2);
    r = gnutls_certificate_set_x509_key_file(b->cred, cert, key, GNUTLS_X509_FMT_PEM);
    if (r >= 0 && cert2)
        r = gnutls_certificate_set_x509_key_file(b->cred, cert2, key2, GNUTLS_X509_FMT_PEM);
    if (r >= 0)
        r = gnutls_certificate_set_known_dh_params(b->cred, GNUTLS_SEC_PARAM_MEDIUM);
    if (r >= 0)
        r = gnutls_priority_init(&b->prio, priority, NULL);
    if (r >= 0)
        r = gnutls_session_ticket_key_generate(&b->ticket);
    if (r < 0) {
        fprintf(stderr, "mock bundle: %s\n", gnutls_strerror(r));
        gnutls_certificate_free_credentials(b->cred);
        free(b);
        return r;
    }
    b->hsts = hsts ? strdup(hsts) : NULL;
    atomic_fetch_add(&alive, 1);
    pthread_mutex_lock(&bundle_lock);
    b->gen = ++generation;
    old = current;
    current = b;
    pthread_mutex_unlock(&bundle_lock);
    if (old)
        bundle_unref(old);
    return 0;
}

void mock_bundle_clear(void)
{
    struct tlsbox_bundle *old;
    pthread_mutex_lock(&bundle_lock);
    old = current;
    current = NULL;
    pthread_mutex_unlock(&bundle_lock);
    if (old)
        bundle_unref(old);
}

int mock_bundles_alive(void)
{
    return atomic_load(&alive);
}

static struct tlsbox_bundle *m_bundle_acquire(void)
{
    struct tlsbox_bundle *b;
    pthread_mutex_lock(&bundle_lock);
    b = current;
    if (b)
        atomic_fetch_add(&b->refs, 1);
    pthread_mutex_unlock(&bundle_lock);
    return b;
}

static void m_bundle_release(struct tlsbox_bundle *b)
{
    if (b)
        bundle_unref(b);
}

static int m_bundle_session_setup(const struct tlsbox_bundle *b, gnutls_session_t s)
{
    static const gnutls_datum_t protos[2] = {{(unsigned char *)"h2", 2},
                                             {(unsigned char *)"http/1.1", 8}};
    int r = gnutls_priority_set(s, b->prio);
    if (r >= 0)
        r = gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, b->cred);
    if (r >= 0)
        r = gnutls_session_ticket_enable_server(s, &b->ticket);
    if (r >= 0)
        r = gnutls_alpn_set_protocols(s, protos, 2, GNUTLS_ALPN_SERVER_PRECEDENCE);
    return r < 0 ? -EINVAL : 0;
}

static const char *m_bundle_hsts(const struct tlsbox_bundle *b)
{
    return b->hsts;
}

static uint64_t m_bundle_generation(const struct tlsbox_bundle *b)
{
    return b->gen;
}

const struct tlsbox_host mock_host = {
    .size = sizeof(struct tlsbox_host),
    .abi_major = TLSBOX_ABI_MAJOR,
    .abi_minor = TLSBOX_ABI_MINOR,
    .log = m_log,
    .vlog = m_vlog,
    .setting_get = m_setting_get,
    .setting_get_int = m_setting_get_int,
    .setting_get_bool = m_setting_get_bool,
    .event_subscribe = m_event_subscribe,
    .event_unsubscribe = m_event_unsubscribe,
    .metric_register = m_metric_register,
    .metric_add = m_metric_add,
    .metric_set = m_metric_set,
    .metric_observe = m_metric_observe,
    .http_route_dispatch = m_http_route_dispatch,
    .bundle_acquire = m_bundle_acquire,
    .bundle_release = m_bundle_release,
    .bundle_session_setup = m_bundle_session_setup,
    .bundle_hsts = m_bundle_hsts,
    .bundle_generation = m_bundle_generation,
};
