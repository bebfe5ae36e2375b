/*
 * HTTP/2 on a bench connection (nghttp2 client on our own TLS transport):
 * up to N streams in flight, a new GET as soon as one completes.  Windows as
 * h2load's defaults (-w 30 -W 30) so flow control never limits a run.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/bench/bench_conn.h"
#include "plugins/bench/bench_util.h"

#define BENCH_H2_WINDOW ((1 << 30) - 1)

static int on_header(nghttp2_session *s, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user)
{
    (void)flags;
    (void)user;
    if (frame->hd.type != NGHTTP2_HEADERS || namelen != 7 || memcmp(name, ":status", 7) != 0)
        return 0;
    struct bench_h2_stream *st = nghttp2_session_get_stream_user_data(s, frame->hd.stream_id);
    if (st && valuelen == 3)
        st->status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
    return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                   void *user)
{
    (void)s;
    (void)flags;
    (void)id;
    (void)data;
    struct bench_conn *c = user;
    c->g->st->body += len;
    return 0;
}

/* A stream ends: answered, failed, or refused unprocessed (@p refused). */
static void stream_end(struct bench_conn *c, struct bench_h2_stream *st, bool ok, bool refused)
{
    if (!st->used)
        return; /* already counted */
    st->used = false;
    c->h2_inflight--;
    if (ok) {
        c->answered = true;
        c->h2_refused_run = 0;
        bench_gen_done(c, st->status, st->start_us);
    } else if (refused && c->h2_refused_run < 2L * c->g->o->streams && bench_gen_retry(c)) {
        /* Never processed by the server (RFC 9113 8.7: REFUSED_STREAM, and
         * nghttp2 closes so the streams above a GOAWAY's last stream id):
         * safe to send again, on this or a new connection, as h2load does.
         * Its stream limit (before its SETTINGS arrive) and a GOAWAY each
         * refuse at most the streams in flight, so at most twice that many
         * come without an answer between them; a server refusing more
         * refuses everything, and those fail rather than being sent again
         * until the time limit.  Nor past bench.max_requests: a request
         * sent again is a request made. */
        c->h2_refused_run++;
        c->h2_retried++;
    } else {
        bench_gen_failed(c, 1);
    }
}

static int on_close(nghttp2_session *s, int32_t id, uint32_t error_code, void *user)
{
    struct bench_h2_stream *st = nghttp2_session_get_stream_user_data(s, id);
    if (st)
        stream_end(user, st, error_code == NGHTTP2_NO_ERROR && st->status > 0,
                   error_code == NGHTTP2_REFUSED_STREAM);
    return 0;
}

/* A request nghttp2 dropped before sending it: after a GOAWAY no new stream
 * may start, so it was never sent and is retried; otherwise it failed. */
static int on_not_send(nghttp2_session *s, const nghttp2_frame *frame, int lib_error, void *user)
{
    (void)s;
    struct bench_conn *c = user;
    if (frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    for (int i = 0; i < c->g->o->streams; i++)
        if (c->streams[i].used && c->streams[i].id == frame->hd.stream_id)
            stream_end(c, &c->streams[i], false, lib_error == NGHTTP2_ERR_START_STREAM_NOT_ALLOWED);
    return 0;
}

/* Submit requests until N are in flight or none may start. */
static int h2_fill(struct bench_conn *c)
{
    const struct bench_opts *o = c->g->o;
    nghttp2_nv nva[] = {
        {(uint8_t *)":method", (uint8_t *)"GET", 7, 3, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":scheme", (uint8_t *)"https", 7, 5, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":authority", (uint8_t *)o->authority, 10, strlen(o->authority),
         NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":path", (uint8_t *)o->path, 5, strlen(o->path), NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"user-agent", (uint8_t *)"tlsbox-bench", 10, 12, NGHTTP2_NV_FLAG_NONE},
    };
    /* After a GOAWAY the server takes no new stream on this connection: the
     * rest of the work goes to the next one. */
    while (c->h2_inflight < o->streams && bench_gen_can_take(c->g) &&
           nghttp2_session_check_request_allowed(c->h2)) {
        struct bench_h2_stream *st = NULL;
        for (int i = 0; i < o->streams; i++)
            if (!c->streams[i].used) {
                st = &c->streams[i];
                break;
            }
        if (!st || !bench_gen_take(c->g))
            break;
        st->used = true;
        st->status = 0;
        st->start_us = bench_now_us();
        st->id = nghttp2_submit_request(c->h2, NULL, nva, sizeof(nva) / sizeof(nva[0]), NULL, st);
        if (st->id < 0) {
            st->used = false;
            bench_gen_failed(c, 1);
            return -EIO;
        }
        c->h2_inflight++;
        c->requests++;
    }
    return 0;
}

/* Move nghttp2's output into the connection's buffer and send it. */
static int h2_send(struct bench_conn *c)
{
    for (;;) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(c->h2, &data);
        if (n < 0)
            return -EIO;
        if (n == 0)
            break;
        bench_conn_queue(c, data, (size_t)n);
    }
    return bench_conn_flush(c);
}

int bench_h2_begin(struct bench_conn *c)
{
    nghttp2_session_callbacks *cb;
    if (nghttp2_session_callbacks_new(&cb) != 0)
        return -ENOMEM;
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
    nghttp2_session_callbacks_set_on_frame_not_send_callback(cb, on_not_send);
    int r = nghttp2_session_client_new(&c->h2, cb, c);
    nghttp2_session_callbacks_del(cb);
    if (r != 0)
        return -ENOMEM;
    if (!c->streams)
        c->streams = tlsbox_xcalloc((size_t)c->g->o->streams, sizeof(*c->streams));
    c->h2_inflight = 0;
    c->h2_retried = c->h2_refused_run = 0;
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                   {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, BENCH_H2_WINDOW}};
    if (nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, 2) != 0 ||
        nghttp2_session_set_local_window_size(c->h2, NGHTTP2_FLAG_NONE, 0, BENCH_H2_WINDOW) != 0)
        return -EIO;
    if (!bench_gen_can_take(c->g))
        return 1;
    if (h2_fill(c) < 0)
        return -EIO;
    return h2_send(c);
}

/*
 * The server ended the connection (GOAWAY, or a close with nothing in
 * flight): 1 to close it, -EIO when requests were still in flight.  One that
 * answered nothing and only refused costs one request, as a connection that
 * fails before its first answer does, so a server that refuses every stream
 * ends a counted run instead of having it retried until the time limit.
 */
static int h2_ended(struct bench_conn *c)
{
    /* Requests nghttp2 still holds (over the server's stream limit) were
     * never sent: after a GOAWAY, draining its queue refuses them to
     * on_not_send.  The output goes nowhere: the server is done. */
    const uint8_t *data;
    while (!nghttp2_session_check_request_allowed(c->h2) &&
           nghttp2_session_mem_send(c->h2, &data) > 0)
        ;
    if (c->h2_inflight)
        return -EIO;
    if (!c->answered && c->h2_retried > 0) {
        c->g->st->conn_failed++;
        if (bench_gen_take(c->g))
            bench_gen_failed(c, 1);
    }
    return 1;
}

int bench_h2_on_read(struct bench_conn *c)
{
    char buf[16384];
    for (;;) {
        long n = bench_conn_recv(c, buf, sizeof(buf));
        if (n == -EAGAIN)
            break;
        if (n <= 0)
            return h2_ended(c);
        if (nghttp2_session_mem_recv(c->h2, (const uint8_t *)buf, (size_t)n) < 0)
            return -EIO;
    }
    if (h2_fill(c) < 0 || h2_send(c) < 0)
        return -EIO;
    if (c->h2_inflight == 0 && !bench_gen_can_take(c->g))
        return 1; /* all done here */
    if (!nghttp2_session_want_read(c->h2) && !nghttp2_session_want_write(c->h2))
        return h2_ended(c); /* GOAWAY */
    return 0;
}

void bench_h2_end(struct bench_conn *c)
{
    if (c->h2_inflight > 0)
        bench_gen_failed(c, c->h2_inflight);
    c->h2_inflight = 0;
    if (c->streams)
        for (int i = 0; i < c->g->o->streams; i++)
            c->streams[i].used = false;
    nghttp2_session_del(c->h2);
    c->h2 = NULL;
}
