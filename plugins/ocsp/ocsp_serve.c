/*
 * The internal CA's OCSP URL (http://<host>/.well-known/tlsbox-ocsp, written
 * into its leaves by the core) answered on the site's plain HTTP port with
 * the current staple of the internal leaf, for clients that ask the
 * responder themselves: the RFC 6960 GET form and the POST form (the one
 * `openssl ocsp -url` and Firefox use).  The request, in the path or the
 * body, is not needed: there is one internal leaf, and a client checks the
 * CertID.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/ocsp/ocsp_plugin.h"

void ocsp_serve_set(struct ocsp *o, const void *der, size_t len, time_t until)
{
    unsigned char *copy = NULL;
    if (der) {
        copy = tlsbox_xmalloc(len);
        memcpy(copy, der, len);
    }
    pthread_mutex_lock(&o->serve_lock);
    free(o->serve_der);
    o->serve_der = copy;
    o->serve_len = copy ? len : 0;
    o->serve_until = copy ? until : 0;
    pthread_mutex_unlock(&o->serve_lock);
}

/* Site worker thread: a copy under a short lock, no I/O. */
static int serve_on_http(void *arg, const char *method, const char *path,
                         struct tlsbox_http_reply *reply)
{
    struct ocsp *o = arg;
    size_t pl = strlen(OCSP_INTERNAL_PATH);
    if ((strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0 &&
         strcmp(method, "POST") != 0) ||
        strncmp(path, OCSP_INTERNAL_PATH, pl) != 0 || (path[pl] && path[pl] != '/'))
        return -ENOENT;
    unsigned char *body = NULL;
    size_t len = 0;
    pthread_mutex_lock(&o->serve_lock);
    if (o->serve_der && time(NULL) < o->serve_until) {
        body = tlsbox_xmalloc(o->serve_len);
        memcpy(body, o->serve_der, o->serve_len);
        len = o->serve_len;
    }
    pthread_mutex_unlock(&o->serve_lock);
    if (!body) {
        reply->status = 404;
        reply->content_type = "text/plain";
        reply->body = tlsbox_xstrdup("no OCSP answer for the internal CA's certificate yet\n");
        reply->body_len = strlen(reply->body);
        return 0;
    }
    reply->status = 200;
    reply->content_type = "application/ocsp-response";
    reply->body = (char *)body;
    reply->body_len = len;
    return 0;
}

int ocsp_serve_register(struct ocsp *o)
{
    int ret = o->host->http_route_add(o->self, OCSP_INTERNAL_PATH, serve_on_http, o);
    if (ret < 0)
        o->host->log(o->self, TLSBOX_LOG_WARN, "cannot serve %s on the site's HTTP port: %s",
                     OCSP_INTERNAL_PATH, strerror(-ret));
    return ret;
}
