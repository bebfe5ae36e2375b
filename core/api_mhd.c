#include "core/api_mhd.h"

#include <stdlib.h>
#include <string.h>

#include "core/api.h"
#include "core/metrics.h"
#include "core/xalloc.h"

#define API_PREFIX "/api/v1/"

struct api_mhd_request {
    char *body;
    size_t len;
    int too_large;
};

enum MHD_Result api_mhd_respond(struct MHD_Connection *conn, int status, char *body,
                                const char *content_type)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result respond_error(struct MHD_Connection *conn, int status, const char *msg)
{
    json_t *j = json_pack("{s:s}", "error", msg);
    char *body = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return api_mhd_respond(conn, status, body, "application/json");
}

enum MHD_Result api_mhd_access(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls)
{
    const struct api_mhd_ctx *ctx = cls;
    struct api_mhd_request *rq = *con_cls;
    if (!rq) {
        /* First call: headers only.  Refuse oversized bodies before reading them. */
        rq = xcalloc(1, sizeof *rq);
        *con_cls = rq;
        const char *cl =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > ctx->max_body)
            rq->too_large = 1;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        if (!rq->too_large && rq->len + *upload_data_size <= ctx->max_body) {
            rq->body = xrealloc(rq->body, rq->len + *upload_data_size + 1);
            memcpy(rq->body + rq->len, upload_data, *upload_data_size);
            rq->len += *upload_data_size;
            rq->body[rq->len] = '\0';
        } else {
            rq->too_large = 1;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (rq->too_large)
        return respond_error(conn, 413, "request body too large");

    if (strcmp(url, "/metrics") == 0 && strcmp(method, "GET") == 0)
        return api_mhd_respond(conn, 200, metrics_render_prometheus(),
                               "text/plain; version=0.0.4; charset=utf-8");
    if (strncmp(url, API_PREFIX, strlen(API_PREFIX)) != 0)
        return respond_error(conn, 404, "not found: the API lives under /api/v1/");

    /* Query string: MHD strips it from url; rebuild the one argument handlers need. */
    struct tlsbox_api_request req = {
        .method = method,
        .path = url + strlen(API_PREFIX),
        .query = NULL,
        .body = rq->body,
        .body_len = rq->len,
        .user = ctx->user,
    };
    struct tlsbox_api_reply reply = {0};
    api_dispatch(&req, &reply);
    return api_mhd_respond(conn, reply.status, reply.body, "application/json");
}

void api_mhd_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                       enum MHD_RequestTerminationCode toe)
{
    struct api_mhd_request *rq = *con_cls;
    if (rq) {
        /* Bodies can carry private keys (certificate import): wipe them. */
        wipe_free(rq->body, rq->len);
        free(rq);
        *con_cls = NULL;
    }
}
