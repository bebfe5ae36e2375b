/* The ACME plugin's glue against a mock host: settings, routes, http-01 answers, API. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The glue is included so its static functions are reachable. */
#include "plugins/acme/acme.c"
#include "plugins/acme/acme_api.c"
#include "plugins/acme/acme_run.c"
#include "plugins/acme/acme_certs.c"
#include "plugins/acme/acme_schema.c"
#include "tests/tap.h"

static const char *mock_domains = "";
static tlsbox_http_fn mock_http_fn;
static void *mock_http_arg;
static char mock_http_prefix[64];
static struct {
    char method[8], pattern[32];
    tlsbox_api_fn fn;
    void *arg;
} mock_routes[8];
static int mock_nroutes, mock_jobs, mock_timers;

__attribute__((format(printf, 3, 4))) static void
mock_log(struct tlsbox_plugin *self, enum tlsbox_log_level l, const char *fmt, ...)
{
    (void)self;
    (void)l;
    va_list ap;
    va_start(ap, fmt);
    printf("# log: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

static char *mock_setting_get(struct tlsbox_plugin *self, const char *key)
{
    (void)self;
    if (strcmp(key, "domains") == 0)
        return strdup(mock_domains);
    for (const struct tlsbox_setting_def *d = acme_settings; d->key; d++)
        if (strcmp(d->key, key) == 0)
            return strdup(d->default_value);
    return NULL;
}

static long long mock_get_int(struct tlsbox_plugin *self, const char *key, long long dflt)
{
    (void)self;
    (void)key;
    return dflt;
}

static bool mock_get_bool(struct tlsbox_plugin *self, const char *key, bool dflt)
{
    (void)self;
    (void)key;
    return dflt;
}

static int64_t mock_job_submit(struct tlsbox_plugin *self, const char *name, tlsbox_job_fn fn,
                               void *arg, void (*free_arg)(void *))
{
    (void)self;
    (void)name;
    mock_jobs++;
    fn(arg, NULL); /* inline: the test sees the result at once */
    if (free_arg)
        free_arg(arg);
    return mock_jobs;
}

static bool mock_job_cancelled(struct tlsbox_job *job)
{
    (void)job;
    return false;
}

static int64_t mock_timer_add(struct tlsbox_plugin *self, const char *name, uint64_t first,
                              uint64_t period, uint64_t jitter, tlsbox_job_fn fn, void *arg)
{
    (void)self;
    (void)name;
    (void)first;
    (void)period;
    (void)jitter;
    (void)fn;
    (void)arg;
    return ++mock_timers;
}

static int mock_timer_cancel(struct tlsbox_plugin *self, int64_t id)
{
    (void)self;
    (void)id;
    return 0;
}

static int mock_http_route_add(struct tlsbox_plugin *self, const char *prefix, tlsbox_http_fn fn,
                               void *arg)
{
    (void)self;
    snprintf(mock_http_prefix, sizeof(mock_http_prefix), "%s", prefix);
    mock_http_fn = fn;
    mock_http_arg = arg;
    return 0;
}

static int mock_api_route_add(struct tlsbox_plugin *self, const char *method, const char *pattern,
                              tlsbox_api_fn fn, void *arg)
{
    (void)self;
    snprintf(mock_routes[mock_nroutes].method, 8, "%s", method);
    snprintf(mock_routes[mock_nroutes].pattern, 32, "%s", pattern);
    mock_routes[mock_nroutes].fn = fn;
    mock_routes[mock_nroutes++].arg = arg;
    return 0;
}

__attribute__((format(printf, 3, 4))) static void
mock_api_reply_error(struct tlsbox_api_reply *reply, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *m = tlsbox_xvasprintf(fmt, ap);
    va_end(ap);
    json_t *j = json_pack("{s:s}", "error", m);
    reply->body = json_dumps(j, JSON_COMPACT);
    reply->status = status;
    json_decref(j);
    free(m);
}

static struct tlsbox_metric *mock_metric_register(struct tlsbox_plugin *self, const char *name,
                                                  enum tlsbox_metric_type type, const char *help,
                                                  const double *b, size_t nb)
{
    (void)self;
    (void)name;
    (void)type;
    (void)help;
    (void)b;
    (void)nb;
    return NULL;
}

static int64_t mock_subscribe(struct tlsbox_plugin *self, const char *event, tlsbox_event_fn fn,
                              void *arg)
{
    (void)self;
    (void)event;
    (void)fn;
    (void)arg;
    return 1;
}

static int mock_unsubscribe(struct tlsbox_plugin *self, int64_t id)
{
    (void)self;
    (void)id;
    return 0;
}

static const struct tlsbox_host mock_host = {
    .size = sizeof(struct tlsbox_host),
    .abi_major = TLSBOX_ABI_MAJOR,
    .abi_minor = TLSBOX_ABI_MINOR,
    .log = mock_log,
    .setting_get = mock_setting_get,
    .setting_get_int = mock_get_int,
    .setting_get_bool = mock_get_bool,
    .event_subscribe = mock_subscribe,
    .event_unsubscribe = mock_unsubscribe,
    .job_submit = mock_job_submit,
    .job_cancelled = mock_job_cancelled,
    .timer_add = mock_timer_add,
    .timer_cancel = mock_timer_cancel,
    .metric_register = mock_metric_register,
    .api_route_add = mock_api_route_add,
    .api_reply_error = mock_api_reply_error,
    .http_route_add = mock_http_route_add,
};

static struct tlsbox_api_reply call(const char *method, const char *path, const char *body)
{
    struct tlsbox_api_reply r = {.status = 200};
    struct tlsbox_api_request q = {.method = method,
                                   .path = path,
                                   .body = body,
                                   .body_len = body ? strlen(body) : 0,
                                   .user = "control"};
    for (int i = 0; i < mock_nroutes; i++)
        if (strcmp(mock_routes[i].method, method) == 0 && strcmp(mock_routes[i].pattern, path) == 0)
            mock_routes[i].fn(mock_routes[i].arg, &q, &r);
    return r;
}

int main(void)
{
    const struct tlsbox_plugin_desc *d = &tlsbox_plugin_descriptor;
    is_str(d->name, "acme", "descriptor name");
    int nset = 0, secret_ok = 0;
    for (const struct tlsbox_setting_def *s = d->settings; s->key; s++) {
        nset++;
        if (strcmp(s->key, "eab_hmac") == 0 && (s->flags & TLSBOX_SETTING_SECRET))
            secret_ok = 1;
    }
    ok(nset >= 10, "declares its settings (%d)", nset);
    ok(secret_ok, "eab_hmac is SECRET");

    void *state = NULL;
    is_int(d->init((struct tlsbox_plugin *)1, &mock_host, &state), 0, "init");
    struct acme *a = state;
    is_int(d->start(state), 0, "start with no domains");
    is_str(mock_http_prefix, "/.well-known/acme-challenge/", "challenge route registered");
    is_int(mock_nroutes, 3, "three API routes");
    ok(mock_jobs >= 1, "a first check was queued at start");

    struct tlsbox_api_reply r = call("GET", "acme/status", NULL);
    like(r.body, "\"idle\"", "no domains: idle, not an error");
    free(r.body);

    /* http-01 answers. */
    acme_chal_put(a, "tok123", "tok123.thumb");
    struct tlsbox_http_reply hr = {0};
    is_int(mock_http_fn(mock_http_arg, "GET", "/.well-known/acme-challenge/tok123", &hr), 0,
           "known token answered");
    is_int(hr.status, 200, "200");
    ok(hr.body && hr.body_len == strlen("tok123.thumb") && memcmp(hr.body, "tok123.thumb", 12) == 0,
       "body is the key authorization");
    free(hr.body);
    memset(&hr, 0, sizeof(hr));
    mock_http_fn(mock_http_arg, "GET", "/.well-known/acme-challenge/tok12", &hr);
    is_int(hr.status, 404, "prefix of a token is not a match");
    free(hr.body);
    memset(&hr, 0, sizeof(hr));
    is_int(mock_http_fn(mock_http_arg, "POST", "/.well-known/acme-challenge/tok123", &hr), -ENOENT,
           "POST is not ours");
    acme_chal_del(a, "tok123");
    memset(&hr, 0, sizeof(hr));
    mock_http_fn(mock_http_arg, "GET", "/.well-known/acme-challenge/tok123", &hr);
    is_int(hr.status, 404, "withdrawn token: 404");
    free(hr.body);

    /* API input checks. */
    r = call("POST", "acme/renew", "[1]");
    is_int(r.status, 400, "renew: non-object body refused");
    free(r.body);
    r = call("POST", "acme/renew", "{\"force\":\"yes\"}");
    is_int(r.status, 400, "renew: force must be boolean");
    like(r.body, "force", "message names the field");
    free(r.body);
    r = call("POST", "acme/renew", "{\"force\":true}");
    is_int(r.status, 202, "renew accepted");
    free(r.body);
    r = call("POST", "acme/revoke", "{}");
    is_int(r.status, 400, "revoke without a name refused");
    free(r.body);
    mock_domains = "a.test,b.test";
    r = call("POST", "acme/revoke", "{\"name\":\"other.test\"}");
    is_int(r.status, 404, "revoke of a certificate not ours refused");
    free(r.body);

    struct acme_conf conf;
    mock_domains = "a.test, b.test";
    acme_conf_load(a, &conf);
    is_int(conf.ndomains, 2, "domains parsed");
    is_str(conf.domains[1], "b.test", "second domain trimmed");
    is_str(conf.directory, ACME_LE_PRODUCTION, "default directory is LE production");
    acme_conf_free(&conf);

    ok(run_sans_match(
           "[\"b.test\",\"a.test\"]",
           &(struct acme_conf){.domains = (char *[]){"a.test", "b.test"}, .ndomains = 2}),
       "same names in another order match");
    ok(!run_sans_match(
           "[\"a.test\"]",
           &(struct acme_conf){.domains = (char *[]){"a.test", "b.test"}, .ndomains = 2}),
       "a missing name is a change");

    d->stop(state);
    d->fini(state);
    return done_testing();
}
