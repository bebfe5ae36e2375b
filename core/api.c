/* The JSON API route table, shared by the control socket and the admin server. */
#include "core/api.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/plugin_loader.h"
#include "core/utf8.h"
#include "core/xalloc.h"

struct api_route {
    struct tlsbox_plugin *owner;
    char *method;
    char *pattern;
    size_t prefix_len; /* > 0 for prefix patterns ("x/" + "*"): length of "x/" */
    tlsbox_api_fn fn;
    void *arg;
    struct api_route *next;
};

static pthread_rwlock_t routes_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct api_route *routes;
/* Dispatches running on this thread: a handler calling the API in-process
 * (host->api_call) already holds the read lock, and taking it again could
 * wait behind a writer queued meanwhile, which waits for this handler. */
static _Thread_local int dispatch_depth;

int api_route_add(struct tlsbox_plugin *owner, const char *method, const char *pattern,
                  tlsbox_api_fn fn, void *arg)
{
    if (!method || !pattern || !fn || pattern[0] == '/')
        return -EINVAL;
    /* From a handler: this thread holds the read lock, and the write lock
     * would wait for it forever (the admin thread or control socket hung). */
    if (dispatch_depth > 0)
        return -EDEADLK;
    struct api_route *r = xcalloc(1, sizeof *r);
    r->owner = owner;
    r->method = xstrdup(method);
    r->pattern = xstrdup(pattern);
    size_t len = strlen(pattern);
    if (len >= 2 && strcmp(pattern + len - 2, "/*") == 0)
        r->prefix_len = len - 1;
    r->fn = fn;
    r->arg = arg;
    pthread_rwlock_wrlock(&routes_lock);
    for (struct api_route *o = routes; o; o = o->next)
        if (strcmp(o->method, method) == 0 && strcmp(o->pattern, pattern) == 0) {
            pthread_rwlock_unlock(&routes_lock);
            free(r->method);
            free(r->pattern);
            free(r);
            return -EEXIST;
        }
    r->next = routes;
    routes = r;
    pthread_rwlock_unlock(&routes_lock);
    return 0;
}

static void route_free(struct api_route *r)
{
    free(r->method);
    free(r->pattern);
    free(r);
}

void api_routes_remove_owner(struct tlsbox_plugin *owner)
{
    pthread_rwlock_wrlock(&routes_lock);
    struct api_route **pp = &routes;
    while (*pp) {
        if ((*pp)->owner == owner) {
            struct api_route *r = *pp;
            *pp = r->next;
            route_free(r);
        } else {
            pp = &(*pp)->next;
        }
    }
    pthread_rwlock_unlock(&routes_lock);
}

void api_routes_free(void)
{
    pthread_rwlock_wrlock(&routes_lock);
    while (routes) {
        struct api_route *r = routes;
        routes = r->next;
        route_free(r);
    }
    pthread_rwlock_unlock(&routes_lock);
}

static int route_matches(const struct api_route *r, const char *path)
{
    if (r->prefix_len)
        return strncmp(path, r->pattern, r->prefix_len) == 0 && path[r->prefix_len] != '\0';
    return strcmp(path, r->pattern) == 0;
}

/* 0 when every '%' of @p query starts an escape of two hex digits that is
 * not %00; else a 400 in @p reply naming the byte.  A bad escape used to
 * decode to a NUL that cut the value short: "?plugin=%00core" then
 * filtered on nothing and listed every plugin's changes. */
static int query_check(const char *query, struct tlsbox_api_reply *reply)
{
    for (const char *p = query; *p; p++) {
        if (*p != '%')
            continue;
        if (!isxdigit((unsigned char)p[1]) || !isxdigit((unsigned char)p[2]) ||
            (p[1] == '0' && p[2] == '0')) {
            api_reply_error(reply, 400,
                            "query string: bad percent escape at byte %zu (\"%%\" must be "
                            "followed by two hex digits, and %%00 is not allowed)",
                            (size_t)(p - query) + 1);
            return -1;
        }
        p += 2;
    }
    return 0;
}

void api_dispatch(const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply)
{
    reply->status = 200;
    reply->body = NULL;
    if (req->query && query_check(req->query, reply) < 0)
        return;
    /* Literal routes win over prefix routes; among prefixes the longest wins. */
    const struct api_route *best = NULL;
    int path_known = 0;
    if (dispatch_depth++ == 0)
        pthread_rwlock_rdlock(&routes_lock);
    for (const struct api_route *r = routes; r; r = r->next) {
        if (!route_matches(r, req->path))
            continue;
        path_known = 1;
        if (strcmp(r->method, req->method) != 0)
            continue;
        if (!best || (best->prefix_len && (!r->prefix_len || r->prefix_len > best->prefix_len)))
            best = r;
    }
    tlsbox_api_fn fn = best ? best->fn : NULL;
    void *arg = best ? best->arg : NULL;
    /* Handlers run under the read lock: routes are only removed after a
     * plugin's stop hook, and the write lock then waits for running handlers. */
    if (fn)
        fn(arg, req, reply);
    if (--dispatch_depth == 0)
        pthread_rwlock_unlock(&routes_lock);

    if (!fn) {
        if (path_known)
            api_reply_error(reply, 405, "method %s not allowed on /api/v1/%s", req->method,
                            req->path);
        else
            api_reply_error(reply, 404, "no such API path: /api/v1/%s", req->path);
    }
    if (!reply->body)
        reply->body = xstrdup(reply->status < 400 ? "{}" : "{\"error\":\"unknown error\"}");
}

int api_route_exists(const char *method, const char *path)
{
    int found = 0;
    pthread_rwlock_rdlock(&routes_lock);
    for (const struct api_route *r = routes; r && !found; r = r->next)
        found = strcmp(r->method, method) == 0 && route_matches(r, path);
    pthread_rwlock_unlock(&routes_lock);
    return found;
}

char *api_route_methods(const char *path)
{
    char *out = NULL;
    pthread_rwlock_rdlock(&routes_lock);
    for (const struct api_route *r = routes; r; r = r->next) {
        if (!route_matches(r, path))
            continue;
        /* A method once, though a literal and a prefix route may both have it. */
        size_t n = strlen(r->method);
        const char *p = out;
        while (p && (p = strstr(p, r->method)) &&
               !((p == out || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0')))
            p += n;
        if (p)
            continue;
        char *next = out ? xasprintf("%s, %s", out, r->method) : xstrdup(r->method);
        free(out);
        out = next;
    }
    pthread_rwlock_unlock(&routes_lock);
    return out;
}

json_t *api_routes_json(void)
{
    json_t *a = json_array();
    pthread_rwlock_rdlock(&routes_lock);
    for (const struct api_route *r = routes; r; r = r->next)
        json_array_append_new(a,
                              json_pack("{s:s,s:s,s:s}", "method", r->method, "pattern", r->pattern,
                                        "owner", r->owner ? r->owner->name : "core"));
    pthread_rwlock_unlock(&routes_lock);
    return a;
}

void api_reply_json(struct tlsbox_api_reply *reply, int status, json_t *j)
{
    free(reply->body);
    reply->status = status;
    reply->body = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(12)) : NULL;
    if (!reply->body)
        reply->body = xstrdup("null");
    json_decref(j);
}

void api_reply_error(struct tlsbox_api_reply *reply, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = xvasprintf(fmt, ap);
    va_end(ap);
    api_reply_json(reply, status, api_error_object(msg));
    free(msg);
}

json_t *api_error_object(const char *msg)
{
    json_t *j = json_pack("{s:s}", "error", msg);
    if (!j) { /* not UTF-8: jansson refuses it, and the reply would be a bare null */
        char *clean = utf8_sanitize(msg, strlen(msg));
        j = json_pack("{s:s}", "error", clean);
        free(clean);
    }
    return j;
}

/* See api.h.  strtoll alone read "1d" or "abc" as 1 or 0, which answered
 * another range without a word. */
int api_query_int(const char *query, const char *key, long long dflt, long long lo, long long hi,
                  enum api_query_range range, long long *out, struct tlsbox_api_reply *reply)
{
    char *v = api_query_get(query, key), *end = NULL;
    long long n = dflt;
    if (v) {
        errno = 0;
        n = strtoll(v, &end, 10);
        bool number = *v && !*end && !errno;
        if (range == API_QUERY_REFUSE && (!number || n < lo || n > hi)) {
            api_reply_error(reply, 400, "%s=%s: expected a whole number from %lld to %lld", key, v,
                            lo, hi);
            free(v);
            return -EINVAL;
        }
        if (!number) {
            api_reply_error(reply, 400, "%s=%s: expected a whole number", key, v);
            free(v);
            return -EINVAL;
        }
    }
    free(v);
    *out = n < lo ? lo : n > hi ? hi : n;
    return 0;
}

json_t *api_body_object(const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply)
{
    if (!req->body || req->body_len == 0) {
        api_reply_error(reply, 400, "a JSON object body is required");
        return NULL;
    }
    json_error_t e;
    json_t *j = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &e);
    if (!j) {
        /* Without jansson's " near '...'": it quotes up to 20 bytes of the
         * body, which may be a private key's text (cert/import); the line
         * and column say where. */
        char *near = strstr(e.text, " near ");
        if (near)
            *near = '\0';
        api_reply_error(reply, 400, "request body is not valid JSON: %s at line %d column %d",
                        e.text, e.line, e.column);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        api_reply_error(reply, 400, "request body must be a JSON object");
        return NULL;
    }
    return j;
}

/* See api.h. */
char *api_query_get(const char *query, const char *key)
{
    size_t kl = strlen(key);
    for (const char *p = query; p && *p;) {
        size_t len = strcspn(p, "&");
        if (len > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
            char *out = xmalloc(len + 1), *o = out;
            for (const char *s = p + kl + 1; s < p + len; s++) {
                if (*s == '%' && s + 2 < p + len + 1 && s[1] && s[2]) {
                    char hex[3] = {s[1], s[2], 0};
                    *o++ = (char)strtol(hex, NULL, 16);
                    s += 2;
                } else {
                    *o++ = *s == '+' ? ' ' : *s;
                }
            }
            *o = '\0';
            return out;
        }
        p += len + (p[len] == '&');
    }
    return NULL;
}
