/*
 * The plain HTTP port: routes registered by plugins (ACME challenges) first,
 * then a 301 to https://<host><uri>.  The Host header is validated, so the
 * redirect cannot be turned into a header injection or an open redirect to a
 * malformed name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "site.h"

#define REDIRECT_TARGET_MAX 900 /* longer targets get 414 on the plain port */

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_hex(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool port_ok(const char *p, size_t n)
{
    unsigned v = 0;
    if (n == 0 || n > 5)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!is_digit(p[i]))
            return false;
        v = v * 10 + (unsigned)(p[i] - '0');
    }
    return v > 0 && v < 65536;
}

bool site_host_valid(const char *p, size_t n, char *out, size_t cap)
{
    size_t hn, label = 0;

    if (n == 0 || n > 261)
        return false;
    if (p[0] == '[') {
        const char *end = memchr(p, ']', n);
        size_t in;
        if (!end)
            return false;
        in = (size_t)(end - p) - 1;
        if (in < 2)
            return false;
        for (size_t i = 1; i <= in; i++)
            if (!is_hex(p[i]) && p[i] != ':' && p[i] != '.')
                return false;
        hn = in + 2;
        if (hn < n && !(p[hn] == ':' && port_ok(p + hn + 1, n - hn - 1)))
            return false;
        if (hn + 1 > cap)
            return false;
        /* Lower case, as a name: "[2001:DB8::1]" is "[2001:db8::1]". */
        for (size_t i = 0; i < hn; i++)
            out[i] = (p[i] >= 'A' && p[i] <= 'Z') ? (char)(p[i] + 32) : p[i];
        out[hn] = 0;
        return true;
    }
    hn = n;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == ':') {
            if (!port_ok(p + i + 1, n - i - 1))
                return false;
            hn = i;
            break;
        }
    }
    if (hn == 0 || hn > 253 || hn + 1 > cap)
        return false;
    for (size_t i = 0; i < hn; i++) {
        char ch = p[i];
        if (ch == '.') {
            if (label == 0)
                return false; /* empty label */
            label = 0;
        } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || is_digit(ch) ||
                   ch == '-' || ch == '_') {
            if (label == 0 && ch == '-')
                return false;
            if (++label > 63)
                return false;
        } else {
            return false;
        }
        out[i] = (ch >= 'A' && ch <= 'Z') ? (char)(ch + 32) : ch;
    }
    out[hn] = 0;
    return true;
}

void site_redirect_serve(struct site_worker *w, const struct site_req *rq, struct site_resp *rs)
{
    struct site *s = w->s;
    char path[REDIRECT_TARGET_MAX + 1], method[16], host[264], loc[1200];
    char rooted[REDIRECT_TARGET_MAX + 2];
    size_t pn = 0;
    int ln;
    struct tlsbox_http_reply reply = {0};
    struct site_str target = rq->target, hostv = rq->host;

    site_resp_init(rs);
    if (target.n > REDIRECT_TARGET_MAX) {
        site_resp_error(rs, 414);
        return;
    }
    /* A server MUST accept the absolute-form and take the host from it, not
     * from Host (RFC 9112 3.2.2): "http://example.org/x" is /x on example.org. */
    if (site_target_absolute(rq->target, &hostv, &target)) {
        if (target.n == 0 || target.p[0] == '#') {
            target = (struct site_str){"/", 1}; /* an empty path is "/" */
        } else if (target.p[0] == '?') {
            /* "http://h?q" has an empty path too: it is "/?q" (RFC 3986
             * 6.2.3), not a target without its leading slash. */
            rooted[0] = '/';
            memcpy(rooted + 1, target.p, target.n);
            target = (struct site_str){rooted, target.n + 1};
        }
    }
    if (target.n == 0 || target.p[0] != '/') {
        site_resp_error(rs, 400);
        return;
    }
    while (pn < target.n && target.p[pn] != '?')
        pn++;
    memcpy(path, target.p, pn);
    path[pn] = 0;
    if (rq->method_s.n < sizeof(method)) {
        memcpy(method, rq->method_s.p, rq->method_s.n);
        method[rq->method_s.n] = 0;
        if (s->host->http_route_dispatch &&
            s->host->http_route_dispatch(method, path, &reply) == 0) {
            rs->status = reply.status ? reply.status : 200;
            rs->ctype = reply.content_type ? reply.content_type : "text/plain";
            rs->owned = reply.body;
            rs->mem = reply.body;
            rs->len = rs->total = reply.body ? reply.body_len : 0;
            return;
        }
    }
    if (!site_host_valid(hostv.p, hostv.n, host, sizeof(host))) {
        site_resp_error(rs, 400);
        return;
    }
    int port = atomic_load_explicit(&s->cfg.https_port, memory_order_relaxed);
    if (port == 443)
        ln = snprintf(loc, sizeof(loc), "https://%s%.*s", host, (int)target.n, target.p);
    else
        ln = snprintf(loc, sizeof(loc), "https://%s:%d%.*s", host, port, (int)target.n, target.p);
    site_resp_error(rs, 301);
    if (ln <= 0 || (size_t)ln >= sizeof(loc) ||
        site_resp_add_header(rs, "Location", loc, (size_t)ln) < 0) {
        site_resp_error(rs, 414); /* never a 301 without Location */
        site_warn(w, "site: redirect for a %zu-byte target does not fit; 414", rq->target.n);
    }
}
