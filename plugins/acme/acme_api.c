/* The ACME part of the JSON API: acme/status, acme/renew, acme/revoke. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/acme/acme_plugin.h"

static void api_status(void *arg, const struct tlsbox_api_request *req,
                       struct tlsbox_api_reply *reply)
{
    struct acme *a = arg;
    (void)req;
    pthread_mutex_lock(&a->status_lock);
    reply->body = tlsbox_xstrdup(a->status_json);
    pthread_mutex_unlock(&a->status_lock);
    reply->status = 200;
}

static json_t *api_body(const struct tlsbox_api_request *req)
{
    if (!req->body || req->body_len == 0)
        return json_object();
    return json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, NULL);
}

static void api_renew(void *arg, const struct tlsbox_api_request *req,
                      struct tlsbox_api_reply *reply)
{
    struct acme *a = arg;
    json_t *b = api_body(req);
    if (!json_is_object(b)) {
        json_decref(b);
        a->host->api_reply_error(reply, 400, "acme/renew: the body must be a JSON object");
        return;
    }
    json_t *f = json_object_get(b, "force");
    if (f && !json_is_boolean(f)) {
        json_decref(b);
        a->host->api_reply_error(reply, 400, "acme/renew: \"force\" must be true or false");
        return;
    }
    bool force = json_is_true(f);
    json_decref(b);
    /* With no domain the check would only find ACME off: say so rather than
     * answer "queued" for a renewal that never comes. */
    struct acme_conf conf;
    acme_conf_load(a, &conf);
    size_t ndomains = conf.ndomains;
    acme_conf_free(&conf);
    if (ndomains == 0) {
        a->host->api_reply_error(reply, 409,
                                 "acme/renew: ACME is off (acme.domains is empty); nothing was "
                                 "renewed: set acme.domains to the site's names to turn it on");
        return;
    }
    acme_run_submit(a, force, true);
    reply->status = 202;
    reply->body = tlsbox_xasprintf("{\"queued\":true,\"force\":%s}", force ? "true" : "false");
}

/* A certificate name this plugin manages (the first domain, or it plus "-rsa"). */
static bool api_is_ours(struct acme *a, const char *name)
{
    struct acme_conf conf;
    acme_conf_load(a, &conf);
    bool ours = false;
    if (conf.ndomains) {
        char *base = acme_cert_name(conf.domains[0]);
        char *rsa = tlsbox_xasprintf("%s-rsa", base);
        ours = strcmp(name, base) == 0 || strcmp(name, rsa) == 0;
        free(rsa);
        free(base);
    }
    acme_conf_free(&conf);
    return ours;
}

static void api_revoke(void *arg, const struct tlsbox_api_request *req,
                       struct tlsbox_api_reply *reply)
{
    struct acme *a = arg;
    json_t *b = api_body(req);
    const char *name = json_string_value(json_object_get(b, "name"));
    if (!name || !*name) {
        json_decref(b);
        a->host->api_reply_error(reply, 400, "acme/revoke: give {\"name\": CERTIFICATE}");
        return;
    }
    if (!api_is_ours(a, name)) {
        a->host->api_reply_error(
            reply, 404, "acme/revoke: %s is not a certificate this ACME plugin manages", name);
        json_decref(b);
        return;
    }
    int ret = acme_run_revoke(a, name);
    if (ret < 0) {
        a->host->api_reply_error(reply, 503, "acme/revoke: could not queue: %s", strerror(-ret));
    } else {
        reply->status = 202;
        json_t *r = json_pack("{s:b,s:s}", "queued", 1, "name", name);
        reply->body = json_dumps(r, JSON_COMPACT);
        json_decref(r);
    }
    json_decref(b);
}

int acme_api_register(struct acme *a)
{
    int ret;
    if ((ret = a->host->api_route_add(a->self, "GET", "acme/status", api_status, a)) < 0 ||
        (ret = a->host->api_route_add(a->self, "POST", "acme/renew", api_renew, a)) < 0 ||
        (ret = a->host->api_route_add(a->self, "POST", "acme/revoke", api_revoke, a)) < 0)
        a->host->log(a->self, TLSBOX_LOG_ERR, "API routes: %s", strerror(-ret));
    return ret;
}
