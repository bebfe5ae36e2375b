/*
 * The load generator's loop: epoll over C connection slots, request
 * accounting, the time bounds and cancellation.  Everything runs on the
 * calling thread; the loop wakes at least every 100 ms to check the clock
 * and the cancel flag, and no connection reads more than BENCH_READ_BUDGET
 * in one wake, so a cancel takes effect well within a second and a server
 * streaming without end on one connection does not starve the others.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "plugins/bench/bench_conn.h"
#include "plugins/bench/bench_util.h"

static const char *const scenario_names[BENCH_SC_MAX] = {"http", "https-new", "https-resume", "h1",
                                                         "h2"};

const char *bench_scenario_name(enum bench_scenario sc)
{
    return sc >= 0 && sc < BENCH_SC_MAX ? scenario_names[sc] : NULL;
}

int bench_scenario_parse(const char *name)
{
    for (int i = 0; name && i < BENCH_SC_MAX; i++)
        if (strcmp(name, scenario_names[i]) == 0)
            return i;
    return -EINVAL;
}

static bool new_conn_scenario(const struct bench_opts *o)
{
    return o->scenario == BENCH_SC_HTTP || o->scenario == BENCH_SC_HTTPS_NEW ||
           o->scenario == BENCH_SC_HTTPS_RESUME;
}

/* Requests sent so far, each retried one counted again and each given back
 * counted as sent: bench.max_requests bounds these, not only the requests
 * counted as complete or failed. */
static long gen_sent(const struct bench_gen *g)
{
    return g->issued + g->st->retried + g->given_back;
}

bool bench_gen_can_take(const struct bench_gen *g)
{
    if (g->stop_issuing)
        return false;
    if (g->o->requests > 0)
        return g->issued < g->o->requests;
    return gen_sent(g) < g->o->max_requests;
}

bool bench_gen_take(struct bench_gen *g)
{
    if (!bench_gen_can_take(g))
        return false;
    g->issued++;
    if (g->given_back > 0) { /* a refused request, sent again now */
        g->given_back--;
        g->st->retried++;
    }
    /* A timed run that uses up bench.max_requests before its time: its
     * result covers less time than asked for, so it says so. */
    if (g->o->requests == 0 && gen_sent(g) == g->o->max_requests)
        g->st->request_limited = true;
    return true;
}

void bench_gen_done(struct bench_conn *c, int status, int64_t start_us)
{
    struct bench_gen *g = c->g;
    g->t_last_done = bench_now_us();
    bench_stats_complete(g->st, status, (double)(g->t_last_done - start_us));
}

void bench_gen_failed(struct bench_conn *c, long n)
{
    c->g->st->failed += n;
    c->g->t_last_done = bench_now_us();
}

bool bench_gen_retry(struct bench_conn *c)
{
    struct bench_gen *g = c->g;
    /* Sending it again is one more request: a counted run still sends all
     * it asked for after it, a timed one stops at the limit (its refused
     * stream already counts as sent, so taking it again must fit too). */
    long after = (g->o->requests > 0 ? g->o->requests : g->issued) + g->st->retried + g->given_back;
    if (after >= g->o->max_requests)
        return false;
    g->issued--;
    g->given_back++;
    return true;
}

static int gen_setup(struct bench_gen *g, char **err)
{
    const char *pos = NULL;
    g->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (g->epfd < 0)
        return -errno;
    if (!g->o->tls)
        return 0;
    if (gnutls_certificate_allocate_credentials(&g->cred) < 0)
        return -ENOMEM;
    int r = gnutls_priority_init(&g->prio, g->o->priority, &pos);
    if (r < 0) {
        *err = bench_xasprintf("TLS options give the priority string \"%s\", which GnuTLS "
                               "refuses at offset %d: %s",
                               g->o->priority, pos ? (int)(pos - g->o->priority) : 0,
                               gnutls_strerror(r));
        return -EINVAL;
    }
    return 0;
}

static void gen_teardown(struct bench_gen *g)
{
    for (int i = 0; i < g->o->concurrency; i++) {
        struct bench_conn *c = &g->conns[i];
        if (c->state != CONN_IDLE) {
            /* Still in flight at the end (cancel, time limit): failed. */
            if (c->h1_busy || c->reserved)
                bench_gen_failed(c, 1);
            c->h1_busy = c->reserved = false;
            bench_conn_close(c);
        }
        gnutls_free(c->ticket.data);
        free(c->out);
        free(c->streams);
    }
    if (g->epfd >= 0)
        close(g->epfd);
    if (g->prio)
        gnutls_priority_deinit(g->prio);
    if (g->cred)
        gnutls_certificate_free_credentials(g->cred);
}

/* Start connections on idle slots while there is work for them. */
static void gen_fill_slots(struct bench_gen *g)
{
    bool per_request = new_conn_scenario(g->o);
    for (int i = 0; i < g->o->concurrency; i++) {
        struct bench_conn *c = &g->conns[i];
        if (c->state != CONN_IDLE)
            continue;
        if (per_request) {
            if (!bench_gen_take(g))
                return;
            c->reserved = true;
        } else if (!bench_gen_can_take(g)) {
            return;
        }
        if (bench_conn_open(c) < 0) {
            /* No socket (fd limit?): the reserved request fails. */
            g->st->connections++;
            g->st->conn_failed++;
            if (c->reserved || bench_gen_take(g))
                bench_gen_failed(c, 1);
            c->reserved = false;
        }
    }
}

static bool gen_all_idle(const struct bench_gen *g)
{
    for (int i = 0; i < g->o->concurrency; i++)
        if (g->conns[i].state != CONN_IDLE)
            return false;
    return true;
}

/* Fail connections that made no progress for timeout_ms. */
static void gen_check_timeouts(struct bench_gen *g, int64_t now)
{
    for (int i = 0; i < g->o->concurrency; i++) {
        struct bench_conn *c = &g->conns[i];
        if (c->state == CONN_ACTIVE && c->draining && now - c->t_last_io > 200000)
            bench_conn_close(c); /* answered; the server did not close */
        else if (c->state != CONN_IDLE && now - c->t_last_io > g->o->timeout_ms * 1000)
            bench_conn_fail(c);
    }
}

static void gen_progress(struct bench_gen *g, int64_t now)
{
    if (!g->hooks || !g->hooks->progress)
        return;
    long done = g->st->complete + g->st->failed;
    long total = g->o->requests > 0 ? g->o->requests : 0;
    g->hooks->progress(g->hooks->arg, done, total, (long)((now - g->t0) / 1000),
                       g->o->requests > 0 ? 0 : g->o->duration_ms);
}

/*
 * Once the run has nothing more to send, what is in flight has timeout_ms
 * to be answered, however busy its connection: a body that never ends (or
 * trickles) would otherwise hold the run to its hard limit.  A request
 * given back (h2, refused) and taken again moves the deadline.  True when
 * it has passed: the run ends, and what is still in flight fails.
 */
static bool gen_drain_over(struct bench_gen *g, int64_t now)
{
    if (bench_gen_can_take(g)) {
        g->t_drain_end = 0;
        return false;
    }
    if (g->t_drain_end == 0)
        g->t_drain_end = now + (int64_t)g->o->timeout_ms * 1000;
    return now >= g->t_drain_end;
}

/* Give another turn to the connections whose last wake stopped at the read
 * budget with records GnuTLS already holds (epoll does not see those).
 * True if one still has more after its turn: do not sleep in epoll_wait. */
static bool gen_serve_more_in(struct bench_gen *g)
{
    bool more = false;
    for (int i = 0; i < g->o->concurrency; i++) {
        struct bench_conn *c = &g->conns[i];
        if (!c->more_in)
            continue;
        if (c->fd >= 0 && c->state == CONN_ACTIVE)
            bench_conn_on_event(c, EPOLLIN);
        else
            c->more_in = false;
        more |= c->more_in;
    }
    return more;
}

/* Must the loop stop now (cancelled, or past the hard limit: the result
 * says which)?  Also ends a timed run's sending once its time is up. */
static bool gen_should_stop(struct bench_gen *g, int64_t now)
{
    if (g->hooks && g->hooks->cancelled && g->hooks->cancelled(g->hooks->arg)) {
        g->st->cancelled = true;
        return true;
    }
    if (now >= g->t_hard_end) {
        g->st->time_limited = true;
        return true;
    }
    if (g->o->requests == 0 && now >= g->t_issue_end)
        g->stop_issuing = true;
    return false;
}

static void gen_loop(struct bench_gen *g)
{
    struct epoll_event evs[64];
    int64_t next_progress = 0;
    for (;;) {
        int64_t now = bench_now_us();
        if (gen_should_stop(g, now))
            break;
        if (now >= next_progress) {
            gen_progress(g, now);
            next_progress = now + 200000;
        }
        gen_check_timeouts(g, now);
        gen_fill_slots(g);
        if ((gen_all_idle(g) && !bench_gen_can_take(g)) || gen_drain_over(g, now))
            break;
        bool more = gen_serve_more_in(g);
        int n = epoll_wait(g->epfd, evs, 64, more ? 0 : 100);
        for (int i = 0; i < n; i++) {
            struct bench_conn *c = &g->conns[evs[i].data.u32];
            if (c->fd >= 0)
                bench_conn_on_event(c, evs[i].events);
        }
    }
}

void bench_gen_end(struct bench_gen *g)
{
    g->st->not_sent += g->given_back;
    g->given_back = 0;
}

int bench_gen_run(const struct bench_opts *o, const struct bench_hooks *hooks,
                  struct bench_stats *res, char **err)
{
    struct bench_gen g = {.o = o, .hooks = hooks, .st = res, .epfd = -1};
    *err = NULL;
    g.conns = tlsbox_xcalloc((size_t)o->concurrency, sizeof(*g.conns));
    for (int i = 0; i < o->concurrency; i++) {
        g.conns[i].g = &g;
        g.conns[i].slot = i;
        g.conns[i].fd = -1;
    }
    int r = gen_setup(&g, err);
    if (r == 0) {
        double cpu0 = bench_thread_cpu_s();
        g.t0 = g.t_last_done = bench_now_us();
        g.t_issue_end = g.t0 + (int64_t)o->duration_ms * 1000;
        g.t_hard_end = g.t0 + (int64_t)o->max_ms * 1000;
        /* A timed run as long as the limit still lets the requests in
         * flight when it stops issuing finish within their timeout, as a
         * shorter one does, instead of cutting them off as failed. */
        if (o->requests == 0 && g.t_hard_end < g.t_issue_end + (int64_t)o->timeout_ms * 1000)
            g.t_hard_end = g.t_issue_end + (int64_t)o->timeout_ms * 1000;
        gen_loop(&g);
        bench_gen_end(&g);
        int64_t end = g.t_last_done > g.t0 ? g.t_last_done : bench_now_us();
        if (res->cancelled || res->time_limited)
            end = bench_now_us();
        res->elapsed_s = (double)(end - g.t0) / 1e6;
        gen_teardown(&g);
        res->client_cpu_s = bench_thread_cpu_s() - cpu0;
        gen_progress(&g, bench_now_us());
    } else {
        gen_teardown(&g);
    }
    free(g.conns);
    return r;
}
