/*
 * dns-01 over RFC 2136 UPDATE signed with RFC 8945 TSIG, and a TXT query,
 * over TCP to one server.  See acme_dns.h for the contract.
 *
 * Everything read from the network goes through struct dns_r, whose every
 * read is bounds-checked; names are expanded with a hop limit, so a hostile
 * answer is an error message, never a crash or a loop.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include <tlsbox/xalloc.h>

#include "plugins/acme/acme_dns.h"

#define DNS_NAME_MAX 255
#define DNS_LABEL_MAX 63
#define DNS_HEADER_LEN 12
#define DNS_TYPE_SOA 6
#define DNS_TYPE_TXT 16
#define DNS_TYPE_TSIG 250
#define DNS_CLASS_IN 1
#define DNS_CLASS_NONE 254
#define DNS_CLASS_ANY 255
#define DNS_OPCODE_QUERY 0
#define DNS_OPCODE_UPDATE 5
#define DNS_FLAG_QR 0x8000
#define DNS_RCODE_NOERROR 0
#define DNS_RCODE_NXDOMAIN 3
#define DNS_RCODE_REFUSED 5
#define DNS_RCODE_NOTAUTH 9
#define TSIG_ERROR_BADTIME 18
/* RFC 8945 section 10 recommends 300 s, and bind uses it. */
#define TSIG_FUDGE 300
/* Far above any real key (tsig-keygen -a hmac-sha512 makes 64 bytes). */
#define TSIG_SECRET_MAX 512
#define TSIG_MAC_MAX 64
#define DNS_TIMEOUT_DEFAULT_MS 10000
/* A name of 255 bytes has at most 127 labels; more hops than that is a loop. */
#define DNS_POINTER_HOPS_MAX 127

/* ---- names ---------------------------------------------------------------- */

int acme_dns_name_wire(const char *name, unsigned char *out, size_t cap)
{
    if (!name || !*name)
        return -EINVAL;
    size_t len = 0;
    const char *p = strcmp(name, ".") == 0 ? "" : name;
    while (*p) {
        const char *dot = strchr(p, '.');
        size_t n = dot ? (size_t)(dot - p) : strlen(p);
        if (n == 0 || n > DNS_LABEL_MAX || memchr(p, '\\', n))
            return -EINVAL;
        /* +1 for the length byte, +1 for the root label still to come. */
        if (len + 1 + n + 1 > DNS_NAME_MAX)
            return -EINVAL;
        if (len + 1 + n + 1 > cap)
            return -ENOSPC;
        out[len++] = (unsigned char)n;
        memcpy(out + len, p, n);
        len += n;
        p += n;
        if (*p == '.')
            p++;
    }
    if (cap < len + 1)
        return -ENOSPC;
    out[len++] = 0;
    return (int)len;
}

static unsigned char ascii_lower(unsigned char ch)
{
    return ch >= 'A' && ch <= 'Z' ? (unsigned char)(ch - 'A' + 'a') : ch;
}

/*
 * Case-insensitive comparison of two wire names.  Folding every byte is
 * right: length bytes are at most 63, below 'A', so folding leaves them be.
 */
static bool name_eq(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen)
{
    if (alen != blen)
        return false;
    for (size_t i = 0; i < alen; i++)
        if (ascii_lower(a[i]) != ascii_lower(b[i]))
            return false;
    return true;
}

/* RFC 8945 4.3.3 hashes names in canonical form (RFC 4034 6.2): lowercase. */
static void name_lower(unsigned char *w, size_t len)
{
    for (size_t i = 0; i < len; i++)
        w[i] = ascii_lower(w[i]);
}

/* Whether @p name is @p zone or below it, at a label boundary. */
static bool name_under(const unsigned char *name, size_t len, const unsigned char *zone,
                       size_t zlen)
{
    size_t i = 0;
    while (i < len) {
        if (name_eq(name + i, len - i, zone, zlen))
            return true;
        if (name[i] == 0)
            break;
        i += (size_t)name[i] + 1;
    }
    return false;
}

/* ---- writing messages ------------------------------------------------------ */

struct dns_w {
    unsigned char *p;
    size_t len, cap;
};

static void w_put(struct dns_w *w, const void *data, size_t n)
{
    if (n == 0)
        return;
    if (w->len + n > w->cap) {
        w->cap = (w->len + n) * 2 + 64;
        w->p = tlsbox_xrealloc(w->p, w->cap);
    }
    memcpy(w->p + w->len, data, n);
    w->len += n;
}

static void w_u16(struct dns_w *w, unsigned v)
{
    unsigned char b[2] = {(unsigned char)(v >> 8), (unsigned char)v};
    w_put(w, b, 2);
}

static void w_u32(struct dns_w *w, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    w_put(w, b, 4);
}

static void w_u48(struct dns_w *w, uint64_t v)
{
    w_u16(w, (unsigned)(v >> 32) & 0xffff);
    w_u32(w, (uint32_t)v);
}

static void w_name_lower(struct dns_w *w, const unsigned char *name, size_t len)
{
    unsigned char canon[DNS_NAME_MAX];
    memcpy(canon, name, len);
    name_lower(canon, len);
    w_put(w, canon, len);
}

static void w_header(struct dns_w *w, uint16_t id, unsigned opcode, uint16_t count1,
                     uint16_t count2, uint16_t count3)
{
    w_u16(w, id);
    w_u16(w, (opcode & 0xf) << 11);
    w_u16(w, count1);
    w_u16(w, count2);
    w_u16(w, count3);
    w_u16(w, 0);
}

static uint16_t get_u16(const unsigned char *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static void set_u16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

/* ---- reading messages ------------------------------------------------------ */

struct dns_r {
    const unsigned char *m;
    size_t len, pos;
};

static int r_u16(struct dns_r *r, uint16_t *v)
{
    if (r->len - r->pos < 2)
        return -EPROTO;
    *v = get_u16(r->m + r->pos);
    r->pos += 2;
    return 0;
}

static int r_u32(struct dns_r *r, uint32_t *v)
{
    uint16_t hi, lo;
    if (r_u16(r, &hi) < 0 || r_u16(r, &lo) < 0)
        return -EPROTO;
    *v = (uint32_t)hi << 16 | lo;
    return 0;
}

static int r_u48(struct dns_r *r, uint64_t *v)
{
    uint16_t hi;
    uint32_t lo;
    if (r_u16(r, &hi) < 0 || r_u32(r, &lo) < 0)
        return -EPROTO;
    *v = (uint64_t)hi << 32 | lo;
    return 0;
}

static int r_bytes(struct dns_r *r, size_t n, const unsigned char **p)
{
    if (r->len - r->pos < n)
        return -EPROTO;
    *p = r->m + r->pos;
    r->pos += n;
    return 0;
}

/*
 * Expand the name at r->pos into @p out (uncompressed wire form), following
 * compression pointers (RFC 1035 4.1.4), and move past it.
 */
static int r_name(struct dns_r *r, unsigned char out[DNS_NAME_MAX], size_t *out_len)
{
    size_t pos = r->pos, len = 0, end = 0;
    unsigned hops = 0;
    for (;;) {
        if (pos >= r->len)
            return -EPROTO;
        unsigned ch = r->m[pos];
        if ((ch & 0xc0) == 0xc0) {
            if (pos + 1 >= r->len || ++hops > DNS_POINTER_HOPS_MAX)
                return -EPROTO;
            if (!end)
                end = pos + 2;
            pos = (size_t)(ch & 0x3f) << 8 | r->m[pos + 1];
            continue;
        }
        /* 0x40 and 0x80 are the obsolete extended label types. */
        if (ch & 0xc0 || len + 1 + ch > DNS_NAME_MAX || r->len - pos < 1 + (size_t)ch)
            return -EPROTO;
        memcpy(out + len, r->m + pos, 1 + ch);
        len += 1 + ch;
        pos += 1 + ch;
        if (ch == 0)
            break;
    }
    r->pos = end ? end : pos;
    *out_len = len;
    return 0;
}

/* One resource record, as answer_walk() hands it over. */
struct dns_rr {
    unsigned char owner[DNS_NAME_MAX];
    size_t owner_len;
    uint16_t type, rclass;
    uint32_t ttl;
    const unsigned char *rdata;
    uint16_t rdlen;
    size_t start; /* offset of the RR in the message */
};

static int r_rr(struct dns_r *r, struct dns_rr *rr)
{
    rr->start = r->pos;
    if (r_name(r, rr->owner, &rr->owner_len) < 0 || r_u16(r, &rr->type) < 0 ||
        r_u16(r, &rr->rclass) < 0 || r_u32(r, &rr->ttl) < 0 || r_u16(r, &rr->rdlen) < 0 ||
        r_bytes(r, rr->rdlen, &rr->rdata) < 0)
        return -EPROTO;
    return 0;
}

/* ---- answers ---------------------------------------------------------------- */

/* The TSIG RR of an answer (RFC 8945 4.2), pointing into the message. */
struct tsig_rr {
    unsigned char name[DNS_NAME_MAX], alg[DNS_NAME_MAX];
    size_t name_len, alg_len;
    uint16_t rclass;
    uint64_t time_signed;
    uint16_t fudge, mac_len, orig_id, error, other_len;
    const unsigned char *mac, *other;
};

struct dns_answer {
    const unsigned char *m;
    size_t len;
    uint16_t id, flags, counts[4];
    bool has_tsig;
    size_t tsig_at; /* offset of the TSIG RR: the signed part ends there */
    struct tsig_rr tsig;
};

static unsigned answer_rcode(const struct dns_answer *a)
{
    return a->flags & 0xf;
}

static unsigned answer_opcode(const struct dns_answer *a)
{
    return (a->flags >> 11) & 0xf;
}

static int tsig_rr_parse(const unsigned char *m, const struct dns_rr *rr, struct tsig_rr *t)
{
    memcpy(t->name, rr->owner, rr->owner_len);
    t->name_len = rr->owner_len;
    t->rclass = rr->rclass;
    /* A name in the rdata may not be compressed, but expanding costs nothing. */
    struct dns_r r = {m, (size_t)(rr->rdata - m) + rr->rdlen, (size_t)(rr->rdata - m)};
    if (r_name(&r, t->alg, &t->alg_len) < 0 || r_u48(&r, &t->time_signed) < 0 ||
        r_u16(&r, &t->fudge) < 0 || r_u16(&r, &t->mac_len) < 0 ||
        r_bytes(&r, t->mac_len, &t->mac) < 0 || r_u16(&r, &t->orig_id) < 0 ||
        r_u16(&r, &t->error) < 0 || r_u16(&r, &t->other_len) < 0 ||
        r_bytes(&r, t->other_len, &t->other) < 0 || r.pos != r.len)
        return -EPROTO;
    return 0;
}

typedef void dns_rr_fn(void *arg, unsigned section, const struct dns_rr *rr);

static int answer_header(struct dns_answer *a, const unsigned char *m, size_t len)
{
    memset(a, 0, sizeof(*a));
    a->m = m;
    a->len = len;
    if (len < DNS_HEADER_LEN)
        return -EPROTO;
    a->id = get_u16(m);
    a->flags = get_u16(m + 2);
    for (int i = 0; i < 4; i++)
        a->counts[i] = get_u16(m + 4 + 2 * i);
    return 0;
}

/*
 * Check the structure of the whole answer, find its TSIG RR (which must be
 * the last RR, RFC 8945 5.1), and hand every RR of the answer section (or,
 * in an UPDATE answer, the prerequisite section) to @p fn.
 */
static int answer_walk(struct dns_answer *a, const unsigned char *m, size_t len, dns_rr_fn *fn,
                       void *arg, char **why)
{
    static const char *const sections[] = {"answer section", "authority section",
                                           "additional section"};
    struct dns_r r = {m, len, DNS_HEADER_LEN};
    const char *where = "header";
    if (answer_header(a, m, len) < 0)
        goto bad;
    where = "question section";
    for (unsigned i = 0; i < a->counts[0]; i++) {
        unsigned char name[DNS_NAME_MAX];
        size_t nlen;
        const unsigned char *skip;
        if (r_name(&r, name, &nlen) < 0 || r_bytes(&r, 4, &skip) < 0)
            goto bad;
    }
    for (unsigned s = 1; s < 4; s++) {
        where = sections[s - 1];
        for (unsigned i = 0; i < a->counts[s]; i++) {
            struct dns_rr rr;
            if (r_rr(&r, &rr) < 0)
                goto bad;
            if (rr.type == DNS_TYPE_TSIG) {
                where = "TSIG record";
                if (s != 3 || i + 1 != a->counts[s] || tsig_rr_parse(m, &rr, &a->tsig) < 0)
                    goto bad;
                a->has_tsig = true;
                a->tsig_at = rr.start;
            }
            if (fn)
                fn(arg, s, &rr);
        }
    }
    where = "end";
    if (r.pos != len)
        goto bad;
    return 0;
bad:
    *why = tlsbox_xasprintf("malformed answer of %zu bytes (at the %s)", len, where);
    return -EPROTO;
}

static const char *rcode_name(unsigned rcode)
{
    static const char *const names[] = {
        "NOERROR", "FORMERR", "SERVFAIL", "NXDOMAIN", "NOTIMP",  "REFUSED", "YXDOMAIN", "YXRRSET",
        "NXRRSET", "NOTAUTH", "NOTZONE",  NULL,       NULL,      NULL,      NULL,       NULL,
        "BADSIG",  "BADKEY",  "BADTIME",  "BADMODE",  "BADNAME", "BADALG",  "BADTRUNC"};
    return rcode < sizeof(names) / sizeof(names[0]) ? names[rcode] : NULL;
}

static char *rcode_text(unsigned rcode)
{
    const char *name = rcode_name(rcode);
    return name ? tlsbox_xstrdup(name) : tlsbox_xasprintf("RCODE %u", rcode);
}

/* The error for an answer whose RCODE is not NOERROR. */
static int rcode_error(unsigned rcode, char **why)
{
    *why = rcode_text(rcode);
    return rcode == DNS_RCODE_REFUSED || rcode == DNS_RCODE_NOTAUTH ? -EACCES : -EREMOTEIO;
}

/* The answer must be an answer (QR) to our message (ID, opcode). */
static int answer_matches(const struct dns_answer *a, uint16_t id, unsigned opcode, char **why)
{
    if (a->id != id) {
        *why = tlsbox_xasprintf("the answer's ID %u is not the request's %u", a->id, id);
        return -EPROTO;
    }
    if (!(a->flags & DNS_FLAG_QR) || answer_opcode(a) != opcode) {
        *why = tlsbox_xasprintf("the answer is not a response to opcode %u (flags 0x%04x)", opcode,
                                a->flags);
        return -EPROTO;
    }
    return 0;
}

/* ---- TSIG ----------------------------------------------------------------------- */

struct tsig_alg {
    const char *name;
    gnutls_mac_algorithm_t mac;
    size_t mac_len;
};

static const struct tsig_alg tsig_algs[] = {
    {"hmac-sha256", GNUTLS_MAC_SHA256, 32},
    {"hmac-sha512", GNUTLS_MAC_SHA512, 64},
};

struct tsig_key {
    const struct tsig_alg *alg;
    unsigned char name[DNS_NAME_MAX], alg_name[DNS_NAME_MAX]; /* canonical wire form */
    size_t name_len, alg_name_len;
    unsigned char secret[TSIG_SECRET_MAX];
    size_t secret_len;
};

static int b64_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    return ch == '+' ? 62 : ch == '/' ? 63 : -1;
}

/* Standard base64 (RFC 4648 section 4), padding optional.  Length or -EINVAL. */
static int b64_decode(const char *s, unsigned char *out, size_t cap)
{
    size_t total = strlen(s), n = total;
    while (n > 0 && s[n - 1] == '=')
        n--;
    if (n == 0 || n % 4 == 1 || total - n > 2 || (total != n && total % 4 != 0))
        return -EINVAL;
    uint32_t acc = 0;
    unsigned bits = 0;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_value((unsigned char)s[i]);
        if (v < 0)
            return -EINVAL;
        acc = (acc << 6 | (uint32_t)v) & 0xffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (len == cap)
                return -EINVAL;
            out[len++] = (unsigned char)(acc >> bits);
        }
    }
    return (int)len;
}

static const struct tsig_alg *tsig_alg_find(const char *name)
{
    if (!name || !*name)
        return &tsig_algs[0];
    size_t n = strlen(name);
    if (name[n - 1] == '.')
        n--;
    for (size_t i = 0; i < sizeof(tsig_algs) / sizeof(tsig_algs[0]); i++)
        if (strlen(tsig_algs[i].name) == n && strncasecmp(tsig_algs[i].name, name, n) == 0)
            return &tsig_algs[i];
    return NULL;
}

/* Decode the key of @p c into @p k; the caller wipes it (tsig_key_wipe). */
static int tsig_key_load(const struct acme_dns_conf *c, struct tsig_key *k, char **why)
{
    k->alg = tsig_alg_find(c->key_alg);
    if (!k->alg) {
        *why = tlsbox_xasprintf("unknown TSIG algorithm \"%s\" (hmac-sha256 or hmac-sha512)",
                                c->key_alg);
        return -EINVAL;
    }
    int n = acme_dns_name_wire(k->alg->name, k->alg_name, sizeof(k->alg_name));
    k->alg_name_len = (size_t)n;
    n = c->key_name ? acme_dns_name_wire(c->key_name, k->name, sizeof(k->name)) : -EINVAL;
    if (n < 0) {
        *why = tlsbox_xasprintf("the TSIG key name \"%s\" is not a domain name",
                                c->key_name ? c->key_name : "");
        return -EINVAL;
    }
    k->name_len = (size_t)n;
    name_lower(k->name, k->name_len);
    n = c->key_secret ? b64_decode(c->key_secret, k->secret, sizeof(k->secret)) : -EINVAL;
    if (n < 0) {
        /* Say nothing about the secret's text: it may be a near miss of the real one. */
        *why = tlsbox_xasprintf("the secret of TSIG key %s is not base64 (of at most %d bytes)",
                                c->key_name, TSIG_SECRET_MAX);
        return -EINVAL;
    }
    k->secret_len = (size_t)n;
    return 0;
}

static void tsig_key_wipe(struct tsig_key *k)
{
    tlsbox_wipe(k->secret, sizeof(k->secret));
    k->secret_len = 0;
}

/* The TSIG variables (RFC 8945 4.3.3) that follow the message in the MAC input. */
static void tsig_put_vars(struct dns_w *w, const struct tsig_rr *t)
{
    w_name_lower(w, t->name, t->name_len);
    w_u16(w, DNS_CLASS_ANY);
    w_u32(w, 0);
    w_name_lower(w, t->alg, t->alg_len);
    w_u48(w, t->time_signed);
    w_u16(w, t->fudge);
    w_u16(w, t->error);
    w_u16(w, t->other_len);
    w_put(w, t->other, t->other_len);
}

static int tsig_hmac(const struct tsig_key *k, const struct dns_w *in, unsigned char *mac,
                     char **why)
{
    int rc = gnutls_hmac_fast(k->alg->mac, k->secret, k->secret_len, in->p, in->len, mac);
    if (rc < 0) {
        *why = tlsbox_xasprintf("cannot compute the TSIG MAC: %s", gnutls_strerror(rc));
        return -EIO;
    }
    return 0;
}

/*
 * Sign the message in @p msg (RFC 8945 4.3.3): MAC the message as it stands
 * and the TSIG variables, then append the TSIG RR and count it in ARCOUNT.
 * The MAC goes to @p mac (k->alg->mac_len bytes), for checking the answer.
 */
static int tsig_sign(const struct tsig_key *k, struct dns_w *msg, unsigned char *mac, char **why)
{
    struct tsig_rr t = {.time_signed = (uint64_t)time(NULL), .fudge = TSIG_FUDGE};
    memcpy(t.name, k->name, k->name_len);
    t.name_len = k->name_len;
    memcpy(t.alg, k->alg_name, k->alg_name_len);
    t.alg_len = k->alg_name_len;
    struct dns_w in = {0};
    w_put(&in, msg->p, msg->len);
    tsig_put_vars(&in, &t);
    int rc = tsig_hmac(k, &in, mac, why);
    free(in.p);
    if (rc < 0)
        return rc;

    size_t mac_len = k->alg->mac_len;
    w_put(msg, k->name, k->name_len);
    w_u16(msg, DNS_TYPE_TSIG);
    w_u16(msg, DNS_CLASS_ANY);
    w_u32(msg, 0);
    w_u16(msg, (unsigned)(k->alg_name_len + 6 + 2 + 2 + mac_len + 2 + 2 + 2));
    w_put(msg, k->alg_name, k->alg_name_len);
    w_u48(msg, t.time_signed);
    w_u16(msg, t.fudge);
    w_u16(msg, (unsigned)mac_len);
    w_put(msg, mac, mac_len);
    w_u16(msg, get_u16(msg->p)); /* original ID */
    w_u16(msg, 0);               /* error */
    w_u16(msg, 0);               /* other len */
    set_u16(msg->p + 10, get_u16(msg->p + 10) + 1u);
    return 0;
}

static bool mac_equal(const unsigned char *a, const unsigned char *b, size_t n)
{
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++)
        d |= a[i] ^ b[i];
    return d == 0;
}

/* A TSIG error in the answer: the server did not accept our signature. */
static int tsig_error(const struct dns_answer *a, char **why)
{
    const struct tsig_rr *t = &a->tsig;
    char *rcode = rcode_text(answer_rcode(a)), *error = rcode_text(t->error);
    char detail[64] = "";
    if (t->error == TSIG_ERROR_BADTIME && t->other_len == 6) {
        struct dns_r r = {t->other, 6, 0};
        uint64_t server_time = 0;
        r_u48(&r, &server_time);
        snprintf(detail, sizeof(detail), "; the server's clock is %+lld s from ours",
                 (long long)server_time - (long long)time(NULL));
    }
    *why = tlsbox_xasprintf("%s (TSIG error %s%s)", rcode, error, detail);
    free(rcode);
    free(error);
    return -EACCES;
}

/*
 * Verify the TSIG of an answer (RFC 8945 5.3.1 from the client's side): the
 * MAC covers the request's MAC, the answer up to its TSIG RR with the
 * original ID and ARCOUNT not counting the TSIG, and the TSIG variables.
 */
static int tsig_verify(const struct tsig_key *k, const unsigned char *req_mac,
                       const struct dns_answer *a, char **why)
{
    const struct tsig_rr *t = &a->tsig;
    if (!name_eq(t->name, t->name_len, k->name, k->name_len) ||
        !name_eq(t->alg, t->alg_len, k->alg_name, k->alg_name_len) || t->rclass != DNS_CLASS_ANY) {
        *why = tlsbox_xstrdup("the answer is signed with another key or algorithm");
        return -EPROTO;
    }
    size_t mac_len = k->alg->mac_len;
    if (t->mac_len != mac_len) {
        *why = tlsbox_xasprintf("the answer's TSIG MAC has %u bytes, not %zu", t->mac_len, mac_len);
        return -EPROTO;
    }
    struct dns_w in = {0};
    w_u16(&in, (unsigned)mac_len);
    w_put(&in, req_mac, mac_len);
    size_t msg_at = in.len;
    w_put(&in, a->m, a->tsig_at);
    set_u16(in.p + msg_at, t->orig_id);
    set_u16(in.p + msg_at + 10, a->counts[3] - 1u);
    tsig_put_vars(&in, t);
    unsigned char mac[TSIG_MAC_MAX];
    int rc = tsig_hmac(k, &in, mac, why);
    free(in.p);
    if (rc < 0)
        return rc;
    if (!mac_equal(mac, t->mac, mac_len)) {
        *why = tlsbox_xstrdup("the answer's TSIG MAC does not verify");
        return -EPROTO;
    }
    long long skew = (long long)t->time_signed - (long long)time(NULL);
    if (skew > t->fudge || -skew > t->fudge) {
        *why = tlsbox_xasprintf("the answer was signed %+lld s from this host's clock", skew);
        return -EPROTO;
    }
    return 0;
}

/* ---- transport -------------------------------------------------------------------- */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static char *duration_text(unsigned ms)
{
    return ms % 1000 ? tlsbox_xasprintf("%u ms", ms) : tlsbox_xasprintf("%u s", ms / 1000);
}

static const char *errno_text(int err, char *buf, size_t size)
{
    return strerror_r(err, buf, size);
}

/* Wait for @p events on @p fd until @p deadline: 0 ready, -ETIMEDOUT, -errno. */
static int wait_fd(int fd, short events, uint64_t deadline)
{
    for (;;) {
        uint64_t now = now_ms();
        if (now >= deadline)
            return -ETIMEDOUT;
        struct pollfd p = {.fd = fd, .events = events};
        uint64_t left = deadline - now;
        int n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -errno;
    }
}

/*
 * Split "host", "host:port", "v4:port", "[v6]:port", "[v6]" or a bare IPv6
 * address (two colons or more: no port) into @p host and @p port.
 */
static int server_split(const char *server, char *host, size_t hcap, char port[6])
{
    const char *h = server, *colon = strrchr(server, ':');
    size_t hlen;
    if (*server == '[') {
        const char *close = strchr(server, ']');
        if (!close || (close[1] && close[1] != ':'))
            return -EINVAL;
        h = server + 1;
        hlen = (size_t)(close - h);
        colon = close[1] == ':' ? close + 1 : NULL;
    } else if (colon && strchr(server, ':') != colon) {
        hlen = strlen(server);
        colon = NULL;
    } else {
        hlen = colon ? (size_t)(colon - server) : strlen(server);
    }
    if (hlen == 0 || hlen >= hcap)
        return -EINVAL;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    if (!colon) {
        strcpy(port, "53");
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (colon[1] < '0' || colon[1] > '9' || *end || errno || p == 0 || p > 65535)
        return -EINVAL;
    snprintf(port, 6, "%lu", p);
    return 0;
}

/* Connect one address within the timeout: a connected socket or -errno. */
static int connect_one(const struct addrinfo *ai, unsigned timeout_ms)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0)
        return -errno;
    int rc = 0;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        rc = errno == EINPROGRESS ? wait_fd(fd, POLLOUT, now_ms() + timeout_ms) : -errno;
        int soerr = 0;
        socklen_t slen = sizeof(soerr);
        if (rc == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &slen) == 0 && soerr)
            rc = -soerr;
    }
    if (rc < 0) {
        close(fd);
        return rc;
    }
    return fd;
}

/* Connect to the server, trying each of its addresses in turn. */
static int server_connect(const char *server, unsigned timeout_ms, char **why)
{
    char host[256], port[6];
    if (!server || server_split(server, host, sizeof(host), port) < 0) {
        *why = tlsbox_xstrdup("the server is not host, host:port, IPv6 or [IPv6]:port");
        return -EINVAL;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, port, &hints, &res);
    if (gai != 0) {
        *why = tlsbox_xasprintf("cannot resolve %s: %s", host, gai_strerror(gai));
        return -ENOENT;
    }
    int fd = -EHOSTUNREACH;
    for (const struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = connect_one(ai, timeout_ms);
        if (fd >= 0)
            break;
    }
    freeaddrinfo(res);
    if (fd == -ETIMEDOUT) {
        char *d = duration_text(timeout_ms);
        *why = tlsbox_xasprintf("cannot connect: no answer in %s", d);
        free(d);
    } else if (fd < 0) {
        char buf[128];
        *why = tlsbox_xasprintf("cannot connect: %s", errno_text(-fd, buf, sizeof(buf)));
    }
    return fd;
}

static int send_all(int fd, const unsigned char *p, size_t len, uint64_t deadline)
{
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -errno;
        int rc = wait_fd(fd, POLLOUT, deadline);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* Exactly @p len bytes: 0, -ETIMEDOUT, -ECONNRESET when closed early, -errno. */
static int recv_exact(int fd, unsigned char *p, size_t len, uint64_t deadline)
{
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0)
            return -ECONNRESET;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return -errno;
        int rc = wait_fd(fd, POLLIN, deadline);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static char *io_error_text(const char *what, int rc, unsigned timeout_ms)
{
    char buf[128];
    if (rc == -ETIMEDOUT) {
        char *d = duration_text(timeout_ms);
        char *s = tlsbox_xasprintf("no answer in %s", d);
        free(d);
        return s;
    }
    if (rc == -ECONNRESET)
        return tlsbox_xstrdup("the server closed the connection before answering");
    return tlsbox_xasprintf("%s: %s", what, errno_text(-rc, buf, sizeof(buf)));
}

/* Send @p msg with its 2-byte length (RFC 7766 section 8), read the answer. */
static int dns_exchange(const struct acme_dns_conf *c, const struct dns_w *msg, unsigned char **ans,
                        size_t *ans_len, char **why)
{
    unsigned timeout_ms = c->timeout_ms ? c->timeout_ms : DNS_TIMEOUT_DEFAULT_MS;
    int fd = server_connect(c->server, timeout_ms, why);
    if (fd < 0)
        return fd;
    struct dns_w out = {0};
    w_u16(&out, (unsigned)msg->len);
    w_put(&out, msg->p, msg->len);
    int rc = send_all(fd, out.p, out.len, now_ms() + timeout_ms);
    free(out.p);
    if (rc < 0) {
        *why = io_error_text("cannot send", rc, timeout_ms);
        goto out;
    }
    uint64_t deadline = now_ms() + timeout_ms;
    unsigned char lenbuf[2];
    rc = recv_exact(fd, lenbuf, 2, deadline);
    if (rc < 0) {
        *why = io_error_text("cannot receive", rc, timeout_ms);
        goto out;
    }
    *ans_len = get_u16(lenbuf);
    *ans = tlsbox_xmalloc(*ans_len);
    rc = recv_exact(fd, *ans, *ans_len, deadline);
    if (rc < 0) {
        *why = io_error_text("cannot receive", rc, timeout_ms);
        free(*ans);
        *ans = NULL;
    }
out:
    close(fd);
    return rc;
}

/* ---- the update ------------------------------------------------------------------------ */

struct update_req {
    unsigned char zone[DNS_NAME_MAX], fqdn[DNS_NAME_MAX];
    size_t zone_len, fqdn_len, value_len;
};

/* Everything that can be refused before a byte is sent. */
static int update_check_args(const struct acme_dns_conf *c, const char *fqdn, const char *value,
                             unsigned ttl, struct update_req *u, char **why)
{
    int n = c->zone ? acme_dns_name_wire(c->zone, u->zone, sizeof(u->zone)) : -EINVAL;
    if (n < 0) {
        *why = tlsbox_xasprintf("the zone \"%s\" is not a domain name", c->zone ? c->zone : "");
        return -EINVAL;
    }
    u->zone_len = (size_t)n;
    n = fqdn ? acme_dns_name_wire(fqdn, u->fqdn, sizeof(u->fqdn)) : -EINVAL;
    if (n < 0) {
        *why = tlsbox_xstrdup("not a domain name");
        return -EINVAL;
    }
    u->fqdn_len = (size_t)n;
    if (!name_under(u->fqdn, u->fqdn_len, u->zone, u->zone_len)) {
        *why = tlsbox_xasprintf("the name is not in zone %s", c->zone);
        return -EINVAL;
    }
    u->value_len = value ? strlen(value) : 256;
    if (u->value_len > 255) {
        *why = tlsbox_xasprintf("the TXT value is missing or longer than 255 bytes");
        return -EINVAL;
    }
    /* RFC 2181 section 8: a TTL has 31 bits. */
    if (ttl > 0x7fffffffu) {
        *why = tlsbox_xasprintf("the TTL %u is over 2^31-1", ttl);
        return -EINVAL;
    }
    return 0;
}

static uint16_t dns_new_id(void)
{
    uint16_t id = 0;
    /* A guessable ID only matters off-path; the TSIG MAC protects the rest. */
    if (gnutls_rnd(GNUTLS_RND_NONCE, &id, sizeof(id)) < 0)
        id = (uint16_t)(now_ms() ^ (uint64_t)getpid());
    return id;
}

/* RFC 2136 section 2: the zone, no prerequisites, one RR to add or delete. */
static void update_build(struct dns_w *w, uint16_t id, const struct update_req *u, bool add,
                         const char *value, unsigned ttl)
{
    w_header(w, id, DNS_OPCODE_UPDATE, 1, 0, 1);
    w_put(w, u->zone, u->zone_len);
    w_u16(w, DNS_TYPE_SOA);
    w_u16(w, DNS_CLASS_IN);
    w_put(w, u->fqdn, u->fqdn_len);
    w_u16(w, DNS_TYPE_TXT);
    /* Class NONE with TTL 0 deletes exactly this RR (RFC 2136 2.5.4). */
    w_u16(w, add ? DNS_CLASS_IN : DNS_CLASS_NONE);
    w_u32(w, add ? ttl : 0);
    w_u16(w, (unsigned)u->value_len + 1);
    unsigned char slen = (unsigned char)u->value_len;
    w_put(w, &slen, 1);
    w_put(w, value, u->value_len);
}

static int update_check_answer(const struct tsig_key *k, const unsigned char *req_mac, uint16_t id,
                               const unsigned char *m, size_t len, char **why)
{
    struct dns_answer a;
    int rc = answer_walk(&a, m, len, NULL, NULL, why);
    if (rc < 0)
        return rc;
    rc = answer_matches(&a, id, DNS_OPCODE_UPDATE, why);
    if (rc < 0)
        return rc;
    if (!a.has_tsig) {
        /* An unsigned refusal cannot make things worse; an unsigned success could be forged. */
        if (answer_rcode(&a) != DNS_RCODE_NOERROR)
            return rcode_error(answer_rcode(&a), why);
        *why = tlsbox_xstrdup("the answer is not signed (NOERROR without TSIG)");
        return -EPROTO;
    }
    if (a.tsig.error != 0)
        return tsig_error(&a, why);
    rc = tsig_verify(k, req_mac, &a, why);
    if (rc < 0)
        return rc;
    if (answer_rcode(&a) != DNS_RCODE_NOERROR)
        return rcode_error(answer_rcode(&a), why);
    return 0;
}

/* Sign, send and check; @p k and @p u are ready. */
static int update_run(const struct acme_dns_conf *c, const struct tsig_key *k,
                      const struct update_req *u, bool add, const char *value, unsigned ttl,
                      char **why)
{
    uint16_t id = dns_new_id();
    struct dns_w msg = {0};
    unsigned char req_mac[TSIG_MAC_MAX], *ans = NULL;
    size_t ans_len = 0;
    update_build(&msg, id, u, add, value, ttl);
    int rc = tsig_sign(k, &msg, req_mac, why);
    if (rc == 0)
        rc = dns_exchange(c, &msg, &ans, &ans_len, why);
    if (rc == 0)
        rc = update_check_answer(k, req_mac, id, ans, ans_len, why);
    free(msg.p);
    free(ans);
    return rc;
}

int acme_dns_update(const struct acme_dns_conf *c, bool add, const char *fqdn, const char *value,
                    unsigned ttl, char **err)
{
    struct update_req u;
    struct tsig_key k;
    char *why = NULL;
    int rc;
    memset(&k, 0, sizeof(k));
    if (!c) {
        why = tlsbox_xstrdup("no configuration");
        rc = -EINVAL;
        goto out;
    }
    rc = update_check_args(c, fqdn, value, ttl, &u, &why);
    if (rc == 0)
        rc = tsig_key_load(c, &k, &why);
    if (rc == 0)
        rc = update_run(c, &k, &u, add, value, ttl, &why);
out:
    tsig_key_wipe(&k);
    if (rc < 0 && err)
        *err = tlsbox_xasprintf("DNS update of %s at %s: %s", fqdn ? fqdn : "(no name)",
                                c && c->server ? c->server : "(no server)", why);
    free(why);
    return rc;
}

/* ---- the TXT query ------------------------------------------------------------------- */

struct txt_match {
    const unsigned char *fqdn;
    size_t fqdn_len;
    const char *value;
    size_t value_len;
    bool found;
};

/* Whether one of the character-strings of a TXT rdata is the value. */
static bool txt_rdata_has(const unsigned char *p, size_t len, const char *value, size_t vlen)
{
    size_t i = 0;
    while (i < len) {
        size_t n = p[i];
        if (n > len - i - 1)
            return false;
        if (n == vlen && memcmp(p + i + 1, value, vlen) == 0)
            return true;
        i += n + 1;
    }
    return false;
}

static void on_txt_rr(void *arg, unsigned section, const struct dns_rr *rr)
{
    struct txt_match *t = arg;
    if (section == 1 && rr->type == DNS_TYPE_TXT && rr->rclass == DNS_CLASS_IN &&
        name_eq(rr->owner, rr->owner_len, t->fqdn, t->fqdn_len) &&
        txt_rdata_has(rr->rdata, rr->rdlen, t->value, t->value_len))
        t->found = true;
}

static int txt_query(const struct acme_dns_conf *c, const struct txt_match *t, char **why)
{
    uint16_t id = dns_new_id();
    struct dns_w msg = {0};
    unsigned char *ans = NULL;
    size_t ans_len = 0;
    w_header(&msg, id, DNS_OPCODE_QUERY, 1, 0, 0); /* RD=0: answer from your own data */
    w_put(&msg, t->fqdn, t->fqdn_len);
    w_u16(&msg, DNS_TYPE_TXT);
    w_u16(&msg, DNS_CLASS_IN);
    int rc = dns_exchange(c, &msg, &ans, &ans_len, why);
    free(msg.p);
    if (rc < 0)
        return rc;
    struct txt_match m = *t;
    struct dns_answer a;
    rc = answer_walk(&a, ans, ans_len, on_txt_rr, &m, why);
    if (rc == 0)
        rc = answer_matches(&a, id, DNS_OPCODE_QUERY, why);
    if (rc == 0 && answer_rcode(&a) == DNS_RCODE_NXDOMAIN)
        rc = 0;
    else if (rc == 0 && answer_rcode(&a) != DNS_RCODE_NOERROR)
        rc = rcode_error(answer_rcode(&a), why);
    else if (rc == 0)
        rc = m.found ? 1 : 0;
    free(ans);
    return rc;
}

int acme_dns_txt_has(const struct acme_dns_conf *c, const char *fqdn, const char *value, char **err)
{
    unsigned char wire[DNS_NAME_MAX];
    char *why = NULL;
    int rc = fqdn ? acme_dns_name_wire(fqdn, wire, sizeof(wire)) : -EINVAL;
    if (rc < 0 || !c || !value) {
        why = tlsbox_xstrdup(!c ? "no configuration" : !value ? "no value" : "not a domain name");
        rc = -EINVAL;
    } else {
        struct txt_match t = {wire, (size_t)rc, value, strlen(value), false};
        rc = txt_query(c, &t, &why);
    }
    if (rc < 0 && err)
        *err = tlsbox_xasprintf("DNS query for TXT %s at %s: %s", fqdn ? fqdn : "(no name)",
                                c && c->server ? c->server : "(no server)", why);
    free(why);
    return rc;
}
