/* The host table: the plugin kit's view of the core.  Each entry is a thin
 * adapter onto a core module, so plugins and core code share one
 * implementation of everything. */
#include "core/host.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/api.h"
#include "core/events.h"
#include "core/http_routes.h"
#include "core/jobs.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/plugin_loader.h"
#include "core/settings.h"
#include "core/store.h"
#include "core/store_guard.h"
#include "core/tls.h"
#include "core/tls_dh.h"
#include "core/xalloc.h"

static const char *who(struct tlsbox_plugin *self)
{
    return self ? self->name : "core";
}

__attribute__((format(printf, 3, 0))) static void
host_vlog(struct tlsbox_plugin *self, enum tlsbox_log_level level, const char *fmt, va_list ap)
{
    if (level == TLSBOX_LOG_ERR && self) {
        /* Kept while its hooks run: why a failing one failed. */
        char msg[512];
        va_list copy;
        va_copy(copy, ap);
        vsnprintf(msg, sizeof(msg), fmt, copy);
        va_end(copy);
        plugin_note_error(self, msg);
    }
    log_vmsg(who(self), level, fmt, ap);
}

__attribute__((format(printf, 3, 4))) static void
host_log(struct tlsbox_plugin *self, enum tlsbox_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    host_vlog(self, level, fmt, ap);
    va_end(ap);
}

/* "key" -> "<plugin>.key"; "other.key" stays as it is.  Caller frees. */
static char *full_key(struct tlsbox_plugin *self, const char *key)
{
    if (!key)
        return NULL;
    if (strchr(key, '.'))
        return xstrdup(key);
    return xasprintf("%s.%s", who(self), key);
}

static char *host_setting_get(struct tlsbox_plugin *self, const char *key)
{
    char *k = full_key(self, key);
    char *v = k ? settings_get(k) : NULL;
    free(k);
    return v;
}

static long long host_setting_get_int(struct tlsbox_plugin *self, const char *key, long long dflt)
{
    char *k = full_key(self, key);
    long long v = k ? settings_get_int(k, dflt) : dflt;
    free(k);
    return v;
}

static bool host_setting_get_bool(struct tlsbox_plugin *self, const char *key, bool dflt)
{
    char *k = full_key(self, key);
    bool v = k ? settings_get_bool(k, dflt) : dflt;
    free(k);
    return v;
}

static int host_setting_set(struct tlsbox_plugin *self, const char *key, const char *value,
                            char **err)
{
    char *k = full_key(self, key);
    if (!k)
        return -EINVAL;
    /* Another's settings are read, never written: a plugin that could set
     * core.user or admin.* would reach past what its tables allow it. */
    if (!settings_key_of(k, who(self))) {
        if (err)
            *err = xasprintf("%s: plugin %s sets only its own settings (%s.KEY); another "
                             "owner's are read, not written",
                             k, who(self), who(self));
        free(k);
        return -EPERM;
    }
    char *note = NULL;
    int rc = settings_set(k, value, who(self), &note);
    if (rc > 0) {
        /* Stored; it takes effect at the next start: the host API's contract
         * knows no notes, so the log carries it. */
        log_info("plugin %s set %s: %s", who(self), k, note ? note : "takes effect at restart");
        rc = 0;
    } else if (rc < 0 && err) {
        *err = note;
        note = NULL;
    }
    free(note);
    free(k);
    return rc;
}

/* A plugin's connection writes only the plugin's own tables.  Its triggers
 * fire there (store_connect turns them off): the guard checks what they do
 * as it checks the statement that fires them. */
static sqlite3 *host_store_open(struct tlsbox_plugin *self)
{
    sqlite3 *db = store_connect();
    if (db && (store_guard_attach(db, who(self)) < 0 || store_set_triggers(db, 1) < 0)) {
        log_err("plugin %s: store: cannot install the table guard", who(self));
        store_disconnect(db);
        db = NULL;
    }
    return db;
}

static void host_store_close(struct tlsbox_plugin *self, sqlite3 *db)
{
    store_disconnect(db);
}

static int64_t host_event_subscribe(struct tlsbox_plugin *self, const char *event,
                                    tlsbox_event_fn fn, void *arg)
{
    return events_subscribe(self, event, fn, arg);
}

static int host_event_unsubscribe(struct tlsbox_plugin *self, int64_t id)
{
    return events_unsubscribe_of(self, id); /* never another plugin's or the core's */
}

static int host_event_publish(struct tlsbox_plugin *self, const char *event, const char *data)
{
    return events_publish(event, data);
}

static int64_t host_job_submit(struct tlsbox_plugin *self, const char *name, tlsbox_job_fn fn,
                               void *arg, void (*free_arg)(void *))
{
    return jobs_submit(self, name, fn, arg, free_arg);
}

static int host_job_cancel(struct tlsbox_plugin *self, int64_t id)
{
    return jobs_cancel_of(self, id);
}

static int64_t host_timer_add(struct tlsbox_plugin *self, const char *name, uint64_t first_ms,
                              uint64_t period_ms, uint64_t jitter_ms, tlsbox_job_fn fn, void *arg)
{
    return timers_add(self, name, first_ms, period_ms, jitter_ms, fn, arg);
}

static int host_timer_cancel(struct tlsbox_plugin *self, int64_t id)
{
    return timers_cancel_of(self, id);
}

static struct tlsbox_metric *host_metric_register(struct tlsbox_plugin *self, const char *name,
                                                  enum tlsbox_metric_type type, const char *help,
                                                  const double *buckets, size_t nbuckets)
{
    return metrics_register(self, name, type, help, buckets, nbuckets);
}

static int host_api_route_add(struct tlsbox_plugin *self, const char *method, const char *pattern,
                              tlsbox_api_fn fn, void *arg)
{
    return api_route_add(self, method, pattern, fn, arg);
}

static int host_http_route_add(struct tlsbox_plugin *self, const char *prefix, tlsbox_http_fn fn,
                               void *arg)
{
    return http_route_add(self, prefix, fn, arg);
}

static int host_api_call(struct tlsbox_plugin *self, const char *method, const char *path,
                         const char *body, int *status, char **reply)
{
    if (!method || !path || !status || !reply)
        return -EINVAL;
    char *user = xasprintf("plugin:%s", who(self));
    struct tlsbox_api_request req = {.method = method,
                                     .path = path,
                                     .body = body,
                                     .body_len = body ? strlen(body) : 0,
                                     .user = user};
    struct tlsbox_api_reply rep = {0};
    api_dispatch(&req, &rep);
    free(user);
    *status = rep.status;
    *reply = rep.body;
    return 0;
}

/* "char **err" may be NULL, as for setting_set (host.h): the core's
 * functions always write a message, so they get one of their own here. */
static int host_cert_install(struct tlsbox_plugin *self, const struct tlsbox_cert_install *in,
                             char **err)
{
    char *msg = NULL;
    int rc = tls_cert_install(self, in, &msg);
    if (err)
        *err = msg;
    else
        free(msg);
    return rc;
}

static int host_dh_set(struct tlsbox_plugin *self, const char *pem, const char *source,
                       unsigned flags, char **err)
{
    char *msg = NULL;
    int rc = tls_dh_set(self, pem, source, flags, &msg);
    if (err)
        *err = msg;
    else
        free(msg);
    return rc;
}

static const struct tlsbox_host host = {
    .size = sizeof(struct tlsbox_host),
    .abi_major = TLSBOX_ABI_MAJOR,
    .abi_minor = TLSBOX_ABI_MINOR,
    .log = host_log,
    .vlog = host_vlog,
    .setting_get = host_setting_get,
    .setting_get_int = host_setting_get_int,
    .setting_get_bool = host_setting_get_bool,
    .setting_set = host_setting_set,
    .store_open = host_store_open,
    .store_close = host_store_close,
    .event_subscribe = host_event_subscribe,
    .event_unsubscribe = host_event_unsubscribe,
    .event_publish = host_event_publish,
    .job_submit = host_job_submit,
    .job_cancel = host_job_cancel,
    .job_cancelled = job_cancelled,
    .job_sleep = job_sleep,
    .timer_add = host_timer_add,
    .timer_cancel = host_timer_cancel,
    .metric_register = host_metric_register,
    .metric_add = metrics_add,
    .metric_set = metrics_set,
    .metric_observe = metrics_observe,
    .metric_retire = metrics_retire_owned,
    .api_route_add = host_api_route_add,
    .api_reply_error = api_reply_error,
    .http_route_add = host_http_route_add,
    .http_route_dispatch = http_route_dispatch,
    .bundle_acquire = tls_bundle_acquire,
    .bundle_release = tls_bundle_release,
    .bundle_session_setup = tls_bundle_session_setup,
    .bundle_hsts = tls_bundle_hsts,
    .bundle_generation = tls_bundle_generation,
    .cert_install = host_cert_install,
    .cert_list = tls_cert_list_json,
    .cert_get = tls_cert_get,
    .dh_set = host_dh_set,
    .dh_served = tls_dh_served,
    .staple_set = tls_staple_set,
    .internal_ocsp = tls_internal_ocsp,
    .api_call = host_api_call,
    .tls_alpn_challenge_put = tls_alpn_challenge_put,
    .tls_alpn_challenge_del = tls_alpn_challenge_del,
    .bundle_session_address = tls_bundle_session_address,
};

const struct tlsbox_host *host_table(void)
{
    return &host;
}
