/* The admin HTTPS server (libmicrohttpd + GnuTLS): authentication in front
 * of the shared API, the session endpoints, live metrics, static files and
 * /metrics behind a scrape token.  A thread per connection: the live stream
 * sleeps in its reader, and a browser keeps few connections. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/admin.h"
#include "core/admin_auth.h"
#include "core/api.h"
#include "core/api_mhd.h"
#include "core/audit.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/settings.h"
#include "core/settings_check.h"
#include "core/xalloc.h"

#define COOKIE "__Host-tlsbox"
/* Kept across sessions and logouts: see admin_login. */
#define DEVICE_COOKIE "__Host-tlsbox-device"
#define SESSION_URL API_PREFIX "session"
/* Request bodies without a session: log-in and setup only. */
#define ADMIN_ANON_MAX_BODY (16 * 1024)

static struct MHD_Daemon *admin_daemon;
static size_t admin_max_body;

__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    log_vmsg("admin", TLSBOX_LOG_DEBUG, fmt, ap);
}

void admin_sockaddr_text(const struct sockaddr *sa, char *out, size_t n)
{
    snprintf(out, n, "unknown");
    if (!sa)
        return;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, (socklen_t)n);
    else if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_V4MAPPED(a))
            inet_ntop(AF_INET, &a->s6_addr[12], out, (socklen_t)n);
        else
            inet_ntop(AF_INET6, a, out, (socklen_t)n);
    }
}

/* The peer's address as text ("127.0.0.1", "::1"). */
static void peer_address(struct MHD_Connection *conn, char *out, size_t n)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    admin_sockaddr_text(ci ? ci->client_addr : NULL, out, n);
}

/* respond_json with up to two Set-Cookie headers (NULL: none). */
static enum MHD_Result respond_json2(struct MHD_Connection *conn, int status, json_t *j,
                                     const char *cookie_header, const char *cookie2)
{
    char *body = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (cookie_header)
        MHD_add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, cookie_header);
    if (cookie2)
        MHD_add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, cookie2);
    api_mhd_security_headers(r);
    enum MHD_Result ret = MHD_queue_response(conn, (unsigned)status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result respond_json(struct MHD_Connection *conn, int status, json_t *j,
                                    const char *cookie_header)
{
    return respond_json2(conn, status, j, cookie_header, NULL);
}

static enum MHD_Result set_session_cookie(struct MHD_Connection *conn,
                                          const struct admin_session *s)
{
    char cookie[256], device[256];
    snprintf(cookie, sizeof cookie, COOKIE "=%s; Path=/; Secure; HttpOnly; SameSite=Strict",
             s->cookie);
    snprintf(device, sizeof device,
             DEVICE_COOKIE "=%s; Path=/; Max-Age=%d; Secure; HttpOnly; SameSite=Strict", s->device,
             ADMIN_DEVICE_MAX_AGE);
    return respond_json2(
        conn, 200, json_pack("{s:s,s:s,s:s}", "state", "ok", "user", s->user, "csrf", s->csrf),
        cookie, s->device[0] ? device : NULL);
}

/* Body member @p key as a string, or "". */
static const char *member(json_t *body, const char *key)
{
    const char *s = json_string_value(json_object_get(body, key));
    return s ? s : "";
}

static enum MHD_Result on_login(struct MHD_Connection *conn, json_t *body, const char *source)
{
    struct admin_session s;
    int retry = 0;
    const char *device = MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, DEVICE_COOKIE);
    int rc = admin_login(member(body, "user"), member(body, "password"), member(body, "code"),
                         source, device, &s, &retry);
    if (rc == 0)
        return set_session_cookie(conn, &s);
    if (rc == -ENOKEY || rc == -EKEYREJECTED)
        return respond_json(conn, 401,
                            json_pack("{s:s,s:b}", "error",
                                      rc == -ENOKEY
                                          ? "enter the 6-digit code from your authenticator app"
                                          : "wrong one-time code (or one used already)",
                                      "code_needed", 1),
                            NULL);
    if (rc == -EAGAIN || rc == -EPERM || rc == -EBUSY)
        return respond_json(
            conn, 429,
            json_pack("{s:s,s:i}", "error",
                      rc == -EPERM   ? "too many failed logins: locked out"
                      : rc == -EBUSY ? "too many failed logins from other addresses and users "
                                       "being throttled: no room to track this login, retry later"
                                     : "too many failed logins: wait and retry",
                      "retry_after", retry),
            NULL);
    return api_mhd_error(conn, rc == -EACCES ? 401 : 500,
                         rc == -EACCES ? "wrong user name or password" : "login failed");
}

static enum MHD_Result on_setup(struct MHD_Connection *conn, json_t *body, const char *source)
{
    char *err = NULL;
    const char *user = member(body, "user"), *pw = member(body, "password");
    int rc = admin_setup(member(body, "token"), user, pw, &err);
    if (rc == -EINVAL) {
        enum MHD_Result r = api_mhd_error(conn, 400, err);
        free(err);
        return r;
    }
    free(err);
    if (rc == -EACCES || rc == -EEXIST)
        return api_mhd_error(conn, 403,
                             rc == -EEXIST ? "already set up: log in"
                                           : "setup token unknown or expired: run "
                                             "'tlsboxctl admin setup-url' on the box");
    if (rc < 0)
        return api_mhd_error(conn, 500, "setup failed");
    log_info("admin: first-run setup created user \"%s\" from %s", user, source);
    audit_event(user, source, "admin.setup", user, NULL);
    return on_login(conn, body, source);
}

/* POST/GET under /api/v1/session: no session needed except for logout. */
static enum MHD_Result session_endpoint(struct MHD_Connection *conn, const char *url,
                                        const char *method, const struct api_mhd_request *rq,
                                        const char *cookie, const char *source)
{
    const char *what = url + strlen(SESSION_URL);
    struct admin_session s;
    if (strcmp(what, "") == 0 && strcmp(method, "GET") == 0) {
        if (admin_session_get(cookie, &s) == 0)
            return respond_json(
                conn, 200,
                json_pack("{s:s,s:s,s:s}", "state", "ok", "user", s.user, "csrf", s.csrf), NULL);
        int users = admin_users_count();
        return respond_json(conn, 200, json_pack("{s:s}", "state", users == 0 ? "setup" : "login"),
                            NULL);
    }
    if (strcmp(method, "POST") != 0)
        return api_mhd_error(conn, 405, "use POST");
    if (strcmp(what, "/logout") == 0) {
        if (admin_session_get(cookie, &s) < 0)
            return api_mhd_error(conn, 401, "not logged in");
        const char *csrf = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-CSRF-Token");
        if (!csrf || !admin_token_equal(csrf, s.csrf))
            return api_mhd_error(conn, 403, "missing or wrong CSRF token");
        admin_session_end(cookie);
        audit_event(s.user, source, "logout", s.user, NULL);
        return respond_json(conn, 200, json_pack("{s:s}", "state", "login"),
                            COOKIE "=; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=0");
    }
    /* A cross-site form can POST text/plain but not application/json (that
     * needs a CORS preflight this server never grants): no login CSRF. */
    const char *ct =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!ct || strncmp(ct, "application/json", 16) != 0)
        return api_mhd_error(conn, 415, "send the body as Content-Type: application/json");
    json_t *body = rq->body ? json_loadb(rq->body, rq->len, 0, NULL) : NULL;
    enum MHD_Result r;
    if (!json_is_object(body))
        r = api_mhd_error(conn, 400, "a JSON object body is required");
    else if (strcmp(what, "/login") == 0)
        r = on_login(conn, body, source);
    else if (strcmp(what, "/setup") == 0)
        r = on_setup(conn, body, source);
    else
        r = api_mhd_error(conn, 404, "no such session endpoint");
    json_decref(body);
    return r;
}

/* /metrics: off unless admin.metrics_token is set; then "Bearer <token>". */
static enum MHD_Result metrics_endpoint(struct MHD_Connection *conn)
{
    char *token = settings_get("admin.metrics_token");
    const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    int ok = token && *token && auth && strncmp(auth, "Bearer ", 7) == 0 &&
             admin_token_equal(auth + 7, token);
    int off = !token || !*token;
    wipe_free_str(token);
    if (off)
        return api_mhd_error(conn, 404, "/metrics is off on the admin port (admin.metrics_token)");
    if (!ok)
        return api_mhd_error(conn, 401,
                             "/metrics needs Authorization: Bearer <admin.metrics_token>");
    admin_connlimit_mark(conn, ADMIN_CONN_ANSWERING);
    return api_mhd_respond(conn, 200, metrics_render_prometheus(),
                           "text/plain; version=0.0.4; charset=utf-8");
}

/* The API behind a session; changes also need the CSRF token. */
static enum MHD_Result api_endpoint(struct MHD_Connection *conn, const char *url,
                                    const char *method, const struct api_mhd_request *rq,
                                    const char *cookie, const char *source)
{
    struct admin_session s;
    if (admin_session_get(cookie, &s) < 0)
        return api_mhd_error(conn, 401, "log in first (no session, or it expired)");
    /* Logged in: never closed for a new connection (the live stream). */
    admin_connlimit_mark(conn, ADMIN_CONN_ANSWERING);
    if (strcmp(url, API_PREFIX "live") == 0 && strcmp(method, "GET") == 0)
        return admin_live_serve(conn, cookie);
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        const char *csrf = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-CSRF-Token");
        if (!csrf || !admin_token_equal(csrf, s.csrf))
            return api_mhd_error(conn, 403, "missing or wrong CSRF token (X-CSRF-Token)");
    }
    /* The live stream is the admin server's own, not in the route table,
     * which would answer any other method 404: answer it as the table
     * answers a path it has for other methods only. */
    if (strcmp(url, API_PREFIX "live") == 0)
        return api_mhd_not_allowed(conn, "/api/v1/live: GET only", "GET");
    /* The handler runs on this thread: a change of the second factor ends
     * the user's other sessions, not this one (admin_sessions_end_others). */
    admin_session_current_set(cookie);
    enum MHD_Result r = api_mhd_run(conn, method, url + strlen(API_PREFIX), rq, s.user, source);
    admin_session_current_set(NULL);
    return r;
}

/*
 * The most body a request may send: core.api_max_body behind a session, a
 * little for everyone else (log-in and setup take a few hundred bytes), so a
 * client that has not logged in cannot make the daemon hold megabytes per
 * connection.  Asked when the headers are in, before any body is read.
 */
static size_t body_limit(struct MHD_Connection *conn, const char *url)
{
    size_t small = admin_max_body < ADMIN_ANON_MAX_BODY ? admin_max_body : ADMIN_ANON_MAX_BODY;
    /* Most requests (every GET) cannot send more than the small limit: no
     * need to look the session up here as well as in api_endpoint. */
    const char *cl =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING) &&
        (!cl || strtoull(cl, NULL, 10) <= small))
        return small;
    struct admin_session s;
    const char *cookie = MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, COOKIE);
    if (strncmp(url, API_PREFIX, strlen(API_PREFIX)) == 0 &&
        strncmp(url, SESSION_URL, strlen(SESSION_URL)) != 0 && admin_session_get(cookie, &s) == 0)
        return admin_max_body;
    return small;
}

static enum MHD_Result admin_access(void *cls, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *version,
                                    const char *upload_data, size_t *upload_data_size,
                                    void **con_cls)
{
    bool head_only = *con_cls == NULL;
    if (api_mhd_collect(*con_cls ? 0 : body_limit(conn, url), conn, upload_data, upload_data_size,
                        con_cls)) {
        if (head_only) /* a body may follow: still waiting on the client */
            admin_connlimit_mark(conn, ADMIN_CONN_WAITING);
        return MHD_YES;
    }
    /* Without a session until api_endpoint or /metrics finds one. */
    admin_connlimit_mark(conn, ADMIN_CONN_ANSWERING_ANON);
    const struct api_mhd_request *rq = *con_cls;
    if (rq->too_large)
        return api_mhd_error(conn, 413, "request body too large");
    char source[INET6_ADDRSTRLEN + 1];
    peer_address(conn, source, sizeof source);
    const char *cookie = MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, COOKIE);

    if (strcmp(url, "/metrics") == 0)
        return metrics_endpoint(conn);
    if (strncmp(url, SESSION_URL, strlen(SESSION_URL)) == 0 &&
        (url[strlen(SESSION_URL)] == '\0' || url[strlen(SESSION_URL)] == '/'))
        return session_endpoint(conn, url, method, rq, cookie, source);
    if (strncmp(url, API_PREFIX, strlen(API_PREFIX)) == 0)
        return api_endpoint(conn, url, method, rq, cookie, source);
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return api_mhd_error(conn, 405, "static files: GET only");
    return admin_static_serve(conn, url);
}

/* A request ended (answered, or its connection closed): the connection
 * waits for its next request from now on. */
static void admin_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                            enum MHD_RequestTerminationCode toe)
{
    admin_connlimit_mark(conn, ADMIN_CONN_WAITING);
    api_mhd_completed(cls, conn, con_cls, toe);
}

/* A listening TCP socket on @p bind (empty: every address, IPv6 and IPv4). */
static int listen_on(const char *bind_addr, int port)
{
    char portstr[8];
    snprintf(portstr, sizeof portstr, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE};
    struct addrinfo *res = NULL;
    const char *host = *bind_addr ? bind_addr : "::";
    int g = getaddrinfo(host, portstr, &hints, &res);
    if (g != 0 && !*bind_addr)
        g = getaddrinfo("0.0.0.0", portstr, &hints, &res);
    if (g != 0) {
        log_err("admin: admin.bind %s: %s", host, gai_strerror(g));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1, zero = 0;
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (res->ai_family == AF_INET6 && !*bind_addr)
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 64) < 0) {
            log_err("admin: cannot listen on [%s]:%d: %s", host, port, strerror(errno));
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

int admin_start(void)
{
    admin_api_register();
    admin_static_init();
    return admin_listen();
}

/* A connection starts or ends: its count per client, and its ClientHello's
 * curves for the certificate choice. */
static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    if (code == MHD_CONNECTION_NOTIFY_STARTED)
        admin_cert_hello_hook(conn);
    admin_connlimit_notify(cls, conn, socket_context, code);
}

int admin_listen(void)
{
    if (!settings_get_bool("admin.enabled", true)) {
        log_info("admin: web UI off (admin.enabled)");
        return 0;
    }
    char *bind_addr = settings_get("admin.bind");
    int port = (int)settings_get_int("admin.port", 9443);
    int fd = listen_on(bind_addr ? bind_addr : "", port);
    if (fd < 0) {
        free(bind_addr);
        return -1;
    }
    admin_max_body = (size_t)settings_get_int("core.api_max_body", 1 << 20);
    /* TLS 1.2 and 1.3 whatever the site's policy: a policy that locks out
     * the browser must stay fixable from the browser. */
    admin_daemon = MHD_start_daemon(
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_TLS |
            MHD_USE_ERROR_LOG | MHD_USE_POLL,
        0, admin_connlimit_accept, NULL, admin_access, NULL, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log,
        NULL, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_HTTPS_CERT_CALLBACK2, admin_cert_callback,
        MHD_OPTION_HTTPS_PRIORITIES, "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2",
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_NOTIFY_COMPLETED, admin_completed,
        NULL, MHD_OPTION_CONNECTION_LIMIT, (unsigned)(ADMIN_CONN_MAX + ADMIN_CONN_CLOSING),
        /* Per client, an IPv6 /64 counted as one (MHD's per-IP limit is per
         * address), and ADMIN_CONN_MAX in all: admin_connlimit.c. */
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL, MHD_OPTION_END);
    if (!admin_daemon) {
        log_err("admin: libmicrohttpd did not start on port %d", port);
        close(fd);
        free(bind_addr);
        return -1;
    }
    log_info("admin: web UI on https://%s:%d/", *bind_addr ? bind_addr : "*", port);
    free(bind_addr);
    return 0;
}

void admin_stop(void)
{
    if (admin_daemon) {
        admin_live_stop();
        MHD_stop_daemon(admin_daemon);
        admin_daemon = NULL;
    }
    admin_cert_free();
}
