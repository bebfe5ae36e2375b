/*
 * Result statistics of one run, in the terms ab and h2load use: complete and
 * failed requests, requests per second, transfer rate, connect time, time to
 * first byte, latency percentiles, handshakes full and resumed, and what TLS
 * negotiated.  Filled by one thread (the generator's); read after the run.
 */
#ifndef TLSBOX_BENCH_STATS_H
#define TLSBOX_BENCH_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* The percentiles ab prints under "Percentage of the requests served within". */
#define BENCH_NPCT 9
extern const int bench_percentiles[BENCH_NPCT];

/* Running min / max / sum of one per-connection duration, microseconds. */
struct bench_span {
    long n;
    double sum_us, min_us, max_us;
};

struct bench_stats {
    long complete;               /* requests answered (any status) */
    long failed;                 /* requests that got no complete answer */
    long retried;                /* h2 requests sent again after the server refused them
                                    unprocessed (GOAWAY, REFUSED_STREAM); not failed */
    long not_sent;               /* of those refused, the ones the run had stopped sending
                                    before it could send them again: neither complete,
                                    failed nor retried.  Requests sent = complete + failed
                                    + retried + not_sent */
    long status[6];              /* complete by class: [0] other, [1] 1xx ... [5] 5xx */
    uint64_t bytes;              /* bytes received after TLS decryption: headers and bodies */
    uint64_t body;               /* body bytes received */
    double elapsed_s;            /* first connect to last completion */
    long connections;            /* connections attempted */
    long conn_failed;            /* connections that failed before the first answer */
    struct bench_span connect;   /* TCP connect */
    struct bench_span handshake; /* TLS handshake */
    struct bench_span ttfb;      /* connect start to the first byte of the first answer */
    long hs_full, hs_resumed;
    char protocol[16], cipher[32], group[24], alpn[16], sign[40];
    double client_cpu_s; /* the generator thread's CPU time */
    bool cancelled;
    bool time_limited;    /* stopped by the hard time limit, not the count */
    bool request_limited; /* a timed run stopped by bench.max_requests, not the time */

    /* Latency of each complete request, microseconds (request sent -> answer
     * complete; for new-connection scenarios connect start -> answer). */
    uint32_t *lat;
    size_t nlat, caplat, maxlat;
    bool sorted;
};

/* Empty stats keeping at most @p max_latencies latencies. */
void bench_stats_init(struct bench_stats *s, size_t max_latencies);
void bench_stats_free(struct bench_stats *s);
void bench_span_add(struct bench_span *sp, double us);
/* One complete request with HTTP status @p status and latency @p us. */
void bench_stats_complete(struct bench_stats *s, int status, double us);
/* The @p pct percentile (1..100) of the latencies in ms; sorts them once. */
double bench_stats_percentile(struct bench_stats *s, int pct);

/*
 * The result as JSON: {"complete", "failed", "status": {..}, "rps",
 * "transfer_kbps" (KiB/s: bytes / 1024 / s), "bytes", "elapsed_s", "connections", "connect_ms":
 * {"mean","min","max"}, "handshake_ms", "ttfb_ms", "latency_ms": {"50":..,
 * "100":..} (null when nothing was answered), "handshakes": {"full","resumed"}, "tls":
 * {"protocol",...}, "client_cpu_s", "cancelled", "time_limited", "request_limited", "retried",
 * "not_sent"}.  New reference.
 */
json_t *bench_stats_json(struct bench_stats *s);

#endif
