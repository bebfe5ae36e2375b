/*
 * The ocsp plugin: descriptor, settings, hooks.  OCSP staples for every
 * certificate whose leaf names a responder (and the internal CA's leaves,
 * answered by the core without network), and a revocation check against
 * the CA's CRL for leaves that name no responder, only a CRL distribution
 * point; see ocsp_run.c for the cycle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "plugins/ocsp/ocsp_plugin.h"

static const struct tlsbox_setting_def ocsp_settings[] = {
    {.key = "drop_margin_seconds",
     .type = TLSBOX_SETTING_INT,
     .default_value = "3600",
     .min = 0,
     .max = 86400,
     .help = "A staple leaves the bundle this long before its nextUpdate (at most a quarter of "
             "its validity)"},
    {.key = "retry_min_seconds",
     .type = TLSBOX_SETTING_INT,
     .default_value = "60",
     .min = 1,
     .max = 86400,
     .help = "First retry delay after a failed fetch (doubles up to retry_max_seconds)"},
    {.key = "retry_max_seconds",
     .type = TLSBOX_SETTING_INT,
     .default_value = "3600",
     .min = 1,
     .max = 86400,
     .help = "Longest retry delay after failed fetches"},
    {.key = "timeout_seconds",
     .type = TLSBOX_SETTING_INT,
     .default_value = "10",
     .min = 1,
     .max = 120,
     .help = "Time allowed for one request to a responder; after a timeout a run asks that "
             "responder URL nothing more (its other certificates are retried with backoff)"},
    {.key = "max_response_kib",
     .type = TLSBOX_SETTING_INT,
     .default_value = "64",
     .min = 1,
     .max = 1024,
     .help = "Largest OCSP response accepted, in KiB"},
    {.key = "max_crl_kib",
     .type = TLSBOX_SETTING_INT,
     .default_value = "10240",
     .min = 16,
     .max = 65536,
     .help = "Largest CRL accepted, in KiB (certificates without an OCSP URL are checked "
             "against their CA's CRL)"},
    {.key = "crl_check_hours",
     .type = TLSBOX_SETTING_INT,
     .default_value = "6",
     .min = 1,
     .max = 168,
     .help = "A certificate checked by CRL is checked again at least this often (sooner when "
             "half the CRL's validity has passed)"},
    {.key = "ca_file",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .pattern = "^(/[^[:space:]]*)?$",
     .help = "PEM file trusted for https responders (a private CA); empty = system"},
    {.key = "check_minutes",
     .type = TLSBOX_SETTING_INT,
     .default_value = "60",
     .min = 1,
     .max = 1440,
     .help = "How often every certificate is looked at even when nothing is due",
     .flags = TLSBOX_SETTING_RESTART},
    TLSBOX_SETTINGS_END};

void ocsp_conf_load(struct ocsp *o, struct ocsp_conf *conf)
{
    const struct tlsbox_host *h = o->host;
    conf->margin = (time_t)h->setting_get_int(o->self, "drop_margin_seconds", 3600);
    conf->retry_min = (time_t)h->setting_get_int(o->self, "retry_min_seconds", 60);
    conf->retry_max = (time_t)h->setting_get_int(o->self, "retry_max_seconds", 3600);
    if (conf->retry_max < conf->retry_min)
        conf->retry_max = conf->retry_min;
    conf->timeout_s = (long)h->setting_get_int(o->self, "timeout_seconds", 10);
    conf->max_bytes = (size_t)h->setting_get_int(o->self, "max_response_kib", 64) * 1024;
    conf->crl_max_bytes = (size_t)h->setting_get_int(o->self, "max_crl_kib", 10240) * 1024;
    conf->crl_every = (time_t)h->setting_get_int(o->self, "crl_check_hours", 6) * 3600;
    conf->ca_file = h->setting_get(o->self, "ca_file");
    conf->cancel = &o->stopping;
}

void ocsp_conf_free(struct ocsp_conf *conf)
{
    free(conf->ca_file);
    memset(conf, 0, sizeof(*conf));
}

static void ocsp_on_cert(void *arg, const char *event, const char *data)
{
    (void)event;
    /* A new or replaced certificate: the core dropped its staple, even when
     * the same certificate (same serial) was installed again. */
    json_t *ev = data ? json_loads(data, 0, NULL) : NULL;
    const char *name = json_string_value(json_object_get(ev, "name"));
    if (name)
        ocsp_run_installed(arg, name);
    else
        ocsp_run_submit(arg, NULL);
    json_decref(ev);
}

static void ocsp_on_settings(void *arg, const char *event, const char *data)
{
    (void)event;
    /* New limits or margins apply at once: a run recomputes every schedule it touches. */
    if (!data || strstr(data, "\"ocsp.") || strstr(data, "\"reload\""))
        ocsp_run_submit(arg, NULL);
}

/* The core's bundle staples only while the policy's ocsp_stapling is on:
 * read it again off the event thread (api_call is for jobs and timers). */
static void ocsp_on_policy(void *arg, const char *event, const char *data)
{
    struct ocsp *o = arg;
    (void)event;
    (void)data;
    atomic_store(&o->policy_dirty, true);
}

static int ocsp_init(struct tlsbox_plugin *self, const struct tlsbox_host *host, void **state)
{
    struct ocsp *o = tlsbox_xcalloc(1, sizeof(*o));
    o->self = self;
    o->host = host;
    pthread_mutex_init(&o->run_lock, NULL);
    pthread_mutex_init(&o->force_lock, NULL);
    pthread_mutex_init(&o->wake_lock, NULL);
    pthread_mutex_init(&o->status_lock, NULL);
    pthread_mutex_init(&o->serve_lock, NULL);
    pthread_mutex_init(&o->gauge_lock, NULL);
    o->status_json = tlsbox_xstrdup("{\"certificates\":[],\"runs\":0}");
    o->check_minutes = (long)host->setting_get_int(self, "check_minutes", 60);
    *state = o;
    if (!TLSBOX_HOST_HAS(host, staple_set) || !TLSBOX_HOST_HAS(host, cert_get)) {
        host->log(self, TLSBOX_LOG_ERR, "this tlsboxd has no staple_set host call (kit 1.1)");
        return -ENOTSUP;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        host->log(self, TLSBOX_LOG_ERR, "libcurl did not initialise");
        return -EIO;
    }
    return 0;
}

static int ocsp_start(void *state)
{
    struct ocsp *o = state;
    const struct tlsbox_host *h = o->host;
    int ret = ocsp_api_register(o);
    if (ret < 0)
        return ret;
    ocsp_serve_register(o); /* optional: no site, no URL answered */
    o->m_fetches = h->metric_register(o->self, "tlsbox_ocsp_fetches_total", TLSBOX_METRIC_COUNTER,
                                      "OCSP responses asked for", NULL, 0);
    o->m_failures = h->metric_register(o->self, "tlsbox_ocsp_failures_total", TLSBOX_METRIC_COUNTER,
                                       "OCSP fetches that failed or were refused", NULL, 0);
    o->m_revoked = h->metric_register(o->self, "tlsbox_ocsp_revoked_total", TLSBOX_METRIC_COUNTER,
                                      "Certificates found revoked", NULL, 0);
    o->m_crl_unchanged =
        h->metric_register(o->self, "tlsbox_ocsp_crl_not_modified_total", TLSBOX_METRIC_COUNTER,
                           "CRL fetches answered 304: not downloaded again", NULL, 0);
    o->sub_cert = h->event_subscribe(o->self, "cert.changed", ocsp_on_cert, o);
    o->sub_settings = h->event_subscribe(o->self, "settings.changed", ocsp_on_settings, o);
    atomic_store(&o->policy_dirty, true); /* read by the first run */
    o->sub_policy = h->event_subscribe(o->self, "policy.changed", ocsp_on_policy, o);
    uint64_t period = (uint64_t)o->check_minutes * 60000;
    o->timer = h->timer_add(o->self, "ocsp-check", period, period, period / 10, ocsp_run_job, o);
    if (o->timer < 0)
        return (int)o->timer;
    /* Apart from the runs, which a stalled fetch holds up. */
    o->gauge_timer = h->timer_add(o->self, "ocsp-gauges", 1000, 1000, 0, ocsp_gauges_job, o);
    if (o->gauge_timer < 0)
        return (int)o->gauge_timer;
    ocsp_run_submit(o, NULL);
    return 0;
}

static void ocsp_stop(void *state)
{
    struct ocsp *o = state;
    atomic_store(&o->stopping, true);
    if (o->sub_cert > 0)
        o->host->event_unsubscribe(o->self, o->sub_cert);
    if (o->sub_settings > 0)
        o->host->event_unsubscribe(o->self, o->sub_settings);
    if (o->sub_policy > 0)
        o->host->event_unsubscribe(o->self, o->sub_policy);
    if (o->timer > 0)
        o->host->timer_cancel(o->self, o->timer);
    if (o->gauge_timer > 0)
        o->host->timer_cancel(o->self, o->gauge_timer);
    pthread_mutex_lock(&o->wake_lock);
    if (o->wake_timer > 0)
        o->host->timer_cancel(o->self, o->wake_timer);
    o->wake_timer = 0;
    pthread_mutex_unlock(&o->wake_lock);
}

static void ocsp_fini(void *state)
{
    struct ocsp *o = state;
    if (!o)
        return;
    for (size_t i = 0; i < o->nforce; i++)
        free(o->force[i]);
    free(o->force);
    for (size_t i = 0; i < o->ninstalled; i++)
        free(o->installed[i]);
    free(o->installed);
    free(o->status_json);
    free(o->serve_der);
    for (size_t i = 0; i < o->ngauges; i++)
        free(o->gauges[i].cert);
    free(o->gauges);
    pthread_mutex_destroy(&o->gauge_lock);
    pthread_mutex_destroy(&o->serve_lock);
    pthread_mutex_destroy(&o->run_lock);
    pthread_mutex_destroy(&o->force_lock);
    pthread_mutex_destroy(&o->wake_lock);
    pthread_mutex_destroy(&o->status_lock);
    free(o);
}

TLSBOX_PLUGIN(.name = "ocsp", .version = PACKAGE_VERSION,
              .description =
                  "OCSP staples: fetched, verified, refreshed at half-life, never stale; "
                  "CRL checks where there is no OCSP",
              .settings = ocsp_settings, .init = ocsp_init, .start = ocsp_start, .stop = ocsp_stop,
              .fini = ocsp_fini, .migrations = ocsp_migrations);
