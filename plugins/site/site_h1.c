/*
 * HTTP/1.x: request parser (keep-alive, pipelining, limits) and response
 * writer.  Requests are parsed where the bytes lie (the worker's input buffer
 * or the connection's leftover), so a keep-alive request costs no allocation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "site.h"

/*
 * Unparsed input is buffered up to this much, then reading stops until the
 * output drains.  It must exceed the largest request head the settings
 * allow, or a head above it would neither parse nor reach the parser's 431
 * and would sit until the header timeout.
 */
size_t site_h1_in_limit(const struct site_config *cfg)
{
    size_t head = (size_t)cfg->max_header_size + (size_t)cfg->max_request_line + 4;
    return head > 65536 ? head : 65536;
}

static bool name_is(const char *p, size_t n, const char *lit, size_t ln)
{
    return n == ln && strncasecmp(p, lit, ln) == 0;
}

static bool has_token(const char *p, size_t n, const char *tok)
{
    size_t tn = strlen(tok);
    for (size_t i = 0; i + tn <= n; i++)
        if (strncasecmp(p + i, tok, tn) == 0)
            return true;
    return false;
}

static struct site_str trim(const char *p, size_t n)
{
    while (n && (*p == ' ' || *p == '\t'))
        p++, n--;
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    return (struct site_str){p, n};
}

/* A weight (RFC 9110 12.4.2: "0" ["." 0-3 digits] or "1" ["." 0-3 "0"]) in
 * thousandths; -1 when malformed. */
static int qvalue(const char *p, size_t n)
{
    if (n == 0 || (p[0] != '0' && p[0] != '1'))
        return -1;
    int v = (p[0] - '0') * 1000;
    if (n == 1)
        return v;
    if (p[1] != '.' || n > 5)
        return -1;
    for (size_t i = 2, scale = 100; i < n; i++, scale /= 10) {
        if (p[i] < '0' || p[i] > '9' || (v == 1000 && p[i] != '0'))
            return -1;
        v += (p[i] - '0') * (int)scale;
    }
    return v;
}

void site_accept_encoding(const char *p, size_t n, uint16_t q[SITE_ENC_N])
{
    static const struct {
        const char *name;
        size_t len;
        int enc;
    } names[] = {{"br", 2, SITE_ENC_BR},
                 {"zstd", 4, SITE_ENC_ZSTD},
                 {"gzip", 4, SITE_ENC_GZIP},
                 {"x-gzip", 6, SITE_ENC_GZIP},
                 {"*", 1, SITE_ENC_N}};
    bool named[SITE_ENC_N] = {false};
    int star = -1;
    size_t i = 0;

    for (int e = 0; e < SITE_ENC_N; e++)
        q[e] = 0;
    while (i < n) {
        /* one element: coding *( OWS ";" OWS name "=" value ) */
        size_t end = i;
        while (end < n && p[end] != ',')
            end++;
        struct site_str el = trim(p + i, end - i);
        i = end + 1;
        size_t tl = 0;
        while (tl < el.n && el.p[tl] != ';' && el.p[tl] != ' ' && el.p[tl] != '\t')
            tl++;
        int w = 1000;
        for (size_t k = tl; k < el.n;) {
            while (k < el.n && (el.p[k] == ';' || el.p[k] == ' ' || el.p[k] == '\t'))
                k++;
            size_t pe = k;
            while (pe < el.n && el.p[pe] != ';')
                pe++;
            struct site_str prm = trim(el.p + k, pe - k);
            if (prm.n >= 2 && (prm.p[0] == 'q' || prm.p[0] == 'Q') && prm.p[1] == '=') {
                int v = qvalue(prm.p + 2, prm.n - 2);
                w = v < 0 ? 1000 : v;
            }
            k = pe;
        }
        for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
            if (!name_is(el.p, tl, names[k].name, names[k].len))
                continue;
            if (names[k].enc == SITE_ENC_N) {
                star = w;
            } else {
                q[names[k].enc] = (uint16_t)w;
                named[names[k].enc] = true;
            }
        }
    }
    for (int e = 0; e < SITE_ENC_N; e++)
        if (!named[e] && star >= 0)
            q[e] = (uint16_t)star;
}

/* Two lines that differ cannot be told apart from a list of values
 * (site_files.c decides what that means); the same line twice is one. */
static bool same_again(struct site_str had, struct site_str v)
{
    return !had.n || (had.n == v.n && memcmp(had.p, v.p, v.n) == 0);
}

void site_req_if_match(struct site_req *rq, struct site_str v)
{
    if (!same_again(rq->if_match, v))
        rq->im_conflict = true;
    rq->if_match = v;
}

void site_req_ius(struct site_req *rq, struct site_str v)
{
    if (!same_again(rq->ius, v))
        rq->ius_conflict = true;
    rq->ius = v;
}

/* RFC 9110 5.6.2 token characters (methods, header names). */
static bool is_tchar(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

long site_h1_parse(const char *buf, size_t len, const struct site_config *cfg, struct site_req *rq)
{
    return site_h1_parse_from(buf, len, 0, cfg, rq);
}

long site_h1_parse_from(const char *buf, size_t len, size_t scanned, const struct site_config *cfg,
                        struct site_req *rq)
{
    size_t start = 0, i, lim;
    const char *eol, *sp1, *sp2, *hend;
    const char *line;
    size_t linelen;

    /* Empty lines before a request are allowed (RFC 9112 2.2). */
    while (start < len && (buf[start] == '\r' || buf[start] == '\n'))
        start++;
    if (start == len)
        return start ? 0 : 0;
    buf += start;
    len -= start;
    scanned = scanned > start && scanned - start <= len ? scanned - start : 0;

    lim = len < (size_t)cfg->max_request_line + 2 ? len : (size_t)cfg->max_request_line + 2;
    eol = memchr(buf, '\n', lim);
    if (!eol) /* a CR at the end may be the line's own, its LF still coming */
        return len > (size_t)cfg->max_request_line + (buf[len - 1] == '\r') ? -414 : 0;
    linelen = (size_t)(eol - buf);
    if (linelen && buf[linelen - 1] == '\r')
        linelen--;
    if (linelen > (size_t)cfg->max_request_line)
        return -414;

    /* Headers end at an empty line; find it before parsing anything else. */
    lim = len < (size_t)cfg->max_header_size ? len : (size_t)cfg->max_header_size;
    hend = NULL;
    /* An end that was all there before ("\n\r\n" at most: 3 bytes) was
     * found then; only one whose first LF is in the last 2 bytes seen, or
     * later, can be new.  Without this, a head sent a line per record cost
     * a pass over every line so far for each line (0.25 s of CPU for 16 KB
     * of "a\n" lines). */
    const char *from = eol;
    if (scanned > 2 && buf + scanned - 2 > eol)
        from = memchr(buf + scanned - 2, '\n', lim > scanned - 2 ? lim - (scanned - 2) : 0);
    for (const char *p = from; p && p < buf + lim;) {
        const char *q = p + 1;
        if (q < buf + len && *q == '\n') {
            hend = q;
            break;
        }
        if (q + 1 < buf + len && q[0] == '\r' && q[1] == '\n') {
            hend = q + 1;
            break;
        }
        p = memchr(q, '\n', (size_t)(buf + lim - q));
    }
    if (!hend)
        return len >= (size_t)cfg->max_header_size ? -431 : 0;
    if ((size_t)(hend - buf) + 1 > (size_t)cfg->max_header_size)
        return -431;

    memset(rq, 0, sizeof(*rq));
    line = buf;
    sp1 = memchr(line, ' ', linelen);
    if (!sp1 || sp1 == line)
        return -400;
    sp2 = memchr(sp1 + 1, ' ', linelen - (size_t)(sp1 + 1 - line));
    if (!sp2 || sp2 == sp1 + 1)
        return -400;
    rq->method_s = (struct site_str){line, (size_t)(sp1 - line)};
    for (i = 0; i < rq->method_s.n; i++)
        if (!is_tchar((unsigned char)line[i]))
            return -400;
    rq->target = (struct site_str){sp1 + 1, (size_t)(sp2 - sp1 - 1)};
    {
        const char *v = sp2 + 1;
        size_t vn = linelen - (size_t)(v - line);
        /* HTTP-version = "HTTP/" DIGIT "." DIGIT (RFC 9112 2.3): 505 is for
         * a well-formed version we do not speak ("HTTP/2.0"); anything else
         * ("HTTP/1.1 " with a trailing space, "HTTP/1.10") is no version at
         * all, a malformed request line (400, RFC 9112 3). */
        bool well_formed = vn == 8 && memcmp(v, "HTTP/", 5) == 0 && v[5] >= '0' && v[5] <= '9' &&
                           v[6] == '.' && v[7] >= '0' && v[7] <= '9';
        if (!well_formed)
            return -400;
        if (v[5] != '1')
            return -505;
        /* A later 1.x is read as 1.1, the highest we speak (RFC 9110 6.2);
         * the version is DIGIT "." DIGIT, so anything else is malformed. */
        rq->http10 = v[7] == '0';
    }
    for (i = 0; i < rq->target.n; i++)
        if ((unsigned char)rq->target.p[i] <= 0x20 || rq->target.p[i] == 0x7f)
            return -400;
    if (rq->method_s.n == 3 && memcmp(line, "GET", 3) == 0)
        rq->method = SITE_M_GET;
    else if (rq->method_s.n == 4 && memcmp(line, "HEAD", 4) == 0)
        rq->method = SITE_M_HEAD;
    else
        rq->method = SITE_M_OTHER;
    rq->keep_alive = !rq->http10;

    bool have_host = false;
    for (const char *p = eol + 1; p < hend;) {
        const char *nl = memchr(p, '\n', (size_t)(hend - p) + 1);
        size_t ln = (size_t)(nl - p);
        const char *colon;
        struct site_str name, val;
        if (ln && p[ln - 1] == '\r')
            ln--;
        if (ln == 0)
            break;
        if (*p == ' ' || *p == '\t')
            return -400; /* obsolete line folding */
        colon = memchr(p, ':', ln);
        if (!colon || colon == p)
            return -400;
        name = (struct site_str){p, (size_t)(colon - p)};
        for (size_t k = 0; k < name.n; k++)
            if (!is_tchar((unsigned char)name.p[k]))
                return -400;
        val = trim(colon + 1, ln - (size_t)(colon + 1 - p));
        /* Control bytes (a bare CR, NUL, ESC) in a value: refused, never
         * passed on to a log or a redirect (RFC 9110 5.5). */
        for (size_t k = 0; k < val.n; k++) {
            unsigned char ch = (unsigned char)val.p[k];
            if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
                return -400;
        }
        switch (name.n) {
        case 4:
            if (name_is(name.p, name.n, "host", 4)) {
                if (have_host)
                    return -400;
                have_host = true;
                rq->host = val;
            }
            break;
        case 5:
            if (name_is(name.p, name.n, "range", 5))
                rq->range = val;
            break;
        case 8:
            if (name_is(name.p, name.n, "if-range", 8)) {
                rq->if_range = val;
            } else if (name_is(name.p, name.n, "if-match", 8) && val.n) {
                site_req_if_match(rq, val);
            }
            break;
        case 10:
            if (name_is(name.p, name.n, "connection", 10)) {
                if (has_token(val.p, val.n, "close"))
                    rq->keep_alive = false;
                else if (has_token(val.p, val.n, "keep-alive"))
                    rq->keep_alive = true;
            }
            break;
        case 13:
            /* Each line is kept where it lies: no copy, no allocation.  An
             * empty line adds no element (RFC 9110 5.6.1). */
            if (name_is(name.p, name.n, "if-none-match", 13) && val.n) {
                if (rq->ninm < SITE_INM_LINES)
                    rq->inm[rq->ninm++] = val;
                else
                    rq->inm_over = true;
            }
            break;
        case 14:
            if (name_is(name.p, name.n, "content-length", 14)) {
                if (val.n == 0)
                    return -400; /* empty: no length at all (RFC 9110 8.6) */
                for (size_t k = 0; k < val.n; k++) {
                    if (val.p[k] < '0' || val.p[k] > '9')
                        return -400;
                    if (val.p[k] != '0')
                        rq->has_body = true;
                }
            }
            break;
        case 15:
            if (name_is(name.p, name.n, "accept-encoding", 15))
                site_accept_encoding(val.p, val.n, rq->accept_q);
            break;
        case 17:
            if (name_is(name.p, name.n, "if-modified-since", 17)) {
                /* A singleton field (RFC 9110 13.1.3): two lines with
                 * different dates leave none to compare, and picking one
                 * could answer 304 for a copy the client does not hold.
                 * The condition is ignored: the file is always a right
                 * answer.  The same date twice is the same condition. */
                if (rq->ims.n && (rq->ims.n != val.n || memcmp(rq->ims.p, val.p, val.n) != 0))
                    rq->ims_conflict = true;
                rq->ims = val;
            } else if (name_is(name.p, name.n, "transfer-encoding", 17))
                rq->has_body = true;
            break;
        case 19:
            if (name_is(name.p, name.n, "if-unmodified-since", 19))
                site_req_ius(rq, val);
            break;
        }
        p = nl + 1;
    }
    if (!have_host && !rq->http10)
        return -400;
    /* Host = uri-host [ ":" port ] (RFC 9110 7.2): no userinfo ("a@b"), no
     * path, not empty, and a server MUST refuse an invalid one (RFC 9112
     * 3.2).  The same rule as the plain port's redirect, so both ports
     * agree on what a host is. */
    if (have_host) {
        char hbuf[264];
        if (!site_host_valid(rq->host.p, rq->host.n, hbuf, sizeof(hbuf)))
            return -400;
    }
    return (long)(start + (size_t)(hend - buf) + 1);
}

/* ---- response head ------------------------------------------------------- */

struct obuf {
    char *p;
    size_t n, cap;
};

static inline void put(struct obuf *b, const char *s, size_t n)
{
    if (b->n + n > b->cap)
        n = b->cap - b->n; /* never reached: callers reserve enough */
    memcpy(b->p + b->n, s, n);
    b->n += n;
}
#define PUTL(b, lit) put((b), lit, sizeof(lit) - 1)

static inline void put_u64(struct obuf *b, uint64_t v)
{
    char tmp[24];
    int i = sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(b, tmp + i, sizeof(tmp) - (size_t)i);
}

size_t site_h1_head(char *dst, size_t cap, const struct site_conn *c, const struct site_resp *rs,
                    bool keep_alive, bool http10)
{
    struct obuf b = {dst, 0, cap};
    const char *txt = site_status_text(rs->status);

    PUTL(&b, "HTTP/1.1 ");
    put_u64(&b, (uint64_t)rs->status);
    PUTL(&b, " ");
    put(&b, txt, strlen(txt));
    PUTL(&b, "\r\nServer: tlsbox\r\nDate: ");
    put(&b, c->w->date, c->w->date_len);
    PUTL(&b, "\r\n");
    if (rs->status != 304) {
        if (rs->ctype) {
            PUTL(&b, "Content-Type: ");
            put(&b, rs->ctype, strlen(rs->ctype));
            PUTL(&b, "\r\n");
        }
        PUTL(&b, "Content-Length: ");
        put_u64(&b, rs->len);
        PUTL(&b, "\r\n");
    }
    if (rs->has_validators) {
        PUTL(&b, "Last-Modified: ");
        put(&b, rs->lastmod, strlen(rs->lastmod));
        PUTL(&b, "\r\nETag: ");
        put(&b, rs->etag, strlen(rs->etag));
        PUTL(&b, "\r\nAccept-Ranges: bytes\r\n");
    }
    if (rs->enc) {
        PUTL(&b, "Content-Encoding: ");
        const char *ce = site_encoding_name(rs->enc - 1);
        put(&b, ce, strlen(ce));
        PUTL(&b, "\r\n");
    }
    if (rs->vary)
        PUTL(&b, "Vary: Accept-Encoding\r\n");
    if (rs->extra_len)
        put(&b, rs->extra, rs->extra_len);
    if (c->tls) {
        if (c->hsts_len) {
            PUTL(&b, "Strict-Transport-Security: ");
            put(&b, c->hsts, c->hsts_len);
            PUTL(&b, "\r\n");
        }
        PUTL(&b, "X-Content-Type-Options: nosniff\r\n"
                 "Referrer-Policy: strict-origin-when-cross-origin\r\n");
    }
    if (!keep_alive)
        PUTL(&b, "Connection: close\r\n");
    else if (http10)
        PUTL(&b, "Connection: keep-alive\r\n");
    PUTL(&b, "\r\n");
    return b.n;
}

/* ---- connection logic ---------------------------------------------------- */

/* A body from the cache is sealed where the cache holds it, the first record
 * with the response head in front (site_conn_seal_body): no 16 KB copy into
 * c->out.  1 all of it sent, 0 not all (the rest is copied when *copy, else
 * waits for c->enc to drain), -1 a GnuTLS error (close). */
static int seal_cached_body(struct site_conn *c, struct site_resp *rs, bool *copy)
{
    *copy = true;
    if (!c->tls || !rs->ce || rs->fd >= 0 || rs->len == 0)
        return 0;
    long r = site_conn_seal_body(c, (char *)rs->mem + rs->off, (size_t)rs->len, copy);
    if (r < 0)
        return -1;
    rs->off += (uint64_t)r;
    rs->len -= (uint64_t)r;
    c->data_out += (uint64_t)r;
    return rs->len == 0;
}

/* Answer @p rq (NULL: a request that could not be parsed) with @p rs; no
 * body when @p head. */
static void respond(struct site_conn *c, const struct site_req *rq, struct site_resp *rs, bool keep,
                    bool head)
{
    size_t need = 1024 + rs->extra_len + c->hsts_len;
    char *dst = site_out_reserve(c, need);
    size_t hn;
    uint64_t body = (rs->status == 304 || head) ? 0 : rs->len;

    hn = site_h1_head(dst, need, c, rs, keep, rq ? rq->http10 : false);
    c->out_len += (uint32_t)hn;
    site_resp_drop_extra(rs);
    if (rq)
        site_access_log(c, rq, rs->status, body, c->tls ? "HTTP/1.1" : "HTTP/1.1 plain");
    c->nreq++;
    if (body == 0) {
        site_resp_free(rs);
        if (!keep)
            c->want_close = true;
        return;
    }
    bool copy;
    int z = seal_cached_body(c, rs, &copy);
    if (z != 0) {
        site_resp_free(rs);
        if (z < 0 || !keep)
            c->want_close = true;
        return;
    }
    body = rs->len;
    /* Small bodies go straight into the buffer; big ones stream as it drains. */
    if (copy && body <= (uint64_t)(c->out_cap - c->out_len)) {
        long r = site_resp_read(rs, c->out + c->out_len, (size_t)body);
        if (r < 0) {
            site_resp_free(rs);
            c->want_close = true;
            return;
        }
        c->out_len += (uint32_t)r;
        c->data_out += (uint64_t)r;
        site_resp_free(rs);
        if (!keep)
            c->want_close = true;
        return;
    }
    c->h1_body = site_xmalloc(sizeof(*rs));
    *c->h1_body = *rs;
    c->h1_close_after = !keep;
}

static void handle(struct site_conn *c, const struct site_req *rq)
{
    struct site_resp rs;
    struct site *s = c->w->s;
    bool keep = rq->keep_alive && !rq->has_body && !c->w->draining;

    if (rq->has_body)
        c->linger = true; /* the body is never read */
    if (rq->has_body && rq->method != SITE_M_OTHER) {
        site_resp_init(&rs);
        site_resp_error(&rs, 413);
    } else if (c->tls) {
        site_files_serve(c->w, rq, &rs);
    } else {
        site_redirect_serve(c->w, rq, &rs);
    }
    site_metrics_request(c->w, c->tls ? SITE_PROTO_H1 : SITE_PROTO_PLAIN, rs.status);
    (void)s;
    respond(c, rq, &rs, keep, rq->method == SITE_M_HEAD);
}

/* A request refused before it was whole (@p head: its request line says
 * HEAD, so the answer has no body either, RFC 9110 section 9.3.2). */
static void bad_request(struct site_conn *c, int status, bool head)
{
    struct site_resp rs;
    site_resp_init(&rs);
    site_resp_error(&rs, status);
    site_metrics_request(c->w, c->tls ? SITE_PROTO_H1 : SITE_PROTO_PLAIN, status);
    c->linger = true; /* the rest of the bad request may still be coming */
    respond(c, NULL, &rs, false, head);
}

/* Parse and answer as many complete requests as fit; returns bytes consumed. */
static size_t process(struct site_conn *c, const char *p, size_t n)
{
    size_t used = 0, scanned = c->h1_scanned;
    c->h1_scanned = 0;
    while (used < n && !c->h1_body && !c->want_close && c->out_len < SITE_OUT_HIGH) {
        struct site_req rq;
        /* Empty lines before a request line are ignored (RFC 9112 2.2).  The
         * parser skips them too, but consumed here a stray CRLF after a
         * request is not kept as the start of the next one, which would put
         * the connection on the header timer.  It buys no time: only a
         * request or a response restarts the idle timer (update_timer). */
        while (used < n && (p[used] == '\r' || p[used] == '\n'))
            used++;
        if (used == n)
            break;
        /* c->h1_scanned holds for the head at the start of p (the stash,
         * where process_stashed and stash put the unfinished head). */
        long r = site_h1_parse_from(p + used, n - used, used ? 0 : scanned, &c->w->s->cfg, &rq);
        if (r == 0) {
            c->h1_scanned = (uint32_t)(n - used);
            break;
        }
        if (r < 0) {
            bad_request(c, (int)-r, n - used >= 5 && memcmp(p + used, "HEAD ", 5) == 0);
            used = n;
            break;
        }
        handle(c, &rq);
        used += (size_t)r;
    }
    return used;
}

static void stash(struct site_conn *c, const char *p, size_t n)
{
    if (n == 0)
        return;
    if (c->in_len + n > c->in_cap) {
        size_t cap = c->in_cap ? c->in_cap : 1024;
        while (cap < c->in_len + n)
            cap *= 2;
        c->in = site_xrealloc(c->in, cap);
        c->in_cap = (uint32_t)cap;
    }
    memcpy(c->in + c->in_len, p, n);
    c->in_len += (uint32_t)n;
}

static void process_stashed(struct site_conn *c)
{
    size_t used = process(c, c->in, c->in_len);
    if (used == c->in_len) {
        free(c->in);
        c->in = NULL;
        c->in_len = c->in_cap = 0;
    } else if (used) {
        memmove(c->in, c->in + used, c->in_len - used);
        c->in_len -= (uint32_t)used;
    }
}

void site_h1_on_data(struct site_conn *c, const char *data, size_t n)
{
    if (c->want_close)
        return; /* answering the last request: ignore what follows */
    if (c->in_len || c->h1_body) {
        stash(c, data, n);
        if (!c->h1_body)
            process_stashed(c);
    } else {
        size_t used = process(c, data, n);
        stash(c, data + used, n - used);
    }
    if (c->in_len > site_h1_in_limit(&c->w->s->cfg))
        c->read_blocked = true;
}

int site_h1_produce(struct site_conn *c)
{
    if (c->h1_body) {
        bool copy;
        int z = seal_cached_body(c, c->h1_body, &copy);
        if (z == 0 && !copy)
            return 0; /* c->enc is full: the rest after a send */
        if (z == 0) {
            size_t room = c->out_cap - c->out_len;
            if (room < 4096)
                return 0;
            long r = site_resp_read(c->h1_body, c->out + c->out_len, room);
            if (r < 0) {
                z = -1;
            } else {
                c->out_len += (uint32_t)r;
                c->data_out += (uint64_t)r;
            }
        }
        if (z < 0) {
            site_resp_free(c->h1_body);
            free(c->h1_body);
            c->h1_body = NULL;
            c->want_close = true;
            return 1;
        }
        if (c->h1_body->len > 0)
            return 0;
        site_resp_free(c->h1_body);
        free(c->h1_body);
        c->h1_body = NULL;
        if (c->h1_close_after) {
            c->want_close = true;
            return 1;
        }
    }
    if (c->in_len && !c->want_close) {
        /* c->read_blocked stays: on_event clears it and reads on once the
         * output drained.  Cleared here, nothing would read again what the
         * socket, or the TLS read-ahead, still holds (edge-triggered). */
        process_stashed(c);
        return c->h1_body ? 0 : 1;
    }
    return 1;
}
