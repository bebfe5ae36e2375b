/*
 * Which targets bench may load: the class of a target address (loopback,
 * private network, public, link-local, not a unicast destination), with
 * the range it falls in for messages.  Pure: no I/O.
 */
#ifndef TLSBOX_BENCH_ADDR_H
#define TLSBOX_BENCH_ADDR_H

#include <sys/socket.h>

/* In rising order of caution: a class's rule is that of the most cautious
 * address it reaches (an IPv4-mapped or NAT64 address, that of the IPv4
 * address inside). */
enum bench_addr_kind {
    BENCH_ADDR_LOOPBACK,   /* 127.0.0.0/8, ::1: always allowed */
    BENCH_ADDR_PRIVATE,    /* RFC 1918, fc00::/7: always allowed */
    BENCH_ADDR_PUBLIC,     /* the rest: needs bench.allow_public_targets */
    BENCH_ADDR_LINK_LOCAL, /* 169.254.0.0/16, fe80::/10: never (cloud metadata lives there) */
    BENCH_ADDR_UNUSABLE,   /* unspecified, 0.0.0.0/8, multicast, 240.0.0.0/4: never */
    BENCH_ADDR_KIND_MAX
};

struct bench_addr_class {
    enum bench_addr_kind kind;
    /* The range and what it is, e.g. "169.254.0.0/16, link-local", or
     * "::ffff:0:0/96 (IPv4-mapped) holding 169.254.0.0/16, link-local";
     * "" for an ordinary public address. */
    char why[128];
};

/* Classify the AF_INET or AF_INET6 address @p sa (other families: unusable). */
void bench_addr_classify(const struct sockaddr *sa, struct bench_addr_class *out);

#endif
