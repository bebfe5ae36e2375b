/*
 * The box's own site as a run on it meets it: the ports it serves and the
 * connections it takes.  The stored site.* settings are not always what it
 * enforces (site.max_connections and a port below 1024 wait for a restart,
 * the open file limit may leave room for fewer connections), so the running
 * site is asked (GET site/limits); the settings serve only when it cannot
 * answer (no site plugin, an older one, no api_call in this tlsboxd).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/bench/bench.h"
#include "plugins/bench/bench_util.h"

/* The integer @p key of @p j into *out; false when it is not one. */
static bool int_field(json_t *j, const char *key, int *out)
{
    json_t *v = json_object_get(j, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
        return false;
    *out = (int)json_integer_value(v);
    return true;
}

/* Fill @p local from the running site; 0, or with *why (caller frees) 1 when
 * no site plugin answers (no such route), -1 for any other failure. */
static int from_site(struct bench *b, struct bench_local *local, char **why)
{
    const struct tlsbox_host *h = b->host;
    int status = 0;
    char *reply = NULL;
    if (!TLSBOX_HOST_HAS(h, api_call)) {
        *why = tlsbox_xstrdup("this tlsboxd has no api_call to ask the running site");
        return -1;
    }
    h->api_call(b->self, "GET", "site/limits", NULL, &status, &reply);
    json_t *j = status == 200 && reply ? json_loads(reply, 0, NULL) : NULL;
    static const char *const keys[] = {"https_port",        "http_port",
                                       "max_connections",   "max_connections_per_ip",
                                       "open_files_budget", "max_connections_setting"};
    int *dst[] = {&local->https_port,       &local->http_port,       &local->max_conns,
                  &local->max_conns_per_ip, &local->max_conns_files, &local->max_conns_setting};
    int rc = 0;
    if (status == 404)
        *why = tlsbox_xstrdup("GET site/limits: no such route (the site plugin is not loaded)");
    else if (!j)
        *why = bench_xasprintf("GET site/limits answered %d: %.200s", status,
                               reply ? reply : "(nothing)");
    for (size_t i = 0; j && i < sizeof(keys) / sizeof(keys[0]); i++)
        if (!int_field(j, keys[i], dst[i])) {
            *why = bench_xasprintf("GET site/limits: \"%s\" is not a number in %.200s", keys[i],
                                   reply);
            break;
        }
    rc = status == 404 ? 1 : *why ? -1 : 0;
    json_decref(j);
    free(reply);
    return rc;
}

void bench_local_load(struct bench *b, struct bench_local *local)
{
    const struct tlsbox_host *h = b->host;
    char *why = NULL;
    memset(local, 0, sizeof(*local));
    local->max_conns_stored = (int)h->setting_get_int(b->self, "site.max_connections", 0);
    int r = from_site(b, local, &why);
    if (r == 0) {
        local->in_effect = true;
    } else {
        h->log(b->self, TLSBOX_LOG_WARN, "%s: %s", why,
               r == 1 ? "runs on the local site are refused, runs by url go ahead"
                      : "checking runs on the local site against the stored site.* settings");
        free(why);
        memset(local, 0, sizeof(*local));
        local->no_site = r == 1;
        local->https_port = (int)h->setting_get_int(b->self, "site.https_port", 0);
        local->http_port = (int)h->setting_get_int(b->self, "site.http_port", 0);
        local->max_conns_per_ip =
            (int)h->setting_get_int(b->self, "site.max_connections_per_ip", 0);
        local->max_conns = (int)h->setting_get_int(b->self, "site.max_connections", 0);
    }
    char *bind = h->setting_get(b->self, "site.bind");
    bench_local_addr(bind ? bind : "", local->addr, sizeof(local->addr));
    free(bind);
}
