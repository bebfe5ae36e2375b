/* QR Code encoder: byte mode, level M, versions 1-40 (see qr_encode.h).
 *
 * The steps follow ISO/IEC 18004 in order: data bits (mode, count, bytes,
 * terminator, pad codewords), Reed-Solomon error correction per block over
 * GF(256) with polynomial 0x11D, blocks interleaved, function patterns
 * drawn, codewords placed in the two-column zig-zag, then each of the 8
 * masks scored by the 4 penalty rules and the lowest kept.  Coordinates
 * are (x = column, y = row) throughout. */
#include "core/qr_encode.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/gnutls.h>

/* Level M, indexed by version: error correction codewords per block, and
 * the number of blocks (ISO/IEC 18004 table 9). */
static const int8_t ecc_per_block[41] = {-1, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22,
                                         24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28,
                                         28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28};
static const int8_t num_blocks[41] = {-1, 1,  1,  1,  2,  2,  4,  4,  4,  5,  5,  5,  8,  9,
                                      9,  10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25,
                                      26, 28, 29, 31, 33, 35, 37, 38, 40, 43, 45, 47, 49};

/* Modules left for codewords once the function patterns are drawn. */
static int raw_modules(int v)
{
    int r = (16 * v + 128) * v + 64;
    if (v >= 2) {
        int na = v / 7 + 2;
        r -= (25 * na - 10) * na - 55; /* alignment patterns, less timing overlap */
        if (v >= 7)
            r -= 36; /* the two version blocks */
    }
    return r;
}

static int data_codewords(int v)
{
    return raw_modules(v) / 8 - ecc_per_block[v] * num_blocks[v];
}

/* ---- Reed-Solomon over GF(256) -------------------------------------------- */

static uint8_t gf_mul(uint8_t x, uint8_t y)
{
    unsigned z = 0;
    for (int i = 7; i >= 0; i--) {
        z = (z << 1) ^ ((z >> 7) * 0x11Du);
        z ^= ((y >> i) & 1u) * x;
    }
    return (uint8_t)z;
}

/* Generator polynomial of degree @p d (roots 2^0..2^(d-1)), leading 1 left out. */
static void rs_divisor(int d, uint8_t *g)
{
    uint8_t root = 1;
    memset(g, 0, (size_t)d);
    g[d - 1] = 1;
    for (int i = 0; i < d; i++) {
        for (int j = 0; j < d; j++) {
            g[j] = gf_mul(g[j], root);
            if (j + 1 < d)
                g[j] ^= g[j + 1];
        }
        root = gf_mul(root, 0x02);
    }
}

static void rs_remainder(const uint8_t *data, int len, const uint8_t *g, int d, uint8_t *out)
{
    memset(out, 0, (size_t)d);
    for (int i = 0; i < len; i++) {
        uint8_t f = data[i] ^ out[0];
        memmove(out, out + 1, (size_t)d - 1);
        out[d - 1] = 0;
        for (int j = 0; j < d; j++)
            out[j] ^= gf_mul(g[j], f);
    }
}

/* ---- codewords ------------------------------------------------------------ */

static void put_bits(uint8_t *buf, size_t *n, unsigned val, int nbits)
{
    for (int i = nbits - 1; i >= 0; i--, (*n)++)
        if ((val >> i) & 1u)
            buf[*n >> 3] |= (uint8_t)(0x80u >> (*n & 7));
}

/* Whether @p data has bytes above ASCII: then an ECI header says UTF-8,
 * else decoders guess (zbar reads such bytes as Shift JIS). */
static bool needs_eci(const uint8_t *data, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (data[i] >= 0x80)
            return true;
    return false;
}

/* Bits taken by the headers: [ECI 0111 + designator 26 (UTF-8)], byte mode
 * 0100, the count (8 bits below version 10, else 16). */
static size_t header_bits(int v, bool eci)
{
    return (eci ? 12 : 0) + 4 + (v < 10 ? 8 : 16);
}

/* Data codewords of version @p v for @p data, into @p cw (data_codewords(v)
 * bytes, zeroed). */
static void data_bits(int v, const uint8_t *data, size_t len, uint8_t *cw)
{
    size_t cap = (size_t)data_codewords(v) * 8, n = 0;
    if (needs_eci(data, len)) {
        put_bits(cw, &n, 0x7, 4);
        put_bits(cw, &n, 26, 8); /* ECI 000026: UTF-8 */
    }
    put_bits(cw, &n, 0x4, 4); /* byte mode */
    put_bits(cw, &n, (unsigned)len, v < 10 ? 8 : 16);
    for (size_t i = 0; i < len; i++)
        put_bits(cw, &n, data[i], 8);
    n += cap - n < 4 ? cap - n : 4; /* terminator: zero bits */
    n = (n + 7) & ~(size_t)7;
    for (uint8_t pad = 0xEC; n < cap; pad ^= 0xEC ^ 0x11)
        put_bits(cw, &n, pad, 8);
}

/* Split the data codewords into blocks, add each block's error correction,
 * interleave: @p out gets raw_modules(v) / 8 bytes.  -ENOMEM or 0. */
static int interleave(int v, const uint8_t *data, uint8_t *out)
{
    int nb = num_blocks[v], ecl = ecc_per_block[v], raw = raw_modules(v) / 8;
    int nshort = nb - raw % nb, shortlen = raw / nb, stride = shortlen + 1;
    uint8_t g[30];
    uint8_t *blocks = calloc((size_t)nb, (size_t)stride);
    if (!blocks)
        return -ENOMEM;
    rs_divisor(ecl, g);
    for (int i = 0, k = 0; i < nb; i++) {
        /* Short blocks have one data codeword fewer; their hole (at index
         * dl) is skipped when interleaving, so ECC lines up in every block. */
        int dl = shortlen - ecl + (i < nshort ? 0 : 1);
        uint8_t *blk = blocks + (size_t)i * (size_t)stride;
        memcpy(blk, data + k, (size_t)dl);
        rs_remainder(data + k, dl, g, ecl, blk + stride - ecl);
        k += dl;
    }
    for (int i = 0, o = 0; i < stride; i++)
        for (int j = 0; j < nb; j++)
            if (i != shortlen - ecl || j >= nshort)
                out[o++] = blocks[(size_t)j * (size_t)stride + (size_t)i];
    free(blocks);
    return 0;
}

/* ---- the matrix ----------------------------------------------------------- */

struct grid {
    int size;
    uint8_t *dark, *func;
};

static void set_func(struct grid *q, int x, int y, int dark)
{
    q->dark[y * q->size + x] = (uint8_t)(dark != 0);
    q->func[y * q->size + x] = 1;
}

static int iabs(int a)
{
    return a < 0 ? -a : a;
}

static int imax(int a, int b)
{
    return a > b ? a : b;
}

static void draw_finder(struct grid *q, int cx, int cy)
{
    for (int dy = -4; dy <= 4; dy++)
        for (int dx = -4; dx <= 4; dx++) {
            int d = imax(iabs(dx), iabs(dy)), x = cx + dx, y = cy + dy;
            if (x >= 0 && x < q->size && y >= 0 && y < q->size)
                set_func(q, x, y, d != 2 && d != 4);
        }
}

static void draw_alignment(struct grid *q, int cx, int cy)
{
    for (int dy = -2; dy <= 2; dy++)
        for (int dx = -2; dx <= 2; dx++)
            set_func(q, cx + dx, cy + dy, imax(iabs(dx), iabs(dy)) != 1);
}

/* Level M (bits 00) and @p mask: 15 bits with BCH(15,5), XOR 0x5412, in
 * both copies; the dark module beside the lower-left finder. */
static void draw_format(struct grid *q, int mask)
{
    int data = (0 << 3) | mask, rem = data, s = q->size;
    for (int i = 0; i < 10; i++)
        rem = (rem << 1) ^ ((rem >> 9) * 0x537);
    int bits = ((data << 10) | rem) ^ 0x5412;
#define BIT(i) ((bits >> (i)) & 1)
    for (int i = 0; i <= 5; i++)
        set_func(q, 8, i, BIT(i));
    set_func(q, 8, 7, BIT(6));
    set_func(q, 8, 8, BIT(7));
    set_func(q, 7, 8, BIT(8));
    for (int i = 9; i < 15; i++)
        set_func(q, 14 - i, 8, BIT(i));
    for (int i = 0; i < 8; i++)
        set_func(q, s - 1 - i, 8, BIT(i));
    for (int i = 8; i < 15; i++)
        set_func(q, 8, s - 15 + i, BIT(i));
#undef BIT
    set_func(q, 8, s - 8, 1);
}

/* Versions 7 and up: 18 bits with BCH(18,6), in the two 6x3 blocks. */
static void draw_version(struct grid *q, int v)
{
    if (v < 7)
        return;
    long rem = v;
    for (int i = 0; i < 12; i++)
        rem = (rem << 1) ^ ((rem >> 11) * 0x1F25);
    long bits = ((long)v << 12) | rem;
    for (int i = 0; i < 18; i++) {
        int bit = (int)((bits >> i) & 1), a = q->size - 11 + i % 3, b = i / 3;
        set_func(q, a, b, bit);
        set_func(q, b, a, bit);
    }
}

static void draw_functions(struct grid *q, int v)
{
    int s = q->size;
    for (int i = 0; i < s; i++) {
        set_func(q, 6, i, i % 2 == 0);
        set_func(q, i, 6, i % 2 == 0);
    }
    draw_finder(q, 3, 3);
    draw_finder(q, s - 4, 3);
    draw_finder(q, 3, s - 4);
    if (v >= 2) {
        int na = v / 7 + 2, pos[7];
        int step = (v * 8 + na * 3 + 5) / (na * 4 - 4) * 2;
        pos[0] = 6;
        for (int i = na - 1, p = s - 7; i >= 1; i--, p -= step)
            pos[i] = p;
        for (int i = 0; i < na; i++)
            for (int j = 0; j < na; j++)
                if (!((i == 0 && j == 0) || (i == 0 && j == na - 1) || (i == na - 1 && j == 0)))
                    draw_alignment(q, pos[i], pos[j]);
    }
    draw_format(q, 0); /* reserves the areas; redrawn with the chosen mask */
    draw_version(q, v);
}

static void place_codewords(struct grid *q, const uint8_t *cw, size_t n)
{
    size_t i = 0;
    int s = q->size;
    for (int right = s - 1; right >= 1; right -= 2) {
        if (right == 6)
            right = 5; /* skip the vertical timing column */
        for (int vert = 0; vert < s; vert++)
            for (int j = 0; j < 2; j++) {
                int x = right - j, up = ((right + 1) & 2) == 0;
                int y = up ? s - 1 - vert : vert;
                if (!q->func[y * s + x] && i < n * 8) {
                    q->dark[y * s + x] = (cw[i >> 3] >> (7 - (i & 7))) & 1;
                    i++;
                }
            }
    }
}

static void apply_mask(struct grid *q, int m)
{
    for (int y = 0; y < q->size; y++)
        for (int x = 0; x < q->size; x++) {
            int inv;
            switch (m) {
            case 0:
                inv = (x + y) % 2 == 0;
                break;
            case 1:
                inv = y % 2 == 0;
                break;
            case 2:
                inv = x % 3 == 0;
                break;
            case 3:
                inv = (x + y) % 3 == 0;
                break;
            case 4:
                inv = (x / 3 + y / 2) % 2 == 0;
                break;
            case 5:
                inv = x * y % 2 + x * y % 3 == 0;
                break;
            case 6:
                inv = (x * y % 2 + x * y % 3) % 2 == 0;
                break;
            default:
                inv = ((x + y) % 2 + x * y % 3) % 2 == 0;
                break;
            }
            if (!q->func[y * q->size + x] && inv)
                q->dark[y * q->size + x] ^= 1;
        }
}

/* Module (i, k) along a line: row @p line when !@p col, else column. */
static int at(const struct grid *q, int col, int line, int k)
{
    return col ? q->dark[k * q->size + line] : q->dark[line * q->size + k];
}

/* The four penalty rules of ISO/IEC 18004 7.8.3 (N1 = 3, N2 = 3, N3 = 40,
 * N4 = 10); lower scans better. */
static long penalty(const struct grid *q)
{
    static const uint8_t finder_a[11] = {1, 0, 1, 1, 1, 0, 1, 0, 0, 0, 0};
    static const uint8_t finder_b[11] = {0, 0, 0, 0, 1, 0, 1, 1, 1, 0, 1};
    int s = q->size;
    long p = 0, dark = 0;
    for (int col = 0; col < 2; col++)
        for (int line = 0; line < s; line++) {
            int run = 1;
            for (int k = 1; k <= s; k++) {
                if (k < s && at(q, col, line, k) == at(q, col, line, k - 1)) {
                    run++;
                    continue;
                }
                if (run >= 5)
                    p += 3 + (run - 5);
                run = 1;
            }
            for (int k = 0; k + 11 <= s; k++) {
                int a = 1, b = 1;
                for (int t = 0; t < 11; t++) {
                    a &= at(q, col, line, k + t) == finder_a[t];
                    b &= at(q, col, line, k + t) == finder_b[t];
                }
                p += 40 * (a + b);
            }
        }
    for (int y = 0; y < s; y++)
        for (int x = 0; x < s; x++) {
            int c = q->dark[y * s + x];
            dark += c;
            if (x + 1 < s && y + 1 < s && c == q->dark[y * s + x + 1] &&
                c == q->dark[(y + 1) * s + x] && c == q->dark[(y + 1) * s + x + 1])
                p += 3;
        }
    long total = (long)s * s, pct = dark * 100 / total;
    p += 10 * (labs(pct - 50) / 5);
    return p;
}

int qr_encode(const void *data, size_t len, struct qr_code *out)
{
    int v;
    memset(out, 0, sizeof *out);
    if (len > QR_MAX_BYTES)
        return -EMSGSIZE;
    bool eci = needs_eci(data, len);
    for (v = 1; v <= 40; v++)
        if (header_bits(v, eci) + 8 * len <= (size_t)data_codewords(v) * 8)
            break;
    if (v > 40)
        return -EMSGSIZE;

    int s = 17 + 4 * v, rc = -ENOMEM;
    size_t ncw = (size_t)raw_modules(v) / 8;
    uint8_t *dw = calloc((size_t)data_codewords(v), 1), *cw = calloc(ncw, 1);
    struct grid q = {s, calloc((size_t)s * s, 1), calloc((size_t)s * s, 1)};
    uint8_t *best = malloc((size_t)s * s);
    if (!dw || !cw || !q.dark || !q.func || !best)
        goto out;
    data_bits(v, data, len, dw);
    if (interleave(v, dw, cw) < 0)
        goto out;
    draw_functions(&q, v);
    place_codewords(&q, cw, ncw);

    long best_p = -1;
    int best_m = 0;
    for (int m = 0; m < 8; m++) {
        apply_mask(&q, m);
        draw_format(&q, m);
        long p = penalty(&q);
        if (best_p < 0 || p < best_p) {
            best_p = p;
            best_m = m;
            memcpy(best, q.dark, (size_t)s * s);
        }
        apply_mask(&q, m); /* XOR again: undone */
    }
    out->version = v;
    out->size = s;
    out->mask = best_m;
    out->modules = best;
    best = NULL;
    rc = 0;
out:
    /* Every buffer held the data: wipe before free (gnutls_memset is not
     * optimised away). */
    if (dw)
        gnutls_memset(dw, 0, (size_t)data_codewords(v));
    if (cw)
        gnutls_memset(cw, 0, ncw);
    if (q.dark)
        gnutls_memset(q.dark, 0, (size_t)s * s);
    if (best)
        gnutls_memset(best, 0, (size_t)s * s);
    free(dw);
    free(cw);
    free(q.dark);
    free(q.func);
    free(best);
    return rc;
}

bool qr_dark(const struct qr_code *qr, int x, int y)
{
    if (!qr->modules || x < 0 || y < 0 || x >= qr->size || y >= qr->size)
        return false;
    return qr->modules[y * qr->size + x] != 0;
}

char *qr_svg_path(const struct qr_code *qr)
{
    /* Worst case: a run per two modules, each "M99 99h1v1h-1z" <= 20 chars. */
    size_t cap = (size_t)qr->size * (size_t)qr->size * 10 + 1, n = 0;
    char *p = malloc(cap);
    if (!p)
        return NULL;
    p[0] = '\0';
    for (int y = 0; y < qr->size; y++)
        for (int x = 0; x < qr->size;) {
            if (!qr_dark(qr, x, y)) {
                x++;
                continue;
            }
            int run = 0;
            while (qr_dark(qr, x + run, y))
                run++;
            n += (size_t)snprintf(p + n, cap - n, "M%d %dh%dv1h-%dz", x, y, run, run);
            x += run;
        }
    return p;
}

void qr_free(struct qr_code *qr)
{
    if (qr->modules)
        gnutls_memset(qr->modules, 0, (size_t)qr->size * (size_t)qr->size);
    free(qr->modules);
    memset(qr, 0, sizeof *qr);
}
