/*
 * HTTP/1.1 on a bench connection: one GET at a time; answers framed by
 * Content-Length (or by the end of the stream when the server sends none).
 * New-connection scenarios ask for "Connection: close" and end the
 * connection after the answer, like ab without -k.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/bench/bench_conn.h"
#include "plugins/bench/bench_util.h"

static bool h1_keepalive(const struct bench_conn *c)
{
    return c->g->o->scenario == BENCH_SC_H1;
}

static int h1_send_request(struct bench_conn *c)
{
    const struct bench_opts *o = c->g->o;
    char req[1600];
    int n = snprintf(req, sizeof(req),
                     "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: tlsbox-bench\r\n"
                     "Accept: */*\r\n%s\r\n",
                     o->path, o->authority, h1_keepalive(c) ? "" : "Connection: close\r\n");
    c->h1_busy = true;
    c->reserved = false;
    c->requests++;
    c->h1_start_us = bench_now_us();
    c->hdr_len = 0;
    c->in_body = c->until_eof = c->server_close = c->draining = false;
    c->status = 0;
    c->remaining = -1;
    bench_conn_queue(c, req, (size_t)n);
    return bench_conn_flush(c);
}

int bench_h1_begin(struct bench_conn *c)
{
    if (!c->reserved && !bench_gen_take(c->g))
        return 1; /* nothing left to do: close quietly */
    return h1_send_request(c);
}

/* Parse the header block in c->hdr (ends with CRLF CRLF): 0, 1 for an
 * interim answer (1xx: the real one follows), or -EIO. */
static int h1_parse_head(struct bench_conn *c)
{
    c->hdr[c->hdr_len] = '\0';
    if (strncmp(c->hdr, "HTTP/1.", 7) != 0 || c->hdr_len < 12)
        return -EIO;
    c->status = atoi(c->hdr + 9);
    if (c->status < 100 || c->status > 599)
        return -EIO;
    /* 100 Continue, 103 Early Hints: not the answer (RFC 9110 15.2), which
     * comes next on the same request.  101 would switch protocols: no GET
     * of ours asks for that. */
    if (c->status < 200)
        return c->status == 101 ? -EIO : 1;
    bool chunked = false;
    for (char *line = strstr(c->hdr, "\r\n"); line && line[2] != '\r';
         line = strstr(line + 2, "\r\n")) {
        char *h = line + 2;
        if (strncasecmp(h, "Content-Length:", 15) == 0)
            c->remaining = strtoll(h + 15, NULL, 10);
        else if (strncasecmp(h, "Connection:", 11) == 0 && strcasestr(h, "close") &&
                 strcasestr(h, "close") < strstr(h, "\r\n"))
            c->server_close = true;
        else if (strncasecmp(h, "Transfer-Encoding:", 18) == 0)
            chunked = true;
    }
    if (chunked)
        return -EIO; /* static files never come chunked from the servers we measure */
    /* 204 and 304 have no body. */
    if (c->status == 204 || c->status == 304)
        c->remaining = 0;
    c->until_eof = c->remaining < 0;
    c->in_body = true;
    return 0;
}

/* An answer is complete: account it, then go on or finish. 0 or 1 (close). */
static int h1_answer_done(struct bench_conn *c)
{
    const struct bench_opts *o = c->g->o;
    int64_t start = o->scenario == BENCH_SC_H1 ? c->h1_start_us : c->t_start;
    c->h1_busy = false;
    c->answered = true;
    bench_gen_done(c, c->status, start);
    if (o->scenario == BENCH_SC_HTTPS_RESUME && c->tls) {
        /* Keep the newest ticket (TLS 1.3 sends it after the handshake; it
         * came before the answer) for the slot's next connection. */
        bool tls13 = gnutls_protocol_get_version(c->tls) == GNUTLS_TLS1_3;
        if (!tls13 || (gnutls_session_get_flags(c->tls) & GNUTLS_SFLAGS_SESSION_TICKET)) {
            gnutls_datum_t d;
            if (gnutls_session_get_data2(c->tls, &d) == 0) {
                gnutls_free(c->ticket.data);
                c->ticket = d;
            }
        }
    }
    if (!h1_keepalive(c) && !c->until_eof) {
        /* A connection per request ends when the server closes it (we asked
         * for that), as with ab: the slot's next connection waits for the
         * close, so the rate includes the teardown.  A server that keeps
         * the connection open is left after 200 ms (bench_gen.c). */
        c->draining = true;
        c->t_last_io = bench_now_us();
        return 0;
    }
    if (!h1_keepalive(c) || c->server_close || c->until_eof)
        return 1;
    if (!bench_gen_take(c->g))
        return 1;
    return h1_send_request(c) < 0 ? -EIO : 0;
}

/* Feed received bytes; 0 go on, 1 finished, -EIO. */
static int h1_feed(struct bench_conn *c, const char *p, size_t n)
{
    while (n > 0) {
        if (!c->h1_busy)
            return c->draining ? 1 : -EIO; /* bytes nobody asked for */
        if (!c->in_body) {
            size_t take = n;
            if (take > sizeof(c->hdr) - 1 - c->hdr_len)
                take = sizeof(c->hdr) - 1 - c->hdr_len;
            if (take == 0)
                return -EIO; /* header block too large */
            memcpy(c->hdr + c->hdr_len, p, take);
            size_t old = c->hdr_len;
            c->hdr_len += take;
            c->hdr[c->hdr_len] = '\0';
            char *end = strstr(c->hdr + (old > 3 ? old - 3 : 0), "\r\n\r\n");
            if (!end) {
                p += take;
                n -= take;
                continue;
            }
            size_t head = (size_t)(end + 4 - c->hdr);
            size_t used = head - old;
            c->hdr_len = head;
            int r = h1_parse_head(c);
            if (r < 0)
                return -EIO;
            p += used;
            n -= used;
            if (r == 1) {
                c->hdr_len = 0; /* an interim answer: the real head follows */
                continue;
            }
        }
        if (c->until_eof) {
            c->g->st->body += n;
            return 0;
        }
        size_t body = (long long)n < c->remaining ? n : (size_t)c->remaining;
        c->g->st->body += body;
        c->remaining -= (long long)body;
        p += body;
        n -= body;
        if (c->remaining == 0) {
            int r = h1_answer_done(c);
            if (r != 0)
                return r;
        }
    }
    return 0;
}

int bench_h1_on_read(struct bench_conn *c)
{
    char buf[16384];
    for (;;) {
        long n = bench_conn_recv(c, buf, sizeof(buf));
        if (n == -EAGAIN)
            return 0;
        if (n < 0)
            return -EIO;
        if (n == 0) {
            /* End of stream: completes a body without a length, else it is
             * a failure when a request was waiting, a quiet close if not. */
            if (c->h1_busy && c->in_body && c->until_eof)
                return h1_answer_done(c) < 0 ? -EIO : 1;
            return c->h1_busy ? -EIO : 1; /* also the end of draining */
        }
        int r = h1_feed(c, buf, (size_t)n);
        if (r != 0)
            return r;
    }
}
