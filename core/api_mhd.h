/* libmicrohttpd glue for the JSON API: body collection, dispatch with the
 * audit of changes, and the security headers, shared by the control socket
 * and the admin HTTPS server (which adds authentication in front). */
#ifndef TLSBOX_CORE_API_MHD_H
#define TLSBOX_CORE_API_MHD_H

#include <stddef.h>
#include <sys/types.h>

#include <microhttpd.h>

#define API_PREFIX "/api/v1/"

struct api_mhd_ctx {
    const char *user; /* who is calling: "control" on the socket */
    size_t max_body;  /* bytes; larger bodies get 413 */
};

/* Per-request state kept in *con_cls (freed by api_mhd_completed). */
struct api_mhd_request {
    char *body;
    size_t len;
    int too_large;
    size_t max_body; /* the limit set when the headers came in */
    void *extra;     /* the admin server's own per-request state, freed with free() */
};

/* MHD access handler of the control socket; cls is a struct api_mhd_ctx. */
enum MHD_Result api_mhd_access(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls);
/* MHD_OPTION_NOTIFY_COMPLETED callback: frees (and wipes) the per-request state. */
void api_mhd_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                       enum MHD_RequestTerminationCode toe);

/*
 * Collect the request body into *con_cls (a struct api_mhd_request).
 * Returns 1 while the access handler must return MHD_YES and wait for more,
 * 0 once the whole request is in (check rq->too_large).  @p max_body is
 * read on the first call (headers only); later calls keep that limit.
 */
int api_mhd_collect(size_t max_body, struct MHD_Connection *conn, const char *upload_data,
                    size_t *upload_data_size, void **con_cls);

/*
 * Run the API route for @p path (after "/api/v1/") as @p user from @p source
 * ("127.0.0.1", "control socket") and queue the reply.  A successful change
 * (any method but GET) is written to the audit log with the state of the
 * resource before and after it; one that left a readable resource exactly
 * as it was (policy/preview) is not a change and is not written.
 */
enum MHD_Result api_mhd_run(struct MHD_Connection *conn, const char *method, const char *path,
                            const struct api_mhd_request *rq, const char *user, const char *source);

/* Add the headers every response carries: CSP without inline script,
 * frame-ancestors 'none', nosniff, Referrer-Policy, HSTS. */
void api_mhd_security_headers(struct MHD_Response *r);

/* Queue a response with the given status and the security headers; takes
 * ownership of body (NUL-terminated). */
enum MHD_Result api_mhd_respond(struct MHD_Connection *conn, int status, char *body,
                                const char *content_type);
/* {"error": msg} with @p status. */
enum MHD_Result api_mhd_error(struct MHD_Connection *conn, int status, const char *msg);
/* A 405 error reply with "Allow: @p allow" (e.g. "GET"). */
enum MHD_Result api_mhd_not_allowed(struct MHD_Connection *conn, const char *msg,
                                    const char *allow);

#endif
