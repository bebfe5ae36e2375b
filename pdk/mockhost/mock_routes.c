/* The mock host's admin API and site HTTP routes: captured at registration,
 * called by the test with the same matching rules as the core. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mock.h"

static struct api_route {
    char *method, *pattern;
    tlsbox_api_fn fn;
    void *arg;
} * api;
static size_t napi;

/* This thread runs a handler (tlsbox_mock_api): as in the core, it may not
 * add a route (core/api.c would wait for itself). */
static _Thread_local int in_handler;

static struct http_route {
    char *prefix;
    tlsbox_http_fn fn;
    void *arg;
} * http;
static size_t nhttp;

int tlsbox_mockp_api_route_add(struct tlsbox_plugin *self, const char *method, const char *pattern,
                               tlsbox_api_fn fn, void *arg)
{
    (void)self;
    /* As core/api.c: a pattern is what follows "/api/v1/", never "/...". */
    if (!method || !pattern || !*pattern || pattern[0] == '/' || !fn)
        return -EINVAL;
    if (in_handler)
        return -EDEADLK;
    for (size_t i = 0; i < napi; i++)
        if (strcmp(api[i].method, method) == 0 && strcmp(api[i].pattern, pattern) == 0)
            return -EEXIST;
    api = tlsbox_xrealloc(api, (napi + 1) * sizeof *api);
    api[napi++] = (struct api_route){tlsbox_xstrdup(method), tlsbox_xstrdup(pattern), fn, arg};
    return 0;
}

void tlsbox_mockp_api_reply_error(struct tlsbox_api_reply *reply, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = tlsbox_xvasprintf(fmt, ap);
    va_end(ap);
    char *q = tlsbox_mockp_json_string(msg);
    free(reply->body);
    reply->body = tlsbox_xasprintf("{\"error\":%s}", q);
    reply->status = status;
    free(q);
    free(msg);
}

/* The length of "prefix/" of a pattern "prefix/" + "*", else 0 (literal). */
static size_t prefix_len(const char *pattern)
{
    size_t n = strlen(pattern);
    return n >= 2 && pattern[n - 1] == '*' && pattern[n - 2] == '/' ? n - 1 : 0;
}

/* Literal, or "prefix/" + "*" matching a non-empty rest of the path (as
 * core/api.c: "cert/" + "*" does not take "cert/"). */
static int pattern_matches(const char *pattern, const char *path)
{
    size_t n = prefix_len(pattern);
    if (n)
        return strncmp(pattern, path, n) == 0 && path[n] != '\0';
    return strcmp(pattern, path) == 0;
}

int tlsbox_mock_api(const char *method, const char *path, const char *body, char **reply_body)
{
    const char *q = strchr(path, '?');
    char *p = q ? tlsbox_xstrndup(path, (size_t)(q - path)) : tlsbox_xstrdup(path);
    struct tlsbox_api_request req = {.method = method,
                                     .path = p,
                                     .query = q ? q + 1 : NULL,
                                     .body = body,
                                     .body_len = body ? strlen(body) : 0,
                                     .user = "test"};
    struct tlsbox_api_reply reply = {.status = 200};
    /* As core/api.c chooses: a literal route wins over prefix routes, and
     * among prefixes the longest; a path served for other methods only is
     * 405; an empty body is "{}" (an error's: "unknown error"). */
    const struct api_route *best = NULL;
    int path_known = 0;
    for (size_t i = 0; i < napi; i++) {
        if (!pattern_matches(api[i].pattern, p))
            continue;
        path_known = 1;
        if (strcmp(api[i].method, method) != 0)
            continue;
        size_t n = prefix_len(api[i].pattern), bn = best ? prefix_len(best->pattern) : 0;
        if (!best || (bn && (!n || n > bn)))
            best = &api[i];
    }
    if (best) {
        in_handler++;
        best->fn(best->arg, &req, &reply);
        in_handler--;
    } else if (path_known)
        tlsbox_mockp_api_reply_error(&reply, 405, "method %s not allowed on /api/v1/%s", method, p);
    else
        tlsbox_mockp_api_reply_error(&reply, 404, "no such API path: /api/v1/%s", p);
    if (!reply.body)
        reply.body = tlsbox_xstrdup(reply.status < 400 ? "{}" : "{\"error\":\"unknown error\"}");
    free(p);
    if (reply_body)
        *reply_body = reply.body;
    else
        free(reply.body);
    return reply.status;
}

int tlsbox_mockp_http_route_add(struct tlsbox_plugin *self, const char *prefix, tlsbox_http_fn fn,
                                void *arg)
{
    (void)self;
    if (!prefix || prefix[0] != '/' || !fn)
        return -EINVAL;
    for (size_t i = 0; i < nhttp; i++) /* one route per prefix, as core/http_routes.c */
        if (strcmp(http[i].prefix, prefix) == 0)
            return -EEXIST;
    http = tlsbox_xrealloc(http, (nhttp + 1) * sizeof *http);
    http[nhttp++] = (struct http_route){tlsbox_xstrdup(prefix), fn, arg};
    return 0;
}

int tlsbox_mockp_http_route_dispatch(const char *method, const char *path,
                                     struct tlsbox_http_reply *reply)
{
    /* As core/http_routes.c: each handler gets a zeroed reply. */
    for (size_t i = 0; path && i < nhttp; i++)
        if (strncmp(path, http[i].prefix, strlen(http[i].prefix)) == 0) {
            memset(reply, 0, sizeof *reply);
            if (http[i].fn(http[i].arg, method, path, reply) == 0)
                return 0;
        }
    return -ENOENT;
}

int tlsbox_mock_http(const char *method, const char *path, struct tlsbox_http_reply *reply)
{
    return tlsbox_mockp_http_route_dispatch(method, path, reply);
}

void tlsbox_mockp_routes_reset(void)
{
    for (size_t i = 0; i < napi; i++) {
        free(api[i].method);
        free(api[i].pattern);
    }
    for (size_t i = 0; i < nhttp; i++)
        free(http[i].prefix);
    free(api);
    free(http);
    api = NULL;
    http = NULL;
    napi = nhttp = 0;
}
