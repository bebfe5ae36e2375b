/*
 * One client connection of the load generator: non-blocking connect, the
 * GnuTLS client handshake on epoll, buffered sends and reads over TLS or
 * plain TCP.  The protocol drivers (bench_h1.c, bench_h2.c) sit on top.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "plugins/bench/bench_conn.h"
#include "plugins/bench/bench_util.h"

static int conn_tls_setup(struct bench_conn *c)
{
    const struct bench_opts *o = c->g->o;
    int r = gnutls_init(&c->tls, GNUTLS_CLIENT | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL);
    if (r < 0)
        return -ENOMEM;
    if (gnutls_priority_set(c->tls, c->g->prio) < 0 ||
        gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, c->g->cred) < 0)
        return -EIO;
    struct in6_addr a6;
    if (inet_pton(AF_INET, o->host, &a6) != 1 && inet_pton(AF_INET6, o->host, &a6) != 1)
        gnutls_server_name_set(c->tls, GNUTLS_NAME_DNS, o->host, strlen(o->host));
    gnutls_datum_t alpn = o->scenario == BENCH_SC_H2
                              ? (gnutls_datum_t){(unsigned char *)"h2", 2}
                              : (gnutls_datum_t){(unsigned char *)"http/1.1", 8};
    gnutls_alpn_set_protocols(c->tls, &alpn, 1, 0);
    if (o->scenario == BENCH_SC_HTTPS_RESUME && c->ticket.size)
        gnutls_session_set_data(c->tls, c->ticket.data, c->ticket.size);
    gnutls_transport_set_int(c->tls, c->fd);
    return 0;
}

int bench_conn_open(struct bench_conn *c)
{
    const struct bench_opts *o = c->g->o;
    c->fd = socket(o->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return -errno;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->t_start = c->t_last_io = bench_now_us();
    c->got_byte = c->answered = c->want_out = false;
    c->requests = 0;
    c->out_len = c->out_off = c->tls_pending = 0;
    c->h1_busy = c->draining = false;
    c->state = CONN_CONNECTING;
    struct epoll_event ev = {.events = EPOLLOUT, .data.u32 = (uint32_t)c->slot};
    if (epoll_ctl(c->g->epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
        /* Counted (once) by the caller, as a connection that failed. */
        int e = -errno;
        close(c->fd);
        c->fd = -1;
        c->state = CONN_IDLE;
        return e;
    }
    c->g->st->connections++;
    if (connect(c->fd, (const struct sockaddr *)&o->addr, o->addrlen) < 0 && errno != EINPROGRESS) {
        bench_conn_fail(c);
        return 0;
    }
    return 0;
}

void bench_conn_close(struct bench_conn *c)
{
    if (c->state == CONN_IDLE)
        return;
    if (c->h2)
        bench_h2_end(c);
    if (c->tls) {
        /* close_notify, best effort: never wait for the peer's. */
        if (c->state == CONN_ACTIVE)
            gnutls_bye(c->tls, GNUTLS_SHUT_WR);
        gnutls_deinit(c->tls);
        c->tls = NULL;
    }
    if (c->fd >= 0) {
        epoll_ctl(c->g->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
    c->state = CONN_IDLE;
}

void bench_conn_fail(struct bench_conn *c)
{
    long n = c->h1_busy || c->reserved ? 1 : 0;
    bool h2_open = c->h2 && c->h2_inflight > 0; /* bench_h2_end fails those */
    if (!c->answered) {
        c->g->st->conn_failed++;
        /* A connection that never got an answer costs one request, so a dead
         * server ends a counted run instead of being retried forever. */
        if (n == 0 && !h2_open && bench_gen_take(c->g))
            n = 1;
    }
    if (n)
        bench_gen_failed(c, n);
    c->h1_busy = c->reserved = false;
    bench_conn_close(c);
}

void bench_conn_queue(struct bench_conn *c, const void *data, size_t len)
{
    if (c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    if (c->out_len + len > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 4096;
        while (cap < c->out_len + len)
            cap *= 2;
        c->out = tlsbox_xrealloc(c->out, cap);
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, data, len);
    c->out_len += len;
}

/* One send of at most 16 KiB: > 0 sent, -EAGAIN, -EIO. */
static long conn_send_some(struct bench_conn *c)
{
    size_t n = c->out_len - c->out_off;
    if (n > 16384)
        n = 16384;
    if (!c->tls) {
        ssize_t w = send(c->fd, c->out + c->out_off, n, MSG_NOSIGNAL);
        if (w < 0)
            return errno == EAGAIN || errno == EINTR ? -EAGAIN : -EIO;
        return w;
    }
    ssize_t w;
    if (c->tls_pending) {
        /* After E_AGAIN GnuTLS wants the same call again, or NULL, 0. */
        w = gnutls_record_send(c->tls, NULL, 0);
        if (w >= 0)
            w = (ssize_t)c->tls_pending;
    } else {
        w = gnutls_record_send(c->tls, c->out + c->out_off, n);
    }
    if (w == GNUTLS_E_AGAIN || w == GNUTLS_E_INTERRUPTED) {
        if (!c->tls_pending)
            c->tls_pending = n;
        return -EAGAIN;
    }
    c->tls_pending = 0;
    return w < 0 ? -EIO : w;
}

int bench_conn_flush(struct bench_conn *c)
{
    c->want_out = false;
    while (c->out_off < c->out_len) {
        long w = conn_send_some(c);
        if (w == -EAGAIN) {
            c->want_out = true;
            break;
        }
        if (w < 0)
            return -EIO;
        c->out_off += (size_t)w;
        c->t_last_io = bench_now_us();
    }
    bench_conn_arm(c);
    return 0;
}

/* This wake's budget is used up: -EAGAIN, remembering records GnuTLS holds. */
static long conn_recv_yield(struct bench_conn *c)
{
    c->more_in = c->tls && gnutls_record_check_pending(c->tls) > 0;
    return -EAGAIN;
}

long bench_conn_recv(struct bench_conn *c, char *buf, size_t cap)
{
    if (c->read_left == 0)
        return conn_recv_yield(c);
    if (cap > c->read_left)
        cap = c->read_left;
    for (;;) {
        ssize_t n;
        if (!c->tls) {
            n = recv(c->fd, buf, cap, 0);
            if (n < 0)
                return errno == EAGAIN ? -EAGAIN : errno == EINTR ? -EAGAIN : -EIO;
        } else {
            n = gnutls_record_recv(c->tls, buf, cap);
            if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
                return -EAGAIN;
            if (n == GNUTLS_E_PREMATURE_TERMINATION)
                return 0;
            if (n < 0 && !gnutls_error_is_fatal((int)n))
                continue; /* a warning alert or a post-handshake message */
            if (n < 0)
                return -EIO;
        }
        if (n > 0) {
            c->read_left -= (size_t)n;
            c->t_last_io = bench_now_us();
            c->g->st->bytes += (uint64_t)n;
            if (!c->got_byte) {
                c->got_byte = true;
                bench_span_add(&c->g->st->ttfb, (double)(c->t_last_io - c->t_start));
            }
        }
        return n;
    }
}

void bench_conn_arm(struct bench_conn *c)
{
    if (c->fd < 0)
        return;
    uint32_t ev = EPOLLIN;
    if (c->state == CONN_CONNECTING)
        ev = EPOLLOUT;
    else if (c->state == CONN_HANDSHAKE)
        ev = gnutls_record_get_direction(c->tls) ? EPOLLOUT : EPOLLIN;
    else if (c->want_out || c->out_off < c->out_len)
        ev |= EPOLLOUT;
    struct epoll_event e = {.events = ev, .data.u32 = (uint32_t)c->slot};
    epoll_ctl(c->g->epfd, EPOLL_CTL_MOD, c->fd, &e);
}

/* What TLS negotiated, from the first full handshake (a resumed one has no
 * signature). */
static void conn_note_tls(struct bench_conn *c)
{
    struct bench_stats *st = c->g->st;
    bool resumed = gnutls_session_is_resumed(c->tls) != 0;
    if (resumed)
        st->hs_resumed++;
    else
        st->hs_full++;
    if (st->protocol[0] && (resumed || st->sign[0]))
        return;
    const char *n;
    bench_strlcpy(st->protocol, gnutls_protocol_get_name(gnutls_protocol_get_version(c->tls)),
                  sizeof(st->protocol));
    bench_strlcpy(st->cipher, gnutls_cipher_get_name(gnutls_cipher_get(c->tls)),
                  sizeof(st->cipher));
    n = gnutls_group_get_name(gnutls_group_get(c->tls));
    bench_strlcpy(st->group, n ? n : "none", sizeof(st->group));
    gnutls_datum_t alpn;
    if (gnutls_alpn_get_selected_protocol(c->tls, &alpn) == 0 && alpn.size < sizeof(st->alpn)) {
        memcpy(st->alpn, alpn.data, alpn.size);
        st->alpn[alpn.size] = '\0';
    } else {
        bench_strlcpy(st->alpn, "none", sizeof(st->alpn));
    }
    if (!resumed) {
        n = gnutls_sign_get_name(gnutls_sign_algorithm_get(c->tls));
        bench_strlcpy(st->sign, n ? n : "none", sizeof(st->sign));
    }
}

/* The transport is ready: hand the connection to its protocol driver. */
static void conn_ready(struct bench_conn *c)
{
    c->state = CONN_ACTIVE;
    int r = c->g->o->scenario == BENCH_SC_H2 ? bench_h2_begin(c) : bench_h1_begin(c);
    if (r < 0)
        bench_conn_fail(c);
    else if (r > 0)
        bench_conn_close(c);
}

static void conn_handshake(struct bench_conn *c)
{
    int r = gnutls_handshake(c->tls);
    if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED || (r < 0 && !gnutls_error_is_fatal(r))) {
        c->t_last_io = bench_now_us();
        bench_conn_arm(c);
        return;
    }
    if (r < 0) {
        bench_conn_fail(c);
        return;
    }
    int64_t now = bench_now_us();
    bench_span_add(&c->g->st->handshake, (double)(now - c->t_hs_start));
    c->t_last_io = now;
    conn_note_tls(c);
    conn_ready(c);
}

static void conn_connected(struct bench_conn *c)
{
    int err = 0;
    socklen_t len = sizeof(err);
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0 || err) {
        bench_conn_fail(c);
        return;
    }
    int64_t now = bench_now_us();
    bench_span_add(&c->g->st->connect, (double)(now - c->t_start));
    c->t_last_io = now;
    if (!c->g->o->tls) {
        conn_ready(c);
        return;
    }
    if (conn_tls_setup(c) < 0) {
        bench_conn_fail(c);
        return;
    }
    c->state = CONN_HANDSHAKE;
    c->t_hs_start = bench_now_us();
    conn_handshake(c);
}

void bench_conn_on_event(struct bench_conn *c, uint32_t events)
{
    switch (c->state) {
    case CONN_IDLE:
        return;
    case CONN_CONNECTING:
        conn_connected(c);
        return;
    case CONN_HANDSHAKE:
        conn_handshake(c);
        return;
    case CONN_ACTIVE:
        break;
    }
    c->read_left = BENCH_READ_BUDGET;
    c->more_in = false;
    if ((events & EPOLLOUT) && bench_conn_flush(c) < 0) {
        bench_conn_fail(c);
        return;
    }
    if (!(events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
        return;
    int r = c->g->o->scenario == BENCH_SC_H2 ? bench_h2_on_read(c) : bench_h1_on_read(c);
    if (r < 0)
        bench_conn_fail(c);
    else if (r > 0)
        bench_conn_close(c);
}
