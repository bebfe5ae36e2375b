#include "core/api_mhd.h"

#include <stdlib.h>
#include <string.h>

#include "core/api.h"
#include "core/audit.h"
#include "core/metrics.h"
#include "core/xalloc.h"

void api_mhd_security_headers(struct MHD_Response *r)
{
    /* Scripts and styles only from files of the box (no inline, no eval);
     * Chart.js is served from the box too.  No inline style either: Chart.js
     * sizes its canvas through element.style (CSSOM), which a CSP does not
     * govern, and an injected <style> or style="" could restyle the page
     * (hide a warning, fake a button) or read it out through selectors. */
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; script-src 'self'; style-src 'self'; "
                            "img-src 'self' data:; connect-src 'self'; object-src 'none'; "
                            "base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Strict-Transport-Security", "max-age=31536000");
}

/* @p allow: the Allow header of a 405 (RFC 9110 15.5.6), or NULL. */
static enum MHD_Result respond(struct MHD_Connection *conn, int status, char *body,
                               const char *content_type, const char *allow)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (allow)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
    api_mhd_security_headers(r);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

enum MHD_Result api_mhd_respond(struct MHD_Connection *conn, int status, char *body,
                                const char *content_type)
{
    return respond(conn, status, body, content_type, NULL);
}

static enum MHD_Result error_allow(struct MHD_Connection *conn, int status, const char *msg,
                                   const char *allow)
{
    json_t *j = api_error_object(msg);
    char *body = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (!body) /* respond takes strlen(body) */
        body = xstrdup("{\"error\":\"internal error\"}");
    return respond(conn, status, body, "application/json", allow);
}

enum MHD_Result api_mhd_error(struct MHD_Connection *conn, int status, const char *msg)
{
    return error_allow(conn, status, msg, NULL);
}

enum MHD_Result api_mhd_not_allowed(struct MHD_Connection *conn, const char *msg, const char *allow)
{
    return error_allow(conn, 405, msg, allow);
}

int api_mhd_collect(size_t max_body, struct MHD_Connection *conn, const char *upload_data,
                    size_t *upload_data_size, void **con_cls)
{
    struct api_mhd_request *rq = *con_cls;
    if (!rq) {
        /* First call: headers only.  Refuse oversized bodies before reading them. */
        rq = xcalloc(1, sizeof *rq);
        rq->max_body = max_body;
        *con_cls = rq;
        const char *cl =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > max_body)
            rq->too_large = 1;
        return 1;
    }
    if (*upload_data_size > 0) {
        if (!rq->too_large && rq->len + *upload_data_size <= rq->max_body) {
            rq->body = xrealloc(rq->body, rq->len + *upload_data_size + 1);
            memcpy(rq->body + rq->len, upload_data, *upload_data_size);
            rq->len += *upload_data_size;
            rq->body[rq->len] = '\0';
        } else {
            rq->too_large = 1;
        }
        *upload_data_size = 0;
        return 1;
    }
    return 0;
}

/* Append @p s to the string *q, percent-encoded when @p escape. */
static void append(char **q, const char *s, int escape)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t old = strlen(*q), n = strlen(s);
    *q = xrealloc(*q, old + 3 * n + 1);
    char *o = *q + old;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (!escape || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            strchr("-._~", c)) {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    *o = '\0';
}

static enum MHD_Result add_query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                                     size_t key_size, const char *value, size_t value_size)
{
    (void)kind;
    char **q = cls;
    if (**q)
        append(q, "&", 0);
    append(q, key, 1);
    /* MHD decoded a "%00": the C string stops there.  Passed on as %00, which
     * api_dispatch refuses, rather than as a shorter value (an empty filter
     * would list everything). */
    if (strlen(key) != key_size)
        append(q, "%00", 0);
    append(q, "=", 0);
    append(q, value ? value : "", 1);
    if (value && strlen(value) != value_size)
        append(q, "%00", 0);
    return MHD_YES;
}

/* MHD strips the query string from the URL: rebuild it (percent-encoded) for
 * handlers that read req->query.  NULL when there is none. */
static char *request_query(struct MHD_Connection *conn)
{
    char *q = xstrdup("");
    MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, add_query_arg, &q);
    if (!*q) {
        free(q);
        return NULL;
    }
    return q;
}

/* GET @p path as @p user: the body on 200, else NULL. */
static char *get_state(const char *path, const char *user)
{
    if (!path)
        return NULL;
    struct tlsbox_api_request req = {.method = "GET", .path = path, .user = user};
    struct tlsbox_api_reply reply = {0};
    api_dispatch(&req, &reply);
    if (reply.status == 200)
        return reply.body;
    free(reply.body);
    return NULL;
}

enum MHD_Result api_mhd_run(struct MHD_Connection *conn, const char *method, const char *path,
                            const struct api_mhd_request *rq, const char *user, const char *source)
{
    char *query = request_query(conn);
    struct tlsbox_api_request req = {
        .method = method,
        .path = path,
        .query = query,
        .body = rq->body,
        .body_len = rq->len,
        .user = user,
    };
    int change = strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0;
    char *resource = change ? audit_resource(path) : NULL;
    char *before = change ? get_state(resource, user) : NULL;
    struct tlsbox_api_reply reply = {0};
    api_dispatch(&req, &reply);
    if (change && reply.status < 300) {
        /* A POST that left its resource as it was (a preview) changed nothing. */
        char *after = get_state(resource, user);
        if (!before || !after || strcmp(before, after) != 0)
            audit_change(user, source, method, path, rq->body, rq->len, before, after);
        free(after);
    }
    free(before);
    free(resource);
    free(query);
    /* A 405 names the methods the path has, as RFC 9110 asks of it. */
    char *allow = reply.status == 405 ? api_route_methods(path) : NULL;
    enum MHD_Result r = respond(conn, reply.status, reply.body, "application/json", allow);
    free(allow);
    return r;
}

enum MHD_Result api_mhd_access(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
    const struct api_mhd_ctx *ctx = cls;
    if (api_mhd_collect(ctx->max_body, conn, upload_data, upload_data_size, con_cls))
        return MHD_YES;
    struct api_mhd_request *rq = *con_cls;
    if (rq->too_large)
        return api_mhd_error(conn, 413, "request body too large");

    if (strcmp(url, "/metrics") == 0 && strcmp(method, "GET") == 0)
        return api_mhd_respond(conn, 200, metrics_render_prometheus(),
                               "text/plain; version=0.0.4; charset=utf-8");
    if (strncmp(url, API_PREFIX, strlen(API_PREFIX)) != 0)
        return api_mhd_error(conn, 404, "not found: the API lives under /api/v1/");
    return api_mhd_run(conn, method, url + strlen(API_PREFIX), rq, ctx->user, "control socket");
}

void api_mhd_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                       enum MHD_RequestTerminationCode toe)
{
    struct api_mhd_request *rq = *con_cls;
    if (rq) {
        /* Bodies can carry private keys (certificate import): wipe them. */
        wipe_free(rq->body, rq->len);
        free(rq->extra);
        free(rq);
        *con_cls = NULL;
    }
}
