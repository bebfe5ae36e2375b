/* libmicrohttpd glue for the JSON API: one access handler used by the control
 * socket (and the admin HTTPS server, which wraps it with authentication). */
#ifndef TLSBOX_CORE_API_MHD_H
#define TLSBOX_CORE_API_MHD_H

#include <stddef.h>
#include <sys/types.h>

#include <microhttpd.h>

struct api_mhd_ctx {
    const char *user; /* who is calling: "control" on the socket */
    size_t max_body;  /* bytes; larger bodies get 413 */
};

/* MHD access handler; cls is a struct api_mhd_ctx. */
enum MHD_Result api_mhd_access(void *cls, struct MHD_Connection *conn, const char *url,
                               const char *method, const char *version, const char *upload_data,
                               size_t *upload_data_size, void **con_cls);
/* MHD_OPTION_NOTIFY_COMPLETED callback: frees the per-request state. */
void api_mhd_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                       enum MHD_RequestTerminationCode toe);
/* Queue a JSON (or other) response with the given status; takes ownership of body. */
enum MHD_Result api_mhd_respond(struct MHD_Connection *conn, int status, char *body,
                                const char *content_type);

#endif
