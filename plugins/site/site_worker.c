/*
 * Worker threads: each has its own epoll, its own SO_REUSEPORT listeners
 * (the kernel spreads connections, no shared accept lock) and its own timer
 * lists.  A timer list holds connections with the same timeout, so appending
 * keeps it sorted by deadline and expiry only looks at the heads.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "site.h"

#define EV_TAG_EVFD 0xffffu /* epoll data below this: listener index */
#define MAX_EVENTS 256
#define ACCEPT_BATCH 64
/* How long listeners stay off epoll after accept() ran out of descriptors:
 * the pending connection keeps a level-triggered listener readable, so
 * without a pause the loop would spin on EMFILE. */
#define ACCEPT_PAUSE_MS 100

uint64_t site_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t site_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void site_worker_update_date(struct site_worker *w, time_t now)
{
    if (now == w->date_sec)
        return;
    w->date_sec = now;
    w->date_len = (size_t)site_http_date(now, w->date, sizeof(w->date));
}

void site_warn(struct site_worker *w, const char *fmt, ...)
{
    char msg[512];
    va_list ap;

    if (w->warn_ms && w->now_ms - w->warn_ms < 1000)
        return;
    w->warn_ms = w->now_ms;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    SITE_LOG(w->s, TLSBOX_LOG_WARN, "%s", msg);
}

/* ---- timers -------------------------------------------------------------- */

static int timeout_ms(const struct site *s, enum site_timer_kind k)
{
    switch (k) {
    case SITE_T_HANDSHAKE:
        return atomic_load_explicit(&s->cfg.handshake_timeout_ms, memory_order_relaxed);
    case SITE_T_HEADER:
        return atomic_load_explicit(&s->cfg.header_timeout_ms, memory_order_relaxed);
    case SITE_T_IDLE:
        return atomic_load_explicit(&s->cfg.idle_timeout_ms, memory_order_relaxed);
    case SITE_T_SEND:
        return atomic_load_explicit(&s->cfg.send_timeout_ms, memory_order_relaxed);
    case SITE_T_LINGER:
        return atomic_load_explicit(&s->cfg.lingering_timeout_ms, memory_order_relaxed);
    default:
        return 0;
    }
}

void site_timer_set(struct site_conn *c, enum site_timer_kind k)
{
    struct site_worker *w = c->w;
    if (c->tkind != SITE_T_NONE) {
        struct site_tlist *l = &w->tl[c->tkind];
        if (c->tprev)
            c->tprev->tnext = c->tnext;
        else
            l->head = c->tnext;
        if (c->tnext)
            c->tnext->tprev = c->tprev;
        else
            l->tail = c->tprev;
        c->tprev = c->tnext = NULL;
    }
    c->tkind = (uint8_t)k;
    if (k == SITE_T_NONE)
        return;
    c->deadline_ms = w->now_ms + (uint64_t)timeout_ms(w->s, k);
    c->tprev = w->tl[k].tail;
    c->tnext = NULL;
    if (w->tl[k].tail)
        w->tl[k].tail->tnext = c;
    else
        w->tl[k].head = c;
    w->tl[k].tail = c;
}

/*
 * A timeout lowered live: the connections already in the list keep their
 * later deadlines, and a new one appended behind them would never reach the
 * head in time (expiry only looks at the heads).  So pull every deadline in
 * to now + the new value; min() keeps the list sorted, and later appends come
 * after.  Raising a timeout needs nothing: new deadlines are later anyway.
 */
static void timers_follow_settings(struct site_worker *w)
{
    for (int k = 1; k < SITE_T_MAX; k++) {
        int ms = timeout_ms(w->s, (enum site_timer_kind)k);
        if (ms < w->tl_ms[k]) {
            uint64_t cap = w->now_ms + (uint64_t)ms;
            for (struct site_conn *c = w->tl[k].head; c; c = c->tnext)
                if (c->deadline_ms > cap)
                    c->deadline_ms = cap;
        }
        w->tl_ms[k] = ms;
    }
}

static int next_timeout(struct site_worker *w)
{
    uint64_t best = UINT64_MAX;
    for (int k = 1; k < SITE_T_MAX; k++)
        if (w->tl[k].head && w->tl[k].head->deadline_ms < best)
            best = w->tl[k].head->deadline_ms;
    if (w->draining && w->drain_deadline_ms < best)
        best = w->drain_deadline_ms;
    if (w->accept_paused && w->accept_resume_ms < best)
        best = w->accept_resume_ms;
    if (best == UINT64_MAX)
        return w->nconns || w->wm.bytes_in || w->wm.bytes_out ? 1000 : -1;
    if (best <= w->now_ms)
        return 0;
    /* +1: the coarse clock may lag by a tick; 1 s at most for the metrics flush */
    return best - w->now_ms + 1 > 1000 ? 1000 : (int)(best - w->now_ms + 1);
}

static void expire(struct site_worker *w)
{
    for (int k = 1; k < SITE_T_MAX; k++) {
        struct site_conn *c;
        while ((c = w->tl[k].head) && c->deadline_ms <= w->now_ms)
            site_conn_timeout(c);
    }
}

/* Every open connection is in exactly one timer list. */
static size_t snapshot(struct site_worker *w, struct site_conn ***out)
{
    size_t n = 0, cap = (size_t)w->nconns + 1;
    struct site_conn **v = site_xmalloc(cap * sizeof(*v));
    for (int k = 1; k < SITE_T_MAX; k++)
        for (struct site_conn *c = w->tl[k].head; c && n < cap; c = c->tnext)
            v[n++] = c;
    *out = v;
    return n;
}

/* ---- listeners ------------------------------------------------------------ */

static int make_listener(struct site *s, const char *addr, int port, bool tls)
{
    union {
        struct sockaddr sa;
        struct sockaddr_in in4;
        struct sockaddr_in6 in6;
    } u;
    socklen_t len;
    char a[64];
    int fd, one = 1, r;
    size_t n = strlen(addr);

    memset(&u, 0, sizeof(u));
    if (n >= 2 && addr[0] == '[' && addr[n - 1] == ']' && n - 2 < sizeof(a)) {
        memcpy(a, addr + 1, n - 2);
        a[n - 2] = 0;
    } else {
        snprintf(a, sizeof(a), "%s", addr);
    }
    if (inet_pton(AF_INET, a, &u.in4.sin_addr) == 1) {
        u.in4.sin_family = AF_INET;
        u.in4.sin_port = htons((uint16_t)port);
        len = sizeof(u.in4);
    } else if (inet_pton(AF_INET6, a, &u.in6.sin6_addr) == 1) {
        u.in6.sin6_family = AF_INET6;
        u.in6.sin6_port = htons((uint16_t)port);
        len = sizeof(u.in6);
    } else {
        SITE_LOG(s, TLSBOX_LOG_ERR, "site.bind: '%s' is not an IPv4 or IPv6 address", addr);
        return -EINVAL;
    }
    fd = socket(u.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
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

static int worker_listen(struct site_worker *w)
{
    struct site *s = w->s;
    const struct site_config *cfg = &s->cfg;
    int ports[2] = {cfg->https_port, cfg->http_port};

    w->listen_fds = site_xcalloc(cfg->nbind * 2, sizeof(int));
    w->listen_tls = site_xcalloc(cfg->nbind * 2, sizeof(bool));
    for (size_t i = 0; i < cfg->nbind; i++) {
        for (int p = 0; p < 2; p++) {
            int fd;
            struct epoll_event ev = {.events = EPOLLIN};
            if (ports[p] <= 0)
                continue;
            fd = make_listener(s, cfg->bind[i], ports[p], p == 0);
            if (fd < 0) {
                /* The default "::" on a host without IPv6 is not an error. */
                if (strchr(cfg->bind[i], ':') && (fd == -EAFNOSUPPORT || fd == -EADDRNOTAVAIL)) {
                    if (w->id == 0)
                        SITE_LOG(s, TLSBOX_LOG_WARN, "site.bind: %s port %d: %s (skipped)",
                                 cfg->bind[i], ports[p], strerror(-fd));
                    continue;
                }
                SITE_LOG(s, TLSBOX_LOG_ERR, "site.bind: cannot listen on %s port %d: %s",
                         cfg->bind[i], ports[p], strerror(-fd));
                return fd;
            }
            ev.data.u64 = w->nlisten;
            if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
                close(fd);
                return -errno;
            }
            w->listen_fds[w->nlisten] = fd;
            w->listen_tls[w->nlisten] = p == 0;
            w->nlisten++;
        }
    }
    if (w->nlisten == 0) {
        SITE_LOG(s, TLSBOX_LOG_ERR, "site.bind: no address could be bound");
        return -EADDRNOTAVAIL;
    }
    return 0;
}

static void close_listeners(struct site_worker *w)
{
    for (size_t i = 0; i < w->nlisten; i++)
        if (w->listen_fds[i] >= 0) {
            close(w->listen_fds[i]);
            w->listen_fds[i] = -1;
        }
}

/* Take the listeners off epoll (on) or put them back (off). */
static void listeners_pause(struct site_worker *w, bool on)
{
    for (size_t i = 0; i < w->nlisten; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = i};
        if (w->listen_fds[i] < 0)
            continue;
        if (epoll_ctl(w->ep, on ? EPOLL_CTL_DEL : EPOLL_CTL_ADD, w->listen_fds[i], &ev) < 0 && !on)
            SITE_LOG(w->s, TLSBOX_LOG_ERR, "accept: cannot resume listener %zu: %s", i,
                     strerror(errno));
    }
    w->accept_paused = on;
    if (on)
        w->accept_resume_ms = w->now_ms + ACCEPT_PAUSE_MS;
}

static void on_accept(struct site_worker *w, size_t idx)
{
    struct site *s = w->s;
    int lfd = w->listen_fds[idx];

    for (int i = 0; i < ACCEPT_BATCH && lfd >= 0 && !w->accept_paused; i++) {
        int one = 1;
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) {
                int e = errno;
                if (w->emfile_warn_ms == 0 || w->now_ms - w->emfile_warn_ms >= 1000) {
                    w->emfile_warn_ms = w->now_ms;
                    SITE_LOG(s, TLSBOX_LOG_WARN,
                             "accept: %s (raise the open file limit); not accepting for %d ms",
                             strerror(e), ACCEPT_PAUSE_MS);
                }
                listeners_pause(w, true);
            }
            break;
        }
        /* Past max_connections, or past the descriptors the site may use
         * (the rest is the daemon's reserve): close at once. */
        if (atomic_fetch_add_explicit(&s->nconns, 1, memory_order_relaxed) >=
                s->cfg.max_connections ||
            atomic_load_explicit(&s->nconns, memory_order_relaxed) +
                    atomic_load_explicit(&s->nfiles, memory_order_relaxed) >
                s->fd_budget) {
            atomic_fetch_sub_explicit(&s->nconns, 1, memory_order_relaxed);
            s->host->metric_add(s->m.conns_refused, 1);
            close(fd);
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        site_conn_accept(w, fd, w->listen_tls[idx]);
    }
}

/* ---- the loop -------------------------------------------------------------- */

static void start_drain(struct site_worker *w)
{
    struct site_conn **v;
    size_t n;

    if (w->draining)
        return;
    w->draining = true;
    w->drain_deadline_ms = w->now_ms + (uint64_t)w->s->cfg.stop_timeout_ms;
    close_listeners(w);
    n = snapshot(w, &v);
    for (size_t i = 0; i < n; i++)
        site_conn_drain(v[i]);
    free(v);
}

static void free_dead(struct site_worker *w)
{
    while (w->dead) {
        struct site_conn *c = w->dead;
        w->dead = c->tnext;
        free(c);
    }
}

static void *worker_main(void *arg)
{
    struct site_worker *w = arg;
    struct epoll_event evs[MAX_EVENTS];
    char name[16];
    sigset_t all;

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    snprintf(name, sizeof(name), "site-w%d", w->id);
    pthread_setname_np(pthread_self(), name);
    w->now_ms = site_now_ms();
    w->last_tick_ms = w->now_ms;
    site_worker_update_date(w, time(NULL));
    timers_follow_settings(w);

    for (;;) {
        int n = epoll_wait(w->ep, evs, MAX_EVENTS, next_timeout(w));
        if (n < 0 && errno != EINTR)
            break;
        w->now_ms = site_now_ms();
        site_worker_update_date(w, time(NULL));
        timers_follow_settings(w);
        for (int i = 0; i < n; i++) {
            uint64_t tag = evs[i].data.u64;
            if (tag < EV_TAG_EVFD) {
                if (!w->draining && !w->accept_paused)
                    on_accept(w, (size_t)tag);
            } else if (tag == EV_TAG_EVFD) {
                uint64_t v;
                if (read(w->evfd, &v, sizeof(v)) < 0) {
                    /* nothing to do: the flag is what counts */
                }
                if (atomic_load(&w->s->stopping))
                    start_drain(w);
            } else {
                site_conn_on_event(evs[i].data.ptr, evs[i].events);
            }
        }
        expire(w);
        free_dead(w);
        if (w->accept_paused && w->now_ms >= w->accept_resume_ms && !w->draining)
            listeners_pause(w, false);
        if (w->now_ms - w->last_tick_ms >= 1000) {
            w->last_tick_ms = w->now_ms;
            site_metrics_tick(w);
        }
        if (w->draining && (w->nconns == 0 || w->now_ms >= w->drain_deadline_ms)) {
            struct site_conn **v;
            size_t nc = snapshot(w, &v);
            for (size_t i = 0; i < nc; i++)
                site_conn_close(v[i]);
            free(v);
            free_dead(w);
            site_metrics_tick(w);
            break;
        }
    }
    return NULL;
}

int site_workers_start(struct site *s)
{
    int r = 0;

    s->workers = site_xcalloc((size_t)s->nworkers, sizeof(*s->workers));
    for (int i = 0; i < s->nworkers; i++) {
        struct site_worker *w = &s->workers[i];
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EV_TAG_EVFD};
        w->s = s;
        w->id = i;
        w->ep = epoll_create1(EPOLL_CLOEXEC);
        w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        w->cache = site_cache_new(s->cfg.cache_bytes, s->cfg.cache_max_file);
        if (w->ep < 0 || w->evfd < 0 || epoll_ctl(w->ep, EPOLL_CTL_ADD, w->evfd, &ev) < 0) {
            r = -errno;
            goto fail;
        }
        r = worker_listen(w);
        if (r < 0)
            goto fail;
    }
    for (int i = 0; i < s->nworkers; i++) {
        r = -pthread_create(&s->workers[i].thread, NULL, worker_main, &s->workers[i]);
        if (r < 0) {
            /* stop the ones already running */
            atomic_store(&s->stopping, true);
            for (int j = 0; j < i; j++) {
                uint64_t one = 1;
                if (write(s->workers[j].evfd, &one, sizeof(one)) < 0) {
                }
                pthread_join(s->workers[j].thread, NULL);
            }
            goto fail_nojoin;
        }
    }
    return 0;
fail:
fail_nojoin:
    for (int i = 0; i < s->nworkers; i++) {
        struct site_worker *w = &s->workers[i];
        if (w->s) {
            close_listeners(w);
            if (w->ep >= 0)
                close(w->ep);
            if (w->evfd >= 0)
                close(w->evfd);
            site_cache_free(w->cache);
            free(w->listen_fds);
            free(w->listen_tls);
        }
    }
    free(s->workers);
    s->workers = NULL;
    s->nworkers = 0;
    return r;
}

void site_workers_stop(struct site *s)
{
    if (!s->workers)
        return;
    atomic_store(&s->stopping, true);
    for (int i = 0; i < s->nworkers; i++) {
        uint64_t one = 1;
        if (write(s->workers[i].evfd, &one, sizeof(one)) < 0) {
        }
    }
    for (int i = 0; i < s->nworkers; i++) {
        struct site_worker *w = &s->workers[i];
        pthread_join(w->thread, NULL);
        close_listeners(w);
        close(w->ep);
        close(w->evfd);
        site_cache_free(w->cache);
        while (w->noutpool)
            free(w->outpool[--w->noutpool]);
        free(w->listen_fds);
        free(w->listen_tls);
    }
    free(s->workers);
    s->workers = NULL;
}
