/* The admin HTTPS server: the web UI (static webui/, Chart.js), the JSON API
 * behind a login, live metrics over Server-Sent Events, /metrics behind a
 * scrape token.  See doc/admin.md. */
#ifndef TLSBOX_CORE_ADMIN_H
#define TLSBOX_CORE_ADMIN_H

#include <gnutls/abstract.h>
#include <stdbool.h>

#include <microhttpd.h>
#include <tlsbox/plugin.h>

#include "core/settings_tables.h"

/* Main thread, after tls_start and api_core_register: register the admin
 * API routes and, when admin.enabled, listen on admin.bind:admin.port.
 * 0, or -1 (logged) when the port cannot be opened. */
int admin_start(void);
/* Main thread: after admin_start failed, listen once more (admin.port and
 * admin.bind read again); returns as admin_start. */
int admin_listen(void);
/* Main thread: stop serving (ends live streams first). */
void admin_stop(void);

/* Register the admin routes in the shared API table (setup token, password,
 * audit, routes, metrics history, plugin pages). */
void admin_api_register(void);
struct tlsbox_api_request;
struct tlsbox_api_reply;
/* True when @p req came through the control socket (tlsboxctl on the box),
 * not from a web session.  Any thread. */
bool admin_request_from_control(const struct tlsbox_api_request *req);
/* Re-check the current password @p current of web user @p user, and with
 * @p factor a second factor in the same attempt (admin_password_recheck:
 * throttled, a wrong one counted as a failed login).  0; or <0 with the
 * error reply (403 wrong password or code, 429 with retry_after, 500)
 * already written.  API threads. */
int admin_recheck_reply(const char *user, const char *current, int (*factor)(void *arg), void *arg,
                        struct tlsbox_api_reply *reply);

/* Static files and plugin pages (admin_static.c): answer GET/HEAD @p url. */
enum MHD_Result admin_static_serve(struct MHD_Connection *conn, const char *url);
/* Resolve the webui directory (installed, else the source tree).  Main thread. */
void admin_static_init(void);

/* The page module of started plugin @p name ("<its .so minus .so>.ui.js")
 * when that file exists (caller frees), else NULL. */
char *admin_plugin_page_path(const char *name);

/* Live metrics stream (admin_live.c) for the session of @p cookie. */
enum MHD_Result admin_live_serve(struct MHD_Connection *conn, const char *cookie);
/* Make every live stream end within 100 ms (before MHD_stop_daemon). */
void admin_live_stop(void);

/* @p sa as text in @p out (room @p n): "127.0.0.1", "::1"; an IPv4-mapped
 * IPv6 address as IPv4; "unknown" for NULL or another family.  Any thread. */
void admin_sockaddr_text(const struct sockaddr *sa, char *out, size_t n);

/* Connections one client may hold open on the admin port: an IPv4
 * address, or an IPv6 /64 (admin_connlimit.c).  Enough for a browser's
 * tabs and live streams, not for one client to hold every connection. */
#define ADMIN_CONN_PER_CLIENT 16
/* Connections the admin port holds in all.  At this count a new connection
 * closes one that waits (idle, in its handshake, or sending its request) or
 * answers without a session: of a client (or site: IPv6 /48, IPv4 /24)
 * holding more than its share of ADMIN_CONN_MAX whatever its age, else one that has waited,
 * or answered ADMIN_ANON_ANSWER_S, longest.  Clients that open many
 * connections and send nothing, read their answers a byte at a time, or
 * open them anew every few seconds, cannot keep the admin UI from others. */
#define ADMIN_CONN_MAX 64
/* Room above ADMIN_CONN_MAX in libmicrohttpd's own limit for connections
 * closed that way whose thread has not ended yet. */
#define ADMIN_CONN_CLOSING 16
/* libmicrohttpd's accept policy: refuse a client at its limit; at
 * ADMIN_CONN_MAX close a connection as said above, or refuse when none may
 * be closed.  Listening thread. */
enum MHD_Result admin_connlimit_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);
/* MHD_OPTION_NOTIFY_CONNECTION: count a client's connections; sets
 * *socket_context for a counted one.  Any thread. */
void admin_connlimit_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                            enum MHD_ConnectionNotificationCode code);
/* An answer to a request without a session (the UI's files, Chart.js, the
 * log-in) that has run this long may be closed for a new connection when
 * ADMIN_CONN_MAX are held: a slow reader of Chart.js must not hold its
 * connection for good.  A browser gets the 550 KB of chart.js in a second
 * on a LAN, and in 10 s even at 440 kbit/s. */
#define ADMIN_ANON_ANSWER_S 10
/* What a connection is doing, for admin_connlimit_mark. */
enum admin_conn_state {
    ADMIN_CONN_WAITING,        /* for a request, or for the rest of its body */
    ADMIN_CONN_ANSWERING_ANON, /* answering a request without a session */
    ADMIN_CONN_ANSWERING,      /* answering behind a session or the metrics token */
};
/* @p conn is now in @p state (its head read and answered without a session
 * until the session or token is checked; waiting again when its answer is
 * done).  Either way its wait or answer starts now.  The connection's own
 * thread. */
void admin_connlimit_mark(struct MHD_Connection *conn, enum admin_conn_state state);

/* The admin server's own certificate source (admin_cert.c): among the TLS
 * bundle's certificates, the one that names the client's server name, else
 * the address it reached, else the first; re-read when the bundle's
 * generation changes.  Called by GnuTLS on the connection's thread. */
int admin_cert_callback(gnutls_session_t session, const struct gnutls_cert_retr_st *info,
                        gnutls_pcert_st **certs, unsigned int *pcert_length,
                        gnutls_ocsp_data_st **ocsp, unsigned int *ocsp_length,
                        gnutls_privkey_t *privkey, unsigned int *flags);
/* Note the curves of each ClientHello on @p conn's TLS session for
 * admin_cert_callback (core/tls_hello.h): from the connection's start, before
 * its handshake. */
void admin_cert_hello_hook(struct MHD_Connection *conn);
void admin_cert_free(void);

#endif
