/*
 * The memory nghttp2 sessions get (site_h2.c hands nghttp2 this allocator):
 * big blocks mmap()ed so that pages nobody touches cost nothing, HPACK
 * indexes carved lazily, and freed big blocks kept for the next session.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <nghttp2/nghttp2.h>

#include "site.h"

/* Whether @p n bytes at @p p (a multiple of 8, page-aligned) are all zero. */
static bool all_zero(const void *p, size_t n)
{
    const uint64_t *w = p;
    for (size_t i = 0; i < n / 8; i++)
        if (w[i])
            return false;
    return true;
}

/*
 * nghttp2 allocates a 16 KB frame buffer and a 4 KB zeroed stream table per
 * session and keeps them for the session's life, though an idle connection
 * only writes the first few hundred bytes of the one and nothing of the
 * other.  On a heap whose pages were dirtied by earlier handshakes all of it
 * would be resident; mmap()ed, only the touched pages are.  So that a block
 * nobody writes stays untouched, its length is not kept in a header inside
 * it but in a table by address (h2_big): the stream table of an idle session
 * then costs no resident page at all.  Small blocks keep a 16-byte header.
 */
#define H2_MMAP_MIN 4096
#define H2_HDR 16

/* Open-addressed table (linear probing) of the mmap()ed blocks and their
 * lengths; a few per session, so under one lock taken only for blocks of
 * 4 KB or more (session setup and teardown, not per frame). */
struct h2_big {
    uintptr_t addr; /* 0: free slot */
    size_t len;
};
static struct h2_big *h2_bigs;
static size_t h2_big_cap, h2_big_n; /* cap: a power of two */
static pthread_mutex_t h2_big_lock = PTHREAD_MUTEX_INITIALIZER;

static size_t h2_big_slot(uintptr_t a)
{
    return (size_t)((a >> 12) * 0x9E3779B97F4A7C15ull) & (h2_big_cap - 1);
}

static void h2_big_put_locked(uintptr_t a, size_t len)
{
    size_t i = h2_big_slot(a);
    while (h2_bigs[i].addr)
        i = (i + 1) & (h2_big_cap - 1);
    h2_bigs[i].addr = a;
    h2_bigs[i].len = len;
}

/* Record @p a; returns -1 when the table cannot grow. */
static int h2_big_add(uintptr_t a, size_t len)
{
    int rc = 0;
    pthread_mutex_lock(&h2_big_lock);
    if ((h2_big_n + 1) * 2 > h2_big_cap) {
        struct h2_big *old = h2_bigs;
        size_t ocap = h2_big_cap, ncap = ocap ? ocap * 2 : 256;
        struct h2_big *nb = calloc(ncap, sizeof(*nb));
        if (!nb) {
            rc = -1;
            goto out;
        }
        h2_bigs = nb;
        h2_big_cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (old[i].addr)
                h2_big_put_locked(old[i].addr, old[i].len);
        free(old);
    }
    h2_big_put_locked(a, len);
    h2_big_n++;
out:
    pthread_mutex_unlock(&h2_big_lock);
    return rc;
}

/* Length of the mmap()ed block at @p a (removed from the table when @p del),
 * or 0 when @p a is not one. */
static size_t h2_big_find(uintptr_t a, bool del)
{
    size_t len = 0;
    pthread_mutex_lock(&h2_big_lock);
    if (h2_big_cap) {
        size_t i = h2_big_slot(a);
        while (h2_bigs[i].addr && h2_bigs[i].addr != a)
            i = (i + 1) & (h2_big_cap - 1);
        len = h2_bigs[i].addr ? h2_bigs[i].len : 0;
        if (len && del) {
            /* Backward-shift deletion keeps every probe chain unbroken. */
            size_t j = i;
            h2_bigs[i].addr = 0;
            h2_big_n--;
            for (;;) {
                j = (j + 1) & (h2_big_cap - 1);
                if (!h2_bigs[j].addr)
                    break;
                size_t home = h2_big_slot(h2_bigs[j].addr);
                /* Move j into the hole at i unless its home lies in (i, j]. */
                if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
                    continue;
                h2_bigs[i] = h2_bigs[j];
                h2_bigs[j].addr = 0;
                i = j;
            }
        }
    }
    pthread_mutex_unlock(&h2_big_lock);
    return len;
}

/* The one block of a frame's size or more that nghttp2 allocates while it
 * makes a session is its outbound frame buffer (aob.framebufs, kept for the
 * session's life, holding nothing between frames): remember it so that
 * site_h2_release can give its pages back while the connection is idle. */
#define H2_FBUF_MIN 16384

/*
 * Freed page-aligned blocks are kept for the next session instead of going
 * back with munmap(): in a process whose threads ran on several CPUs every
 * munmap() interrupts the others to flush their TLBs, and a fresh mapping
 * faults in each page on first touch.  perf on a worker during h2 handshakes
 * (h2load -c 1000 -n 1000) put 14% of its CPU in munmap() and 5% in page
 * faults; with the pool, 2% and 3%.  A pool per block size.  Same lock as
 * the table: a few times per session.
 *
 * A burst's memory decays rather than going at once (as jemalloc's decay
 * does): every 10 s a worker's tick (site_h2_mem_trim) unmaps half of the
 * blocks that stayed in a pool throughout (its low-water mark), all of them
 * once that is H2_POOL_DRAIN or fewer, and when the pools are empty it asks
 * glibc for the heap the burst's TLS state used.  After 1000 h2 handshakes
 * that is about 70 s for 30 MB.  Going at once cost the next burst 10 s later
 * 90 us per handshake (357 against 273 warm): 50 in fresh mappings and page
 * faults, 45 in glibc growing its heap again.
 */
/* Two 4 KB blocks per session (the lazy page and the stream table) share
 * one pool: 4096 holds a 2000-connection burst.  With 1024, a burst of 1000
 * h2 handshakes unmapped and mapped again about 800 blocks each time (with a
 * TLB-flush interrupt each).  The array is untouched memory until used. */
#define H2_POOL_MAX 4096
#define H2_POOL_SIZES 4
#define H2_POOL_TRIM_MS 10000
#define H2_POOL_DRAIN 64

struct h2_pool {
    size_t len; /* 0: unused */
    int n, low; /* blocks in v; fewest since the last trim */
    void *v[H2_POOL_MAX];
};
static struct h2_pool h2_pools[H2_POOL_SIZES];
static uint64_t h2_pool_trim_ms; /* the last trim, by a worker's clock */

/* A block of @p len bytes; *@p used tells whether it comes from the pool
 * (holding what its last session left) rather than fresh from mmap(). */
static void *h2_pages_get(size_t len, bool *used)
{
    void *p = NULL;
    pthread_mutex_lock(&h2_big_lock);
    for (int i = 0; i < H2_POOL_SIZES; i++) {
        struct h2_pool *pl = &h2_pools[i];
        if (pl->len == len && pl->n) {
            p = pl->v[--pl->n];
            if (pl->n < pl->low)
                pl->low = pl->n;
            break;
        }
    }
    pthread_mutex_unlock(&h2_big_lock);
    *used = p != NULL;
    if (p)
        return p;
    p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void h2_pages_put(void *p, size_t len)
{
    struct h2_pool *pl = NULL;
    pthread_mutex_lock(&h2_big_lock);
    for (int i = 0; i < H2_POOL_SIZES; i++) {
        if (h2_pools[i].len == len) {
            pl = &h2_pools[i];
            break;
        }
        if (!h2_pools[i].len && !pl)
            pl = &h2_pools[i];
    }
    if (pl && pl->n < H2_POOL_MAX) {
        pl->len = len;
        pl->v[pl->n++] = p;
        p = NULL;
    }
    pthread_mutex_unlock(&h2_big_lock);
    if (p)
        munmap(p, len);
}

size_t site_h2_mem_pooled(void)
{
    size_t n = 0;
    pthread_mutex_lock(&h2_big_lock);
    for (int i = 0; i < H2_POOL_SIZES; i++)
        n += (size_t)h2_pools[i].n;
    pthread_mutex_unlock(&h2_big_lock);
    return n;
}

void site_h2_mem_trim(uint64_t now_ms)
{
    void **out = NULL;
    size_t nout = 0, left = 0, lens[H2_POOL_SIZES] = {0};
    int go[H2_POOL_SIZES] = {0}; /* blocks to unmap, per pool */

    pthread_mutex_lock(&h2_big_lock);
    if (now_ms >= h2_pool_trim_ms + H2_POOL_TRIM_MS) {
        size_t total = 0;
        h2_pool_trim_ms = now_ms;
        for (int i = 0; i < H2_POOL_SIZES; i++) {
            int low = h2_pools[i].low;
            go[i] = low <= H2_POOL_DRAIN ? low : (low + 1) / 2;
            total += (size_t)go[i];
        }
        out = total ? malloc(total * sizeof(*out)) : NULL;
        for (int i = 0; out && i < H2_POOL_SIZES; i++) {
            struct h2_pool *pl = &h2_pools[i];
            /* The bottom of the stack: the blocks used least recently. */
            memcpy(out + nout, pl->v, (size_t)go[i] * sizeof(*out));
            memmove(pl->v, pl->v + go[i], (size_t)(pl->n - go[i]) * sizeof(*out));
            lens[i] = pl->len;
            nout += (size_t)go[i];
            pl->n -= go[i];
        }
        for (int i = 0; i < H2_POOL_SIZES; i++) {
            h2_pools[i].low = h2_pools[i].n;
            left += (size_t)h2_pools[i].n;
        }
    }
    pthread_mutex_unlock(&h2_big_lock);
    for (size_t i = 0, k = 0; out && i < H2_POOL_SIZES; i++)
        for (int j = 0; j < go[i]; j++)
            munmap(out[k++], lens[i]);
    free(out);
    /* The burst is over and its blocks are gone: the heap the sessions' TLS
     * and HTTP/2 state used is free but still resident; glibc gives such
     * pages back only when asked. */
    if (nout && !left)
        malloc_trim(0);
}

/*
 * The HPACK deflater's and inflater's table indexes (128 pointers each: 1 KB,
 * or 512 bytes on 32-bit) are malloc()ed while the session is made and not
 * written until a header is indexed: a connection that sent its preface but
 * no request yet (browsers open them ahead) would still pay them in dirtied
 * heap.  So blocks of that size that nghttp2 malloc()s, not calloc()s (the
 * session itself is calloc()ed and written at once), while it makes the
 * session are carved from one mmap()ed page of the connection's own instead:
 * resident only once written.  The page goes when its last block is freed.
 */
#define H2_LAZY_MIN 256
#define H2_LAZY_PAGE 4096

static void *h2_lazy_carve(struct site_conn *c, size_t n)
{
    size_t need = (n + 15) & ~(size_t)15;
    bool used; /* either way: malloc()'s blocks need not be zero */
    char *p;
    if (!c->h2_lazy) {
        p = h2_pages_get(H2_LAZY_PAGE, &used);
        if (!p)
            return NULL;
        c->h2_lazy = p;
        c->h2_lazy_off = 0;
        c->h2_lazy_n = 0;
    }
    if (c->h2_lazy_off + need > H2_LAZY_PAGE)
        return NULL;
    p = (char *)c->h2_lazy + c->h2_lazy_off;
    c->h2_lazy_off += (uint16_t)need;
    c->h2_lazy_n++;
    return p;
}

/* Bytes from @p ptr to the end of the connection's lazy page, or 0 when
 * @p ptr is not in it. */
static size_t h2_lazy_room(const struct site_conn *c, const void *ptr)
{
    uintptr_t off = (uintptr_t)ptr - (uintptr_t)c->h2_lazy;
    return c->h2_lazy && off < H2_LAZY_PAGE ? H2_LAZY_PAGE - off : 0;
}

static void *h2_alloc(size_t n, void *ud, bool zeroed)
{
    struct site_conn *c = ud;
    bool used;
    char *p;
    if (!zeroed && c && c->h2_making && n >= H2_LAZY_MIN && n < H2_MMAP_MIN &&
        (p = h2_lazy_carve(c, n)) != NULL)
        return p;
    if (n >= H2_MMAP_MIN) {
        size_t len = (n + 4095) & ~(size_t)4095;
        p = h2_pages_get(len, &used);
        if (!p)
            return NULL;
        if (h2_big_add((uintptr_t)p, len) < 0) {
            h2_pages_put(p, len);
            return NULL;
        }
        /* Only where a page is not zero already does writing zeros make it
         * resident. */
        if (zeroed && used && !all_zero(p, len))
            memset(p, 0, len);
        if (c && c->h2_making && !zeroed && !c->h2_fbuf && n >= H2_FBUF_MIN) {
            c->h2_fbuf = p;
            c->h2_fbuf_len = (uint32_t)len;
        }
        if (c && c->h2_making && zeroed && !c->h2_table) {
            c->h2_table = p;
            c->h2_table_len = (uint32_t)len;
        }
        return p;
    }
    p = malloc(n + H2_HDR);
    if (!p)
        return NULL;
    ((size_t *)p)[0] = n;
    if (zeroed)
        memset(p + H2_HDR, 0, n); /* mmap()ed memory is already zero */
    return p + H2_HDR;
}

void *site_h2_mem_malloc(size_t n, void *ud)
{
    return h2_alloc(n, ud, false);
}

/* A malloc()ed block's pointer is 16 bytes past malloc's and so never
 * page-aligned... except when malloc's happens to end 16 bytes before a page
 * boundary: the table, not the alignment, is what decides. */
void site_h2_mem_free(void *ptr, void *ud)
{
    struct site_conn *c = ud;
    size_t len;
    if (!ptr)
        return;
    if (c && ptr == c->h2_fbuf)
        c->h2_fbuf = NULL;
    if (c && ptr == c->h2_table)
        c->h2_table = NULL;
    if (c && h2_lazy_room(c, ptr)) {
        if (--c->h2_lazy_n == 0) {
            h2_pages_put(c->h2_lazy, H2_LAZY_PAGE);
            c->h2_lazy = NULL;
        }
        return;
    }
    if (((uintptr_t)ptr & 4095) == 0 && (len = h2_big_find((uintptr_t)ptr, true)) != 0)
        h2_pages_put(ptr, len);
    else
        free((char *)ptr - H2_HDR);
}

void *site_h2_mem_calloc(size_t nmemb, size_t size, void *ud)
{
    if (size && nmemb > SIZE_MAX / size)
        return NULL;
    return h2_alloc(nmemb * size, ud, true);
}

void *site_h2_mem_realloc(void *ptr, size_t n, void *ud)
{
    void *np;
    size_t old;
    if (!ptr)
        return site_h2_mem_malloc(n, ud);
    /* A lazy block's length is not kept: copying to the end of its page
     * copies it and stays inside the mapping. */
    old = ud ? h2_lazy_room(ud, ptr) : 0;
    if (old == 0) {
        if (((uintptr_t)ptr & 4095) == 0 && (old = h2_big_find((uintptr_t)ptr, false)) != 0) {
            if (n <= old)
                return ptr;
        } else {
            old = ((size_t *)((char *)ptr - H2_HDR))[0];
        }
    }
    np = site_h2_mem_malloc(n, ud);
    if (!np)
        return NULL;
    memcpy(np, ptr, old < n ? old : n);
    site_h2_mem_free(ptr, ud);
    return np;
}

/*
 * Nothing is being sent (no stream, nghttp2 wants to write nothing, so no
 * frame sits in its buffer): the frame buffer's pages go back to the kernel
 * and come back zeroed when the next frame is written.  So does the stream
 * table's page while it holds only zeros (no stream, open or kept closed):
 * nghttp2 reads it for every frame it queues (a lookup of stream 0), and a
 * kernel without a shared zero page (some VMs) backs even a read with a page
 * of its own.  Giving back a page of zeros changes nothing for nghttp2, which
 * needs no knowledge of the table's layout.  For a connection idle a while
 * only (site_worker.c's sweep), so keep-alive traffic pays no fault.
 */
void site_h2_release(struct site_conn *c)
{
    if (!c->h2 || c->h2_fbuf_idle || c->h2_streams || nghttp2_session_want_write(c->h2))
        return;
    if (c->h2_fbuf && madvise(c->h2_fbuf, c->h2_fbuf_len, MADV_DONTNEED) != 0)
        return;
    if (c->h2_table && all_zero(c->h2_table, c->h2_table_len))
        madvise(c->h2_table, c->h2_table_len, MADV_DONTNEED);
    c->h2_fbuf_idle = true;
}
