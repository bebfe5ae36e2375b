/* libFuzzer target: the site plugin's HTTP/2 server side (site_h2.c) with
 * its real nghttp2 callbacks and serve() answering from a small document
 * root.  The input is what a client sends after TLS: the preface, then
 * frames.  It is fed as site_conn.c's conn_read does (site_h2_on_data) to
 * two connections, in reads as large as a fast client's and frame by frame
 * (see run), and the output is drained as site_conn_flush's plaintext path
 * does (site_h2_produce until nothing comes), without TLS and without
 * epoll: the connection is plain (c->tls false), so site_conn_seal_cached
 * copies.  Invariants, not only "no crash":
 * - the heap kept for headers (c->h2_kept) never exceeds the connection's
 *   budget, 4 x max_header_size (site_h2.c stream_keep), checked after
 *   every read, so also before each frame's last byte;
 * - the output is well-formed frames: 9-byte headers, a SETTINGS first,
 *   lengths within the frame size and as each type needs, no partial frame
 *   left when the session ends;
 * - a CONTINUATION flood ends with a GOAWAY ENHANCE_YOUR_CALM (0xb), a
 *   drain (the daemon stopping, after the input) with a GOAWAY NO_ERROR;
 * - after the session ends nothing is left: no kept header bytes, no file
 *   open (c->files, s->nfiles), no stream waiting; a stream not freed is a
 *   leak LeakSanitizer reports at the end of the input. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugins/site/site.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HEADER 1024  /* small, so that both header budgets are reachable */
#define MTIME 1700000000 /* the files' mtime: seeds name their ETag and date */

static struct site S;
static struct site_worker W;

static void host_log(struct tlsbox_plugin *self, enum tlsbox_log_level level, const char *fmt, ...)
{
    (void)self;
    (void)level;
    (void)fmt;
}

static struct tlsbox_host host = {.log = host_log};

/* An invariant does not hold: say which before the crash libFuzzer
 * (or the replay under make check) reports. */
static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("site_h2_fuzz: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

static void put(const char *dir, const char *name, size_t n, char fill)
{
    char p[512], *buf = malloc(n ? n : 1);
    struct timespec ts[2] = {{MTIME, 0}, {MTIME, 0}};
    int fd;
    snprintf(p, sizeof(p), "%s/%s", dir, name);
    fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || !buf)
        fail("setup: %s: %s", p, strerror(errno));
    memset(buf, fill, n);
    if (write(fd, buf, n) != (ssize_t)n || futimens(fd, ts) != 0)
        fail("setup: %s: %s", p, strerror(errno));
    close(fd);
    free(buf);
}

static char root[] = "/tmp/tlsbox-h2fuzz.XXXXXX";

static void cleanup(void)
{
    const char *names[] = {"index.html", "small.txt", "small.txt.gz", "big.bin", "d/index.html"};
    char p[512];
    site_cache_free(W.cache);
    if (W.rootfd >= 0)
        close(W.rootfd);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(p, sizeof(p), "%s/%s", root, names[i]);
        unlink(p);
    }
    snprintf(p, sizeof(p), "%s/d", root);
    rmdir(p);
    rmdir(root);
}

/* Once: a root with a cached page (12 bytes: ETag "6553f100-c"), a small
 * file with a .gz sibling, a file above the cache's limit (read from its
 * descriptor, 40000 bytes: several DATA frames, flow control) and a
 * directory (redirect). */
static void setup(void)
{
    char p[512];
    if (!mkdtemp(root))
        fail("setup: mkdtemp %s: %s", root, strerror(errno));
    snprintf(p, sizeof(p), "%s/d", root);
    if (mkdir(p, 0755) != 0)
        fail("setup: %s: %s", p, strerror(errno));
    put(root, "index.html", 12, 'i');
    put(root, "small.txt", 100, 's');
    put(root, "small.txt.gz", 30, 'z');
    put(root, "big.bin", 40000, 'b');
    put(root, "d/index.html", 5, 'd');
    S.host = &host;
    S.cfg.max_header_size = MAX_HEADER;
    S.cfg.max_request_line = 512;
    S.cfg.h2_max_streams = 16;
    S.cfg.h2_window = 65535;
    S.rootfd = -1;
    /* SITE_H2_FUZZ_LOG=1: the access log on stderr, to see what each
     * input asked and got (a seed's statuses). */
    S.cfg.access_log = getenv("SITE_H2_FUZZ_LOG") != NULL;
    S.fd_budget = 1000;
    W.s = &S;
    W.rootfd = open(root, O_RDONLY | O_DIRECTORY);
    if (W.rootfd < 0)
        fail("setup: %s: %s", root, strerror(errno));
    W.now_ms = 1000000;
    site_worker_update_date(&W, MTIME + 3600);
    atexit(cleanup);
}

/* ---- the output, read as a client would ------------------------------------ */

struct out_check {
    uint8_t hd[9];
    size_t hd_n;     /* bytes of the current frame header read */
    size_t left;     /* payload bytes of the current frame still to come */
    size_t frames;   /* frames seen */
    uint32_t goaway; /* error code of the last GOAWAY, or UINT32_MAX */
    uint8_t pay[8];  /* a GOAWAY's first 8 payload bytes */
    size_t pay_n;
    uint8_t type;
};

static void frame_header(struct out_check *o)
{
    size_t len = (size_t)o->hd[0] << 16 | (size_t)o->hd[1] << 8 | o->hd[2];
    uint8_t type = o->hd[3], flags = o->hd[4];
    bool bad = false;
    uint32_t sid =
        (uint32_t)o->hd[5] << 24 | (uint32_t)o->hd[6] << 16 | (uint32_t)o->hd[7] << 8 | o->hd[8];
    if (sid & 0x80000000u)
        fail("output frame %zu: the stream id's reserved bit is set", o->frames);
    if (len > 16384)
        fail("output frame %zu: %zu bytes, above SETTINGS_MAX_FRAME_SIZE's default", o->frames,
             len);
    if (o->frames == 0 && (type != 4 || flags != 0))
        fail("the first output frame is type %u, not SETTINGS (RFC 9113 3.4)", type);
    switch (type) {
    case 0: /* DATA, HEADERS, RST_STREAM, CONTINUATION: on a stream */
    case 1:
    case 9:
        if (sid == 0)
            bad = true;
        break;
    case 3:
        if (sid == 0 || len != 4)
            bad = true;
        break;
    case 4: /* SETTINGS, PING, GOAWAY: on the connection */
        if (sid != 0 || len % 6 != 0 || ((flags & 1) && len != 0))
            bad = true;
        break;
    case 6:
        if (sid != 0 || len != 8)
            bad = true;
        break;
    case 7:
        if (sid != 0 || len < 8)
            bad = true;
        break;
    case 8: /* WINDOW_UPDATE, either */
        if (len != 4)
            bad = true;
        break;
    default:
        bad = true; /* PRIORITY, PUSH_PROMISE or unknown: the server sends none */
    }
    if (bad)
        fail("output frame %zu: type %u, flags 0x%x, stream %u, %zu bytes is not valid h2",
             o->frames, type, flags, sid, len);
    o->type = type;
    o->left = len;
    o->pay_n = 0;
    o->frames++;
}

static void out_read(struct out_check *o, const uint8_t *p, size_t n)
{
    while (n) {
        if (o->hd_n < 9) {
            o->hd[o->hd_n++] = *p++;
            n--;
            if (o->hd_n == 9) {
                frame_header(o);
                if (o->left == 0)
                    o->hd_n = 0;
            }
            continue;
        }
        size_t k = n < o->left ? n : o->left;
        for (size_t i = 0; o->type == 7 && i < k && o->pay_n < 8; i++)
            o->pay[o->pay_n++] = p[i];
        if (o->type == 7 && o->pay_n == 8)
            o->goaway = (uint32_t)o->pay[4] << 24 | (uint32_t)o->pay[5] << 16 |
                        (uint32_t)o->pay[6] << 8 | o->pay[7];
        p += k;
        n -= k;
        o->left -= k;
        if (o->left == 0)
            o->hd_n = 0;
    }
}

/* ---- the connection ----------------------------------------------------------- */

static uint32_t kept_peak;

static void check_kept(const struct site_conn *c)
{
    if (c->h2_kept > kept_peak)
        kept_peak = c->h2_kept;
    if (c->h2_kept > 4u * MAX_HEADER)
        fail("%u bytes kept for headers, past the connection's budget of %u", c->h2_kept,
             4u * MAX_HEADER);
}

/* As site_conn_flush on a plain connection: take what the protocol has
 * until it has nothing more.  false when the connection would close. */
static bool flush(struct site_conn *c, struct out_check *o)
{
    for (;;) {
        c->out_off = c->out_len = 0;
        if (c->want_close)
            break;
        int r = site_h2_produce(c);
        if (c->out_len > c->out_off)
            out_read(o, (const uint8_t *)c->out + c->out_off, c->out_len - c->out_off);
        if (r < 0)
            return false;
        if (c->out_len == 0)
            break;
    }
    c->out_off = c->out_len = 0;
    site_out_release_if_empty(c);
    if (c->want_close || (site_h2_idle(c) && c->h2_goaway) || site_h2_finished(c))
        return false;
    return true;
}

/* One read from the client: site_h2_on_data, then the output (flush). */
static bool feed(struct site_conn *c, struct out_check *o, const uint8_t *p, size_t n)
{
    if (!n)
        return true;
    if (site_h2_on_data(c, (const char *)p, n) < 0)
        c->want_close = true; /* as conn_read: send what is buffered, then close */
    check_kept(c);
    return flush(c, o);
}

/* One connection reading @p data: in reads of up to SITE_INBUF bytes as a
 * fast client's arrive (several streams' HEADERS in one read, answered
 * together), or, with @p per_frame, the preface and then each frame as two
 * reads: all but its last byte, then that byte, so that the kept headers
 * are seen before the frame's end answers the stream and gives them back. */
static void run(const uint8_t *data, size_t size, bool per_frame)
{
    struct site_conn c;
    struct out_check o = {.goaway = UINT32_MAX};
    size_t off = 0;
    bool open = true;

    memset(&c, 0, sizeof(c));
    c.w = &W;
    c.fd = -1;
    c.state = SITE_CS_H2;
    kept_peak = 0;
    /* A fresh cache: an input behaves the same whatever ran before it. */
    site_cache_free(W.cache);
    W.cache = site_cache_new(1 << 16, 1024);

    if (!per_frame) {
        while (open && off < size) {
            size_t n = size - off < SITE_INBUF ? size - off : SITE_INBUF;
            open = feed(&c, &o, data + off, n);
            off += n;
        }
    } else if (size) {
        size_t n = size < 24 ? size : 24;
        open = feed(&c, &o, data, n);
        off = n;
    }
    while (open && off < size) {
        size_t len = 9, rest = size - off;
        if (rest >= 9)
            len += (size_t)data[off] << 16 | (size_t)data[off + 1] << 8 | data[off + 2];
        if (len > rest)
            len = rest;
        open = feed(&c, &o, data + off, len - 1) && feed(&c, &o, data + off + len - 1, 1);
        off += len;
    }
    /* The daemon stops with the connection still open (site_conn_drain):
     * a GOAWAY, then what the open streams still have to send. */
    if (open && c.h2) {
        site_h2_goaway(&c);
        (void)flush(&c, &o);
        if (o.goaway != 0 && !c.linger)
            fail("a drain sent no GOAWAY NO_ERROR (last GOAWAY code %ld)",
                 o.goaway == UINT32_MAX ? -1L : (long)o.goaway);
    }
    /* Past a CONTINUATION flood the client read why (site_h2_on_data). */
    if (c.linger && o.goaway != 11)
        fail("a CONTINUATION flood ended the session without GOAWAY ENHANCE_YOUR_CALM (last "
             "GOAWAY code %ld)",
             o.goaway == UINT32_MAX ? -1L : (long)o.goaway);
    if (S.cfg.access_log)
        fprintf(stderr, "site_h2_fuzz: %zu frames out, last GOAWAY %ld, kept headers at most %u\n",
                o.frames, o.goaway == UINT32_MAX ? -1L : (long)o.goaway, kept_peak);
    /* The client went (or the connection closed): as site_conn_close. */
    if (c.h2)
        site_h2_free(&c);
    if (o.hd_n != 0)
        fail("the output stopped inside a frame (%zu header bytes, %zu payload bytes to come)",
             o.hd_n, o.left);
    if (c.h2_kept != 0 || c.files != 0 || c.h2_waiting != 0 || c.h2_streams != NULL ||
        atomic_load(&S.nfiles) != 0)
        fail("after the session: kept %u, files %d, waiting %d, streams %s, site files %d",
             c.h2_kept, c.files, c.h2_waiting, c.h2_streams ? "left" : "none",
             atomic_load(&S.nfiles));
    c.out_off = c.out_len;
    site_out_release_if_empty(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool ready;

    if (!ready) {
        setup();
        ready = true;
    }
    run(data, size, false);
    run(data, size, true);
    return 0;
}
