/* Connections to the admin port per client (see admin.h).  libmicrohttpd's
 * own per-IP limit counts each IPv6 address on its own, and a host gets a
 * whole /64: one client could hold every connection (64) and keep the
 * admin UI from everyone.  Counted from libmicrohttpd's connection
 * notifications, checked by its accept policy (both in the listening
 * thread for a new connection; closes come from connection threads). */
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>

#include "core/admin.h"

/* Room for every connection the server takes (its limit is 64), and a few
 * whose close is still being notified. */
#define SLOTS 96

struct client {
    unsigned char key[17]; /* family, then the IPv4 address or the /64 */
    unsigned n;            /* 0: a free slot */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct client clients[SLOTS];

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

enum MHD_Result admin_connlimit_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    unsigned char key[17];
    if (client_key(addr, key) < 0)
        return MHD_YES;
    pthread_mutex_lock(&lock);
    const struct client *c = find(key, 0);
    int ok = !c || c->n < ADMIN_CONN_PER_CLIENT;
    pthread_mutex_unlock(&lock);
    return ok ? MHD_YES : MHD_NO;
}

void admin_connlimit_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                            enum MHD_ConnectionNotificationCode code)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    unsigned char key[17];
    if (!ci || client_key(ci->client_addr, key) < 0)
        return;
    pthread_mutex_lock(&lock);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        struct client *c = find(key, 1);
        /* Marks the connection as counted: its close must uncount it. */
        *socket_context = c;
        if (c)
            c->n++;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        struct client *c = find(key, 0);
        if (c)
            c->n--;
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&lock);
}
