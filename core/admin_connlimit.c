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
 * Fairness: four clients that asked for Chart.js on their 16 connections
 * each and opened each anew every few seconds kept all 64 younger than
 * ADMIN_ANON_ANSWER_S, and a new admin was refused as long as they went on.
 * So when all are held, a client (or a site, an IPv6 /48 or an IPv4 /24:
 * one attacker may have many /64s or addresses) holding more than its
 * share, ADMIN_CONN_MAX over the clients (sites) holding any with the new
 * one's counted in, loses its longest waiting connection that waits or
 * answers without a session, whatever its age; only when no client holds
 * more than its share does age decide as above.  Some client holds more
 * than its share whenever one that holds none comes, so it gets in unless
 * those hold only answers behind a session.  A share is at least 1: 65
 * clients holding one each are all within it (else the oldest anonymous
 * answer, likely a user's log-in while a flood keeps its own connections
 * young, would go).  nginx's limit_conn caps a key's connections
 * (ADMIN_CONN_PER_CLIENT here) and limit_req a key's rate, a leaky bucket;
 * h2o's soft-connection-limit closes idle connections past a minimum age.
 * None closes for a newcomer by share.  A per-client rate limit was not
 * chosen: it must allow a browser's burst of connections, an attacker with
 * a few more addresses stays under any rate that does, and a share needs no
 * timing.
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
/* Closes for new connections since the last log line, and its time; the
 * same for refusals. */
static unsigned closed_unlogged, refused_unlogged;
static uint64_t last_log_ms, last_refused_log_ms;

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

/* The network of client @p key: an IPv6 /48 (a site: 65536 /64s) or an
 * IPv4 /24 (a site too: the longest IPv4 prefix routed between networks,
 * so the least one party holds). */
static void network_key(const unsigned char key[17], unsigned char net[17])
{
    memcpy(net, key, 17);
    if (net[0] == 6)
        memset(net + 1 + 6, 0, 10);
    else
        net[1 + 3] = 0;
}

/* Connections held by the network of @p key.  Under lock. */
static unsigned network_holds(const unsigned char key[17])
{
    unsigned char net[17], other[17];
    unsigned n = 0;
    network_key(key, net);
    for (int i = 0; i < SLOTS; i++) {
        network_key(clients[i].key, other);
        if (clients[i].n && memcmp(other, net, 17) == 0)
            n += clients[i].n;
    }
    return n;
}

/* The fair shares when a new connection from @p for_key comes: all
 * connections over the clients (and the networks) holding any, the new
 * one's counted in; at least 1.  Under lock. */
struct shares {
    unsigned client, network;
};
static struct shares fair_shares(const unsigned char for_key[17])
{
    unsigned clients_n = 0, networks_n = 0;
    bool new_client = true, new_network = true;
    unsigned char net[17], for_net[17], other[17];
    network_key(for_key, for_net);
    for (int i = 0; i < SLOTS; i++) {
        if (!clients[i].n)
            continue;
        clients_n++;
        new_client &= memcmp(clients[i].key, for_key, 17) != 0;
        network_key(clients[i].key, net);
        new_network &= memcmp(net, for_net, 17) != 0;
        /* A network is counted at its first client in the table. */
        bool first = true;
        for (int j = 0; j < i && first; j++) {
            network_key(clients[j].key, other);
            first = !(clients[j].n && memcmp(other, net, 17) == 0);
        }
        networks_n += first;
    }
    clients_n += new_client;
    networks_n += new_network;
    struct shares s = {ADMIN_CONN_MAX / clients_n, ADMIN_CONN_MAX / networks_n};
    s.client += s.client == 0;
    s.network += s.network == 0;
    return s;
}

/* Why a connection may be closed for a new one: by share before by age. */
enum why { WHY_CLIENT_SHARE, WHY_SITE_SHARE, WHY_AGE, WHY_NOT };
static const char *const why_text[] = {"its client holding more than its share",
                                       "its /48 or /24 holding more than a site's share",
                                       "the longest waiting"};

/* May @p h be closed for a new connection at @p now, and why?  Under lock. */
static enum why closable(const struct held *h, uint64_t now, struct shares s)
{
    if (!h->conn || h->closing || h->state == ADMIN_CONN_ANSWERING)
        return WHY_NOT;
    if (h->client && h->client->n > s.client)
        return WHY_CLIENT_SHARE;
    if (h->client && network_holds(h->client->key) > s.network)
        return WHY_SITE_SHARE;
    return h->state == ADMIN_CONN_WAITING ||
                   now - h->since_ms >= (uint64_t)ADMIN_ANON_ANSWER_S * 1000
               ? WHY_AGE
               : WHY_NOT;
}

/* Log closing @p pick for a new one from @p for_addr: one line per 10 s at
 * most, so that a client that keeps connecting does not flood the log.
 * Under lock. */
static void log_close(const struct held *pick, const struct sockaddr *for_addr, enum why why,
                      uint64_t now)
{
    closed_unlogged++;
    if (last_log_ms != 0 && now - last_log_ms < 10000)
        return;
    bool answering = pick->state != ADMIN_CONN_WAITING;
    char text[INET6_ADDRSTRLEN];
    admin_sockaddr_text(for_addr, text, sizeof text);
    log_warn("admin: all %d admin connections held: closed the one from %s, %s %llu s%s, for a "
             "new one from %s, %s (%u closed so since the previous such line)",
             ADMIN_CONN_MAX, pick->addr, answering ? "answering" : "waiting",
             (unsigned long long)(now - pick->since_ms) / 1000,
             answering ? " without a session" : " unanswered", text, why_text[why],
             closed_unlogged);
    closed_unlogged = 0;
    last_log_ms = now;
}

/* Make room for a new connection from @p for_addr (client @p for_key):
 * shut down a counted connection that waits or answers without a session,
 * of a client (or network) holding more than its share if there is one,
 * else one that has waited or answered ADMIN_ANON_ANSWER_S; the longest
 * waiting first.  False when there is none.  Under lock. */
static bool make_room(const struct sockaddr *for_addr, const unsigned char for_key[17])
{
    uint64_t now = now_ms();
    struct shares shares = fair_shares(for_key);
    struct held *pick = NULL;
    enum why pick_why = WHY_NOT;
    for (int i = 0; i < SLOTS; i++) {
        struct held *h = &helds[i];
        /* By share (a client's or a site's) before by age; the longest waiting first. */
        enum why why = closable(h, now, shares);
        bool by_share = why < WHY_AGE, pick_by_share = pick_why < WHY_AGE;
        if (why == WHY_NOT || (pick && by_share < pick_by_share))
            continue;
        if (!pick || by_share > pick_by_share || h->since_ms < pick->since_ms) {
            pick = h;
            pick_why = why;
        }
    }
    if (!pick)
        return false;
    if (pick->state != ADMIN_CONN_WAITING) { /* libmicrohttpd's close() then resets it */
        struct linger reset = {.l_onoff = 1, .l_linger = 0};
        setsockopt(pick->fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    }
    shutdown(pick->fd, SHUT_RDWR);
    pick->closing = true;
    if (pick->client)
        pick->client->n--;
    log_close(pick, for_addr, pick_why, now);
    return true;
}

/* Log refusing a new connection from @p addr: one line per 10 s at most,
 * as log_close.  Under lock. */
static void log_refused(const struct sockaddr *addr)
{
    uint64_t now = now_ms();
    refused_unlogged++;
    if (last_refused_log_ms != 0 && now - last_refused_log_ms < 10000)
        return;
    char text[INET6_ADDRSTRLEN];
    admin_sockaddr_text(addr, text, sizeof text);
    log_warn("admin: all %d admin connections are answering requests (none without a session "
             "of a client holding more than its share, nor for %d s): a new one from %s "
             "refused (%u refused so since the previous such line)",
             ADMIN_CONN_MAX, ADMIN_ANON_ANSWER_S, text, refused_unlogged);
    refused_unlogged = 0;
    last_refused_log_ms = now;
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
        ok = make_room(addr, key);
        if (!ok)
            log_refused(addr);
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
