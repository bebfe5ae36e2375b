/* libFuzzer target: the bench plugin's client side reading a server's
 * answers (bench_h1.c: status line, headers, Content-Length bodies, 1xx;
 * bench_h2.c: frames through nghttp2 and its callbacks).  A benchmark may be
 * pointed at any server, so what comes back is untrusted.
 *
 * Input: a byte of flags (scenario, h2 streams), a byte that sizes the reads,
 * then the server's bytes after TLS.  The transport (bench_conn.c) is
 * replaced here: reads hand out the input, writes are dropped; the load
 * generator's bookkeeping (bench_gen.c) is the real one.
 * Invariants: the connection ends (no loop without reading), no more answers
 * than requests, no more body than bytes read, nothing left in flight. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/bench/bench_conn.h"
#include "plugins/bench/bench_stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *in;
static size_t in_len, in_off, read_size, reads_left;

/* Between reads of a wake, -EAGAIN every few reads: the loop comes back. */
long bench_conn_recv(struct bench_conn *c, char *buf, size_t cap)
{
    (void)c;
    if (in_off == in_len)
        return 0; /* the server closed */
    if (reads_left-- == 0) {
        reads_left = 3;
        return -EAGAIN;
    }
    size_t n = in_len - in_off;
    if (n > read_size)
        n = read_size;
    if (n > cap)
        n = cap;
    memcpy(buf, in + in_off, n);
    in_off += n;
    return (long)n;
}

void bench_conn_queue(struct bench_conn *c, const void *d, size_t len)
{
    (void)c, (void)d, (void)len;
}

int bench_conn_flush(struct bench_conn *c)
{
    (void)c;
    return 0;
}

/* bench_gen.c's loop is not run: these are never called. */
int bench_conn_open(struct bench_conn *c)
{
    (void)c;
    abort();
}
void bench_conn_close(struct bench_conn *c)
{
    (void)c;
    abort();
}
void bench_conn_on_event(struct bench_conn *c, uint32_t events)
{
    (void)c, (void)events;
    abort();
}
void bench_conn_fail(struct bench_conn *c)
{
    (void)c;
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    static const enum bench_scenario sc[] = {BENCH_SC_HTTP, BENCH_SC_H1, BENCH_SC_H2,
                                             BENCH_SC_HTTPS_NEW};
    struct bench_opts o = {
        .scenario = sc[data[0] & 3],
        .concurrency = 1,
        .requests = 8,
        .max_requests = 64,
        .streams = 1 + ((data[0] >> 2) & 7),
    };
    strcpy(o.authority, "bench.test");
    strcpy(o.path, "/");
    struct bench_stats st;
    bench_stats_init(&st, 1000);
    struct bench_gen g = {.o = &o, .st = &st};
    struct bench_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return 0;
    c->g = &g;
    c->fd = -1;
    in = data + 2;
    in_len = size - 2;
    in_off = 0;
    read_size = 1 + data[1] * (data[1] & 0x80 ? 64 : 1);
    reads_left = 3;

    bool h2 = o.scenario == BENCH_SC_H2;
    int r = h2 ? bench_h2_begin(c) : bench_h1_begin(c);
    /* Each call reads, or the input is used up and the next one ends it. */
    for (size_t calls = 0; r == 0; calls++) {
        if (calls > in_len + 4)
            abort(); /* going on without reading: a hang in the daemon */
        r = h2 ? bench_h2_on_read(c) : bench_h1_on_read(c);
    }
    if (h2) {
        if (c->h2_inflight < 0 || c->h2_inflight > o.streams)
            abort();
        bench_h2_end(c);
        if (c->h2_inflight != 0)
            abort();
    }
    if (st.complete > g.issued || st.complete + st.failed > g.issued || st.body > in_len)
        abort();
    free(c->streams);
    free(c);
    bench_stats_free(&st);
    return 0;
}
