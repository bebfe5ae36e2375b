/*
 * The DNS wire format for the dns-01 client (acme_dns.h): domain names,
 * writing and reading messages, walking an answer, RCODE names.
 *
 * Everything read from the network goes through struct dns_r, whose every
 * read is bounds-checked; names are expanded with a hop limit, so a hostile
 * answer is an error message, never a crash or a loop.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <tlsbox/xalloc.h>

#include "plugins/acme/acme_dns.h"
#include "plugins/acme/acme_dns_int.h"

#define DNS_LABEL_MAX 63
#define DNS_HEADER_LEN 12
#define DNS_FLAG_QR 0x8000
#define DNS_RCODE_REFUSED 5
#define DNS_RCODE_NOTAUTH 9
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
bool acme_dns_name_eq(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen)
{
    if (alen != blen)
        return false;
    for (size_t i = 0; i < alen; i++)
        if (ascii_lower(a[i]) != ascii_lower(b[i]))
            return false;
    return true;
}

/* RFC 8945 4.3.3 hashes names in canonical form (RFC 4034 6.2): lowercase. */
void acme_dns_name_lower(unsigned char *w, size_t len)
{
    for (size_t i = 0; i < len; i++)
        w[i] = ascii_lower(w[i]);
}

/* Whether @p name is @p zone or below it, at a label boundary. */
bool acme_dns_name_under(const unsigned char *name, size_t len, const unsigned char *zone,
                         size_t zlen)
{
    size_t i = 0;
    while (i < len) {
        if (acme_dns_name_eq(name + i, len - i, zone, zlen))
            return true;
        if (name[i] == 0)
            break;
        i += (size_t)name[i] + 1;
    }
    return false;
}

bool acme_dns_in_zone(const char *name, const char *zone)
{
    unsigned char n[DNS_NAME_MAX], z[DNS_NAME_MAX];
    int nlen = acme_dns_name_wire(name, n, sizeof(n));
    int zlen = acme_dns_name_wire(zone, z, sizeof(z));
    return nlen > 0 && zlen > 0 && acme_dns_name_under(n, (size_t)nlen, z, (size_t)zlen);
}

/* ---- writing messages ------------------------------------------------------ */

void acme_dns_w_put(struct dns_w *w, const void *data, size_t n)
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

void acme_dns_w_u16(struct dns_w *w, unsigned v)
{
    unsigned char b[2] = {(unsigned char)(v >> 8), (unsigned char)v};
    acme_dns_w_put(w, b, 2);
}

void acme_dns_w_u32(struct dns_w *w, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 8), (unsigned char)v};
    acme_dns_w_put(w, b, 4);
}

void acme_dns_w_u48(struct dns_w *w, uint64_t v)
{
    acme_dns_w_u16(w, (unsigned)(v >> 32) & 0xffff);
    acme_dns_w_u32(w, (uint32_t)v);
}

void acme_dns_w_name_lower(struct dns_w *w, const unsigned char *name, size_t len)
{
    unsigned char canon[DNS_NAME_MAX];
    memcpy(canon, name, len);
    acme_dns_name_lower(canon, len);
    acme_dns_w_put(w, canon, len);
}

void acme_dns_w_header(struct dns_w *w, uint16_t id, unsigned opcode, uint16_t count1,
                       uint16_t count2, uint16_t count3)
{
    acme_dns_w_u16(w, id);
    acme_dns_w_u16(w, (opcode & 0xf) << 11);
    acme_dns_w_u16(w, count1);
    acme_dns_w_u16(w, count2);
    acme_dns_w_u16(w, count3);
    acme_dns_w_u16(w, 0);
}

uint16_t acme_dns_get_u16(const unsigned char *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

void acme_dns_set_u16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

/* ---- reading messages ------------------------------------------------------ */

static int r_u16(struct dns_r *r, uint16_t *v)
{
    if (r->len - r->pos < 2)
        return -EPROTO;
    *v = acme_dns_get_u16(r->m + r->pos);
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

int acme_dns_r_u48(struct dns_r *r, uint64_t *v)
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

static int r_rr(struct dns_r *r, struct dns_rr *rr)
{
    rr->start = r->pos;
    rr->msg = r->m;
    rr->msg_len = r->len;
    if (r_name(r, rr->owner, &rr->owner_len) < 0 || r_u16(r, &rr->type) < 0 ||
        r_u16(r, &rr->rclass) < 0 || r_u32(r, &rr->ttl) < 0 || r_u16(r, &rr->rdlen) < 0 ||
        r_bytes(r, rr->rdlen, &rr->rdata) < 0)
        return -EPROTO;
    return 0;
}

int acme_dns_rdata_name(const struct dns_rr *rr, unsigned char out[DNS_NAME_MAX], size_t *out_len)
{
    size_t at = (size_t)(rr->rdata - rr->msg);
    struct dns_r r = {rr->msg, rr->msg_len, at};
    if (r_name(&r, out, out_len) < 0 || r.pos != at + rr->rdlen)
        return -EPROTO;
    return 0;
}

int acme_dns_name_text(const unsigned char *w, size_t len, char *out, size_t cap)
{
    size_t i = 0, o = 0;
    if (cap < 2)
        return -ENOSPC;
    if (len == 1 && w[0] == 0) {
        strcpy(out, ".");
        return 0;
    }
    while (i < len && w[i]) {
        size_t n = w[i];
        if (n > len - i - 1)
            return -EINVAL;
        for (size_t k = 1; k <= n; k++)
            if (w[i + k] <= ' ' || w[i + k] > '~' || w[i + k] == '.' || w[i + k] == '\\')
                return -EINVAL;
        if (o + (o > 0) + n + 1 > cap)
            return -ENOSPC;
        if (o > 0)
            out[o++] = '.';
        memcpy(out + o, w + i + 1, n);
        o += n;
        i += n + 1;
    }
    if (i >= len)
        return -EINVAL; /* no root label */
    out[o] = '\0';
    return 0;
}

/* ---- answers ---------------------------------------------------------------- */

unsigned acme_dns_answer_rcode(const struct dns_answer *a)
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
    if (r_name(&r, t->alg, &t->alg_len) < 0 || acme_dns_r_u48(&r, &t->time_signed) < 0 ||
        r_u16(&r, &t->fudge) < 0 || r_u16(&r, &t->mac_len) < 0 ||
        r_bytes(&r, t->mac_len, &t->mac) < 0 || r_u16(&r, &t->orig_id) < 0 ||
        r_u16(&r, &t->error) < 0 || r_u16(&r, &t->other_len) < 0 ||
        r_bytes(&r, t->other_len, &t->other) < 0 || r.pos != r.len)
        return -EPROTO;
    return 0;
}

static int answer_header(struct dns_answer *a, const unsigned char *m, size_t len)
{
    memset(a, 0, sizeof(*a));
    a->m = m;
    a->len = len;
    if (len < DNS_HEADER_LEN)
        return -EPROTO;
    a->id = acme_dns_get_u16(m);
    a->flags = acme_dns_get_u16(m + 2);
    for (int i = 0; i < 4; i++)
        a->counts[i] = acme_dns_get_u16(m + 4 + 2 * i);
    return 0;
}

/*
 * Check the structure of the whole answer, find its TSIG RR (which must be
 * the last RR, RFC 8945 5.1), and hand every RR of the answer section (or,
 * in an UPDATE answer, the prerequisite section) to @p fn.
 */
int acme_dns_answer_walk(struct dns_answer *a, const unsigned char *m, size_t len, dns_rr_fn *fn,
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

char *acme_dns_rcode_text(unsigned rcode)
{
    const char *name = rcode_name(rcode);
    return name ? tlsbox_xstrdup(name) : tlsbox_xasprintf("RCODE %u", rcode);
}

/* The error for an answer whose RCODE is not NOERROR. */
int acme_dns_rcode_error(unsigned rcode, char **why)
{
    *why = acme_dns_rcode_text(rcode);
    return rcode == DNS_RCODE_REFUSED || rcode == DNS_RCODE_NOTAUTH ? -EACCES : -EREMOTEIO;
}

/* The answer must be an answer (QR) to our message (ID, opcode). */
int acme_dns_answer_matches(const struct dns_answer *a, uint16_t id, unsigned opcode, char **why)
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
