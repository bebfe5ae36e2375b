/* Routes plugins answer on the site's plain HTTP port (ACME challenges). */
#ifndef TLSBOX_CORE_HTTP_ROUTES_H
#define TLSBOX_CORE_HTTP_ROUTES_H

#include <tlsbox/host.h>

int http_route_add(struct tlsbox_plugin *owner, const char *prefix, tlsbox_http_fn fn, void *arg);
void http_routes_remove_owner(struct tlsbox_plugin *owner);
int http_route_dispatch(const char *method, const char *path, struct tlsbox_http_reply *reply);
void http_routes_free(void);

#endif
