/* The JSON API under /api/v1: a route table shared by the control socket and
 * (later) the admin HTTPS server, and the core's own handlers. */
#ifndef TLSBOX_CORE_API_H
#define TLSBOX_CORE_API_H

#include <jansson.h>
#include <tlsbox/host.h>

/* See host.h api_route_add. */
int api_route_add(struct tlsbox_plugin *owner, const char *method, const char *pattern,
                  tlsbox_api_fn fn, void *arg);
void api_routes_remove_owner(struct tlsbox_plugin *owner);
/* Run the matching route; 404/405 JSON errors otherwise.  reply->body always set. */
void api_dispatch(const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply);
void api_reply_error(struct tlsbox_api_reply *reply, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* {"error": @p msg}; bytes of @p msg that are not UTF-8 (a path or value
 * quoted from the request) become U+FFFD, so it is never NULL. */
json_t *api_error_object(const char *msg);
/* Set reply->body to the compact dump of @p j (reference stolen) and status. */
void api_reply_json(struct tlsbox_api_reply *reply, int status, json_t *j);
/* The value of @p key in query string @p query ("k=v&k=v", percent- and
 * plus-decoded; caller frees), or NULL when absent.  Pure; any thread. */
char *api_query_get(const char *query, const char *key);
/* What api_query_int does with a whole number outside lo..hi. */
enum api_query_range {
    API_QUERY_CLAMP,  /* brings it into lo..hi */
    API_QUERY_REFUSE, /* refuses it, as a value that is no whole number */
};
/* The value of @p key in @p query as a whole number in lo..hi into *out,
 * @p dflt (brought into lo..hi) when absent.  0, or -EINVAL with @p reply
 * filled with a 400 that names the key and its value: "since=1d: expected a
 * whole number", with API_QUERY_REFUSE "limit=0: expected a whole number
 * from 1 to 500".  Any thread. */
int api_query_int(const char *query, const char *key, long long dflt, long long lo, long long hi,
                  enum api_query_range range, long long *out, struct tlsbox_api_reply *reply);
/* Parse the request body as a JSON object (duplicates refused); on failure fill
 * reply with 400 and return NULL. */
json_t *api_body_object(const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply);
/* Register the core's routes: status, plugins, plugins/{name}/settings, metrics. */
void api_core_register(void);
/* Main thread, once every plugin has started (just before "ready" is
 * logged and told to systemd): status says "ready": true from then on.
 * The control socket answers earlier, while plugins still start, so a
 * client that needs their routes, states or ports waits for this. */
void api_core_ready(void);
void api_routes_free(void);
/* 1 when a route answers @p method on @p path (the same match as api_dispatch). */
int api_route_exists(const char *method, const char *path);
/* The methods routes serve on @p path, "GET, POST" (caller frees), or NULL. */
char *api_route_methods(const char *path);
/* Every route as [{"method","pattern","owner"}] (tests enumerate them).  New reference. */
json_t *api_routes_json(void);

/* Control socket: libmicrohttpd on AF_UNIX @path (0600), usually
 * "<state_dir>/control.sock".  Main thread only.  control_listen() binds it
 * (before the privilege drop, so a root-only directory works; -EADDRINUSE
 * when another tlsboxd answers there); control_start() then serves it from
 * libmicrohttpd's thread.  control_stop() undoes either. */
int control_listen(const char *path);
/* 1 when a tlsboxd answers on @p path (logged as the reason to stop), else 0. */
int control_in_use(const char *path);
int control_start(void);
void control_stop(void);

#endif
