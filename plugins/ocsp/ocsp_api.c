/* The OCSP part of the JSON API: ocsp/status and ocsp/refresh. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ocsp/ocsp_plugin.h"

static void api_status(void *arg, const struct tlsbox_api_request *req,
                       struct tlsbox_api_reply *reply)
{
    struct ocsp *o = arg;
    (void)req;
    /* Judged now, not when the last run wrote it: what clients get now. */
    json_t *st = ocsp_status_now(o);
    reply->body = st ? json_dumps(st, JSON_COMPACT) : NULL;
    json_decref(st);
    if (!reply->body) {
        o->host->api_reply_error(reply, 500, "ocsp/status: cannot build the status");
        return;
    }
    reply->status = 200;
}

/* A certificate name as the core accepts them: 1..128 of [A-Za-z0-9._*-]. */
static bool api_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._*-", s[i]))
            return false;
    return true;
}

static void api_refresh(void *arg, const struct tlsbox_api_request *req,
                        struct tlsbox_api_reply *reply)
{
    struct ocsp *o = arg;
    json_t *b = req->body && req->body_len
                    ? json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, NULL)
                    : json_object();
    json_t *n = json_object_get(b, "name");
    if (!json_is_object(b) || (n && !json_is_string(n)) ||
        (n && !api_name_ok(json_string_value(n)))) {
        o->host->api_reply_error(reply, 400,
                                 "ocsp/refresh: give {} or {\"name\": CERTIFICATE} (a store name)");
        json_decref(b);
        return;
    }
    const char *name = n ? json_string_value(n) : "*";
    ocsp_run_submit(o, name);
    json_t *r = json_pack("{s:b, s:s, s:I}", "queued", 1, "name", name, "run",
                          (json_int_t)atomic_load(&o->runs_queued));
    reply->status = 202;
    reply->body = json_dumps(r, JSON_COMPACT);
    json_decref(r);
    json_decref(b);
}

int ocsp_api_register(struct ocsp *o)
{
    int ret;
    if ((ret = o->host->api_route_add(o->self, "GET", "ocsp/status", api_status, o)) < 0 ||
        (ret = o->host->api_route_add(o->self, "POST", "ocsp/refresh", api_refresh, o)) < 0)
        o->host->log(o->self, TLSBOX_LOG_ERR, "API routes: %s", strerror(-ret));
    return ret;
}
