/*
 * Worker threads: each has its own epoll, its own SO_REUSEPORT listeners
 * (the kernel spreads connections, no shared accept lock) and its own timer
 * lists.  A timer list holds connections with the same timeout, so appending
 * keeps it sorted by deadline and expiry only looks at the heads.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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
#include "site_ipcount.h"

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

/*
 * Once a second: HTTP/2 connections idle for a second or more give their
 * frame buffer back (as nginx frees an idle connection's buffers), and any
 * TLS connection its record key (site_record.c).  The idle
 * list is sorted by deadline, so the long-idle ones are at its head.
 */
static void release_idle(struct site_worker *w)
{
    uint64_t since = (uint64_t)timeout_ms(w->s, SITE_T_IDLE);

    for (struct site_conn *c = w->tl[SITE_T_IDLE].head; c; c = c->tnext) {
        if (c->deadline_ms + 1000 > w->now_ms + since)
            break;
        if (c->state == SITE_CS_H2)
            site_h2_release(c);
        site_rec_free(&c->rec);
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

/* Counters the next metrics tick has to flush. */
static bool metrics_pending(const struct site_worker *w)
{
    return w->wm.bytes_in || w->wm.bytes_out || w->waiter.woken || w->waiter.polled;
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
        return w->nconns || metrics_pending(w) || site_h2_mem_pooled() ? 1000 : -1;
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

/* The shared listeners into this worker's epoll (EPOLLEXCLUSIVE: one worker
 * wakes per connection), or out of it (draining, paused). */
static int listeners_watch(struct site_worker *w, bool on)
{
    for (size_t i = 0; i < w->lst->n; i++) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLEXCLUSIVE, .data.u64 = i};
        if (epoll_ctl(w->ep, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, w->lst->v[i].fd, &ev) < 0 && on)
            return -errno;
    }
    w->listening = on;
    return 0;
}

/* Take the listeners off epoll (on) or put them back (off). */
static void listeners_pause(struct site_worker *w, bool on)
{
    if (!w->draining && listeners_watch(w, !on) < 0)
        SITE_LOG(w->s, TLSBOX_LOG_ERR, "accept: cannot resume the listeners: %s", strerror(errno));
    w->accept_paused = on;
    if (on)
        w->accept_resume_ms = w->now_ms + ACCEPT_PAUSE_MS;
}

static void on_accept(struct site_worker *w, size_t idx)
{
    struct site *s = w->s;
    int lfd = w->lst->v[idx].fd;

    for (int i = 0; i < ACCEPT_BATCH && w->listening && !w->accept_paused; i++) {
        int one = 1;
        struct site_ipcount_entry *ip;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
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
            break; /* EAGAIN: another worker took it, or the queue is empty */
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
        if (site_ipcount_take(s->ip_conns, &ss,
                              atomic_load_explicit(&s->cfg.max_conns_per_ip, memory_order_relaxed),
                              &ip) < 0) {
            /* One client must not take every slot (idle h2 kept by PINGs). */
            atomic_fetch_sub_explicit(&s->nconns, 1, memory_order_relaxed);
            s->host->metric_add(s->m.conns_refused, 1);
            close(fd);
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        site_conn_accept(w, fd, w->lst->v[idx].tls, ip);
    }
}

/* ---- the root ------------------------------------------------------------- */

/* site.root changed (or first run): take a dup() of the new root and forget
 * the cache, whose paths were relative to the old one. */
void site_root_follow(struct site_worker *w)
{
    struct site *s = w->s;
    unsigned g = atomic_load(&s->root_gen);

    if (g == w->root_gen)
        return;
    pthread_mutex_lock(&s->root_lock);
    if (w->rootfd >= 0)
        close(w->rootfd);
    w->rootfd = s->rootfd >= 0 ? fcntl(s->rootfd, F_DUPFD_CLOEXEC, 0) : -1;
    w->root_gen = atomic_load(&s->root_gen);
    pthread_mutex_unlock(&s->root_lock);
    site_cache_free(w->cache);
    w->cache = site_cache_new(s->cfg.cache_bytes / (size_t)w->gen->nworkers, s->cfg.cache_max_file);
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
    if (w->gen->retiring)
        w->drain_deadline_ms = w->now_ms + SITE_RETIRE_MS +
                               (uint64_t)timeout_ms(w->s, SITE_T_IDLE) +
                               (uint64_t)w->s->cfg.stop_timeout_ms;
    if (w->listening)
        listeners_watch(w, false);
    /* The last worker out closes the listeners at once (no epoll watches
     * them any more): a port given up by a live change refuses connections
     * now, not when the drain ends.  A kept port lives on in the new
     * generation's copy. */
    if (atomic_fetch_add(&w->gen->unwatched, 1) + 1 == w->gen->nworkers)
        site_listeners_close(&w->gen->lst);
    n = snapshot(w, &v);
    for (size_t i = 0; i < n; i++)
        site_conn_drain(v[i], w->gen->retiring);
    free(v);
}

/* The daemon stops while this generation drains gently: drain as at stop. */
static void hurry_drain(struct site_worker *w)
{
    struct site_conn **v;
    size_t n;
    uint64_t dl = w->now_ms + (uint64_t)w->s->cfg.stop_timeout_ms;

    if (w->hurried || !w->draining)
        return;
    w->hurried = true;
    if (dl < w->drain_deadline_ms)
        w->drain_deadline_ms = dl;
    n = snapshot(w, &v);
    for (size_t i = 0; i < n; i++)
        site_conn_drain(v[i], false);
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
    sigdelset(&all, TLSBOX_SIGNAL_CAPDROP); /* the core's capability drop */
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    snprintf(name, sizeof(name), "site-w%d", w->id);
    pthread_setname_np(pthread_self(), name);
    site_wait_thread_init();
    w->now_ms = site_now_ms();
    w->last_tick_ms = w->now_ms;
    site_worker_update_date(w, time(NULL));
    timers_follow_settings(w);
    site_root_follow(w);

    for (;;) {
        int n = site_wait(&w->waiter, w->ep, evs, MAX_EVENTS, next_timeout(w),
                          atomic_load_explicit(&w->s->cfg.batch_wait_us, memory_order_relaxed));
        if (n < 0 && errno != EINTR)
            break;
        w->now_ms = site_now_ms();
        site_worker_update_date(w, time(NULL));
        timers_follow_settings(w);
        site_root_follow(w);
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
                if (atomic_load(&w->gen->stopping))
                    start_drain(w);
                if (atomic_load(&w->gen->hurry))
                    hurry_drain(w);
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
            release_idle(w);
            site_h2_mem_trim(w->now_ms);
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

static void worker_free(struct site_worker *w)
{
    if (w->ep >= 0)
        close(w->ep);
    if (w->evfd >= 0)
        close(w->evfd);
    if (w->rootfd >= 0)
        close(w->rootfd);
    site_cache_free(w->cache);
    while (w->outpool.n)
        free(w->outpool.b[--w->outpool.n]);
    while (w->encpool.n)
        free(w->encpool.b[--w->encpool.n]);
}

static int worker_init(struct site_gen *g, struct site_worker *w, int id)
{
    struct site *s = g->s;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = EV_TAG_EVFD};

    w->s = s;
    w->gen = g;
    w->lst = &g->lst;
    w->id = id;
    w->rootfd = -1;
    w->root_gen = atomic_load(&s->root_gen) - 1; /* root_follow takes it at start */
    w->ep = epoll_create1(EPOLL_CLOEXEC);
    w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    w->cache = site_cache_new(s->cfg.cache_bytes / (size_t)g->nworkers, s->cfg.cache_max_file);
    if (w->ep < 0 || w->evfd < 0 || epoll_ctl(w->ep, EPOLL_CTL_ADD, w->evfd, &ev) < 0)
        return -errno;
    return listeners_watch(w, true);
}

/* Tell every worker of @p g to drain, and wait for them. */
static void gen_join(struct site_gen *g, int started)
{
    atomic_store(&g->stopping, true);
    for (int i = 0; i < started; i++) {
        uint64_t one = 1;
        if (write(g->workers[i].evfd, &one, sizeof(one)) < 0) {
            /* the eventfd cannot be full: one write per stop */
        }
    }
    for (int i = 0; i < started; i++)
        pthread_join(g->workers[i].thread, NULL);
}

static void gen_free(struct site_gen *g)
{
    for (int i = 0; i < g->nworkers; i++)
        if (g->workers[i].s)
            worker_free(&g->workers[i]);
    site_listeners_close(&g->lst);
    free(g->workers);
    free(g);
}

struct site_gen *site_gen_start(struct site *s, const struct site_gen *prev, int *err, char **why)
{
    static _Atomic int next_id;
    struct site_gen *g = site_xcalloc(1, sizeof(*g));
    int r, started = 0;

    g->s = s;
    g->nworkers = s->nworkers;
    g->workers = site_xcalloc((size_t)g->nworkers, sizeof(*g->workers));
    for (int i = 0; i < g->nworkers; i++)
        g->workers[i].ep = g->workers[i].evfd = g->workers[i].rootfd = -1;
    r = site_listeners_open(s, &s->cfg, prev ? &prev->lst : NULL, &g->lst, why);
    for (int i = 0; r == 0 && i < g->nworkers; i++)
        r = worker_init(g, &g->workers[i], atomic_fetch_add(&next_id, 1));
    for (; r == 0 && started < g->nworkers; started++)
        r = -pthread_create(&g->workers[started].thread, NULL, worker_main, &g->workers[started]);
    if (r < 0) {
        gen_join(g, started);
        gen_free(g);
        *err = r;
        return NULL;
    }
    return g;
}

void site_gen_stop(struct site_gen *g)
{
    if (!g)
        return;
    gen_join(g, g->nworkers);
    gen_free(g);
}

static void *reaper_main(void *arg)
{
    struct site_gen *g = arg;
    gen_join(g, g->nworkers);
    atomic_store(&g->reaped, true);
    return NULL;
}

void site_gen_retire(struct site *s, struct site_gen *g)
{
    /* Free the generations retired before that are done draining: kept
     * until the site stopped, each live change held its workers' epoll,
     * eventfd and root descriptors, caches and the reaper's stack (6 more
     * descriptors and 15 MB of address space a change, with 2 workers). */
    for (struct site_gen **pp = &s->retired; *pp;) {
        struct site_gen *old = *pp;
        if (!atomic_load(&old->reaped)) {
            pp = &old->next;
            continue;
        }
        *pp = old->next;
        pthread_join(old->reaper, NULL);
        gen_free(old);
    }
    g->retiring = true; /* before the workers learn of the stop */
    if (pthread_create(&g->reaper, NULL, reaper_main, g) != 0) {
        site_gen_stop(g); /* no thread: drain here */
        return;
    }
    g->next = s->retired;
    s->retired = g;
}

void site_gen_reap_all(struct site *s)
{
    for (struct site_gen *g = s->retired; g; g = g->next) {
        atomic_store(&g->hurry, true);
        for (int i = 0; i < g->nworkers; i++) {
            uint64_t one = 1;
            if (write(g->workers[i].evfd, &one, sizeof(one)) < 0) {
                /* the worker is gone already */
            }
        }
    }
    while (s->retired) {
        struct site_gen *g = s->retired;
        s->retired = g->next;
        pthread_join(g->reaper, NULL);
        gen_free(g);
    }
}
