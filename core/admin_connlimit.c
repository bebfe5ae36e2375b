/* Connections to the admin port (see admin.h).
 *
 * Per client: libmicrohttpd's own per-IP limit counts each IPv6 address on
 * its own, and a host gets a whole /64, so one client could hold every
 * connection.  Here a client is an IPv4 address or an IPv6 /64, and holds
 * at most ADMIN_CONN_PER_CLIENT.
 *
 * In all: libmicrohttpd gives each connection a thread and refuses new ones
 * at its limit, so four clients that open their 16 connections each and
 * send nothing (or a byte of a request head now and then, under the 60 s
 * timeout) kept the admin UI from everyone else.  When ADMIN_CONN_MAX are
 * held, a new connection now closes the one that has waited longest without
 * being answered: idle between requests, in its TLS handshake, or still
 * sending its request head or body.  nginx treats its idle keep-alive
 * connections the same way when it runs out.
 *
 * Answers: four clients that ask for Chart.js (200 KB, no login needed) on
 * their 16 connections each and read it a few bytes at a time (a small
 * receive window) kept all 64 answering, and each byte read is progress to
 * libmicrohttpd's timeout, so none ever closed.  nginx closes a connection
 * that has not taken a write for send_timeout; libmicrohttpd does not say
 * how an answer progresses (a file is sent from inside it), and an attacker
 * can read just often enough anyway.  So an answer to a request without a
 * session that has run ADMIN_ANON_ANSWER_S counts as waiting since it
 * started: the UI's files and the log-in answer take well under a second,
 * so only a slow reader is closed, and only when a new connection needs
 * its room.  Such a connection is reset, not shut down gracefully: the rest
 * of its answer is dropped from the kernel's send buffer at once, as nginx's
 * reset_timedout_connection does.  An answer behind a session or the
 * metrics token (a live metrics stream, an admin's download) is never
 * closed here: those clients have logged in.
 *
 * Counted from libmicrohttpd's connection notifications and checked by its
 * accept policy (both in the listening thread for a new connection; closes,
 * request starts and ends come from connection threads).  The socket is
 * shut down under the lock, and libmicrohttpd notifies a close before it
 * closes the socket, so the descriptor is still this connection's. */
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "core/admin.h"
#include "core/log.h"

/* Room for every connection libmicrohttpd takes (ADMIN_CONN_MAX and those
 * closed here whose close is still under way) and a few more. */
#define SLOTS (ADMIN_CONN_MAX + ADMIN_CONN_CLOSING + 16)

struct client {
    unsigned char key[17]; /* family, then the IPv4 address or the /64 */
    unsigned n;            /* connections counted; 0: a free slot */
};

struct held {
    struct MHD_Connection *conn; /* NULL: a free slot */
    struct client *client;
    int fd;
    uint64_t since_ms; /* accepted, or its last request head read or answered */
    enum admin_conn_state state;
    bool closing; /* shut down here; no longer counted */
    char addr[INET6_ADDRSTRLEN];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct client clients[SLOTS];
static struct held helds[SLOTS];
/* Closes for new connections since the last log line, and its time. */
static unsigned closed_unlogged;
static uint64_t last_log_ms;

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The client of @p sa: 0 and @p key filled, or -1 (not IP: not limited). */
static int client_key(const struct sockaddr *sa, unsigned char key[17])
{
    memset(key, 0, 17);
    if (sa && sa->sa_family == AF_INET) {
        key[0] = 4;
        memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return 0;
    }
    if (!sa || sa->sa_family != AF_INET6)
        return -1;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(a)) {
        key[0] = 4;
        memcpy(key + 1, a->s6_addr + 12, 4);
    } else {
        key[0] = 6;
        memcpy(key + 1, a->s6_addr, 8);
    }
    return 0;
}

/* The slot of @p key, or (create) a free one; NULL when none.  Under lock. */
static struct client *find(const unsigned char key[17], int create)
{
    struct client *free_slot = NULL;
    for (int i = 0; i < SLOTS; i++) {
        if (clients[i].n && memcmp(clients[i].key, key, 17) == 0)
            return &clients[i];
        if (!clients[i].n && !free_slot)
            free_slot = &clients[i];
    }
    if (create && free_slot)
        memcpy(free_slot->key, key, 17);
    return create ? free_slot : NULL;
}

/* Connections counted: neither free slots nor shut down here.  Under lock. */
static unsigned counted(void)
{
    unsigned n = 0;
    for (int i = 0; i < SLOTS; i++)
        n += helds[i].conn && !helds[i].closing;
    return n;
}

/* May @p h be closed for a new connection at @p now?  Under lock. */
static bool closable(const struct held *h, uint64_t now)
{
    if (!h->conn || h->closing)
        return false;
    return h->state == ADMIN_CONN_WAITING ||
           (h->state == ADMIN_CONN_ANSWERING_ANON &&
            now - h->since_ms >= (uint64_t)ADMIN_ANON_ANSWER_S * 1000);
}

/* Shut down the counted connection that has waited longest unanswered, or
 * answered longest without a session past ADMIN_ANON_ANSWER_S, for a new
 * one from @p for_addr; false when there is none.  Under lock. */
static bool close_longest_waiting(const struct sockaddr *for_addr)
{
    uint64_t now = now_ms();
    struct held *pick = NULL;
    for (int i = 0; i < SLOTS; i++) {
        struct held *h = &helds[i];
        if (closable(h, now) && (!pick || h->since_ms < pick->since_ms))
            pick = h;
    }
    if (!pick)
        return false;
    bool answering = pick->state != ADMIN_CONN_WAITING;
    if (answering) { /* libmicrohttpd's close() then resets it */
        struct linger reset = {.l_onoff = 1, .l_linger = 0};
        setsockopt(pick->fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    }
    shutdown(pick->fd, SHUT_RDWR);
    pick->closing = true;
    if (pick->client)
        pick->client->n--;
    closed_unlogged++;
    /* One line per 10 s at most: a client that keeps connecting must not
     * flood the log. */
    if (last_log_ms == 0 || now - last_log_ms >= 10000) {
        char text[INET6_ADDRSTRLEN];
        admin_sockaddr_text(for_addr, text, sizeof text);
        log_warn("admin: all %d admin connections held: closed the one from %s, %s %llu s%s, for "
                 "a new one from %s (%u closed so since the previous such line)",
                 ADMIN_CONN_MAX, pick->addr, answering ? "answering" : "waiting",
                 (unsigned long long)(now - pick->since_ms) / 1000,
                 answering ? " without a session" : " unanswered", text, closed_unlogged);
        closed_unlogged = 0;
        last_log_ms = now;
    }
    return true;
}

enum MHD_Result admin_connlimit_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    (void)cls;
    (void)addrlen;
    unsigned char key[17];
    if (client_key(addr, key) < 0)
        return MHD_YES;
    pthread_mutex_lock(&lock);
    const struct client *c = find(key, 0);
    bool ok = !c || c->n < ADMIN_CONN_PER_CLIENT;
    if (ok && counted() >= ADMIN_CONN_MAX) {
        ok = close_longest_waiting(addr);
        if (!ok) {
            char text[INET6_ADDRSTRLEN];
            admin_sockaddr_text(addr, text, sizeof text);
            log_warn("admin: all %d admin connections are answering requests (none without a "
                     "session for %d s): a new one from %s refused",
                     ADMIN_CONN_MAX, ADMIN_ANON_ANSWER_S, text);
        }
    }
    pthread_mutex_unlock(&lock);
    return ok ? MHD_YES : MHD_NO;
}

void admin_connlimit_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                            enum MHD_ConnectionNotificationCode code)
{
    (void)cls;
    pthread_mutex_lock(&lock);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        const union MHD_ConnectionInfo *fi =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        unsigned char key[17];
        struct held *h = NULL;
        for (int i = 0; i < SLOTS && !h; i++)
            if (!helds[i].conn)
                h = &helds[i];
        /* Not IP, or (never: libmicrohttpd's limit is below SLOTS) no
         * room: not counted, and *socket_context stays NULL. */
        if (h && fi && ci && client_key(ci->client_addr, key) == 0) {
            memset(h, 0, sizeof *h);
            h->conn = conn;
            h->fd = fi->connect_fd;
            h->since_ms = now_ms();
            admin_sockaddr_text(ci->client_addr, h->addr, sizeof h->addr);
            h->client = find(key, 1);
            if (h->client)
                h->client->n++;
            *socket_context = h;
        }
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        struct held *h = *socket_context;
        if (!h->closing && h->client)
            h->client->n--;
        memset(h, 0, sizeof *h);
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&lock);
}

void admin_connlimit_mark(struct MHD_Connection *conn, enum admin_conn_state state)
{
    const union MHD_ConnectionInfo *si =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (!si || !si->socket_context)
        return;
    pthread_mutex_lock(&lock);
    struct held *h = si->socket_context;
    h->state = state;
    h->since_ms = now_ms();
    pthread_mutex_unlock(&lock);
}
