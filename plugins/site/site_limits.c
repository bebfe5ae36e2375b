/*
 * The limits the running site enforces, for whoever must stay within them
 * (the bench plugin checks a run on this box's site against them):
 *
 *   GET site/limits  {"https_port", "http_port": the ports served (0 = off),
 *                     "max_connections": the open connections it takes,
 *                     "max_connections_setting": site.max_connections as it
 *                     started with it, "open_files_budget": what the open
 *                     file limit leaves for connections and files,
 *                     "max_connections_per_ip"}
 */
#include "site_limits.h"

#include <stdatomic.h>
#include <stdio.h>

#include "site.h"

static void on_limits(void *arg, const struct tlsbox_api_request *req,
                      struct tlsbox_api_reply *reply)
{
    struct site *s = arg;
    (void)req;
    /* http_port changes with a new generation, under gen_lock. */
    pthread_mutex_lock(&s->gen_lock);
    int http = s->cfg.http_port;
    pthread_mutex_unlock(&s->gen_lock);
    /* Past either, accept closes new connections at once (site_worker.c). */
    int max = s->cfg.max_connections < s->fd_budget ? s->cfg.max_connections : s->fd_budget;
    char *body =
        tlsbox_xasprintf("{\"https_port\":%d,\"http_port\":%d,\"max_connections\":%d,"
                         "\"max_connections_setting\":%d,\"open_files_budget\":%d,"
                         "\"max_connections_per_ip\":%d}",
                         atomic_load(&s->cfg.https_port), http, max, s->cfg.max_connections,
                         s->fd_budget, atomic_load(&s->cfg.max_conns_per_ip));
    reply->status = 200;
    reply->body = body;
}

int site_limits_register(struct site *s)
{
    return s->host->api_route_add(s->self, "GET", "site/limits", on_limits, s);
}
