/*
 * Inside the load generator: one client connection (socket, optional GnuTLS
 * session, output buffer) and the protocol drivers that run on it.  Only
 * bench_gen.c, bench_conn.c, bench_h1.c and bench_h2.c include this.
 */
#ifndef TLSBOX_BENCH_CONN_H
#define TLSBOX_BENCH_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <gnutls/gnutls.h>
#include <nghttp2/nghttp2.h>

#include "plugins/bench/bench_gen.h"

enum bench_conn_state {
    CONN_IDLE,       /* no socket; the loop starts one when there is work */
    CONN_CONNECTING, /* non-blocking connect() in progress */
    CONN_HANDSHAKE,  /* TLS handshake in progress */
    CONN_ACTIVE,     /* exchanging requests */
};

/* One HTTP/2 stream in flight. */
struct bench_h2_stream {
    int64_t start_us;
    int32_t id; /* nghttp2's stream id, assigned when submitted */
    int status;
    bool used;
};

struct bench_gen;

struct bench_conn {
    struct bench_gen *g;
    int slot;
    int fd;
    enum bench_conn_state state;
    gnutls_session_t tls;
    gnutls_datum_t ticket; /* the slot's last session (https-resume), kept across connections */
    int64_t t_start, t_last_io;
    int64_t t_hs_start; /* TLS handshake begun (t_last_io moves at each of its steps) */

    bool got_byte; /* first byte of an answer seen on this connection */
    bool answered; /* at least one request answered on this connection */
    bool want_out; /* the transport asked to wait for writability */
    long requests; /* requests taken on this connection */
    bool reserved; /* new-connection scenarios: the request was taken at open */

    /* Fairness: what this epoll wake may still read (bench_conn_recv), and
     * whether a wake stopped with records GnuTLS had already read off the
     * socket, which the level-triggered epoll cannot report again. */
    size_t read_left;
    bool more_in;

    char *out; /* plaintext waiting to be sent */
    size_t out_len, out_off, out_cap;
    size_t tls_pending; /* bytes of a gnutls_record_send that returned E_AGAIN */

    /* HTTP/1.1: one request at a time. */
    bool h1_busy;
    int64_t h1_start_us;
    char hdr[8192];
    size_t hdr_len;
    bool in_body, until_eof, server_close;
    bool draining; /* answered; waiting for the server to close */
    int status;
    long long remaining;

    /* HTTP/2 */
    nghttp2_session *h2;
    struct bench_h2_stream *streams;
    int h2_inflight;
    long h2_retried;     /* streams the server refused unprocessed on this connection */
    long h2_refused_run; /* of those, refused since the last answer */
};

struct bench_gen {
    const struct bench_opts *o;
    const struct bench_hooks *hooks;
    struct bench_stats *st;
    int epfd;
    struct bench_conn *conns;
    gnutls_certificate_credentials_t cred;
    gnutls_priority_t prio;
    long issued;
    /* Refused unprocessed and given back, not yet taken again: each is
     * counted as retried when taken, as not_sent if the run ends first. */
    long given_back;
    int64_t t0, t_issue_end, t_hard_end, t_last_done;
    /* Set when the run has no more requests to send: the ones in flight
     * must be answered by then (timeout_ms later), else they fail. */
    int64_t t_drain_end;
    bool stop_issuing;
};

/*
 * Most plaintext one connection reads per epoll wake.  A server streaming a
 * huge or endless body would otherwise keep the read loop going: the other
 * connections on the thread starve, and the clock, the timeouts and a
 * cancel wait until the socket runs dry.  256 KiB is 16 TLS records: a wake
 * still takes whole answers of the usual sizes.
 */
#define BENCH_READ_BUDGET (256u * 1024u)

/* ---- bench_gen.c: bookkeeping the drivers call ---- */
/* May another request start?  Counts it as issued when it may. */
bool bench_gen_take(struct bench_gen *g);
/* Could another request start (without taking it)? */
bool bench_gen_can_take(const struct bench_gen *g);
void bench_gen_done(struct bench_conn *c, int status, int64_t start_us);
void bench_gen_failed(struct bench_conn *c, long n);
/* A taken request the server refused without processing it: given back to
 * be taken again (by any connection), not failed; true.  It counts as
 * retried when it is taken again, as not_sent if the run stops sending
 * first (a timed run past its duration, bench.max_requests reached).
 * False, and nothing changed, when sending it again would take the run past
 * bench.max_requests (the caller counts it as failed). */
bool bench_gen_retry(struct bench_conn *c);
/* The run has ended: the requests given back and never taken again are
 * counted as not_sent (they were neither answered nor sent again). */
void bench_gen_end(struct bench_gen *g);

/* ---- bench_conn.c: transport ---- */
/* Start a connection on an idle slot: 0, or negative errno (slot left idle). */
int bench_conn_open(struct bench_conn *c);
/* Close the socket and free the session; the slot becomes idle. */
void bench_conn_close(struct bench_conn *c);
/* Handle epoll events on the slot's socket. */
void bench_conn_on_event(struct bench_conn *c, uint32_t events);
/* A failure: fail what is in flight (at least one request when nothing was
 * answered yet), then close. */
void bench_conn_fail(struct bench_conn *c);
/* Queue plaintext for sending. */
void bench_conn_queue(struct bench_conn *c, const void *data, size_t len);
/* Send what is queued: 0 (all sent or would block), -EIO. */
int bench_conn_flush(struct bench_conn *c);
/* Read plaintext: > 0 bytes, 0 at the end of the stream, -EAGAIN, -EIO.
 * -EAGAIN also once this wake's BENCH_READ_BUDGET is used: the loop comes
 * back to the connection on its next turn (c->more_in when epoll would not
 * say so). */
long bench_conn_recv(struct bench_conn *c, char *buf, size_t cap);
/* Register the events the connection waits for now. */
void bench_conn_arm(struct bench_conn *c);

/* ---- bench_h1.c ---- */
/* Connection ready (after connect or handshake): send the first request. */
int bench_h1_begin(struct bench_conn *c);
/* Readable: parse answers, start the next request.  0 to go on, 1 when the
 * connection is finished (close it), -EIO on a protocol or transport error. */
int bench_h1_on_read(struct bench_conn *c);

/* ---- bench_h2.c ---- */
int bench_h2_begin(struct bench_conn *c);
int bench_h2_on_read(struct bench_conn *c);
/* Free the session, failing the streams still open. */
void bench_h2_end(struct bench_conn *c);

#endif
