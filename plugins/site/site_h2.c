/*
 * HTTP/2 through nghttp2's memory API on our own TLS transport.  DATA frames
 * are written with NO_COPY straight from the cached file or pread() into the
 * connection's output buffer, so a body is copied once before encryption.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nghttp2/nghttp2.h>

#include "site.h"

struct h2_str {
    uint32_t off, n;
};

struct h2_stream {
    struct h2_stream *prev, *next;
    int32_t id;
    uint32_t hdr_bytes;
    bool responded, refused;
    bool reset_counted;          /* a reset of it was counted (h2_glitch) or is ours */
    bool has_file;               /* holds one of the connection's SITE_CONN_FILES */
    bool waiting;                /* deferred until a file slot frees */
    bool clen_body;              /* a content-length above 0: a body is coming */
    bool inm_over, ims_conflict; /* as in struct site_req */
    bool im_conflict, ius_conflict;
    uint8_t ninm;
    uint16_t accept_q[SITE_ENC_N]; /* as in struct site_req */
    struct h2_str method, path, authority, host, ims, range, if_range, if_match, ius;
    struct h2_str inm[SITE_INM_LINES]; /* one per non-empty if-none-match field */
    char *buf;
    uint32_t buf_len, buf_cap;
    char inline_buf[256];
    struct site_resp resp;
};

static nghttp2_session_callbacks *h2_callbacks;
static nghttp2_option *h2_option;
static pthread_once_t h2_once = PTHREAD_ONCE_INIT;

/*
 * Stream resets a client makes the server send, per connection: a burst of
 * H2_GLITCH_BURST, then H2_GLITCH_RATE a second.  The same as nghttp2's
 * limit on the resets a client sends (CVE-2023-44487, h2_global_init).
 */
#define H2_GLITCH_BURST 1000
#define H2_GLITCH_RATE 33

/*
 * MadeYouReset (CVE-2025-8671): a client can end each stream it opens
 * without sending RST_STREAM itself, by a frame the server must answer
 * with a stream reset: a WINDOW_UPDATE that overflows the stream's
 * window, a stream past the advertised limit, a malformed request, a
 * header list past max_header_size.  nghttp2 1.52 does not count these
 * (1.67 does, as "glitches"), so the client escapes both the stream limit
 * and the rapid-reset limit, and has request after request served on one
 * connection while it reads none of the answers.  Counted here at the
 * moment the reset is decided; past the budget the connection ends as
 * nghttp2 1.67 ends it, with GOAWAY ENHANCE_YOUR_CALM, and the rest of
 * what the client sends is discarded (c->linger, as for a CONTINUATION
 * flood in site_h2_on_data).  Returns false once the connection is ended.
 */
static bool h2_glitch(struct site_conn *c)
{
    if (c->linger)
        return false;
    uint32_t now = (uint32_t)(c->w->now_ms / 1000);
    if (now != c->h2_glitch_sec) {
        uint64_t t =
            c->h2_glitch_tokens + (uint64_t)(uint32_t)(now - c->h2_glitch_sec) * H2_GLITCH_RATE;
        c->h2_glitch_tokens = (uint16_t)(t < H2_GLITCH_BURST ? t : H2_GLITCH_BURST);
        c->h2_glitch_sec = now;
    }
    if (c->h2_glitch_tokens > 0) {
        c->h2_glitch_tokens--;
        return true;
    }
    /* Sets nghttp2's "terminating" state: no new stream is taken in from
     * here on, and after the GOAWAY it wants neither to read nor to write. */
    nghttp2_session_terminate_session(c->h2, NGHTTP2_ENHANCE_YOUR_CALM);
    c->linger = true;
    struct site *s = c->w->s;
    if (s->m.h2_glitch_goaways)
        s->host->metric_add(s->m.h2_glitch_goaways, 1);
    char peer[INET6_ADDRSTRLEN];
    site_warn(c->w,
              "site: HTTP/2 client %s made the server reset more than %d streams at over %d a "
              "second (MadeYouReset?): connection ended with GOAWAY ENHANCE_YOUR_CALM",
              site_peer_name(c, peer, sizeof(peer)), H2_GLITCH_BURST, H2_GLITCH_RATE);
    return false;
}

static struct h2_stream *stream_new(struct site_conn *c, int32_t id)
{
    struct h2_stream *st = site_xmalloc(sizeof(*st));
    memset(st, 0, offsetof(struct h2_stream, inline_buf));
    st->id = id;
    st->buf = st->inline_buf;
    st->buf_cap = sizeof(st->inline_buf);
    site_resp_init(&st->resp);
    st->next = c->h2_streams;
    if (st->next)
        st->next->prev = st;
    c->h2_streams = st;
    return st;
}

/* The stream's body file is done with (sent, or the stream is going). */
static void stream_drop_file(struct site_conn *c, struct h2_stream *st)
{
    site_resp_park(&st->resp);
    if (st->has_file) {
        st->has_file = false;
        c->files--;
    }
}

/* The kept headers are read only by serve(): give their heap block back
 * once the stream is answered or goes. */
static void stream_drop_headers(struct site_conn *c, struct h2_stream *st)
{
    if (st->buf != st->inline_buf) {
        c->h2_kept -= st->buf_cap;
        free(st->buf);
    }
    st->buf = st->inline_buf;
    st->buf_cap = sizeof(st->inline_buf);
    st->buf_len = 0;
}

static void stream_free(struct site_conn *c, struct h2_stream *st)
{
    stream_drop_file(c, st);
    if (st->waiting)
        c->h2_waiting--;
    if (st->prev)
        st->prev->next = st->next;
    else
        c->h2_streams = st->next;
    if (st->next)
        st->next->prev = st->prev;
    site_resp_free(&st->resp);
    stream_drop_headers(c, st);
    free(st);
}

/*
 * Keep a header's value for serve(); false when that would take the
 * connection's kept headers past their budget.  max_header_size bounds one
 * stream, but HPACK lets a client name a 4 KB table entry with one byte: 100
 * streams waiting for their END_STREAM, each naming it a few times, held
 * 2 MB of heap for 6 KB sent.  A legitimate request keeps little (its path
 * and authority, in the inline buffer) and only until it is answered.
 */
static bool stream_keep(struct site_conn *c, struct h2_stream *st, struct h2_str *dst,
                        const uint8_t *v, size_t n)
{
    if (st->buf_len + n > st->buf_cap) {
        size_t cap = st->buf_cap * 2, held = st->buf == st->inline_buf ? 0 : st->buf_cap;
        while (cap < st->buf_len + n)
            cap *= 2;
        if (c->h2_kept - held + cap > 4 * (size_t)c->w->s->cfg.max_header_size)
            return false;
        if (st->buf == st->inline_buf) {
            char *nb = site_xmalloc(cap);
            memcpy(nb, st->buf, st->buf_len);
            st->buf = nb;
        } else {
            st->buf = site_xrealloc(st->buf, cap);
        }
        c->h2_kept = (uint32_t)(c->h2_kept - held + cap);
        st->buf_cap = (uint32_t)cap;
    }
    memcpy(st->buf + st->buf_len, v, n);
    dst->off = st->buf_len;
    dst->n = (uint32_t)n;
    st->buf_len += (uint32_t)n;
    return true;
}

static struct site_str sstr(const struct h2_stream *st, struct h2_str s)
{
    return (struct site_str){s.n ? st->buf + s.off : NULL, s.n};
}

/* ---- callbacks -------------------------------------------------------------- */

static int on_begin_headers(nghttp2_session *h2, const nghttp2_frame *frame, void *user)
{
    struct site_conn *c = user;
    struct h2_stream *st;
    if (frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    if (frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
        /* Trailers: a field section of their own, counted afresh (on_header). */
        st = nghttp2_session_get_stream_user_data(h2, frame->hd.stream_id);
        if (st)
            st->hdr_bytes = 0;
        return 0;
    }
    st = stream_new(c, frame->hd.stream_id);
    nghttp2_session_set_stream_user_data(h2, frame->hd.stream_id, st);
    return 0;
}

/* Where to keep a field that should come once (a singleton, or a list the
 * server does not join): the first value is kept, a different one later
 * sets *conflict, the same one again needs no second copy. */
static struct h2_str *keep_first(const struct h2_stream *st, struct h2_str *had, bool *conflict,
                                 const uint8_t *value, size_t valuelen)
{
    if (!had->n)
        return had;
    if (had->n != valuelen || memcmp(st->buf + had->off, value, valuelen) != 0)
        *conflict = true;
    return NULL;
}

#define NAME_IS(lit) (namelen == sizeof(lit) - 1 && memcmp(name, lit, sizeof(lit) - 1) == 0)

static int on_header(nghttp2_session *h2, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user)
{
    struct site_conn *c = user;
    struct h2_stream *st;
    struct h2_str *keep = NULL;

    if (frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    st = nghttp2_session_get_stream_user_data(h2, frame->hd.stream_id);
    if (!st)
        return 0;
    /* nghttp2 1.52 advertises SETTINGS_MAX_HEADER_LIST_SIZE but does not
     * enforce it: count as RFC 9113 does and reset the stream past it.
     * Trailers too: nghttp2 checks every field's value before it calls
     * here, and a one-byte HPACK index names a 4 KB table entry, so an
     * uncounted trailer block (a HEADERS and 8 CONTINUATIONs, 147 KB of
     * indexes) had it scan 590 MB: 190 ms of the worker's CPU for each. */
    st->hdr_bytes += (uint32_t)(namelen + valuelen + 32);
    if (st->hdr_bytes > (uint32_t)c->w->s->cfg.max_header_size) {
        st->reset_counted = true;
        h2_glitch(c);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    if (frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0; /* trailers: nothing in them is kept */
    switch (namelen) {
    case 4:
        if (NAME_IS("host"))
            keep = &st->host;
        break;
    case 5:
        if (NAME_IS("range"))
            keep = &st->range;
        else if (NAME_IS(":path"))
            keep = &st->path;
        break;
    case 7:
        if (NAME_IS(":method"))
            keep = &st->method;
        break;
    case 8:
        if (NAME_IS("if-range"))
            keep = &st->if_range;
        else if (NAME_IS("if-match") && valuelen)
            keep = keep_first(st, &st->if_match, &st->im_conflict, value, valuelen);
        break;
    case 10:
        if (NAME_IS(":authority"))
            keep = &st->authority;
        break;
    case 13:
        /* Several fields are one list (RFC 9110 5.3): each is kept, in
         * st->buf like the others, so within the connection's budget. */
        if (NAME_IS("if-none-match") && valuelen) {
            if (st->ninm < SITE_INM_LINES)
                keep = &st->inm[st->ninm++];
            else
                st->inm_over = true;
        }
        break;
    case 14:
        /* nghttp2 checked that it is a number (RFC 9113 8.1.1) */
        if (NAME_IS("content-length"))
            for (size_t i = 0; i < valuelen; i++)
                st->clen_body |= value[i] != '0';
        break;
    case 15:
        if (NAME_IS("accept-encoding"))
            site_accept_encoding((const char *)value, valuelen, st->accept_q);
        break;
    case 17:
        /* A singleton: two different dates are no condition (see
         * site_h1.c); the same date again needs no second copy. */
        if (NAME_IS("if-modified-since"))
            keep = keep_first(st, &st->ims, &st->ims_conflict, value, valuelen);
        break;
    case 19:
        if (NAME_IS("if-unmodified-since"))
            keep = keep_first(st, &st->ius, &st->ius_conflict, value, valuelen);
        break;
    }
    /* Past the connection's budget: the stream is reset, as past its own. */
    if (keep && !stream_keep(c, st, keep, value, valuelen)) {
        st->reset_counted = true;
        h2_glitch(c);
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return 0;
}

/*
 * Called by nghttp2 only when the stream's and the connection's windows let
 * it send: the moment a parked body file is (re)opened, within the
 * connection's budget.  Past it the stream waits (DEFERRED) until another
 * stream's file closes (resume_waiting).
 */
static ssize_t on_read(nghttp2_session *h2, int32_t id, uint8_t *buf, size_t length,
                       uint32_t *flags, nghttp2_data_source *source, void *user)
{
    struct site_conn *c = user;
    struct h2_stream *st = source->ptr;
    size_t n;

    if (st->resp.parked) {
        int r = c->files < SITE_CONN_FILES ? site_resp_unpark(c->w, &st->resp) : -EMFILE;
        if (r == -EMFILE || r == -ENFILE) {
            if (!st->waiting)
                c->h2_waiting++;
            st->waiting = true;
            return NGHTTP2_ERR_DEFERRED;
        }
        if (r < 0) {
            st->reset_counted = true;                     /* no doing of the client's */
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the file changed: reset */
        }
        st->has_file = true;
        c->files++;
    }
    n = st->resp.len < length ? (size_t)st->resp.len : length;
    *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    if (n == st->resp.len)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

/* Give freed file slots to deferred streams. */
static void resume_waiting(struct site_conn *c)
{
    int room = SITE_CONN_FILES - c->files;
    for (struct h2_stream *st = c->h2_streams; st && room > 0; st = st->next) {
        if (!st->waiting)
            continue;
        st->waiting = false;
        c->h2_waiting--;
        if (nghttp2_session_resume_data(c->h2, st->id) == 0)
            room--;
    }
}

/*
 * nghttp2_session_mem_send() writes NO_COPY frames through this callback in
 * one loop until the peer's window is spent, without returning to
 * site_h2_produce's SITE_OUT_HIGH check: a client with a large window (curl
 * 32 MB, h2load 1 GB) would have a whole file staged in c->out.  A frame that
 * does not fit the pooled buffer waits (WOULDBLOCK: nghttp2 offers the same
 * frame again on the next mem_send) until the buffer has been encrypted.
 */
static int on_send_data(nghttp2_session *h2, nghttp2_frame *frame, const uint8_t *framehd,
                        size_t length, nghttp2_data_source *source, void *user)
{
    struct site_conn *c = user;
    struct h2_stream *st = source->ptr;
    uint32_t mark = c->out_len;
    char *dst;
    long r;

    if (st->resp.ce && st->resp.fd < 0 && length) {
        /* A cached file: sealed where it lies, without the copy. */
        int e = site_conn_seal_cached(c, framehd, 9, (char *)st->resp.mem + st->resp.off, length);
        if (e == 2)
            return NGHTTP2_ERR_WOULDBLOCK;
        if (e < 0)
            return NGHTTP2_ERR_CALLBACK_FAILURE; /* the connection closes */
        if (e == 1) {
            st->resp.off += length;
            st->resp.len -= length;
            c->data_out += length;
            if (st->resp.len == 0)
                stream_drop_file(c, st);
            return 0;
        }
    }
    if (c->out_len > c->out_off && c->out_len + 9 + length > SITE_OUTBUF)
        return NGHTTP2_ERR_WOULDBLOCK;
    dst = site_out_reserve(c, 9 + length);
    memcpy(dst, framehd, 9);
    c->out_len += 9;
    r = length ? site_resp_read(&st->resp, c->out + c->out_len, length) : 0;
    if (r != (long)length) {
        c->out_len = mark;
        st->reset_counted = true;                     /* no doing of the client's */
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* the stream is reset */
    }
    c->out_len += (uint32_t)length;
    c->data_out += length;
    if (st->resp.len == 0)
        stream_drop_file(c, st); /* all read: the slot goes to a waiting stream */
    return 0;
}

/* The port of a host[:port] that site_host_valid() took: its number, or
 * -1 without one. */
static long host_port(struct site_str v)
{
    const char *host_end = v.p[0] == '[' ? memchr(v.p, ']', v.n) : v.p;
    const char *colon = memchr(host_end, ':', v.n - (size_t)(host_end - v.p));
    long port = 0;

    if (!colon)
        return -1;
    for (const char *d = colon + 1; d < v.p + v.n; d++)
        port = port * 10 + (*d - '0');
    return port;
}

/* The request's host: :authority and a host header, when present, are each
 * host[:port] with no userinfo (RFC 9113 8.3.1, RFC 9110 7.2), and when both
 * are sent they name the same host (RFC 9113 8.3.1: a host header naming
 * another entity makes the request malformed).  Hosts are compared without
 * regard to case, IPv6 literals included (RFC 9110 4.2.3: site_host_valid
 * gives them in lower case); ports only when both name one, so "a" and
 * "a:443" agree but "a:8443" and "a:9443" do not.  A request that breaks
 * this is answered 400, as HTTP/1.1 answers a bad Host. */
static bool host_ok(struct site_str authority, struct site_str host)
{
    char a[264], h[264];
    long ap, hp;
    if (authority.n && !site_host_valid(authority.p, authority.n, a, sizeof(a)))
        return false;
    if (host.n && !site_host_valid(host.p, host.n, h, sizeof(h)))
        return false;
    if (!authority.n || !host.n)
        return true;
    ap = host_port(authority);
    hp = host_port(host);
    return strcmp(a, h) == 0 && (ap < 0 || hp < 0 || ap == hp);
}

static void serve(struct site_conn *c, struct h2_stream *st, bool has_body)
{
    struct site_worker *w = c->w;
    struct site_req rq;
    struct site_resp *rs = &st->resp;
    nghttp2_nv nv[20];
    size_t nnv = 0;
    char status[4], clen[24];
    nghttp2_data_provider prd = {.source.ptr = st, .read_callback = on_read};
    bool head;

    memset(&rq, 0, sizeof(rq));
    rq.method_s = sstr(st, st->method);
    if (rq.method_s.n == 3 && memcmp(rq.method_s.p, "GET", 3) == 0)
        rq.method = SITE_M_GET;
    else if (rq.method_s.n == 4 && memcmp(rq.method_s.p, "HEAD", 4) == 0)
        rq.method = SITE_M_HEAD;
    else
        rq.method = SITE_M_OTHER;
    rq.target = sstr(st, st->path);
    /* A CONNECT (RFC 9113 8.5; nghttp2 lets one through only with an
     * :authority and no :scheme or :path) names its target in :authority,
     * as HTTP/1.1's authority-form does (RFC 9112 3.2.3): so taken, it gets
     * HTTP/1.1's answer, 405 with Allow (this server tunnels nothing), and
     * the same access log line, instead of a 400 for a missing :path. */
    if (!rq.target.n && rq.method_s.n == 7 && memcmp(rq.method_s.p, "CONNECT", 7) == 0)
        rq.target = sstr(st, st->authority);
    rq.host = st->authority.n ? sstr(st, st->authority) : sstr(st, st->host);
    for (uint8_t i = 0; i < st->ninm; i++)
        rq.inm[i] = sstr(st, st->inm[i]);
    rq.ninm = st->ninm;
    rq.inm_over = st->inm_over;
    rq.ims = sstr(st, st->ims);
    rq.ims_conflict = st->ims_conflict;
    rq.range = sstr(st, st->range);
    rq.if_range = sstr(st, st->if_range);
    rq.if_match = sstr(st, st->if_match);
    rq.im_conflict = st->im_conflict;
    rq.ius = sstr(st, st->ius);
    rq.ius_conflict = st->ius_conflict;
    memcpy(rq.accept_q, st->accept_q, sizeof(rq.accept_q));
    rq.keep_alive = true;
    head = rq.method == SITE_M_HEAD;

    if (has_body && rq.method != SITE_M_OTHER) {
        site_resp_init(rs);
        site_resp_error(rs, 413);
    } else if (!rq.target.n || !host_ok(sstr(st, st->authority), sstr(st, st->host))) {
        site_resp_init(rs);
        site_resp_error(rs, 400);
    } else {
        site_files_serve(w, &rq, rs);
    }
    st->responded = true;
    site_metrics_request(w, SITE_PROTO_H2, rs->status);
    site_access_log(c, &rq, rs->status, head || rs->status == 304 ? 0 : rs->len, "HTTP/2");
    c->nreq++;
    stream_drop_headers(c, st); /* rq's strings are not read after this */

#define NV(n, v, vl)                                                                               \
    nv[nnv++] = (nghttp2_nv){(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl),                  \
                             NGHTTP2_NV_FLAG_NO_COPY_NAME}
    status[0] = (char)('0' + rs->status / 100);
    status[1] = (char)('0' + rs->status / 10 % 10);
    status[2] = (char)('0' + rs->status % 10);
    NV(":status", status, 3);
    NV("server", "tlsbox", 6);
    NV("date", w->date, w->date_len);
    if (rs->status != 304) {
        int n = 0;
        uint64_t v = rs->len;
        char tmp[24];
        int i = sizeof(tmp);
        do {
            tmp[--i] = (char)('0' + v % 10);
            v /= 10;
        } while (v);
        n = (int)sizeof(tmp) - i;
        memcpy(clen, tmp + i, (size_t)n);
        if (rs->ctype)
            NV("content-type", rs->ctype, strlen(rs->ctype));
        NV("content-length", clen, (size_t)n);
    }
    if (rs->has_validators) {
        NV("last-modified", rs->lastmod, strlen(rs->lastmod));
        NV("etag", rs->etag, strlen(rs->etag));
        NV("accept-ranges", "bytes", 5);
    }
    if (rs->enc) {
        const char *ce = site_encoding_name(rs->enc - 1);
        NV("content-encoding", ce, strlen(ce));
    }
    if (rs->vary)
        NV("vary", "accept-encoding", 15);
    if (rs->extra_len) {
        /* "Name: value\r\n" lines: lower-case names, values in place
         * (nghttp2_submit_response copies them; they are freed after). */
        char *end = rs->extra + rs->extra_len;
        for (char *p = rs->extra; p < end && nnv < 16;) {
            char *colon = memchr(p, ':', (size_t)(end - p));
            char *eol = memchr(p, '\r', (size_t)(end - p));
            if (!colon || !eol)
                break;
            for (char *q = p; q < colon; q++)
                if (*q >= 'A' && *q <= 'Z')
                    *q = (char)(*q + 32);
            nv[nnv++] = (nghttp2_nv){(uint8_t *)p, (uint8_t *)colon + 2, (size_t)(colon - p),
                                     (size_t)(eol - colon - 2), NGHTTP2_NV_FLAG_NONE};
            p = eol + 2;
        }
    }
    if (c->hsts_len)
        NV("strict-transport-security", c->hsts, c->hsts_len);
    NV("x-content-type-options", "nosniff", 7);
    NV("referrer-policy", "strict-origin-when-cross-origin", 31);
#undef NV
    if (head || rs->status == 304 || rs->len == 0) {
        nghttp2_submit_response(c->h2, st->id, nv, nnv, NULL);
        site_resp_free(rs);
    } else {
        /* Keep the file open only when the stream can send now and the
         * connection has a slot: a client that never opens its window
         * (SETTINGS_INITIAL_WINDOW_SIZE=0) holds no descriptor. */
        if (rs->fd >= 0) {
            if (c->files < SITE_CONN_FILES &&
                nghttp2_session_get_stream_remote_window_size(c->h2, st->id) > 0 &&
                nghttp2_session_get_remote_window_size(c->h2) > 0) {
                st->has_file = true;
                c->files++;
            } else {
                site_resp_park(rs);
            }
        }
        nghttp2_submit_response(c->h2, st->id, nv, nnv, &prd);
        site_resp_drop_extra(rs);
    }
}

static int on_frame_recv(nghttp2_session *h2, const nghttp2_frame *frame, void *user)
{
    struct site_conn *c = user;
    struct h2_stream *st;
    bool body;

    if (frame->hd.type == NGHTTP2_DATA)
        body = frame->hd.length > frame->data.padlen;
    else if (frame->hd.type == NGHTTP2_HEADERS) /* the request's, or trailers */
        body = false;
    else
        return 0;
    st = nghttp2_session_get_stream_user_data(h2, frame->hd.stream_id);
    if (!st || st->responded)
        return 0;
    /* A body is never read: answer at once (405/413) when one shows (a
     * content-length, DATA bytes) and let nghttp2 discard it.  Without, the
     * answer waits for END_STREAM, which may come after the HEADERS in an
     * empty DATA frame or trailers (RFC 9113 8.1). */
    body = body || st->clen_body;
    if (body || (frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        serve(c, st, body);
    return 0;
}

/* A DATA frame spent the window it was sent under: close the files of the
 * streams that can send no more (reopened by on_read when a WINDOW_UPDATE
 * lets them), so that a client granting a byte at a time cannot keep
 * SITE_CONN_FILES descriptors per connection open for as long as it likes.
 * nghttp2 calls this after it has taken the frame's length off both
 * windows, and no other stream has a frame half sent at that point. */
static void park_stalled_files(nghttp2_session *h2, struct site_conn *c, int32_t id)
{
    if (nghttp2_session_get_remote_window_size(h2) <= 0) { /* no stream can send */
        for (struct h2_stream *st = c->h2_streams; st; st = st->next)
            if (st->has_file && st->resp.len)
                stream_drop_file(c, st);
        return;
    }
    struct h2_stream *st = nghttp2_session_get_stream_user_data(h2, id);
    if (st && st->has_file && st->resp.len &&
        nghttp2_session_get_stream_remote_window_size(h2, id) <= 0)
        stream_drop_file(c, st);
}

static int on_frame_send(nghttp2_session *h2, const nghttp2_frame *frame, void *user)
{
    struct site_conn *c = user;
    /* Streams past the limit are refused before they exist: count the frame. */
    if (frame->hd.type == NGHTTP2_RST_STREAM) {
        if (c->w->s->m.h2_refused_streams)
            c->w->s->host->metric_add(c->w->s->m.h2_refused_streams, 1);
        /*
         * nghttp2 1.52 also resets streams on its own, telling no
         * callback: a SETTINGS_INITIAL_WINDOW_SIZE that overflows the
         * streams' windows (all of them at once), DATA past a stream's
         * window, DATA past or short of its content-length.  Each is a
         * reset the client made the server send, as in h2_glitch: 5000
         * requests were served and reset on one connection that way,
         * without the GOAWAY.  Counted here, when the reset goes out,
         * unless counted when decided; until it goes out the stream
         * still counts against the concurrent stream limit.
         */
        struct h2_stream *st = nghttp2_session_get_stream_user_data(h2, frame->hd.stream_id);
        if (st && !st->reset_counted) {
            st->reset_counted = true;
            h2_glitch(c);
        }
    } else if (frame->hd.type == NGHTTP2_DATA && c->files &&
               !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        park_stalled_files(h2, c, frame->hd.stream_id);
    return 0;
}

/* nghttp2 found a frame invalid: a stream reset it decided (or a
 * connection error, which ends the session anyway). */
static int on_invalid_frame_recv(nghttp2_session *h2, const nghttp2_frame *frame,
                                 int lib_error_code, void *user)
{
    struct h2_stream *st = nghttp2_session_get_stream_user_data(h2, frame->hd.stream_id);
    if (st)
        st->reset_counted = true; /* not again when the reset goes out */
    h2_glitch(user);
    return 0;
}

static int on_stream_close(nghttp2_session *h2, int32_t id, uint32_t error_code, void *user)
{
    struct site_conn *c = user;
    struct h2_stream *st = nghttp2_session_get_stream_user_data(h2, id);
    if (st)
        stream_free(c, st);
    return 0;
}

static void h2_global_init(void)
{
    nghttp2_session_callbacks_new(&h2_callbacks);
    nghttp2_session_callbacks_set_on_begin_headers_callback(h2_callbacks, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(h2_callbacks, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(h2_callbacks, on_frame_recv);
    nghttp2_session_callbacks_set_on_stream_close_callback(h2_callbacks, on_stream_close);
    nghttp2_session_callbacks_set_send_data_callback(h2_callbacks, on_send_data);
    nghttp2_session_callbacks_set_on_frame_send_callback(h2_callbacks, on_frame_send);
    nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(h2_callbacks,
                                                                 on_invalid_frame_recv);

    nghttp2_option_new(&h2_option);
    nghttp2_option_set_max_outbound_ack(h2_option, 1000);
    nghttp2_option_set_max_settings(h2_option, 32);
    nghttp2_option_set_max_deflate_dynamic_table_size(h2_option, 4096);
#ifdef HAVE_NGHTTP2_OPTION_SET_STREAM_RESET_RATE_LIMIT
    /* CVE-2023-44487 (rapid reset): a burst of 1000, then 33 resets a second. */
    nghttp2_option_set_stream_reset_rate_limit(h2_option, 1000, 33);
#endif
#ifdef HAVE_NGHTTP2_OPTION_SET_MAX_CONTINUATIONS
    /* CVE-2024-27316 family: bound CONTINUATION frames per header block. */
    nghttp2_option_set_max_continuations(h2_option, 8);
#endif
}

/* ---- connection glue ---------------------------------------------------- */

/*
 * The nghttp2 session (about 9 KB resident with its frame buffer page) is made
 * when the client's first bytes arrive, not when ALPN picks h2: browsers open
 * connections ahead of their first request, and one that never sends the
 * preface then costs only its TLS session.  Our SETTINGS go out with the
 * answer to the client's preface (RFC 9113 3.4 lets a client send without
 * waiting for them).
 */
int site_h2_start(struct site_conn *c)
{
    const struct site_config *cfg = &c->w->s->cfg;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, (uint32_t)cfg->h2_max_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, (uint32_t)cfg->h2_window},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, (uint32_t)cfg->max_header_size},
    };
    /* nghttp2 copies the allocator; its user data tells the blocks' owner. */
    nghttp2_mem mem = {c, site_h2_mem_malloc, site_h2_mem_free, site_h2_mem_calloc,
                       site_h2_mem_realloc};
    int r;

    pthread_once(&h2_once, h2_global_init);
    c->h2_making = true;
    r = nghttp2_session_server_new3(&c->h2, h2_callbacks, c, h2_option, &mem);
    c->h2_making = false;
    if (r != 0) {
        c->h2 = NULL;
        return -1;
    }
    c->h2_glitch_tokens = H2_GLITCH_BURST;
    c->h2_glitch_sec = (uint32_t)(c->w->now_ms / 1000);
    /* SETTINGS first, before reading anything (RFC 9113 3.4). */
    if (nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, sizeof(iv) / sizeof(iv[0])) != 0)
        return -1;
    return 0;
}

int site_h2_on_data(struct site_conn *c, const char *data, size_t n)
{
    if (c->linger)
        return 0; /* the session was ended (below): the rest is discarded */
    if (!c->h2 && site_h2_start(c) < 0)
        return -1;
    ssize_t r = nghttp2_session_mem_recv(c->h2, (const uint8_t *)data, n);
#ifdef HAVE_NGHTTP2_OPTION_SET_MAX_CONTINUATIONS /* the error came with the option */
    if (r == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS) {
        /*
         * More than 8 CONTINUATION frames in one header block (the limit
         * set in h2_global_init; a block past max_header_size has its
         * stream reset and its frames still count).  nghttp2 only returns
         * this error, and closing on it would drop the connection without
         * a word.  The session is intact (only the frame being read is
         * given up), so it still tells the client why: a GOAWAY
         * ENHANCE_YOUR_CALM, after which nghttp2 wants neither to read nor
         * to write and site_conn_flush closes, lingering (c->linger) since
         * the client is likely still sending: closed at once, the socket
         * would answer with a reset that can destroy the GOAWAY unread.
         */
        nghttp2_session_terminate_session(c->h2, NGHTTP2_ENHANCE_YOUR_CALM);
        c->linger = true;
        return 0;
    }
#endif
    return r < 0 ? -1 : 0;
}

int site_h2_produce(struct site_conn *c)
{
    if (!c->h2)
        return 1;            /* no preface yet: nothing to say */
    c->h2_fbuf_idle = false; /* nghttp2 may write frames into its buffer */
    while (c->out_len < SITE_OUT_HIGH) {
        const uint8_t *data;
        ssize_t n;
        if (c->h2_waiting && c->files < SITE_CONN_FILES)
            resume_waiting(c);
        n = nghttp2_session_mem_send(c->h2, &data);
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        site_out_append(c, data, (size_t)n);
    }
    return nghttp2_session_want_write(c->h2) ? 0 : 1;
}

bool site_h2_idle(const struct site_conn *c)
{
    return c->h2_streams == NULL;
}

bool site_h2_finished(const struct site_conn *c)
{
    return c->h2 && !nghttp2_session_want_read(c->h2) && !nghttp2_session_want_write(c->h2);
}

bool site_h2_read_done(const struct site_conn *c)
{
    return c->linger || (c->h2 && !nghttp2_session_want_read(c->h2));
}

void site_h2_goaway(struct site_conn *c)
{
    if (c->h2_goaway || !c->h2)
        return;
    c->h2_goaway = true;
    nghttp2_submit_goaway(c->h2, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(c->h2),
                          NGHTTP2_NO_ERROR, NULL, 0);
}

void site_h2_free(struct site_conn *c)
{
    while (c->h2_streams)
        stream_free(c, c->h2_streams);
    nghttp2_session_del(c->h2);
    c->h2 = NULL;
}
