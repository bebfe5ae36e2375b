/*
 * One client connection: edge-triggered reads until E_AGAIN, our own output
 * buffer (GnuTLS must be called again with the same data after E_AGAIN), and
 * the lifecycle (handshake, h1/h2, graceful drain, deferred free).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "site.h"
#include "site_ipcount.h"

#define TLS_CHUNK SITE_REC_PLAIN_MAX /* plaintext of one full TLS record (seal_out) */

static void conn_read(struct site_conn *c);

/* ---- output buffer ------------------------------------------------------- */

/* A buffer of @p size bytes from @p pool, or a new one. */
static char *pool_get(struct site_bufpool *pool, uint32_t size)
{
    return pool->n ? pool->b[--pool->n] : site_xmalloc(size);
}

/* Give back a buffer that came from @p pool as @p size bytes; one that grew
 * since (cap != size) or finds the pool full is freed. */
static void pool_put(struct site_bufpool *pool, uint32_t size, char *p, uint32_t cap)
{
    if (cap == size && pool->n < (int)(sizeof(pool->b) / sizeof(pool->b[0])))
        pool->b[pool->n++] = p;
    else
        free(p);
}

/*
 * Room for @p n more bytes at the end of a pooled buffer (*buf, @p size bytes
 * from @p pool on first use): slide unsent bytes to the front, then grow.
 * Returns where the next byte goes.
 */
static char *buf_reserve(struct site_bufpool *pool, uint32_t size, char **buf, uint32_t *off,
                         uint32_t *len, uint32_t *cap, size_t n)
{
    if (!*buf) {
        *buf = pool_get(pool, size);
        *cap = size;
        *off = *len = 0;
    }
    if (*len + n > *cap) {
        if (*off) {
            memmove(*buf, *buf + *off, *len - *off);
            *len -= *off;
            *off = 0;
        }
        if (*len + n > *cap) {
            size_t newcap = *cap;
            while (newcap < *len + n)
                newcap *= 2;
            *buf = site_xrealloc(*buf, newcap);
            *cap = (uint32_t)newcap;
        }
    }
    return *buf + *len;
}

char *site_out_reserve(struct site_conn *c, size_t n)
{
    return buf_reserve(&c->w->outpool, SITE_OUTBUF, &c->out, &c->out_off, &c->out_len, &c->out_cap,
                       n);
}

void site_out_append(struct site_conn *c, const void *p, size_t n)
{
    memcpy(site_out_reserve(c, n), p, n);
    c->out_len += (uint32_t)n;
}

void site_out_release_if_empty(struct site_conn *c)
{
    if (c->out && c->out_off >= c->out_len) {
        pool_put(&c->w->outpool, SITE_OUTBUF, c->out, c->out_cap);
        c->out = NULL;
        c->out_cap = c->out_off = c->out_len = 0;
    }
    if (c->enc && c->enc_off >= c->enc_len) {
        pool_put(&c->w->encpool, SITE_ENCBUF, c->enc, c->enc_cap);
        c->enc = NULL;
        c->enc_cap = c->enc_off = c->enc_len = 0;
    }
}

static bool out_pending(const struct site_conn *c)
{
    return c->out_off < c->out_len || c->enc_off < c->enc_len;
}

/* ---- GnuTLS transport ------------------------------------------------------ */

/*
 * Pull: one recv() of up to SITE_RBUF into the worker's read-ahead serves
 * GnuTLS's small reads (record header, then body).  A short recv() means the
 * socket is empty; with edge-triggered epoll new data brings a new event, so
 * the next pull says EAGAIN without a syscall.
 */
ssize_t site_tls_pull(gnutls_transport_ptr_t p, void *data, size_t len)
{
    struct site_conn *c = p;
    struct site_worker *w = c->w;
    ssize_t r;
    size_t n;

    if (c->stash_len > c->stash_off) {
        n = c->stash_len - c->stash_off < len ? c->stash_len - c->stash_off : len;
        memcpy(data, c->stash + c->stash_off, n);
        c->stash_off += (uint32_t)n;
        if (c->stash_off == c->stash_len) {
            free(c->stash);
            c->stash = NULL;
            c->stash_off = c->stash_len = 0;
        }
        return (ssize_t)n;
    }
    if (w->rb_owner == c && w->rb_off < w->rb_len) {
        n = w->rb_len - w->rb_off < len ? w->rb_len - w->rb_off : len;
        memcpy(data, w->rbuf + w->rb_off, n);
        w->rb_off += (uint32_t)n;
        return (ssize_t)n;
    }
    if (c->drained || c->peer_eof) {
        gnutls_transport_set_errno(c->session, EAGAIN);
        return -1;
    }
    do
        r = recv(c->fd, w->rbuf, sizeof(w->rbuf), 0);
    while (r < 0 && errno == EINTR);
    if (r < 0) {
        if (errno == EAGAIN)
            c->drained = true;
        gnutls_transport_set_errno(c->session, errno);
        return -1;
    }
    if (r == 0) {
        if (c->state == SITE_CS_HANDSHAKE)
            return 0; /* the handshake fails at once */
        /* A FIN without close_notify.  Told as EOF, GnuTLS would end the
         * session (GNUTLS_E_PREMATURE_TERMINATION invalidates it), and the
         * answers still owed could not be sealed.  Told "nothing more yet",
         * the session stays, and conn_read sees peer_eof. */
        c->peer_eof = true;
        c->drained = true;
        gnutls_transport_set_errno(c->session, EAGAIN);
        return -1;
    }
    w->wm.bytes_in += (uint64_t)r;
    /* A short read empties the socket, except of a FIN that came with the
     * same edge: after EPOLLRDHUP read on until recv() returns 0. */
    if ((size_t)r < sizeof(w->rbuf) && !c->rdhup)
        c->drained = true;
    w->rb_owner = c;
    w->rb_len = (uint32_t)r;
    n = (size_t)r < len ? (size_t)r : len;
    memcpy(data, w->rbuf, n);
    w->rb_off = (uint32_t)n;
    return (ssize_t)n;
}

int site_tls_pull_timeout(gnutls_transport_ptr_t p, unsigned ms)
{
    struct site_conn *c = p;
    struct site_worker *w = c->w;
    if (c->stash_len > c->stash_off || (w->rb_owner == c && w->rb_off < w->rb_len))
        return 1;
    return c->drained ? 0 : 1;
}

/* Bytes the worker's read-ahead holds for @p c go to its own stash before
 * the worker serves another connection. */
static void stash_leftover(struct site_conn *c)
{
    struct site_worker *w = c->w;
    if (w->rb_owner != c)
        return;
    if (w->rb_off < w->rb_len && c->state != SITE_CS_CLOSED) {
        uint32_t n = w->rb_len - w->rb_off;
        c->stash = site_xrealloc(c->stash, c->stash_len + n);
        memcpy(c->stash + c->stash_len, w->rbuf + w->rb_off, n);
        c->stash_len += n;
    }
    w->rb_owner = NULL;
    w->rb_off = w->rb_len = 0;
}

/* Push: GnuTLS's records are gathered in c->enc and sent by site_conn_flush. */
ssize_t site_tls_push(gnutls_transport_ptr_t p, const void *data, size_t len)
{
    struct site_conn *c = p;
    memcpy(buf_reserve(&c->w->encpool, SITE_ENCBUF, &c->enc, &c->enc_off, &c->enc_len, &c->enc_cap,
                       len),
           data, len);
    c->enc_len += (uint32_t)len;
    return (ssize_t)len;
}

/* Send the first @p most bytes of c->enc (all of it when it holds less);
 * 1 sent, 0 would block, -1 error. */
static int send_enc(struct site_conn *c, uint32_t most)
{
    uint32_t end = c->enc_len - c->enc_off > most ? c->enc_off + most : c->enc_len;
    while (c->enc_off < end) {
        ssize_t n = send(c->fd, c->enc + c->enc_off, end - c->enc_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN ? 0 : -1;
        }
        c->enc_off += (uint32_t)n;
    }
    if (c->enc_off == c->enc_len)
        c->enc_off = c->enc_len = 0;
    return 1;
}

/*
 * Ciphertext per send() while more follows: whole TCP segments as the kernel
 * cuts them.  tcp_sendmsg() fills socket buffers of a "size goal", the
 * largest multiple of the MSS under 64 KB less headers (one MSS when that is
 * larger, as on loopback, MSS 65,483), and sends each as one packet train
 * (GSO).  A batch of "64 KB or more" of records (80.5-81.4 KB per send()
 * under h2load -m 10) left as a buffer of 65,483 bytes and one of 15-16 KB,
 * each crossing the whole TCP/IP path (and, on loopback, the receiver's) on
 * its own.  site_conn_flush cuts the last record of a batch to end it
 * exactly; a record that still crosses the end (GnuTLS's, whose overhead
 * may differ) waits in c->enc for the next send.  The budget stays under the
 * kernel's (64 KB - 1 - MAX_TCP_HEADER, about 320 bytes): a batch a little
 * short of a goal is one packet train too.  The MSS is bounded by half the
 * largest window the peer has offered (32 KB on loopback while the
 * connection is new), so it is asked again after full sends 1, 2, 4, ...
 */
/* Plaintext of the smallest record cut to end a batch; with less room the
 * batch leaves a little short of whole segments (still one packet train). */
#define SITE_BATCH_MIN_RECORD 4096

static uint32_t send_batch(struct site_conn *c)
{
    int mss = 0;
    socklen_t len = sizeof(mss);
    uint32_t b = SITE_ENC_HIGH;

    if (getsockopt(c->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &len) == 0 && mss > 0 &&
        mss <= SITE_ENC_HIGH) {
        b = SITE_SEND_BUDGET / (uint32_t)mss * (uint32_t)mss;
        if (b == 0) /* an MSS over the budget (loopback): one segment */
            b = (uint32_t)mss;
    }
    return b;
}

/* One record of the first @p len (at most TLS_CHUNK) bytes of c->out into
 * c->enc: sealed here when site_record.c may (no copy out of a GnuTLS
 * buffer), else by GnuTLS through our push function.  Moves c->out on by
 * the plaintext bytes taken and returns them, or a negative GnuTLS error. */
static ssize_t seal_out(struct site_conn *c, size_t len)
{
    char *p = c->out + c->out_off;
    ssize_t n;

    int own = site_rec_wanted(&c->rec, c->session);
    if (own < 0)
        return own;
    if (own) {
        if (len > c->rec.max)
            len = c->rec.max;
        uint8_t *dst = (uint8_t *)buf_reserve(&c->w->encpool, SITE_ENCBUF, &c->enc, &c->enc_off,
                                              &c->enc_len, &c->enc_cap, len + SITE_REC_OVERHEAD);
        /* The byte after the record may be borrowed when c->out has it. */
        bool spare = p + len < c->out + c->out_cap;
        n = site_rec_seal(&c->rec, c->session, p, len, spare, dst);
        if (n > 0)
            c->enc_len += (uint32_t)(len + SITE_REC_OVERHEAD);
    } else {
        n = gnutls_record_send(c->session, p, len);
        if (n > 0)
            site_rec_sent_by_gnutls(&c->rec, len, (size_t)n);
    }
    if (n > 0) {
        c->out_off += (uint32_t)n;
        c->w->wm.bytes_out += (uint64_t)n;
    }
    return n;
}

/*
 * Copying a 16 KB cached file into c->out costs as much as a tenth of a
 * request; the AEAD can read it where it lies instead, if the record's
 * plaintext is contiguous there.  So what c->out holds (h2: queued frames
 * such as HEADERS; h1: the response head, a few hundred bytes) and @p hd
 * (h2: the 9-byte DATA frame header; h1: nothing) are written into the room
 * before the file's bytes (saved and put back; on this worker nobody else
 * reads the cache meanwhile), the inner type goes into the byte after them
 * (site_rec_seal's spare), and the whole is sealed as one record.  When
 * c->out's bytes do not fit in front, they go out first as records of their
 * own.
 */
int site_conn_seal_cached(struct site_conn *c, const void *hd, size_t hdn, char *data, size_t n)
{
    struct site_worker *w = c->w;
    size_t pend = c->out_len - c->out_off;
    uint32_t queued = c->enc_len - c->enc_off;
    char saved[SITE_CE_ROOM];

    if (!c->tls || n == 0)
        return 0;
    int own = site_rec_wanted(&c->rec, c->session);
    if (own <= 0)
        return own;
    if (hdn + n > c->rec.max || hdn > SITE_CE_ROOM)
        return 0;
    /* With c->out's bytes in front the record may be too long by at most
     * their size: it is cut full, and the file's last bytes wait in c->out
     * to go in front of the next record (site_conn_flush).  h2o packs its
     * frames into full records too: under h2load -m 10 a batch of ten
     * responses was eleven records (the HEADERS frames one of their own),
     * now ten, and the client reads two fewer times per batch. */
    bool small = pend + hdn <= SITE_CE_ROOM;
    size_t take = n;
    if (small && pend + hdn + n > c->rec.max && c->rec.max > pend + hdn + SITE_CE_ROOM)
        take = c->rec.max - pend - hdn;
    bool front = small && pend + hdn + take <= c->rec.max;
    size_t need = hdn + take + SITE_REC_OVERHEAD + pend +
                  (front ? 0 : (pend + TLS_CHUNK - 1) / TLS_CHUNK * SITE_TLS_RECORD_MAX);
    if (queued && queued + need > (c->send_batch ? c->send_batch : SITE_ENC_HIGH))
        return 2;
    if (!front) {
        while (c->out_off < c->out_len) {
            size_t len = c->out_len - c->out_off;
            ssize_t r = seal_out(c, len > TLS_CHUNK ? TLS_CHUNK : len);
            if (r < 0)
                return (int)r;
        }
        pend = 0;
        own = site_rec_wanted(&c->rec, c->session);
        if (own <= 0) {
            c->out_off = c->out_len = 0;
            return own;
        }
    }
    size_t total = pend + hdn + take;
    char *start = data - pend - hdn;
    uint8_t *dst = (uint8_t *)buf_reserve(&w->encpool, SITE_ENCBUF, &c->enc, &c->enc_off,
                                          &c->enc_len, &c->enc_cap, total + SITE_REC_OVERHEAD);
    memcpy(saved, start, pend + hdn);
    if (pend) /* c->out may be NULL (released while empty) */
        memcpy(start, c->out + c->out_off, pend);
    if (hdn)
        memcpy(start + pend, hd, hdn);
    ssize_t r = site_rec_seal(&c->rec, c->session, start, total, true, dst);
    memcpy(start, saved, pend + hdn);
    if (r < 0)
        return (int)r;
    c->enc_len += (uint32_t)(total + SITE_REC_OVERHEAD);
    c->out_off = c->out_len = 0;
    w->wm.bytes_out += total;
    if (take < n) /* the file's last bytes, fewer than c->out held */
        site_out_append(c, data + take, n - take);
    return 1;
}

long site_conn_seal_body(struct site_conn *c, char *data, size_t n, bool *copy)
{
    size_t done = 0;

    *copy = false;
    while (done < n) {
        size_t pend = c->out_len - c->out_off;
        size_t max = c->rec.max, chunk = n - done;
        if (max == 0) {
            *copy = true; /* GnuTLS still seals this connection's records */
            break;
        }
        /* The first record carries c->out's bytes in front when they fit. */
        size_t lim = pend <= SITE_CE_ROOM && pend < max ? max - pend : max;
        if (chunk > lim)
            chunk = lim;
        int e = site_conn_seal_cached(c, NULL, 0, data + done, chunk);
        if (e < 0)
            return e;
        if (e == 0)
            *copy = true;
        if (e != 1)
            break;
        done += chunk;
    }
    return (long)done;
}

/* ---- lifecycle ------------------------------------------------------------ */

void site_conn_accept(struct site_worker *w, int fd, bool tls, struct site_ipcount_entry *ip)
{
    struct site *s = w->s;
    struct site_conn *c = site_xcalloc(1, sizeof(*c));
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, .data.ptr = c};

    c->w = w;
    c->fd = fd;
    c->tls = tls;
    c->ip = ip;
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
            gnutls_bye(c->session, GNUTLS_SHUT_WR); /* close_notify into c->enc */
        send_enc(c, UINT32_MAX);                    /* best effort: alerts, close_notify */
        site_rec_free(&c->rec);
        gnutls_deinit(c->session);
        c->session = NULL;
    }
    if (w->rb_owner == c)
        w->rb_owner = NULL;
    free(c->stash);
    c->stash = NULL;
    c->stash_off = c->stash_len = 0;
    if (c->bundle) {
        s->host->bundle_release(c->bundle);
        c->bundle = NULL;
    }
    free(c->in);
    c->in = NULL;
    c->out_off = c->out_len;
    c->enc_off = c->enc_len;
    site_out_release_if_empty(c);
    /* Out of epoll before the close: close() alone removes the fd only when
     * no other process holds the socket, and a process forked meanwhile (the
     * DH generator, until it closes what it inherited) does; its events
     * would then arrive for this connection after it is freed. */
    epoll_ctl(w->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    c->state = SITE_CS_CLOSED;
    site_ipcount_put(s->ip_conns, c->ip);
    c->ip = NULL;
    w->nconns--;
    atomic_fetch_sub_explicit(&s->nconns, 1, memory_order_relaxed);
    s->host->metric_add(s->m.conns_open, -1);
    /* Freed by the worker after the current batch of events (it may still
     * hold this pointer); the timer links are reused for that list. */
    c->tnext = w->dead;
    w->dead = c;
}

/*
 * LINGER: send what is left of the close_notify, then our FIN; read and
 * discard input until EOF, closing when nothing came for lingering_timeout
 * (the timer, moved on by each read) or after lingering_time in all.
 */
static void linger_event(struct site_conn *c)
{
    struct site_worker *w = c->w;
    bool got = false;

    if (!c->linger_shut) {
        int r = send_enc(c, UINT32_MAX);
        if (r < 0)
            goto close;
        if (r == 0)
            return; /* EPOLLOUT brings us back */
        if (shutdown(c->fd, SHUT_WR) < 0)
            goto close;
        c->linger_shut = true;
        site_out_release_if_empty(c);
    }
    for (;;) {
        ssize_t n = recv(c->fd, w->inbuf, sizeof(w->inbuf), 0);
        if (n > 0) {
            w->wm.bytes_in += (uint64_t)n;
            got = true;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        goto close; /* EOF or error */
    }
    if (w->now_ms >= c->linger_end_ms)
        goto close;
    if (got)
        site_timer_set(c, SITE_T_LINGER);
    return;
close:
    site_conn_close(c);
}

/*
 * The answer is flushed and the connection is to close, but the client may
 * still be sending (a body we refused): closing now would make the kernel
 * answer its next segment with a reset, which can destroy our answer before
 * the client reads it.  Shut our side down (close_notify, FIN) and discard
 * input while it keeps coming (site.lingering_timeout, site.lingering_time).
 */
static void conn_linger(struct site_conn *c)
{
    struct site_worker *w = c->w;

    if (c->h2)
        site_h2_free(c); /* nothing is read or written as h2 any more */
    if (c->session) {
        gnutls_bye(c->session, GNUTLS_SHUT_WR); /* close_notify into c->enc */
        site_rec_free(&c->rec);                 /* site_conn_close frees it only with the session */
        gnutls_deinit(c->session);
        c->session = NULL;
    }
    if (w->rb_owner == c)
        w->rb_owner = NULL;
    free(c->stash);
    c->stash = NULL;
    c->stash_off = c->stash_len = 0;
    free(c->in);
    c->in = NULL;
    c->in_len = c->in_cap = c->h1_scanned = 0;
    c->state = SITE_CS_LINGER;
    c->linger_shut = false;
    c->linger_end_ms = w->now_ms + (uint64_t)atomic_load_explicit(&w->s->cfg.lingering_time_ms,
                                                                  memory_order_relaxed);
    site_timer_set(c, SITE_T_LINGER);
    linger_event(c); /* edge-triggered: what is already there brings no event */
}

void site_conn_timeout(struct site_conn *c)
{
    if (c->state == SITE_CS_HANDSHAKE)
        site_tls_count_timeout(c);
    site_conn_close(c);
}

void site_conn_drain(struct site_conn *c, bool gentle)
{
    /* Gently, an HTTP/2 connection is left to end as usual (idle timeout,
     * or the client closing it): even a GOAWAY notice makes clients such as
     * h2load fail the requests they had yet to send on it. */
    if (gentle && c->state != SITE_CS_H1)
        return;
    if (c->state == SITE_CS_HANDSHAKE || c->state == SITE_CS_LINGER) {
        site_conn_close(c);
        return;
    }
    if (c->state == SITE_CS_H2 && !c->h2) {
        site_conn_close(c); /* no preface yet: nothing asked, nothing to finish */
        return;
    }
    if (c->state == SITE_CS_H2) {
        site_h2_goaway(c);
        site_conn_flush(c);
        return;
    }
    if (c->state == SITE_CS_H1 && !out_pending(c) && !c->h1_body && !gentle)
        site_conn_close(c);
    else
        c->h1_close_after = true; /* gently: after its next answer (Connection: close) */
}

/* ---- I/O ------------------------------------------------------------------ */

/*
 * Only what a client cannot fake cheaply moves a deadline: response body
 * bytes handed to the output (c->data_out) for the send timeout, a new request
 * (c->nreq) for the idle timeout.  A PING or SETTINGS ACK sends bytes but is
 * no progress, so a stalled stream (zero window) or an idle connection kept
 * busy with PINGs still times out (nginx's send_timeout idea).
 *
 * Nor is a trickle: body bytes count once SITE_SEND_PROGRESS of them have
 * gone out since the deadline was last set.  Otherwise a client that opens
 * its HTTP/2 window one byte per send_timeout holds its connection (and a
 * slot of max_connections) for ever, which nginx allows too.  4 KB per 30 s
 * (the default send_timeout) is 137 bytes/s, below the 240 bytes/s that
 * IIS and Kestrel ask of a response; a real client's window (64 KB and
 * more) moves it at once.
 */
#define SITE_SEND_PROGRESS 4096

static void update_timer(struct site_conn *c)
{
    enum site_timer_kind k;

    if (c->state == SITE_CS_CLOSED || c->state == SITE_CS_HANDSHAKE)
        return;
    if (out_pending(c) || c->h1_body || (c->state == SITE_CS_H2 && !site_h2_idle(c)))
        k = SITE_T_SEND;
    else if (c->state == SITE_CS_H1 && c->in_len)
        k = SITE_T_HEADER; /* not reset by more bytes: slowloris */
    else
        k = SITE_T_IDLE;
    bool progress = c->nreq != c->mark_nreq || c->data_out - c->mark_data >= SITE_SEND_PROGRESS;
    if (c->tkind == k && (k == SITE_T_HEADER || !progress))
        return;
    site_timer_set(c, k);
    c->mark_data = c->data_out;
    c->mark_nreq = c->nreq;
}

/* Refill the plaintext buffer from the protocol; -1 after closing on error. */
static int produce(struct site_conn *c)
{
    if (c->state == SITE_CS_H1) {
        site_h1_produce(c);
    } else if (c->state == SITE_CS_H2) {
        if (site_h2_produce(c) < 0) {
            site_conn_close(c);
            return -1;
        }
    }
    return 0;
}

int site_conn_flush(struct site_conn *c)
{
    struct site_worker *w = c->w;

    for (;;) {
        if (c->tls) {
            /* Encrypt a batch (refilling from the protocol), then send it
             * with one send(): a 16 KB response and its headers leave in one
             * syscall instead of one per record.  A full batch is whole
             * TCP segments (send_batch). */
            if (!c->send_batch)
                c->send_batch = send_batch(c);
            bool offered = false;
            while (c->state != SITE_CS_HANDSHAKE && c->enc_len - c->enc_off < c->send_batch) {
                size_t pend = c->out_len - c->out_off;
                if (pend && c->state == SITE_CS_H2 && pend <= SITE_CE_ROOM && !c->want_close) {
                    /* A few bytes (HEADERS frames, the end of a file cut at
                     * a record's end) go in front of the next DATA from the
                     * cache rather than in a record of their own: offer
                     * them to the protocol once, and when it had no room in
                     * this batch, send the batch and offer them again. */
                    if (offered && c->enc_len > c->enc_off)
                        break;
                    if (!offered) {
                        offered = true;
                        if (produce(c) < 0)
                            return -1;
                        continue;
                    }
                }
                if (pend) {
                    size_t len = pend;
                    size_t room = c->send_batch - (c->enc_len - c->enc_off);
                    if (len > TLS_CHUNK)
                        len = TLS_CHUNK;
                    /* The batch's last record is cut to end it exactly: no
                     * record split across two sends (and slid to the front
                     * of c->enc in between), unless little room is left. */
                    if (len + SITE_REC_OVERHEAD > room) {
                        if (room < SITE_REC_OVERHEAD + SITE_BATCH_MIN_RECORD)
                            break;
                        len = room - SITE_REC_OVERHEAD;
                    }
                    if (seal_out(c, len) < 0) {
                        site_conn_close(c);
                        return -1;
                    }
                    continue;
                }
                c->out_off = c->out_len = 0;
                if (c->want_close)
                    break;
                if (produce(c) < 0)
                    return -1;
                if (c->out_len == 0)
                    break;
            }
            if (c->enc_off == c->enc_len)
                break;
            if (c->enc_len - c->enc_off + SITE_TLS_RECORD_MAX > c->send_batch) {
                /* A full batch (no room for another full record).  After
                 * full sends 1, 2, 4, ..., 128, then again from the 256th
                 * (the counter wraps): the MSS grows early, if ever. */
                uint8_t n = ++c->batch_sends;
                if ((n & (n - 1)) == 0)
                    c->send_batch = send_batch(c);
            }
            int r = send_enc(c, c->send_batch);
            if (r < 0) {
                site_conn_close(c);
                return -1;
            }
            if (r == 0)
                goto blocked;
        } else {
            if (c->out_off == c->out_len) {
                c->out_off = c->out_len = 0;
                if (c->want_close)
                    break;
                if (produce(c) < 0)
                    return -1;
                if (c->out_len == 0)
                    break;
            }
            ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR)
                    goto blocked;
                site_conn_close(c);
                return -1;
            }
            c->out_off += (uint32_t)n;
            w->wm.bytes_out += (uint64_t)n;
        }
    }
    site_out_release_if_empty(c);
    if (c->state == SITE_CS_HANDSHAKE)
        return 0;
    if (c->want_close && c->linger && c->state == SITE_CS_H1 && !w->draining) {
        conn_linger(c);
        return -1;
    }
    if (c->want_close || (c->state == SITE_CS_H2 && site_h2_idle(c) && c->h2_goaway) ||
        (w->draining && !w->gen->retiring && c->state == SITE_CS_H1 && !c->h1_body && !c->in_len)) {
        site_conn_close(c);
        return -1;
    }
    /* The client half-closed after its requests (printf ... | nc -N, a
     * shutdown(SHUT_WR) after the last one): it still reads, and a
     * half-close ends the requests, not the answers (RFC 9112 section
     * 9.6).  So the answers owed went out first; close once none is left
     * (what is left in c->in is a request that cannot be completed). */
    if (c->peer_eof && c->state == SITE_CS_H1 && !c->h1_body) {
        site_conn_close(c);
        return -1;
    }
    if (c->state == SITE_CS_H2 && site_h2_finished(c)) {
        /* nghttp2 wants neither to read nor to write.  After a GOAWAY for
         * a flood the client may still be sending (site_h2_on_data). */
        if (c->linger && !w->draining)
            conn_linger(c);
        else
            site_conn_close(c);
        return -1;
    }
    update_timer(c);
    return 0;
blocked:
    update_timer(c);
    return 0;
}

static void on_handshake_done(struct site_conn *c)
{
    static const char h2[] = "h2", acme[] = "acme-tls/1";
    gnutls_datum_t proto;
    int have = gnutls_alpn_get_selected_protocol(c->session, &proto) == 0;
    if (have && proto.size == 2 && memcmp(proto.data, h2, 2) == 0) {
        c->state = SITE_CS_H2; /* the session comes with the preface (site_h2_start) */
    } else if (have && proto.size == sizeof(acme) - 1 &&
               memcmp(proto.data, acme, proto.size) == 0) {
        /* An ACME tls-alpn-01 validation (the core chose its certificate):
         * the handshake was all of it; RFC 8737 has no data on it. */
        c->state = SITE_CS_H1; /* so that the close sends close_notify */
        site_conn_close(c);    /* the caller sees SITE_CS_CLOSED; no timer */
        return;
    } else {
        c->state = SITE_CS_H1;
    }
    site_timer_set(c, SITE_T_IDLE);
}

static void conn_read(struct site_conn *c)
{
    struct site_worker *w = c->w;

    while (!c->read_blocked && !c->peer_eof && c->state != SITE_CS_CLOSED) {
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
            if (n == 0) {
                c->peer_eof = true; /* close_notify (a FIN: site_tls_pull) */
                break;
            }
            if (n < 0) {
                site_conn_close(c); /* a fatal error */
                return;
            }
        } else {
            n = recv(c->fd, w->inbuf, sizeof(w->inbuf), 0);
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                if (errno == EINTR)
                    continue;
                break;
            }
            if (n == 0) {
                c->peer_eof = true;
                break;
            }
            if (n < 0) {
                site_conn_close(c);
                return;
            }
        }
        if (!c->tls)
            w->wm.bytes_in += (uint64_t)n;
        if (c->state == SITE_CS_H2) {
            if (site_h2_on_data(c, w->inbuf, (size_t)n) < 0) {
                /* protocol error: send what nghttp2 queued (GOAWAY), then close */
                c->want_close = true;
                break;
            }
            /* A flood ended the session: decrypting the rest only to drop
             * it would hold the GOAWAY back until the client stops sending
             * (a fast one sends all it has, and this worker serves no one
             * else meanwhile).  Send it now; the linger discards the rest
             * unread, what is buffered included. */
            if (site_h2_read_done(c))
                break;
        } else {
            site_h1_on_data(c, w->inbuf, (size_t)n);
        }
        if (c->out_len - c->out_off >= SITE_OUT_HIGH) {
            if (site_conn_flush(c) < 0)
                return;
            if (out_pending(c))
                c->read_blocked = true; /* resumed once the output drained */
        }
        if (!c->tls && (size_t)n < sizeof(w->inbuf) && !c->rdhup)
            break; /* short read: the socket is empty, a new edge comes with new data */
    }
    /* HTTP/2 has no half-close (a client that is done sends GOAWAY), and
     * streams stalled by a window that will never open would hold the
     * connection until a timer: the peer's end ends it, as in h2o and
     * nginx.  HTTP/1.1 answers first (site_conn_flush). */
    if (c->peer_eof && c->state == SITE_CS_H2)
        site_conn_close(c);
}

static void on_event(struct site_conn *c, uint32_t events)
{
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
        if (site_conn_flush(c) < 0) /* the server's flight */
            return;
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
        if (c->read_blocked && !out_pending(c) && c->in_len <= site_h1_in_limit(&c->w->s->cfg)) {
            c->read_blocked = false;
            events = EPOLLIN;
            continue;
        }
        break;
    }
}

void site_conn_on_event(struct site_conn *c, uint32_t events)
{
    if (c->state == SITE_CS_CLOSED)
        return;
    if (c->state == SITE_CS_LINGER) {
        linger_event(c); /* any event: room to send, data, EOF or an error */
        return;
    }
    if (events & (EPOLLIN | EPOLLRDHUP))
        c->drained = false; /* a new edge: the socket has data again */
    if (events & EPOLLRDHUP)
        c->rdhup = true;
    on_event(c, events);
    stash_leftover(c);
}
