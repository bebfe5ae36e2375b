/* Run options from JSON (API body): checked against the limits, the target
 * resolved, the GnuTLS priority string built.  Nothing here does I/O beyond
 * reading settings, a numeric address lookup and listing this host's
 * addresses. */
#ifndef TLSBOX_BENCH_OPTS_H
#define TLSBOX_BENCH_OPTS_H

#include <stdbool.h>

#include <jansson.h>

#include "plugins/bench/bench_gen.h"

/* The bounds a run must stay within (settings bench.max_*). */
struct bench_limits {
    long max_requests;
    long max_duration_ms;
    int max_concurrency;
    int max_streams;
    bool allow_public; /* targets outside loopback and private networks */
};

/* Where the box's own site listens and what it takes: what the running site
 * enforces (GET site/limits, bench_local.c), or the stored site.* settings
 * when it cannot say. */
struct bench_local {
    int https_port, http_port; /* as served; 0 = off / no site */
    char addr[64];             /* where a local run connects: bench_local_addr */
    int max_conns_per_ip;      /* site.max_connections_per_ip; 0 = unknown */
    int max_conns;             /* connections it takes in all; 0 = unknown */
    bool in_effect;            /* the fields above are the running site's */
    /* No site plugin answers (GET site/limits has no route): nothing of the
     * box serves the local site, whatever site.* stores. */
    bool no_site;
    /* With in_effect: site.max_connections as the site started with it (it
     * reads it at start only), as stored, and the connections the open file
     * limit leaves room for; 0 = unknown. */
    int max_conns_setting, max_conns_stored, max_conns_files;
};

/*
 * Fill @p o from the JSON object @p j.  On refusal returns -EINVAL and sets
 * *err to a message naming the field, the value and the rule (caller frees).
 */
int bench_opts_parse(json_t *j, const struct bench_limits *lim, const struct bench_local *local,
                     struct bench_opts *o, char **err);

/* The options as JSON (stored with a run, shown by `bench show`). */
json_t *bench_opts_json(const struct bench_opts *o);

/* Build o->priority from tls_version, key_type, cipher, group. */
int bench_opts_priority(struct bench_opts *o, char **err);

/* Where a run on the local site connects, from site.bind @p bind (the list
 * as stored): IPv4 loopback when the site listens there (0.0.0.0 or a
 * 127.x address, that one), else IPv6 loopback (:: or ::1), else the first
 * address it is bound to (192.168.1.10: only there does it answer).  Into
 * @p out (@p cap bytes).  Pure; any thread. */
void bench_local_addr(const char *bind, char *out, size_t cap);

#endif
