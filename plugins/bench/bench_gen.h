/*
 * The load generator: one thread, one epoll loop, C connections driving a
 * scenario against one target until the request count or the time is used
 * up, the job is cancelled, or the hard time limit passes.
 */
#ifndef TLSBOX_BENCH_GEN_H
#define TLSBOX_BENCH_GEN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "plugins/bench/bench_stats.h"

/* What a connection does; see bench_opts.c for the names users type. */
enum bench_scenario {
    BENCH_SC_HTTP,         /* plain HTTP/1.1, one request per new connection */
    BENCH_SC_HTTPS_NEW,    /* HTTPS/1.1, one request per new TLS connection (full handshake) */
    BENCH_SC_HTTPS_RESUME, /* as https-new, resuming the slot's last session (tickets) */
    BENCH_SC_H1,           /* HTTP/1.1 keep-alive, one request at a time per connection */
    BENCH_SC_H2,           /* HTTP/2, N concurrent streams per connection */
    BENCH_SC_MAX
};

/* One run's parameters, checked by bench_opts_parse. */
struct bench_opts {
    enum bench_scenario scenario;
    int concurrency;     /* connections at once */
    long requests;       /* stop after this many requests; 0 = use duration_ms */
    long duration_ms;    /* with requests == 0: issue requests for this long */
    long max_ms;         /* hard bound on the run (limit setting); a timed run's last
                            requests may take their timeout_ms past it */
    long timeout_ms;     /* a connection idle this long fails its requests */
    long max_requests;   /* hard bound on requests in duration mode (limit setting) */
    int streams;         /* h2: concurrent streams per connection */
    bool tls;            /* https target */
    bool local;          /* the box's own site */
    bool loopback;       /* the target address is a loopback one */
    char host[256];      /* SNI (only when not an address) and connect target */
    char authority[272]; /* Host / :authority: host, [IPv6], and the url's port if given */
    char path[1024];     /* request target */
    char url[1400];      /* as shown to people */
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char tls_version[8]; /* "any", "1.2", "1.3" */
    char key_type[8];    /* "any", "ecdsa", "rsa" */
    char cipher[24];     /* "any", "aes128gcm", "aes256gcm", "chacha20" */
    char group[16];      /* "any", "x25519", "p256", "p384", "ffdhe2048" */
    char priority[512];  /* GnuTLS priority string built from the four above */
};

/* Called about every 200 ms from the generator's thread. */
typedef void (*bench_progress_fn)(void *arg, long done, long total, long elapsed_ms, long total_ms);
/* Polled by the loop; true ends the run (marked cancelled). */
typedef bool (*bench_cancel_fn)(void *arg);

struct bench_hooks {
    bench_progress_fn progress;
    bench_cancel_fn cancelled;
    void *arg;
};

/*
 * Run the scenario in this thread.  Fills @p res (bench_stats_init'ed by the
 * caller).  Returns 0 when the run took place (with or without failed
 * requests, also when cancelled: res->cancelled), negative errno when it
 * could not start (no memory, bad priority string: @p err set, caller frees).
 * Every socket it opened is closed before it returns.
 */
int bench_gen_run(const struct bench_opts *o, const struct bench_hooks *hooks,
                  struct bench_stats *res, char **err);

/* "http", "https-new", ...; NULL for an out-of-range value. */
const char *bench_scenario_name(enum bench_scenario sc);
/* The scenario named @p name, or -EINVAL. */
int bench_scenario_parse(const char *name);

#endif
