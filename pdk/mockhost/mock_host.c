/* The mock host's table, setup, log capture and metrics. */
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/metrics_name.h"
#include "mock.h"

struct tlsbox_mockp tlsbox_mockp = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* ---- log ---------------------------------------------------------------- */

#define MOCK_LOG_KEEP 8192
static char **lines;
static size_t nlines;

void tlsbox_mockp_vlog(struct tlsbox_plugin *self, enum tlsbox_log_level level, const char *fmt,
                       va_list ap)
{
    static const char *const names[] = {[TLSBOX_LOG_ERR] = "ERROR",
                                        [TLSBOX_LOG_WARN] = "WARN",
                                        [TLSBOX_LOG_INFO] = "INFO",
                                        [TLSBOX_LOG_DEBUG] = "DEBUG"};
    char *msg = tlsbox_xvasprintf(fmt, ap);
    const char *lv = level <= TLSBOX_LOG_DEBUG && names[level] ? names[level] : "?";
    char *line = tlsbox_xasprintf("%s %s: %s", lv, self ? self->name : "core", msg);
    free(msg);
    pthread_mutex_lock(&tlsbox_mockp.lock);
    if (nlines == MOCK_LOG_KEEP) { /* a long run (a benchmark host): keep the newest half */
        for (size_t i = 0; i < MOCK_LOG_KEEP / 2; i++)
            free(lines[i]);
        memmove(lines, lines + MOCK_LOG_KEEP / 2, (MOCK_LOG_KEEP / 2) * sizeof *lines);
        nlines = MOCK_LOG_KEEP / 2;
    }
    lines = tlsbox_xrealloc(lines, (nlines + 1) * sizeof *lines);
    lines[nlines++] = line;
    /* A TAP comment: visible in the test's log, never taken for a result. */
    fprintf(stderr, "# %s\n", line);
    pthread_mutex_unlock(&tlsbox_mockp.lock);
}

__attribute__((format(printf, 3, 4))) void
tlsbox_mockp_log(struct tlsbox_plugin *self, enum tlsbox_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tlsbox_mockp_vlog(self, level, fmt, ap);
    va_end(ap);
}

int tlsbox_mock_log_count(const char *needle)
{
    int n = 0;
    pthread_mutex_lock(&tlsbox_mockp.lock);
    for (size_t i = 0; i < nlines; i++)
        n += !needle || strstr(lines[i], needle) != NULL;
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return n;
}

const char *tlsbox_mock_log_last(void)
{
    return nlines ? lines[nlines - 1] : NULL;
}

void tlsbox_mock_log_clear(void)
{
    pthread_mutex_lock(&tlsbox_mockp.lock);
    for (size_t i = 0; i < nlines; i++)
        free(lines[i]);
    free(lines);
    lines = NULL;
    nlines = 0;
    pthread_mutex_unlock(&tlsbox_mockp.lock);
}

char *tlsbox_mockp_json_string(const char *s)
{
    size_t n = 3;
    for (const char *p = s; *p; p++)
        n += 6;
    char *out = tlsbox_xmalloc(n), *o = out;
    *o++ = '"';
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            *o++ = '\\';
            *o++ = (char)*p;
        } else if (*p < 0x20) {
            o += sprintf(o, "\\u%04x", *p);
        } else {
            *o++ = (char)*p;
        }
    }
    *o++ = '"';
    *o = '\0';
    return out;
}

/* ---- metrics ------------------------------------------------------------- */

struct tlsbox_metric {
    char *name;
    char *family; /* its series share one type, as in the core */
    enum tlsbox_metric_type type;
    _Atomic long long value;
};

static struct tlsbox_metric **metrics;
static size_t nmetrics;
/* Retired series: gone from the list, kept until teardown, as the core
 * keeps them, so a pointer the plugin still holds stays valid. */
static struct tlsbox_metric **retired;
static size_t nretired;

static struct tlsbox_metric *tlsbox_mockp_metric_register(struct tlsbox_plugin *self,
                                                          const char *name,
                                                          enum tlsbox_metric_type type,
                                                          const char *help, const double *buckets,
                                                          size_t nbuckets)
{
    struct tlsbox_metric *m = NULL;
    char *family, *labels, *why;
    (void)self, (void)help;
    /* The core's checks and messages: what the daemon refuses is refused here. */
    if (!metrics_name_check(name, type, &buckets, &nbuckets, &family, &labels, &why)) {
        tlsbox_mockp_log(NULL, TLSBOX_LOG_WARN, "%s", why);
        free(why);
        return NULL;
    }
    free(labels);
    pthread_mutex_lock(&tlsbox_mockp.lock);
    for (size_t i = 0; i < nmetrics; i++) {
        if (strcmp(metrics[i]->family, family) != 0)
            continue;
        if (metrics[i]->type != type) {
            pthread_mutex_unlock(&tlsbox_mockp.lock);
            tlsbox_mockp_log(NULL, TLSBOX_LOG_WARN, METRICS_CLASH_FMT, name, family);
            free(family);
            return NULL;
        }
        if (strcmp(metrics[i]->name, name) == 0) {
            m = metrics[i];
            goto out;
        }
    }
    m = tlsbox_xcalloc(1, sizeof *m);
    m->name = tlsbox_xstrdup(name);
    m->family = family;
    family = NULL;
    m->type = type;
    metrics = tlsbox_xrealloc(metrics, (nmetrics + 1) * sizeof *metrics);
    metrics[nmetrics++] = m;
out:
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    free(family);
    return m;
}

/* Updates the core ignores are ignored here too (core/metrics.c): a
 * negative add to a counter, a set of anything but a gauge, an add to a
 * histogram, an observation of anything but a histogram, and NaN. */
static void tlsbox_mockp_metric_add(struct tlsbox_metric *m, int64_t delta)
{
    if (!m || m->type == TLSBOX_METRIC_HISTOGRAM || (m->type == TLSBOX_METRIC_COUNTER && delta < 0))
        return;
    atomic_fetch_add(&m->value, delta);
}

static void tlsbox_mockp_metric_set(struct tlsbox_metric *m, int64_t value)
{
    if (m && m->type == TLSBOX_METRIC_GAUGE)
        atomic_store(&m->value, value);
}

static void tlsbox_mockp_metric_observe(struct tlsbox_metric *m, double value)
{
    if (m && m->type == TLSBOX_METRIC_HISTOGRAM && !isnan(value))
        atomic_fetch_add(&m->value, 1);
}

/* As the core's (metrics_retire_owned): the one plugin here owns every
 * series, so only NULL is ignored. */
static void tlsbox_mockp_metric_retire(struct tlsbox_plugin *self, struct tlsbox_metric *m)
{
    if (!self || !m)
        return;
    pthread_mutex_lock(&tlsbox_mockp.lock);
    for (size_t i = 0; i < nmetrics; i++) {
        if (metrics[i] != m)
            continue;
        metrics[i] = metrics[--nmetrics];
        retired = tlsbox_xrealloc(retired, (nretired + 1) * sizeof *retired);
        retired[nretired++] = m;
        break;
    }
    pthread_mutex_unlock(&tlsbox_mockp.lock);
}

long long tlsbox_mock_metric(const char *name)
{
    long long v = -1;
    pthread_mutex_lock(&tlsbox_mockp.lock);
    for (size_t i = 0; i < nmetrics; i++)
        if (strcmp(metrics[i]->name, name) == 0)
            v = atomic_load(&metrics[i]->value);
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return v;
}

void tlsbox_mock_metrics_dump(FILE *f)
{
    pthread_mutex_lock(&tlsbox_mockp.lock);
    for (size_t i = 0; i < nmetrics; i++)
        fprintf(f, "%s %lld\n", metrics[i]->name, atomic_load(&metrics[i]->value));
    pthread_mutex_unlock(&tlsbox_mockp.lock);
}

static void metrics_free(struct tlsbox_metric **list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(list[i]->name);
        free(list[i]->family);
        free(list[i]);
    }
    free(list);
}

static void metrics_reset(void)
{
    metrics_free(metrics, nmetrics);
    metrics = NULL;
    nmetrics = 0;
    metrics_free(retired, nretired);
    retired = NULL;
    nretired = 0;
}

/* ---- the table and its life ----------------------------------------------- */

const struct tlsbox_host tlsbox_mock_host = {
    .size = sizeof(struct tlsbox_host),
    .abi_major = TLSBOX_ABI_MAJOR,
    .abi_minor = TLSBOX_ABI_MINOR,
    .log = tlsbox_mockp_log,
    .vlog = tlsbox_mockp_vlog,
    .setting_get = tlsbox_mockp_setting_get,
    .setting_get_int = tlsbox_mockp_setting_get_int,
    .setting_get_bool = tlsbox_mockp_setting_get_bool,
    .setting_set = tlsbox_mockp_setting_set,
    .store_open = tlsbox_mockp_store_open,
    .store_close = tlsbox_mockp_store_close,
    .event_subscribe = tlsbox_mockp_event_subscribe,
    .event_unsubscribe = tlsbox_mockp_event_unsubscribe,
    .event_publish = tlsbox_mockp_event_publish,
    .job_submit = tlsbox_mockp_job_submit,
    .job_cancel = tlsbox_mockp_job_cancel,
    .job_cancelled = tlsbox_mockp_job_cancelled,
    .job_sleep = tlsbox_mockp_job_sleep,
    .timer_add = tlsbox_mockp_timer_add,
    .timer_cancel = tlsbox_mockp_timer_cancel,
    .metric_register = tlsbox_mockp_metric_register,
    .metric_add = tlsbox_mockp_metric_add,
    .metric_set = tlsbox_mockp_metric_set,
    .metric_observe = tlsbox_mockp_metric_observe,
    .api_route_add = tlsbox_mockp_api_route_add,
    .api_reply_error = tlsbox_mockp_api_reply_error,
    .http_route_add = tlsbox_mockp_http_route_add,
    .http_route_dispatch = tlsbox_mockp_http_route_dispatch,
    .bundle_acquire = tlsbox_mockp_bundle_acquire,
    .bundle_release = tlsbox_mockp_bundle_release,
    .bundle_session_setup = tlsbox_mockp_bundle_session_setup,
    .bundle_hsts = tlsbox_mockp_bundle_hsts,
    .bundle_generation = tlsbox_mockp_bundle_generation,
    .cert_install = tlsbox_mockp_cert_install,
    .cert_list = tlsbox_mockp_cert_list,
    .cert_get = tlsbox_mockp_cert_get,
    .dh_set = tlsbox_mockp_dh_set,
    .dh_served = tlsbox_mockp_dh_served,
    /* staple_set, internal_ocsp and api_call: not mocked (NULL) */
    .tls_alpn_challenge_put = tlsbox_mockp_tls_alpn_put,
    .tls_alpn_challenge_del = tlsbox_mockp_tls_alpn_del,
    .bundle_session_address = tlsbox_mockp_bundle_session_address,
    .metric_retire = tlsbox_mockp_metric_retire,
};

/* What the daemon's loader refuses before it looks at the settings
 * (core/plugin_loader.c: plugin_check_abi, name_is_valid, a name taken),
 * with its reasons: 0, or -EPROTO / -EINVAL / -EEXIST, said on stderr.
 * Not the size: a test's own descriptor may leave it 0, and the mock reads
 * newer fields through TLSBOX_DESC_HAS. */
static int loader_check(const struct tlsbox_plugin_desc *d)
{
    size_t n = strlen(d->name);
    if (d->abi_major != TLSBOX_ABI_MAJOR || d->abi_minor > TLSBOX_ABI_MINOR) {
        fprintf(stderr, "# mock host: refused: built for plugin ABI %u.%u, the kit has ABI %d.%d\n",
                d->abi_major, d->abi_minor, TLSBOX_ABI_MAJOR, TLSBOX_ABI_MINOR);
        return -EPROTO;
    }
    if (n == 0 || n > 32 || !(d->name[0] >= 'a' && d->name[0] <= 'z') ||
        strspn(d->name, "abcdefghijklmnopqrstuvwxyz0123456789_") != n) {
        fprintf(stderr,
                "# mock host: refused: plugin name \"%s\" must match [a-z][a-z0-9_]* (at "
                "most 32)\n",
                d->name);
        return -EINVAL;
    }
    /* The core's own handle, and the settings owners it registers before
     * any plugin (core/main.c). */
    if (strcmp(d->name, "core") == 0 || (d->settings && strcmp(d->name, "admin") == 0)) {
        fprintf(stderr, "# mock host: refused: the name \"%s\" is the core's\n", d->name);
        return -EEXIST;
    }
    return 0;
}

int tlsbox_mock_setup(const struct tlsbox_plugin_desc *desc)
{
    if (!desc || !desc->name) {
        fprintf(stderr, "# mock host: no descriptor\n");
        return -EINVAL;
    }
    if (tlsbox_mockp.desc)
        tlsbox_mock_teardown();
    int refused = loader_check(desc);
    if (refused < 0)
        return refused;
    if (tlsbox_mockp_settings_check(desc) < 0)
        return -EINVAL;
    tlsbox_mockp.desc = desc;
    tlsbox_mockp.self.name = desc->name;
    int rc = tlsbox_mockp_store_setup(desc);
    if (rc < 0) {
        tlsbox_mockp.desc = NULL;
        return rc;
    }
    return 0;
}

void tlsbox_mock_teardown(void)
{
    tlsbox_mockp_events_reset();
    tlsbox_mockp_routes_reset();
    tlsbox_mockp_certs_reset();
    tlsbox_mockp_dh_reset();
    tlsbox_mockp_alpn_reset();
    tlsbox_mockp_settings_reset();
    tlsbox_mockp_store_teardown();
    tlsbox_mock_bundle_clear();
    tlsbox_mock_log_clear();
    metrics_reset();
    tlsbox_mockp.desc = NULL;
}

int tlsbox_mock_neighbour(const struct tlsbox_plugin_desc *desc)
{
    if (!desc || !desc->name || !tlsbox_mockp.desc) {
        fprintf(stderr, "# mock host: tlsbox_mock_neighbour: no descriptor, or before setup\n");
        return -EINVAL;
    }
    /* Checked as the loader checks every plugin it loads. */
    int refused = loader_check(desc);
    if (refused < 0)
        return refused;
    if (tlsbox_mockp_settings_check(desc) < 0)
        return -EINVAL;
    return tlsbox_mockp_settings_neighbour(desc);
}

struct tlsbox_plugin *tlsbox_mock_self(void)
{
    return &tlsbox_mockp.self;
}
