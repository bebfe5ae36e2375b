/*
 * Static files: safe path resolution under the root, validators (ETag,
 * Last-Modified, 304), Range (206/416), precompressed .br/.zst/.gz siblings, error
 * pages, and a per-worker cache of small files.
 *
 * Safety does not rest on string checks alone: every open goes through
 * openat2(RESOLVE_BENEATH) on the root directory, so neither ".." nor a
 * symlink can leave the root, whatever the normaliser missed.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "site.h"

#define CACHE_CHECK_MS 1000 /* revalidate a cached file at most this often */

struct site_centry {
    struct site_centry *hnext;
    struct site_centry *lprev, *lnext;
    int refs;
    bool in_cache;
    bool missing;
    uint32_t hash;
    char *path;
    size_t path_len;
    char *data;
    size_t size;
    dev_t dev;
    ino_t ino;
    struct timespec mtim;
    struct timespec ctim; /* a chmod (chown, link) changes it, not mtim */
    uint64_t checked_ms;
    const char *ctype;
    char etag[48];
    char lastmod[32];
};

/* "Not there" entries (for precompressed siblings) are few and small: a flood of
 * requests for random names must not push real files out. */
#define CACHE_MISSING_MAX 256

/* Precompressed siblings, by enum site_encoding. */
static const struct {
    const char *name, *suffix;
} encodings[SITE_ENC_N] = {
    [SITE_ENC_BR] = {"br", ".br"},
    [SITE_ENC_ZSTD] = {"zstd", ".zst"},
    [SITE_ENC_GZIP] = {"gzip", ".gz"},
};

const char *site_encoding_name(enum site_encoding e)
{
    return encodings[e].name;
}

/* @p rel (@p len bytes) names a precompressed sibling. */
static bool is_sibling_name(const char *rel, size_t len)
{
    for (int e = 0; e < SITE_ENC_N; e++) {
        size_t sn = strlen(encodings[e].suffix);
        if (len > sn && strcmp(rel + len - sn, encodings[e].suffix) == 0)
            return true;
    }
    return false;
}

struct site_cache {
    struct site_centry **buckets;
    size_t nbuckets;
    size_t bytes, max_bytes, max_file;
    size_t nmissing, missing_bytes;  /* at most CACHE_MISSING_MAX and max_bytes / 16 */
    struct site_centry *head, *tail; /* least recently used first */
};

/* ---- error pages --------------------------------------------------------- */

const char *site_status_text(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 206:
        return "Partial Content";
    case 301:
        return "Moved Permanently";
    case 304:
        return "Not Modified";
    case 400:
        return "Bad Request";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 412:
        return "Precondition Failed";
    case 416:
        return "Range Not Satisfiable";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Unknown";
    }
}

#define ERR_PAGE(code, text)                                                                       \
    "<!doctype html>\n<html><head><title>" code " " text "</title></head>\n<body><h1>" code        \
    " " text "</h1></body></html>\n"

static const char *error_page(int status)
{
    switch (status) {
    case 301:
        return ERR_PAGE("301", "Moved Permanently");
    case 400:
        return ERR_PAGE("400", "Bad Request");
    case 403:
        return ERR_PAGE("403", "Forbidden");
    case 404:
        return ERR_PAGE("404", "Not Found");
    case 405:
        return ERR_PAGE("405", "Method Not Allowed");
    case 408:
        return ERR_PAGE("408", "Request Timeout");
    case 413:
        return ERR_PAGE("413", "Content Too Large");
    case 414:
        return ERR_PAGE("414", "URI Too Long");
    case 412:
        return ERR_PAGE("412", "Precondition Failed");
    case 416:
        return ERR_PAGE("416", "Range Not Satisfiable");
    case 431:
        return ERR_PAGE("431", "Request Header Fields Too Large");
    case 503:
        return ERR_PAGE("503", "Service Unavailable");
    case 505:
        return ERR_PAGE("505", "HTTP Version Not Supported");
    default:
        return ERR_PAGE("500", "Internal Server Error");
    }
}

void site_resp_init(struct site_resp *rs)
{
    rs->status = 0;
    rs->ctype = NULL;
    rs->extra = NULL;
    rs->extra_len = 0;
    rs->mtime = 0;
    rs->etag[0] = rs->lastmod[0] = 0;
    rs->has_validators = rs->vary = rs->range = false;
    rs->enc = 0;
    rs->ce = NULL;
    rs->fd = -1;
    rs->nfiles = NULL;
    rs->file = NULL;
    rs->parked = false;
    rs->mem = NULL;
    rs->owned = NULL;
    rs->off = rs->len = rs->total = 0;
}

void site_resp_error(struct site_resp *rs, int status)
{
    site_resp_free(rs);
    site_resp_init(rs);
    rs->status = status;
    rs->ctype = "text/html; charset=utf-8";
    rs->mem = error_page(status);
    rs->len = rs->total = strlen(rs->mem);
}

int site_resp_add_header(struct site_resp *rs, const char *name, const char *v, size_t vn)
{
    size_t nn = strlen(name);
    if (rs->extra_len + nn + 2 + vn + 2 >= SITE_RESP_EXTRA_MAX)
        return -ENOSPC;
    if (!rs->extra)
        rs->extra = site_xmalloc(SITE_RESP_EXTRA_MAX);
    memcpy(rs->extra + rs->extra_len, name, nn);
    rs->extra_len += nn;
    memcpy(rs->extra + rs->extra_len, ": ", 2);
    rs->extra_len += 2;
    memcpy(rs->extra + rs->extra_len, v, vn);
    rs->extra_len += vn;
    memcpy(rs->extra + rs->extra_len, "\r\n", 2);
    rs->extra_len += 2;
    return 0;
}

static void centry_unref(struct site_centry *e)
{
    if (--e->refs > 0)
        return;
    free(e->path);
    if (e->data)
        free(e->data - SITE_CE_ROOM);
    free(e);
}

void site_resp_park(struct site_resp *rs)
{
    if (rs->fd < 0 || !rs->file)
        return;
    close(rs->fd);
    atomic_fetch_sub_explicit(rs->nfiles, 1, memory_order_relaxed);
    rs->fd = -1;
    rs->parked = true;
}

void site_resp_drop_extra(struct site_resp *rs)
{
    free(rs->extra);
    rs->extra = NULL;
    rs->extra_len = 0;
}

void site_resp_free(struct site_resp *rs)
{
    if (rs->ce)
        centry_unref(rs->ce);
    if (rs->fd >= 0) {
        close(rs->fd);
        if (rs->nfiles)
            atomic_fetch_sub_explicit(rs->nfiles, 1, memory_order_relaxed);
    }
    free(rs->owned);
    free(rs->file);
    site_resp_drop_extra(rs);
    rs->ce = NULL;
    rs->fd = -1;
    rs->nfiles = NULL;
    rs->file = NULL;
    rs->parked = false;
    rs->owned = NULL;
    rs->mem = NULL;
}

long site_resp_read(struct site_resp *rs, char *dst, size_t n)
{
    if (n > rs->len)
        n = rs->len;
    if (n == 0)
        return 0;
    if (rs->fd >= 0) {
        ssize_t r;
        do
            r = pread(rs->fd, dst, n, (off_t)rs->off);
        while (r < 0 && errno == EINTR);
        if (r <= 0)
            return -1; /* file shrank or I/O error: the connection must close */
        n = (size_t)r;
    } else {
        memcpy(dst, rs->mem + rs->off, n);
    }
    rs->off += n;
    rs->len -= n;
    return (long)n;
}

/* ---- paths ----------------------------------------------------------------- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool site_target_absolute(struct site_str target, struct site_str *authority, struct site_str *rest)
{
    size_t skip = target.n >= 7 && strncasecmp(target.p, "http://", 7) == 0    ? 7
                  : target.n >= 8 && strncasecmp(target.p, "https://", 8) == 0 ? 8
                                                                               : 0;
    size_t a = skip;
    if (!skip)
        return false;
    /* The authority ends where the path, the query or a fragment starts
     * (RFC 3986 3.2): "https://h?/x" is "/" with the query "/x", not /x. */
    while (a < target.n && target.p[a] != '/' && target.p[a] != '?' && target.p[a] != '#')
        a++;
    *authority = (struct site_str){target.p + skip, a - skip};
    *rest = (struct site_str){target.p + a, target.n - a};
    return true;
}

int site_path_normalize(const char *target, size_t n, char *out, size_t cap)
{
    size_t o = 0, i = 0;
    size_t seg_start;
    struct site_str auth, rest;

    if (cap < 2)
        return -400;
    if (site_target_absolute((struct site_str){target, n}, &auth, &rest)) {
        /* An http(s) URI with no host is invalid (RFC 9110 4.2.1). */
        if (auth.n == 0)
            return -400;
        if (rest.n == 0 || rest.p[0] != '/') {
            out[0] = 0; /* an empty path is "/" (RFC 9110 4.2.3) */
            return 0;
        }
        target = rest.p;
        n = rest.n;
    }
    if (n == 0 || target[0] != '/')
        return -400;
    /* Walk the decoded path segment by segment, writing into out without the
     * leading slash; a segment is judged once it is complete. */
    seg_start = 0;
    for (i = 1;; i++) {
        int ch;
        bool end = i >= n || target[i] == '?' || target[i] == '#';
        if (!end) {
            ch = (unsigned char)target[i];
            if (ch == '%') {
                int h, l;
                if (i + 2 >= n)
                    return -400;
                h = hexval(target[i + 1]);
                l = hexval(target[i + 2]);
                if (h < 0 || l < 0)
                    return -400;
                ch = h * 16 + l;
                i += 2;
            }
            if (ch == 0 || ch < 0x20 || ch == 0x7f)
                return -400;
        }
        if (end || ch == '/') {
            size_t seg_len = o - seg_start;
            if (seg_len == 0 && !end) {
                /* empty segment ("//"): skip */
            } else if (seg_len == 1 && out[seg_start] == '.') {
                o = seg_start;
            } else if (seg_len == 2 && out[seg_start] == '.' && out[seg_start + 1] == '.') {
                if (seg_start == 0)
                    return -400; /* above the root */
                /* drop the previous segment: out is "a/b/" with seg_start after it */
                o = seg_start - 1;
                while (o > 0 && out[o - 1] != '/')
                    o--;
            } else if (!end) {
                if (o + 1 >= cap)
                    return -400;
                out[o++] = '/';
            }
            seg_start = o;
            if (end)
                break;
            continue;
        }
        if (o + 1 >= cap)
            return -400;
        out[o++] = (char)ch;
    }
    out[o] = 0;
    return 0;
}

bool site_path_hidden(const char *rel)
{
    static const char wk[] = ".well-known/";
    const char *p = rel;
    if (strcmp(p, ".well-known") == 0)
        return false;
    if (strncmp(p, wk, sizeof(wk) - 1) == 0)
        p += sizeof(wk) - 1;
    for (; *p; p++)
        if (*p == '.' && (p == rel || p[-1] == '/'))
            return true;
    return false;
}

static int open_beneath(int rootfd, const char *rel)
{
    static _Atomic int no_openat2;
    struct open_how how = {.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
    int fd;

    if (rel[0] == 0)
        rel = ".";
    if (!atomic_load_explicit(&no_openat2, memory_order_relaxed)) {
        fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
        if (fd >= 0 || errno != ENOSYS)
            return fd < 0 ? -errno : fd;
        atomic_store(&no_openat2, 1);
    }
    /* Old kernel: refuse every symlink on the way (stricter than needed). */
    {
        char buf[4096];
        int dfd;
        char *save, *tok;
        if (strlen(rel) >= sizeof(buf))
            return -ENAMETOOLONG; /* truncated, it could name another file */
        dfd = dup(rootfd);
        if (dfd < 0)
            return -errno;
        memcpy(buf, rel, strlen(rel) + 1);
        for (tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
            int nfd = openat(dfd, tok, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
            int e = errno;
            close(dfd);
            if (nfd < 0)
                return -e;
            dfd = nfd;
        }
        return dfd;
    }
}

/*
 * Open a file under the root within the site's descriptor budget: -EMFILE
 * when connections and files already use it up (the rest of the limit is
 * the daemon's reserve), so the caller answers 503 rather than starve the
 * store and the control socket.  Counted in s->nfiles until file_close().
 */
static int file_open(struct site_worker *w, const char *rel)
{
    struct site *s = w->s;
    int fd;
    if (atomic_load_explicit(&s->nconns, memory_order_relaxed) +
            atomic_load_explicit(&s->nfiles, memory_order_relaxed) >=
        s->fd_budget)
        return -EMFILE;
    fd = open_beneath(w->rootfd, rel);
    if (fd >= 0)
        atomic_fetch_add_explicit(&s->nfiles, 1, memory_order_relaxed);
    return fd;
}

static void file_close(struct site *s, int fd)
{
    close(fd);
    atomic_fetch_sub_explicit(&s->nfiles, 1, memory_order_relaxed);
}

int site_resp_unpark(struct site_worker *w, struct site_resp *rs)
{
    struct stat st;
    int fd;

    if (!rs->parked)
        return 0;
    fd = file_open(w, rs->file);
    if (fd < 0)
        return fd;
    /* The headers promised this file (ETag, length): refuse another one. */
    if (fstat(fd, &st) < 0 || st.st_dev != rs->dev || st.st_ino != rs->ino ||
        (uint64_t)st.st_size != rs->total || st.st_mtim.tv_sec != rs->mtim.tv_sec ||
        st.st_mtim.tv_nsec != rs->mtim.tv_nsec) {
        file_close(w->s, fd);
        return -ESTALE;
    }
    rs->fd = fd;
    rs->parked = false;
    return 0;
}

/* ---- validators --------------------------------------------------------- */

static const char wdays[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

int site_http_date(time_t t, char *buf, size_t cap)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    return snprintf(buf, cap, "%s, %02d %s %04d %02d:%02d:%02d GMT", wdays[tm.tm_wday], tm.tm_mday,
                    months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

bool site_http_date_parse(const char *p, size_t n, time_t *out)
{
    char buf[64], mon[4];
    struct tm tm = {0};
    int day, year, hh, mm, ss;

    if (n >= sizeof(buf))
        return false;
    memcpy(buf, p, n);
    buf[n] = 0;
    /* IMF-fixdate only (what every current client sends). */
    if (sscanf(buf, "%*3s, %2d %3s %4d %2d:%2d:%2d GMT", &day, mon, &year, &hh, &mm, &ss) != 6)
        return false;
    for (tm.tm_mon = 0; tm.tm_mon < 12; tm.tm_mon++)
        if (strcmp(mon, months[tm.tm_mon]) == 0)
            break;
    if (tm.tm_mon == 12)
        return false;
    tm.tm_mday = day;
    tm.tm_year = year - 1900;
    tm.tm_hour = hh;
    tm.tm_min = mm;
    tm.tm_sec = ss;
    *out = timegm(&tm);
    return *out != (time_t)-1;
}

/* If-None-Match: a list of entity tags or "*"; weak comparison (RFC 9110 13.1.2). */
/*
 * The ETag is a strong validator (If-Range compares it byte for byte), so it
 * must change whenever the content can have.  Seconds and size alone do not:
 * a deploy that rewrites a file twice within one second at the same size kept
 * the first tag, and a client holding the first version got 304 or a range
 * spliced from both.  The mtime's nanoseconds tell such writes apart.  A file
 * system without them (nsec 0) keeps the short form.
 */
int site_etag(const struct stat *st, char *buf, size_t cap)
{
    if (st->st_mtim.tv_nsec)
        return snprintf(buf, cap, "\"%llx.%lx-%llx\"", (unsigned long long)st->st_mtim.tv_sec,
                        (unsigned long)st->st_mtim.tv_nsec, (unsigned long long)st->st_size);
    return snprintf(buf, cap, "\"%llx-%llx\"", (unsigned long long)st->st_mtim.tv_sec,
                    (unsigned long long)st->st_size);
}

static bool etag_list_match(const char *p, size_t n, const char *etag, bool strong)
{
    size_t en = strlen(etag), i = 0;
    while (i < n) {
        size_t start;
        bool weak = false;
        while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == ','))
            i++;
        if (i >= n)
            break;
        if (p[i] == '*')
            return true;
        if (i + 1 < n && p[i] == 'W' && p[i + 1] == '/') {
            i += 2;
            weak = true;
        }
        start = i;
        if (i < n && p[i] == '"') {
            const char *q = memchr(p + i + 1, '"', n - i - 1);
            if (!q)
                return false;
            i = (size_t)(q - p) + 1;
        } else {
            while (i < n && p[i] != ',')
                i++;
        }
        if (i - start == en && memcmp(p + start, etag, en) == 0 && !(strong && weak))
            return true;
    }
    return false;
}

bool site_etag_match(const char *p, size_t n, const char *etag)
{
    return etag_list_match(p, n, etag, false);
}

bool site_etag_match_strong(const char *p, size_t n, const char *etag)
{
    return etag_list_match(p, n, etag, true);
}

bool site_inm_match(const struct site_req *rq, const char *etag)
{
    /* Lines past SITE_INM_LINES were not kept: the tag may be on one of
     * them, or not, and the file (200) is right either way. */
    if (rq->inm_over)
        return false;
    for (uint8_t i = 0; i < rq->ninm && i < SITE_INM_LINES; i++)
        if (site_etag_match(rq->inm[i].p, rq->inm[i].n, etag))
            return true;
    return false;
}

/* Range: one "bytes=" range.  0 ok (start/len set), -1 ignore the header
 * (unparsable or several ranges: a full 200 is a valid answer), -416. */
int site_range_parse(const char *p, size_t n, uint64_t size, uint64_t *start, uint64_t *len)
{
    uint64_t a = 0, b = 0;
    bool has_a = false, has_b = false;
    size_t i;

    if (n < 7 || strncasecmp(p, "bytes=", 6) != 0)
        return -1;
    i = 6;
    while (i < n && p[i] == ' ')
        i++;
    while (i < n && p[i] >= '0' && p[i] <= '9') {
        if (a > (UINT64_MAX - 9) / 10)
            return -1;
        a = a * 10 + (uint64_t)(p[i++] - '0');
        has_a = true;
    }
    if (i >= n || p[i] != '-')
        return -1;
    i++;
    while (i < n && p[i] >= '0' && p[i] <= '9') {
        if (b > (UINT64_MAX - 9) / 10)
            return -1;
        b = b * 10 + (uint64_t)(p[i++] - '0');
        has_b = true;
    }
    while (i < n && p[i] == ' ')
        i++;
    if (i != n || (!has_a && !has_b))
        return -1; /* several ranges or junk */
    if (!has_a) {  /* suffix: last b bytes */
        if (b == 0)
            return -416;
        if (b > size)
            b = size;
        if (size == 0)
            return -416;
        *start = size - b;
        *len = b;
        return 0;
    }
    if (has_b && b < a)
        return -1;
    if (a >= size)
        return -416;
    if (!has_b || b >= size)
        b = size - 1;
    *start = a;
    *len = b - a + 1;
    return 0;
}

/* ---- cache -------------------------------------------------------------- */

static uint32_t hash_path(const char *p, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

struct site_cache *site_cache_new(size_t max_bytes, size_t max_file)
{
    struct site_cache *c = site_xcalloc(1, sizeof(*c));
    c->nbuckets = 256;
    c->buckets = site_xcalloc(c->nbuckets, sizeof(*c->buckets));
    c->max_bytes = max_bytes;
    c->max_file = max_file;
    return c;
}

static void cache_unlink(struct site_cache *c, struct site_centry *e)
{
    struct site_centry **pp = &c->buckets[e->hash % c->nbuckets];
    while (*pp && *pp != e)
        pp = &(*pp)->hnext;
    if (*pp)
        *pp = e->hnext;
    if (e->lprev)
        e->lprev->lnext = e->lnext;
    else
        c->head = e->lnext;
    if (e->lnext)
        e->lnext->lprev = e->lprev;
    else
        c->tail = e->lprev;
    c->bytes -= e->size + e->path_len + sizeof(*e);
    if (e->missing) {
        c->nmissing--;
        c->missing_bytes -= e->path_len + sizeof(*e);
    }
    e->in_cache = false;
    centry_unref(e);
}

void site_cache_free(struct site_cache *c)
{
    if (!c)
        return;
    while (c->head)
        cache_unlink(c, c->head);
    free(c->buckets);
    free(c);
}

static struct site_centry *cache_find(struct site_cache *c, const char *path, size_t n, uint32_t h)
{
    for (struct site_centry *e = c->buckets[h % c->nbuckets]; e; e = e->hnext)
        if (e->hash == h && e->path_len == n && memcmp(e->path, path, n) == 0)
            return e;
    return NULL;
}

static void cache_touch(struct site_cache *c, struct site_centry *e)
{
    if (c->tail == e)
        return;
    if (e->lprev)
        e->lprev->lnext = e->lnext;
    else
        c->head = e->lnext;
    e->lnext->lprev = e->lprev;
    e->lprev = c->tail;
    e->lnext = NULL;
    c->tail->lnext = e;
    c->tail = e;
}

static void cache_insert(struct site_cache *c, struct site_centry *e)
{
    size_t cost = e->size + e->path_len + sizeof(*e);
    if (cost > c->max_bytes)
        return; /* never fits: evicting everything else would not make room */
    if (e->missing) {
        if (c->nmissing >= CACHE_MISSING_MAX || c->missing_bytes + cost > c->max_bytes / 16)
            return; /* not remembered: the next request looks again */
        c->nmissing++;
        c->missing_bytes += cost;
    }
    while (c->head && c->bytes + cost > c->max_bytes)
        cache_unlink(c, c->head);
    e->hnext = c->buckets[e->hash % c->nbuckets];
    c->buckets[e->hash % c->nbuckets] = e;
    e->lprev = c->tail;
    e->lnext = NULL;
    if (c->tail)
        c->tail->lnext = e;
    else
        c->head = e;
    c->tail = e;
    c->bytes += cost;
    e->refs++;
    e->in_cache = true;
}

static void fill_validators(struct site_centry *e, const struct stat *st)
{
    e->size = (size_t)st->st_size;
    e->dev = st->st_dev;
    e->ino = st->st_ino;
    e->mtim = st->st_mtim;
    e->ctim = st->st_ctim;
    site_etag(st, e->etag, sizeof(e->etag));
    site_http_date(st->st_mtime, e->lastmod, sizeof(e->lastmod));
}

static bool same_file(const struct site_centry *e, const struct stat *st)
{
    /* The ctime too: a file made unreadable (chmod 0600 to hide it) keeps
     * its mtime, and must be opened again to be refused. */
    return e->dev == st->st_dev && e->ino == st->st_ino && (off_t)e->size == st->st_size &&
           e->mtim.tv_sec == st->st_mtim.tv_sec && e->mtim.tv_nsec == st->st_mtim.tv_nsec &&
           e->ctim.tv_sec == st->st_ctim.tv_sec && e->ctim.tv_nsec == st->st_ctim.tv_nsec;
}

/*
 * Find @p rel: a fresh cache entry (a new reference, *fd = -1), or an open
 * regular file in *fd with its stat in *st (too big for the cache), or a
 * negative errno.  -EISDIR for a directory.
 */
static int lookup(struct site_worker *w, const char *rel, struct site_centry **out, int *fd,
                  struct stat *st)
{
    struct site_cache *c = w->cache;
    size_t n = strlen(rel);
    uint32_t h = hash_path(rel, n);
    struct site_centry *e = cache_find(c, rel, n, h);
    int f;

    *out = NULL;
    *fd = -1;
    if (w->rootfd < 0)
        return -ENOENT;
    if (e) {
        if (w->now_ms - e->checked_ms < CACHE_CHECK_MS) {
            cache_touch(c, e);
            if (e->missing)
                return -ENOENT;
            e->refs++;
            *out = e;
            return 0;
        }
        /* Stale: same inode, size, mtime and ctime means same content and
         * access (it was reached safely before); anything else is looked
         * up afresh. */
        if (fstatat(w->rootfd, rel[0] ? rel : ".", st, 0) == 0 ? !e->missing && same_file(e, st)
                                                               : e->missing) {
            e->checked_ms = w->now_ms;
            cache_touch(c, e);
            if (e->missing)
                return -ENOENT;
            e->refs++;
            *out = e;
            return 0;
        }
        cache_unlink(c, e);
    }
    f = file_open(w, rel);
    if (f < 0) {
        if (f == -ENOENT || f == -ENOTDIR) {
            /* Remember misses only for precompressed siblings, asked for
             * on every request. */
            size_t len = strlen(rel);
            if (is_sibling_name(rel, len)) {
                e = site_xcalloc(1, sizeof(*e));
                e->refs = 1;
                e->missing = true;
                e->path = site_xstrdup(rel);
                e->path_len = len;
                e->hash = h;
                e->checked_ms = w->now_ms;
                cache_insert(c, e);
                centry_unref(e);
            }
        }
        return f;
    }
    if (fstat(f, st) < 0) {
        int e2 = -errno;
        file_close(w->s, f);
        return e2;
    }
    if (S_ISDIR(st->st_mode)) {
        file_close(w->s, f);
        return -EISDIR;
    }
    if (!S_ISREG(st->st_mode)) {
        file_close(w->s, f);
        return -ENOENT;
    }
    /* Streamed from the file when the cache could never hold it (its share
     * of site.cache_size is smaller): a copy would be read per request. */
    if ((size_t)st->st_size > c->max_file || (size_t)st->st_size + n + sizeof(*e) > c->max_bytes) {
        *fd = f;
        return 0;
    }
    e = site_xcalloc(1, sizeof(*e));
    e->refs = 1;
    e->path = site_xstrdup(rel);
    e->path_len = n;
    e->hash = h;
    fill_validators(e, st);
    e->ctype = site_mime_type(rel);
    /* With SITE_CE_ROOM bytes before the data and one after (site.h). */
    e->data = (char *)site_xmalloc(SITE_CE_ROOM + e->size + 1) + SITE_CE_ROOM;
    for (size_t got = 0; got < e->size;) {
        ssize_t r = pread(f, e->data + got, e->size - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            file_close(w->s, f);
            centry_unref(e);
            return -EIO;
        }
        got += (size_t)r;
    }
    file_close(w->s, f);
    e->checked_ms = w->now_ms;
    cache_insert(c, e);
    *out = e;
    return 0;
}

static bool has_sibling(struct site_worker *w, const char *rel, enum site_encoding e,
                        struct site_centry **ce, int *fd, struct stat *st)
{
    char name[4200];
    size_t n = strlen(rel), sn = strlen(encodings[e].suffix);
    if (n + sn + 1 > sizeof(name))
        return false;
    memcpy(name, rel, n);
    memcpy(name + n, encodings[e].suffix, sn + 1);
    return lookup(w, name, ce, fd, st) == 0;
}

static void drop_file(struct site_worker *w, struct site_centry **ce, int *fd)
{
    if (*ce)
        centry_unref(*ce);
    if (*fd >= 0)
        file_close(w->s, *fd);
    *ce = NULL;
    *fd = -1;
}

/*
 * The precompressed sibling of @p rel to send ("x.br", "x.zst" or "x.gz"),
 * or -1 for the file itself; *vary when there is any sibling at all, since
 * the answer then depends on Accept-Encoding.  Among the siblings the
 * client accepts, the highest weight wins, then the smallest file (a
 * browser takes all three alike), then br, zstd, gzip.  A range request
 * gets the file itself (ranges of an encoding are rarely what a client
 * can resume).
 */
static int pick_sibling(struct site_worker *w, const struct site_req *rq, const char *rel,
                        struct site_centry **ce, int *fd, struct stat *st, bool *vary)
{
    int best = -1;
    uint64_t best_size = 0;
    for (int e = 0; e < SITE_ENC_N; e++) {
        struct site_centry *sce = NULL;
        int sfd = -1;
        struct stat sst;
        if (!has_sibling(w, rel, (enum site_encoding)e, &sce, &sfd, &sst))
            continue;
        *vary = true;
        uint64_t size = sce ? sce->size : (uint64_t)sst.st_size;
        uint16_t q = rq->accept_q[e];
        if (q == 0 || rq->range.n != 0 ||
            (best >= 0 &&
             (q < rq->accept_q[best] || (q == rq->accept_q[best] && size >= best_size)))) {
            drop_file(w, &sce, &sfd);
            continue;
        }
        drop_file(w, ce, fd);
        *ce = sce;
        *fd = sfd;
        *st = sst;
        best = e;
        best_size = size;
    }
    return best;
}

/* ---- serving -------------------------------------------------------------- */

/*
 * If-Match, else If-Unmodified-Since: steps 1 and 2 of RFC 9110 13.2.2,
 * before If-None-Match.  False means 412.  A download manager resumes with
 * "Range" and one of them: answered 206 from a file changed since, it would
 * splice two versions into one corrupt download; the 412 makes it start
 * over.  Several different If-Match lines are one list this parser does
 * not join (the lines lie apart in the input): 412, the answer that never
 * splices.  An If-Unmodified-Since that is no date, or two different ones,
 * is ignored (13.1.4).
 */
static bool preconditions_hold(const struct site_req *rq, const char *etag, time_t mtime)
{
    time_t d;
    if (rq->if_match.n)
        return !rq->im_conflict && site_etag_match_strong(rq->if_match.p, rq->if_match.n, etag);
    if (rq->ius.n && !rq->ius_conflict && site_http_date_parse(rq->ius.p, rq->ius.n, &d))
        return mtime <= d;
    return true;
}

/* Bytes a path segment may carry as they are (RFC 3986 pchar minus '%'). */
static bool pchar_plain(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           strchr("-._~!$&'()*+,;=:@/", ch) != NULL;
}

/*
 * 301 to the directory with a slash.  Location is built from the normalised
 * path, percent-encoded, never from the raw target: "//evil.example/..%2Fimg"
 * must not become a protocol-relative URL to another host, nor an
 * absolute-form target's host reach the header.  The normalised path has no
 * empty segment, so "/" + path never starts with "//" (and '\' is encoded).
 * The query is kept, with anything but visible ASCII encoded.
 */
static void redirect_dir(struct site_worker *w, struct site_resp *rs, const struct site_req *rq,
                         const char *rel)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *q = memchr(rq->target.p, '?', rq->target.n);
    size_t qn = q ? rq->target.n - (size_t)(q - rq->target.p) : 0;
    size_t cap = 3 * (strlen(rel) + qn) + 4, n = 0;
    char *loc = site_xmalloc(cap);

    loc[n++] = '/';
    for (const unsigned char *p = (const unsigned char *)rel; *p; p++) {
        if (pchar_plain(*p)) {
            loc[n++] = (char)*p;
        } else {
            loc[n++] = '%';
            loc[n++] = hex[*p >> 4];
            loc[n++] = hex[*p & 15];
        }
    }
    loc[n++] = '/';
    for (size_t i = 0; i < qn; i++) {
        unsigned char ch = (unsigned char)q[i];
        if (ch > 0x20 && ch < 0x7f && ch != '#') {
            loc[n++] = (char)ch;
        } else {
            loc[n++] = '%';
            loc[n++] = hex[ch >> 4];
            loc[n++] = hex[ch & 15];
        }
    }
    site_resp_error(rs, 301);
    if (site_resp_add_header(rs, "Location", loc, n) < 0) {
        /* Never a 301 without Location: refuse, and say why. */
        site_resp_error(rs, 414);
        site_warn(w, "site: directory redirect for a %zu-byte target does not fit; 414", n);
    }
    free(loc);
}

/*
 * A Last-Modified date is a strong validator only when it is at least a
 * second before the answer's Date (RFC 9110 8.8.2.2): a file written within
 * that second (or dated ahead of the clock) can be written again under the
 * same date, and If-Range with such a date must not splice a range of the
 * new content onto the old (RFC 9110 13.1.5: the whole file is sent).  The
 * worker's date_sec is the Date this answer carries, never ahead of the
 * clock, so no later write can take the date once it is past.
 */
static bool date_is_strong(const struct site_worker *w, time_t mtime)
{
    return mtime < w->date_sec;
}

void site_files_serve(struct site_worker *w, const struct site_req *rq, struct site_resp *rs)
{
    char rel[4200];
    struct site_centry *ce = NULL, *gce = NULL;
    int fd = -1, gfd = -1, r, enc;
    struct stat st, gst;
    size_t n;
    bool index;
    uint64_t size;
    time_t mtime;
    const char *etag;
    char etag_buf[48];

    site_resp_init(rs);
    site_root_follow(w);
    if (rq->method == SITE_M_OTHER) {
        site_resp_error(rs, 405);
        site_resp_add_header(rs, "Allow", "GET, HEAD", 9);
        return;
    }
    /* Only the path names a file: a long query string (tracking parameters
     * on a shared link) is no reason to refuse, as long as the request line
     * fits site.max_request_line. */
    size_t path_n = 0;
    while (path_n < rq->target.n && rq->target.p[path_n] != '?' && rq->target.p[path_n] != '#')
        path_n++;
    if (path_n > sizeof(rel) - 16) {
        site_resp_error(rs, 414);
        return;
    }
    if (site_path_normalize(rq->target.p, rq->target.n, rel, sizeof(rel) - 16) < 0) {
        site_resp_error(rs, 400);
        return;
    }
    /* A checkout as root must not hand out .git/ or .env. */
    if (!atomic_load_explicit(&w->s->cfg.dotfiles_allow, memory_order_relaxed) &&
        site_path_hidden(rel)) {
        site_resp_error(rs, 404);
        return;
    }
    n = strlen(rel);
    index = n == 0 || rel[n - 1] == '/';
    if (index)
        memcpy(rel + n, "index.html", 11);
    r = lookup(w, rel, &ce, &fd, &st);
    if (r == -EISDIR && index) {
        /* A directory named index.html: redirecting would loop. */
        site_resp_error(rs, 500);
        site_warn(w, "site: /%s is a directory, not an index file; 500", rel);
        return;
    }
    if (r == -EISDIR) {
        redirect_dir(w, rs, rq, rel);
        return;
    }
    if (r == -EMFILE || r == -ENFILE) {
        /* Out of descriptors is not "not found": tell the client to retry. */
        site_resp_error(rs, 503);
        site_resp_add_header(rs, "Retry-After", "1", 1);
        return;
    }
    if (r < 0) {
        site_resp_error(rs, r == -EACCES || r == -EPERM ? 403
                            : r == -EIO                 ? 500
                            : r == -ENAMETOOLONG        ? 414
                                                        : 404);
        return;
    }
    /* A precompressed sibling, when the client takes its coding. */
    enc = pick_sibling(w, rq, rel, &gce, &gfd, &gst, &rs->vary);
    if (enc >= 0) {
        rs->enc = (uint8_t)(enc + 1);
        rs->ctype = ce ? ce->ctype : site_mime_type(rel);
        drop_file(w, &ce, &fd);
        ce = gce;
        fd = gfd;
        st = gst;
    }
    if (ce) {
        size = ce->size;
        mtime = ce->mtim.tv_sec;
        etag = ce->etag;
        if (!rs->enc)
            rs->ctype = ce->ctype;
        rs->ce = ce;
        rs->mem = ce->data;
        memcpy(rs->lastmod, ce->lastmod, sizeof(rs->lastmod));
    } else {
        size = (uint64_t)st.st_size;
        mtime = st.st_mtime;
        site_etag(&st, etag_buf, sizeof(etag_buf));
        etag = etag_buf;
        const char *suffix = rs->enc ? encodings[rs->enc - 1].suffix : "";
        if (!rs->enc)
            rs->ctype = site_mime_type(rel);
        rs->fd = fd;
        rs->nfiles = &w->s->nfiles;
        rs->file = site_xmalloc(strlen(rel) + strlen(suffix) + 1);
        snprintf(rs->file, strlen(rel) + strlen(suffix) + 1, "%s%s", rel, suffix);
        rs->dev = st.st_dev;
        rs->ino = st.st_ino;
        rs->mtim = st.st_mtim;
        site_http_date(mtime, rs->lastmod, sizeof(rs->lastmod));
    }
    rs->status = 200;
    rs->has_validators = true;
    memcpy(rs->etag, etag, strlen(etag) + 1);
    rs->mtime = mtime;
    rs->total = size;
    rs->off = 0;
    rs->len = size;

    if (!preconditions_hold(rq, etag, mtime)) {
        site_resp_error(rs, 412);
        return;
    }
    /* If-None-Match, when sent, decides alone (RFC 9110 13.2.2). */
    bool has_inm = rq->ninm > 0 || rq->inm_over;
    if (has_inm && site_inm_match(rq, rs->etag)) {
        rs->status = 304;
        rs->len = 0;
        return;
    }
    /*
     * Only the exact Last-Modified (seconds) is a 304, as nginx's default
     * (if_modified_since exact); browsers send back the date they were
     * given.  "Not modified since" (mtime <= date) failed a file put back
     * to an older version (a backup restored, cp -p, an old checkout): a
     * client holding the newer copy sent its later date and kept that copy
     * for ever.  It failed a date ahead of our clock too (a client's clock,
     * or a copy fetched before a Pi without RTC set its clock back), which
     * an exact match never equals unless the file has that very mtime.
     */
    if (!has_inm && rq->ims.n && !rq->ims_conflict) {
        time_t ims;
        if (site_http_date_parse(rq->ims.p, rq->ims.n, &ims) && ims == mtime) {
            rs->status = 304;
            rs->len = 0;
            return;
        }
    }
    if (rq->range.n && rq->method == SITE_M_GET) {
        uint64_t start, len;
        bool range_ok = true;
        if (rq->if_range.n) {
            time_t d;
            if (rq->if_range.p[0] == '"')
                range_ok = rq->if_range.n == strlen(rs->etag) &&
                           memcmp(rq->if_range.p, rs->etag, rq->if_range.n) == 0;
            else
                range_ok = site_http_date_parse(rq->if_range.p, rq->if_range.n, &d) && d == mtime &&
                           date_is_strong(w, mtime);
        }
        if (range_ok) {
            r = site_range_parse(rq->range.p, rq->range.n, size, &start, &len);
            if (r == -416) {
                char cr[40];
                int crn = snprintf(cr, sizeof(cr), "bytes */%llu", (unsigned long long)size);
                site_resp_error(rs, 416);
                site_resp_add_header(rs, "Content-Range", cr, (size_t)crn);
                return;
            }
            if (r == 0) {
                char cr[80];
                int crn =
                    snprintf(cr, sizeof(cr), "bytes %llu-%llu/%llu", (unsigned long long)start,
                             (unsigned long long)(start + len - 1), (unsigned long long)size);
                rs->status = 206;
                rs->range = true;
                rs->off = start;
                rs->len = len;
                site_resp_add_header(rs, "Content-Range", cr, (size_t)crn);
            }
        }
    }
}
