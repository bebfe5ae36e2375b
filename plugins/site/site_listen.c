/*
 * The site's listening sockets: one per address and port, shared by all the
 * workers of this process (each adds it to its epoll with EPOLLEXCLUSIVE, so
 * one worker wakes per connection).  No SO_REUSEPORT: with it any process of
 * the same user could bind the same port and take half of the connections
 * (a stale or second tlsboxd with another site and certificate).  Without
 * it, bind() fails with EADDRINUSE, and the error names the port and, when
 * /proc tells, the process holding it.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "site.h"

/* Inode of the socket listening on @p port in /proc/net/tcp or tcp6, or 0. */
static unsigned long listen_inode(const char *table, int port)
{
    char line[512];
    unsigned long ino = 0;
    FILE *f = fopen(table, "re");
    if (!f)
        return 0;
    while (!ino && fgets(line, sizeof(line), f)) {
        char local[64];
        unsigned st, lport;
        unsigned long i;
        /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line, " %*d: %63s %*s %x %*s %*s %*s %*u %*u %lu", local, &st, &i) != 3)
            continue;
        char *colon = strrchr(local, ':');
        if (!colon || sscanf(colon + 1, "%x", &lport) != 1)
            continue;
        if (st == 0x0A && (int)lport == port) /* TCP_LISTEN */
            ino = i;
    }
    fclose(f);
    return ino;
}

/* "pid N (comm)" of the process holding socket inode @p ino, when visible,
 * and its pid in *pid (0 when not found). */
static void inode_owner(unsigned long ino, char *out, size_t cap, long *pid)
{
    char want[64], path[600], link[64];
    DIR *proc = opendir("/proc");
    struct dirent *de;

    snprintf(want, sizeof(want), "socket:[%lu]", ino);
    out[0] = 0;
    *pid = 0;
    while (proc && !out[0] && (de = readdir(proc))) {
        DIR *fds;
        struct dirent *fe;
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/fd", de->d_name);
        if (!(fds = opendir(path)))
            continue; /* another user's process */
        while (!out[0] && (fe = readdir(fds))) {
            ssize_t n;
            snprintf(path, sizeof(path), "/proc/%s/fd/%s", de->d_name, fe->d_name);
            n = readlink(path, link, sizeof(link) - 1);
            if (n <= 0)
                continue;
            link[n] = 0;
            if (strcmp(link, want) == 0) {
                char comm[64] = "?";
                FILE *f;
                snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
                if ((f = fopen(path, "re"))) {
                    if (fgets(comm, sizeof(comm), f))
                        comm[strcspn(comm, "\n")] = 0;
                    fclose(f);
                }
                snprintf(out, cap, "pid %.20s (%.40s)", de->d_name, comm);
                *pid = strtol(de->d_name, NULL, 10);
            }
        }
        closedir(fds);
    }
    if (proc)
        closedir(proc);
}

/* Log @p fmt as an error and hand it to *why too (when @p why is not NULL):
 * a refused live change tells its caller what the log says. */
static void listen_fail(struct site *s, char **why, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void listen_fail(struct site *s, char **why, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    SITE_LOG(s, TLSBOX_LOG_ERR, "%s", msg);
    if (why) {
        free(*why);
        *why = site_xstrdup(msg);
    }
}

union site_sa {
    struct sockaddr sa;
    struct sockaddr_in in4;
    struct sockaddr_in6 in6;
};

/* @p addr of site.bind ("::1" or "[::1]") and @p port into *u; its length, or
 * 0 when it is no address. */
static socklen_t bind_addr(const char *addr, int port, union site_sa *u)
{
    char a[64];
    size_t n = strlen(addr);

    memset(u, 0, sizeof(*u));
    if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']' && n - 2 < sizeof(a)) {
        memcpy(a, addr + 1, n - 2);
        a[n - 2] = 0;
    } else {
        snprintf(a, sizeof(a), "%s", addr);
    }
    if (inet_pton(AF_INET, a, &u->in4.sin_addr) == 1) {
        u->in4.sin_family = AF_INET;
        u->in4.sin_port = htons((uint16_t)port);
        return sizeof(u->in4);
    }
    if (inet_pton(AF_INET6, a, &u->in6.sin6_addr) == 1) {
        u->in6.sin6_family = AF_INET6;
        u->in6.sin6_port = htons((uint16_t)port);
        return sizeof(u->in6);
    }
    return 0;
}

/* Whether a socket bound to @p a keeps one on @p b (same family and port)
 * from binding: the same address, or either is the wildcard. */
static bool addr_overlaps(const union site_sa *a, const union site_sa *b)
{
    if (a->sa.sa_family != b->sa.sa_family)
        return false;
    if (a->sa.sa_family == AF_INET)
        return a->in4.sin_addr.s_addr == b->in4.sin_addr.s_addr ||
               a->in4.sin_addr.s_addr == htonl(INADDR_ANY) ||
               b->in4.sin_addr.s_addr == htonl(INADDR_ANY);
    return IN6_ARE_ADDR_EQUAL(&a->in6.sin6_addr, &b->in6.sin6_addr) ||
           IN6_IS_ADDR_UNSPECIFIED(&a->in6.sin6_addr) || IN6_IS_ADDR_UNSPECIFIED(&b->in6.sin6_addr);
}

/* The settings of the site's two ports, HTTPS first, as listeners index them. */
static const char *const port_keys[2] = {"https_port", "http_port"};

/* @p prev: the listeners served now (NULL at start); @p opened: those this
 * change opened so far, for the addresses of site.bind before @p addr. */
static void explain_in_use(struct site *s, char **why, const struct site_listeners *prev,
                           const struct site_listeners *opened, int which, const char *addr,
                           int port)
{
    const char *key = port_keys[which];
    char owner[128] = "";
    long pid = 0;
    union site_sa want, held;

    /* An address earlier in the list that this one overlaps: "0.0.0.0,
     * 127.0.0.1" cannot listen at all, live or at start. */
    for (size_t i = 0; bind_addr(addr, port, &want) && i < opened->n; i++) {
        if (opened->v[i].port == port && bind_addr(opened->v[i].addr, port, &held) &&
            addr_overlaps(&want, &held)) {
            listen_fail(s, why,
                        "site.bind: %s and %s, both in the list, are one address or overlap (a "
                        "wildcard covers every address of its family): list only one of them",
                        addr, opened->v[i].addr);
            return;
        }
    }

    /* The site's own other port: a swap of the two in one change. */
    for (size_t i = 0; prev && i < prev->n; i++) {
        if (prev->v[i].port == port && prev->v[i].tls != (which == 0)) {
            listen_fail(s, why,
                        "site.%s: port %d is site.%s's until that changes: change site.%s "
                        "first (to swap the two, by way of a free port)",
                        key, port, port_keys[!which], port_keys[!which]);
            return;
        }
    }
    /* The same port on an address of site.bind as served now that this one
     * overlaps (a wildcard and an address of its family, or one address
     * spelt two ways): it listens until the change is made. */
    for (size_t i = 0; prev && bind_addr(addr, port, &want) && i < prev->n; i++) {
        if (prev->v[i].port == port && bind_addr(prev->v[i].addr, port, &held) &&
            addr_overlaps(&want, &held)) {
            listen_fail(s, why,
                        "site.bind: %s port %d overlaps %s, where the site listens on that "
                        "port now, and both cannot listen at once: change site.https_port and "
                        "site.http_port in the same change as site.bind (and back after it), "
                        "or restart tlsboxd with --set site.bind=...",
                        addr, port, prev->v[i].addr);
            return;
        }
    }
    unsigned long ino = listen_inode("/proc/net/tcp", port);
    if (!ino)
        ino = listen_inode("/proc/net/tcp6", port);
    if (ino)
        inode_owner(ino, owner, sizeof(owner), &pid);
    if (pid == (long)getpid()) {
        listen_fail(s, why,
                    "site.%s: port %d on %s is taken by this tlsboxd already (the admin UI's "
                    "admin.port, or another plugin's port): choose a free port",
                    key, port, addr);
        return;
    }
    listen_fail(s, why,
                "site.%s: port %d on %s is in use by %s; is another tlsboxd running? "
                "(a second instance does not share ports)",
                key, port, addr, owner[0] ? owner : "another process");
}

/* A listening socket, or a negative errno; *said is set when the error was
 * logged here already. */
static int make_listener(struct site *s, const char *addr, int port, bool tls, char **why,
                         bool *said)
{
    union site_sa u;
    socklen_t len = bind_addr(addr, port, &u);
    int fd, one = 1, r;

    if (len == 0) {
        listen_fail(s, why, "site.bind: '%s' is not an IPv4 or IPv6 address", addr);
        *said = true;
        return -EINVAL;
    }
    fd = socket(u.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    /* SO_REUSEADDR only lets a restart bind over TIME_WAIT connections. */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (u.sa.sa_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (tls) {
        /* Wake us only when the ClientHello is there. */
        int secs = 5;
        setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof(secs));
    }
    if (bind(fd, &u.sa, len) < 0 || listen(fd, 4096) < 0) {
        r = -errno;
        close(fd);
        return r;
    }
    return fd;
}

/* Whether any interface of this host has an IPv6 address. */
static bool host_has_ipv6(void)
{
    struct ifaddrs *ifs;
    bool has = false;

    if (getifaddrs(&ifs) < 0)
        return true; /* unknown: as a host with IPv6, the error is told */
    for (struct ifaddrs *i = ifs; i && !has; i = i->ifa_next)
        has = i->ifa_addr && i->ifa_addr->sa_family == AF_INET6;
    freeifaddrs(ifs);
    return has;
}

void site_listeners_close(struct site_listeners *l)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i].fd >= 0)
            close(l->v[i].fd);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

/* A copy of @p prev's socket for the same address, port and kind, or -1:
 * a live change keeps the ports it does not change (no bind race, no
 * connection lost in a closed accept queue). */
static int reuse(const struct site_listeners *prev, const char *addr, int port, bool tls)
{
    for (size_t i = 0; prev && i < prev->n; i++)
        if (prev->v[i].port == port && prev->v[i].tls == tls && strcmp(prev->v[i].addr, addr) == 0)
            return fcntl(prev->v[i].fd, F_DUPFD_CLOEXEC, 0);
    return -1;
}

int site_listeners_open(struct site *s, const struct site_config *cfg,
                        const struct site_listeners *prev, struct site_listeners *l, char **why)
{
    int ports[2] = {atomic_load(&cfg->https_port), cfg->http_port};

    l->v = NULL;
    l->n = 0;
    if (ports[0] == ports[1]) {
        /* Else the second bind fails and names this very process. */
        listen_fail(s, why,
                    "site.https_port and site.http_port are both %d: HTTPS and plain HTTP "
                    "need a port each (to swap the two, move one to a free port first)",
                    ports[0]);
        return -EINVAL;
    }
    l->v = site_xcalloc(cfg->nbind * 2, sizeof(*l->v));
    for (size_t i = 0; i < cfg->nbind; i++) {
        for (int p = 0; p < 2; p++) {
            int fd;
            bool said = false;
            if (ports[p] <= 0)
                continue;
            fd = reuse(prev, cfg->bind[i], ports[p], p == 0);
            if (fd < 0)
                fd = make_listener(s, cfg->bind[i], ports[p], p == 0, why, &said);
            if (fd < 0) {
                /* The default "::" on a host without IPv6 is not an error.
                 * On a host with IPv6, an address it does not have is (as
                 * an IPv4 one is): skipped, it was a change accepted with
                 * nothing listening there but a warning in the log. */
                if (strchr(cfg->bind[i], ':') &&
                    (fd == -EAFNOSUPPORT || (fd == -EADDRNOTAVAIL && !host_has_ipv6()))) {
                    SITE_LOG(s, TLSBOX_LOG_WARN, "site.bind: %s port %d: %s (skipped)",
                             cfg->bind[i], ports[p], strerror(-fd));
                    continue;
                }
                if (fd == -EADDRINUSE)
                    explain_in_use(s, why, prev, l, p, cfg->bind[i], ports[p]);
                else if (fd == -EACCES && ports[p] < 1024)
                    /* tlsboxd binds privileged ports before it drops root. */
                    listen_fail(s, why,
                                "site.%s: port %d on %s is below 1024: it opens only while "
                                "tlsboxd starts as root",
                                port_keys[p], ports[p], cfg->bind[i]);
                else if (!said)
                    /* An address not on this host is site.bind's fault, not the
                     * port's: the web UI puts the message by the field named.
                     * So is one a fresh socket cannot bind at all (EINVAL: an
                     * IPv4-mapped IPv6 address, on an IPv6-only socket). */
                    listen_fail(s, why, "site.%s: cannot listen on %s port %d: %s",
                                fd == -EADDRNOTAVAIL || fd == -EINVAL ? "bind" : port_keys[p],
                                cfg->bind[i], ports[p], strerror(-fd));
                site_listeners_close(l);
                return fd;
            }
            l->v[l->n].fd = fd;
            l->v[l->n].tls = p == 0;
            l->v[l->n].port = ports[p];
            snprintf(l->v[l->n].addr, sizeof(l->v[l->n].addr), "%s", cfg->bind[i]);
            l->n++;
        }
    }
    if (l->n == 0) {
        listen_fail(s, why, "site.bind: no address could be bound");
        site_listeners_close(l);
        return -EADDRNOTAVAIL;
    }
    return 0;
}
