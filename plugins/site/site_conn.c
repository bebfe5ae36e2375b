/*
 * One client connection: edge-triggered reads until E_AGAIN, our own output
 * buffer (GnuTLS must be called again with the same data after E_AGAIN), and
 * the lifecycle (handshake, h1/h2, graceful drain, deferred free).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "site.h"

#define TLS_CHUNK 16384 /* one full TLS record per gnutls_record_send */

static void conn_read(struct site_conn *c);

/* ---- output buffer ------------------------------------------------------- */

char *site_out_reserve(struct site_conn *c, size_t n)
{
    struct site_worker *w = c->w;
    if (!c->out) {
        c->out = w->noutpool ? w->outpool[--w->noutpool] : site_xmalloc(SITE_OUTBUF);
        c->out_cap = SITE_OUTBUF;
        c->out_off = c->out_len = 0;
    }
    if (c->out_len + n > c->out_cap) {
        /* Compact first (never while a send is pending: GnuTLS holds the pointer's data). */
        if (c->out_off && !c->send_again) {
            memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
            c->out_len -= c->out_off;
            c->out_off = 0;
        }
        if (c->out_len + n > c->out_cap) {
            size_t cap = c->out_cap;
            while (cap < c->out_len + n)
                cap *= 2;
            c->out = site_xrealloc(c->out, cap);
            c->out_cap = (uint32_t)cap;
        }
    }
    return c->out + c->out_len;
}

void site_out_append(struct site_conn *c, const void *p, size_t n)
{
    memcpy(site_out_reserve(c, n), p, n);
    c->out_len += (uint32_t)n;
}

void site_out_release_if_empty(struct site_conn *c)
{
    struct site_worker *w = c->w;
    if (!c->out || c->out_off < c->out_len || c->send_again)
        return;
    if (c->out_cap == SITE_OUTBUF && w->noutpool < (int)(sizeof(w->outpool) / sizeof(void *)))
        w->outpool[w->noutpool++] = c->out;
    else
        free(c->out);
    c->out = NULL;
    c->out_cap = c->out_off = c->out_len = 0;
}

static bool out_pending(const struct site_conn *c)
{
    return c->out_off < c->out_len || c->send_again;
}

/* ---- lifecycle ------------------------------------------------------------ */

void site_conn_accept(struct site_worker *w, int fd, bool tls)
{
    struct site *s = w->s;
    struct site_conn *c = site_xcalloc(1, sizeof(*c));
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = c};

    c->w = w;
    c->fd = fd;
    c->tls = tls;
    w->nconns++;
    s->host->metric_add(s->m.conns_open, 1);
    s->host->metric_add(s->m.conns_total, 1);
    if (epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev) < 0) {
        site_conn_close(c);
        return;
    }
    if (tls) {
        c->state = SITE_CS_HANDSHAKE;
        if (site_tls_setup(c) < 0) {
            site_conn_close(c);
            return;
        }
        site_timer_set(c, SITE_T_HANDSHAKE);
    } else {
        c->state = SITE_CS_H1;
        site_timer_set(c, SITE_T_HEADER);
    }
    /* With TCP_DEFER_ACCEPT the first bytes are usually here already. */
    site_conn_on_event(c, EPOLLIN);
}

void site_conn_close(struct site_conn *c)
{
    struct site_worker *w = c->w;
    struct site *s = w->s;

    if (c->state == SITE_CS_CLOSED)
        return;
    site_timer_set(c, SITE_T_NONE);
    if (c->h2)
        site_h2_free(c);
    if (c->h1_body) {
        site_resp_free(c->h1_body);
        free(c->h1_body);
        c->h1_body = NULL;
    }
    if (c->session) {
        if (c->state == SITE_CS_H1 || c->state == SITE_CS_H2)
            gnutls_bye(c->session, GNUTLS_SHUT_WR); /* best effort close_notify */
        gnutls_deinit(c->session);
        c->session = NULL;
    }
    if (c->bundle) {
        s->host->bundle_release(c->bundle);
        c->bundle = NULL;
    }
    free(c->in);
    c->in = NULL;
    c->send_again = false;
    c->out_off = c->out_len;
    site_out_release_if_empty(c);
    close(c->fd);
    c->fd = -1;
    c->state = SITE_CS_CLOSED;
    w->nconns--;
    atomic_fetch_sub_explicit(&s->nconns, 1, memory_order_relaxed);
    s->host->metric_add(s->m.conns_open, -1);
    /* Freed by the worker after the current batch of events (it may still
     * hold this pointer); the timer links are reused for that list. */
    c->tnext = w->dead;
    w->dead = c;
}

void site_conn_timeout(struct site_conn *c)
{
    if (c->state == SITE_CS_HANDSHAKE)
        site_tls_count_timeout(c);
    site_conn_close(c);
}

void site_conn_drain(struct site_conn *c)
{
    if (c->state == SITE_CS_HANDSHAKE) {
        site_conn_close(c);
        return;
    }
    if (c->state == SITE_CS_H2) {
        site_h2_goaway(c);
        site_conn_flush(c);
        return;
    }
    if (c->state == SITE_CS_H1 && !out_pending(c) && !c->h1_body)
        site_conn_close(c);
    else
        c->h1_close_after = true;
}

/* ---- I/O ------------------------------------------------------------------ */

static void update_timer(struct site_conn *c, bool progress)
{
    if (c->state == SITE_CS_CLOSED || c->state == SITE_CS_HANDSHAKE)
        return;
    if (out_pending(c) || c->h1_body) {
        if (c->tkind != SITE_T_SEND || progress)
            site_timer_set(c, SITE_T_SEND);
    } else if (c->state == SITE_CS_H1 && c->in_len) {
        if (c->tkind != SITE_T_HEADER)
            site_timer_set(c, SITE_T_HEADER); /* not reset by more bytes: slowloris */
    } else if (c->state == SITE_CS_H2 && !site_h2_idle(c)) {
        if (c->tkind != SITE_T_SEND || progress)
            site_timer_set(c, SITE_T_SEND);
    } else if (c->tkind != SITE_T_IDLE || progress) {
        site_timer_set(c, SITE_T_IDLE);
    }
}

int site_conn_flush(struct site_conn *c)
{
    struct site_worker *w = c->w;
    bool progress = false;

    for (;;) {
        while (out_pending(c)) {
            ssize_t n;
            if (c->tls) {
                if (c->send_again) {
                    n = gnutls_record_send(c->session, NULL, 0);
                } else {
                    size_t len = c->out_len - c->out_off;
                    c->send_len = (uint32_t)(len > TLS_CHUNK ? TLS_CHUNK : len);
                    n = gnutls_record_send(c->session, c->out + c->out_off, c->send_len);
                }
                if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED) {
                    c->send_again = true;
                    goto blocked;
                }
                c->send_again = false;
                if (n < 0) {
                    site_conn_close(c);
                    return -1;
                }
            } else {
                n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
                if (n < 0) {
                    if (errno == EAGAIN || errno == EINTR)
                        goto blocked;
                    site_conn_close(c);
                    return -1;
                }
            }
            c->out_off += (uint32_t)n;
            w->wm.bytes_out += (uint64_t)n;
            progress = true;
        }
        c->out_off = c->out_len = 0;
        if (c->want_close)
            break;
        if (c->state == SITE_CS_H1) {
            site_h1_produce(c);
        } else if (c->state == SITE_CS_H2) {
            if (site_h2_produce(c) < 0) {
                site_conn_close(c);
                return -1;
            }
        }
        if (c->out_len == 0)
            break;
    }
    site_out_release_if_empty(c);
    if (c->want_close || (c->state == SITE_CS_H2 && site_h2_idle(c) && c->h2_goaway) ||
        (w->draining && c->state == SITE_CS_H1 && !c->h1_body && !c->in_len)) {
        site_conn_close(c);
        return -1;
    }
    if (c->state == SITE_CS_H2 && site_h2_finished(c)) {
        site_conn_close(c); /* nghttp2 wants neither to read nor to write */
        return -1;
    }
    update_timer(c, progress);
    return 0;
blocked:
    update_timer(c, progress);
    return 0;
}

static void on_handshake_done(struct site_conn *c)
{
    const char *h2 = "h2";
    gnutls_datum_t proto;
    if (gnutls_alpn_get_selected_protocol(c->session, &proto) == 0 && proto.size == 2 &&
        memcmp(proto.data, h2, 2) == 0) {
        c->state = SITE_CS_H2;
        if (site_h2_start(c) < 0) {
            site_conn_close(c);
            return;
        }
    } else {
        c->state = SITE_CS_H1;
    }
    site_timer_set(c, SITE_T_IDLE);
}

static void conn_read(struct site_conn *c)
{
    struct site_worker *w = c->w;

    while (!c->read_blocked && c->state != SITE_CS_CLOSED) {
        ssize_t n;
        if (c->tls) {
            n = gnutls_record_recv(c->session, w->inbuf, sizeof(w->inbuf));
            if (n == GNUTLS_E_AGAIN)
                break;
            if (n == GNUTLS_E_INTERRUPTED)
                continue;
            if (n == GNUTLS_E_REHANDSHAKE) {
                /* Client-initiated renegotiation (TLS 1.2): refused and the
                 * connection closed, as nginx does: it is only a DoS lever. */
                gnutls_alert_send(c->session, GNUTLS_AL_WARNING, GNUTLS_A_NO_RENEGOTIATION);
                site_conn_close(c);
                return;
            }
            if (n < 0 && !gnutls_error_is_fatal((int)n))
                continue; /* warning alert */
            if (n <= 0) {
                site_conn_close(c); /* close_notify, TCP close or a fatal error */
                return;
            }
        } else {
            n = recv(c->fd, w->inbuf, sizeof(w->inbuf), 0);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                if (errno == EINTR)
                    continue;
                break;
            }
            if (n <= 0) {
                site_conn_close(c);
                return;
            }
        }
        w->wm.bytes_in += (uint64_t)n;
        if (c->state == SITE_CS_H2) {
            if (site_h2_on_data(c, w->inbuf, (size_t)n) < 0) {
                /* protocol error: send what nghttp2 queued (GOAWAY), then close */
                c->want_close = true;
                break;
            }
        } else {
            site_h1_on_data(c, w->inbuf, (size_t)n);
        }
        if (c->out_len - c->out_off >= SITE_OUT_HIGH) {
            if (site_conn_flush(c) < 0)
                return;
            if (out_pending(c))
                c->read_blocked = true; /* resumed once the output drained */
        }
        if (!c->tls && (size_t)n < sizeof(w->inbuf))
            break; /* short read: the socket is empty, a new edge comes with new data */
    }
}

void site_conn_on_event(struct site_conn *c, uint32_t events)
{
    if (c->state == SITE_CS_CLOSED)
        return;
    if ((events & (EPOLLERR | EPOLLHUP)) && !(events & EPOLLIN)) {
        site_conn_close(c);
        return;
    }
    if (c->state == SITE_CS_HANDSHAKE) {
        int r = site_tls_handshake(c);
        if (r < 0) {
            site_conn_close(c);
            return;
        }
        if (r == 0)
            return;
        on_handshake_done(c);
        if (c->state == SITE_CS_CLOSED)
            return;
        events |= EPOLLIN; /* application data may already be buffered */
    }
    if ((events & EPOLLOUT) && out_pending(c)) {
        if (site_conn_flush(c) < 0)
            return;
        if (!out_pending(c) && c->read_blocked) {
            c->read_blocked = false;
            events |= EPOLLIN;
        }
    }
    for (int round = 0; round < 64; round++) {
        if (events & (EPOLLIN | EPOLLRDHUP))
            conn_read(c);
        if (c->state == SITE_CS_CLOSED)
            return;
        if (site_conn_flush(c) < 0)
            return;
        /* Reading stopped for back-pressure and the output drained meanwhile:
         * read on (edge-triggered, no new event would come). */
        if (c->read_blocked && !out_pending(c) && c->in_len <= 65536) {
            c->read_blocked = false;
            events = EPOLLIN;
            continue;
        }
        break;
    }
}
