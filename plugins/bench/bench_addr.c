/*
 * The class of a target address, from two tables of ranges (first match
 * wins).  IPv6 ranges that carry an IPv4 address (IPv4-mapped, NAT64, 6to4)
 * are classed as cautiously as the IPv4 address inside, and never less than
 * public when the packets leave this host through a translator or relay:
 * ::ffff:169.254.169.254 is the metadata service too.  bench looks no names
 * up (bench_opts.c), so a target is one address, and this is its check.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "plugins/bench/bench_addr.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct addr_range {
    uint8_t prefix[16];
    unsigned bits;
    enum bench_addr_kind kind;
    const char *why;
};

static const struct addr_range v4_ranges[] = {
    {{0}, 8, BENCH_ADDR_UNUSABLE, "0.0.0.0/8, \"this network\": not a destination"},
    {{127}, 8, BENCH_ADDR_LOOPBACK, "127.0.0.0/8, loopback"},
    {{10}, 8, BENCH_ADDR_PRIVATE, "10.0.0.0/8, private network"},
    {{172, 16}, 12, BENCH_ADDR_PRIVATE, "172.16.0.0/12, private network"},
    {{192, 168}, 16, BENCH_ADDR_PRIVATE, "192.168.0.0/16, private network"},
    {{169, 254}, 16, BENCH_ADDR_LINK_LOCAL, "169.254.0.0/16, link-local"},
    {{100, 64},
     10,
     BENCH_ADDR_PUBLIC,
     "100.64.0.0/10, shared address space of carrier-grade NAT, not a private network"},
    {{224}, 4, BENCH_ADDR_UNUSABLE, "224.0.0.0/4, multicast"},
    {{240}, 4, BENCH_ADDR_UNUSABLE, "240.0.0.0/4, reserved and broadcast"},
};

/* How an IPv6 range carries an IPv4 address (RFC 6052 positions). */
enum v4_inside {
    V4_NONE,
    V4_MAPPED, /* ::ffff:a.b.c.d: this host's own IPv4 stack */
    V4_AT_96,  /* 64:ff9b::/96 NAT64: bytes 12-15 */
    V4_AT_16,  /* 2002::/16 6to4: bytes 2-5 */
};

static const struct {
    struct addr_range r;
    enum v4_inside v4;
} v6_ranges[] = {
    {{{0}, 128, BENCH_ADDR_UNUSABLE, "::/128, unspecified"}, V4_NONE},
    {{{[15] = 1}, 128, BENCH_ADDR_LOOPBACK, "::1/128, loopback"}, V4_NONE},
    {{{[10] = 0xff, [11] = 0xff}, 96, BENCH_ADDR_LOOPBACK, "::ffff:0:0/96 (IPv4-mapped)"},
     V4_MAPPED},
    {{{0, 0x64, 0xff, 0x9b}, 96, BENCH_ADDR_PUBLIC, "64:ff9b::/96 (NAT64)"}, V4_AT_96},
    /* Its translator may put the IPv4 address at any RFC 6052 position, and
     * the zeros around one read as 0.x.x.x at the others: not checkable. */
    {{{0, 0x64, 0xff, 0x9b, 0, 1},
      48,
      BENCH_ADDR_UNUSABLE,
      "64:ff9b:1::/48, local-use NAT64: the IPv4 address behind it cannot be checked (give "
      "that address)"},
     V4_NONE},
    {{{0x20, 0x02}, 16, BENCH_ADDR_PUBLIC, "2002::/16 (6to4)"}, V4_AT_16},
    {{{0xfe, 0x80}, 10, BENCH_ADDR_LINK_LOCAL, "fe80::/10, link-local"}, V4_NONE},
    {{{0xfc}, 7, BENCH_ADDR_PRIVATE, "fc00::/7, unique local (private network)"}, V4_NONE},
    {{{0xff}, 8, BENCH_ADDR_UNUSABLE, "ff00::/8, multicast"}, V4_NONE},
};

static bool prefix_match(const uint8_t *a, const uint8_t *prefix, unsigned bits)
{
    unsigned whole = bits / 8, rest = bits % 8;
    if (memcmp(a, prefix, whole) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[whole] & mask) == (prefix[whole] & mask);
}

static const struct addr_range *v4_range(const uint8_t a[4])
{
    for (size_t i = 0; i < sizeof(v4_ranges) / sizeof(v4_ranges[0]); i++)
        if (prefix_match(a, v4_ranges[i].prefix, v4_ranges[i].bits))
            return &v4_ranges[i];
    return NULL; /* public */
}

/* Class @p out as the IPv4 address @p a4 inside the range @p outer, and
 * no less cautiously than @p floor. */
static void classify_inside(const uint8_t a4[4], enum bench_addr_kind floor, const char *outer,
                            struct bench_addr_class *out)
{
    const struct addr_range *r = v4_range(a4);
    enum bench_addr_kind k = r ? r->kind : BENCH_ADDR_PUBLIC;
    out->kind = k < floor ? floor : k;
    snprintf(out->why, sizeof(out->why), "%s holding %s", outer, r ? r->why : "a public address");
}

static void classify_v6(const uint8_t a6[16], struct bench_addr_class *out)
{
    for (size_t i = 0; i < sizeof(v6_ranges) / sizeof(v6_ranges[0]); i++) {
        const struct addr_range *r = &v6_ranges[i].r;
        if (!prefix_match(a6, r->prefix, r->bits))
            continue;
        switch (v6_ranges[i].v4) {
        case V4_NONE:
            out->kind = r->kind;
            snprintf(out->why, sizeof(out->why), "%s", r->why);
            return;
        case V4_MAPPED:
            classify_inside(a6 + 12, BENCH_ADDR_LOOPBACK, r->why, out);
            return;
        case V4_AT_96:
            classify_inside(a6 + 12, r->kind, r->why, out);
            return;
        case V4_AT_16:
            classify_inside(a6 + 2, r->kind, r->why, out);
            return;
        }
    }
    out->kind = BENCH_ADDR_PUBLIC;
}

void bench_addr_classify(const struct sockaddr *sa, struct bench_addr_class *out)
{
    out->kind = BENCH_ADDR_UNUSABLE;
    snprintf(out->why, sizeof(out->why), "not an IPv4 or IPv6 address");
    if (sa->sa_family == AF_INET) {
        const uint8_t *a =
            (const uint8_t *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
        const struct addr_range *r = v4_range(a);
        out->kind = r ? r->kind : BENCH_ADDR_PUBLIC;
        snprintf(out->why, sizeof(out->why), "%s", r ? r->why : "");
    } else if (sa->sa_family == AF_INET6) {
        out->why[0] = '\0';
        classify_v6(((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr, out);
    }
}
