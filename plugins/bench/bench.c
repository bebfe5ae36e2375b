/*
 * The bench plugin: ab and h2load built into the box, the crypto ceiling,
 * the seeds' questions in one report, and policy A/B.  This file holds the
 * descriptor, the settings and the hooks; the generator lives in
 * bench_gen.c / bench_conn.c / bench_h1.c / bench_h2.c, the jobs in
 * bench_job.c, the API in bench_api.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/bench/bench.h"
#include "plugins/bench/bench_store.h"
#include "plugins/bench/bench_util.h"

static const struct tlsbox_setting_def bench_settings[] = {
    {.key = "max_requests",
     .type = TLSBOX_SETTING_INT,
     .default_value = "1000000",
     .min = 1,
     .max = 10000000,
     .help = "Most requests one run may make (runs asking for more are refused)"},
    {.key = "max_duration",
     .type = TLSBOX_SETTING_INT,
     .default_value = "300",
     .min = 1,
     .max = 3600,
     .help = "Most seconds one run may last (a counted run is stopped there)"},
    {.key = "max_concurrency",
     .type = TLSBOX_SETTING_INT,
     .default_value = "1000",
     .min = 1,
     .max = 20000,
     .help = "Most connections a run may open at once"},
    {.key = "max_streams",
     .type = TLSBOX_SETTING_INT,
     .default_value = "100",
     .min = 1,
     .max = 1000,
     .help = "Most concurrent HTTP/2 streams per connection"},
    {.key = "allow_public_targets",
     .type = TLSBOX_SETTING_BOOL,
     .default_value = "false",
     .help = "Allow public targets, outside loopback and private networks (load only servers "
             "you run); link-local ones (169.254.0.0/16, fe80::/10) are never loaded"},
    TLSBOX_SETTINGS_END};

void bench_limits_load(struct bench *b, struct bench_limits *lim)
{
    const struct tlsbox_host *h = b->host;
    lim->max_requests = (long)h->setting_get_int(b->self, "max_requests", 1000000);
    lim->max_duration_ms = (long)h->setting_get_int(b->self, "max_duration", 300) * 1000;
    lim->max_concurrency = (int)h->setting_get_int(b->self, "max_concurrency", 1000);
    lim->max_streams = (int)h->setting_get_int(b->self, "max_streams", 100);
    lim->allow_public = h->setting_get_bool(b->self, "allow_public_targets", false);
}

static int bench_init(struct tlsbox_plugin *self, const struct tlsbox_host *host, void **state)
{
    struct bench *b = tlsbox_xcalloc(1, sizeof(*b));
    b->self = self;
    b->host = host;
    pthread_mutex_init(&b->lock, NULL);
    atomic_init(&b->cancel, false);
    atomic_init(&b->stopping, false);
    *state = b;
    if (!TLSBOX_HOST_HAS(host, api_call))
        host->log(self, TLSBOX_LOG_WARN,
                  "this tlsboxd has no api_call: no server metrics or policy A/B in runs");
    return 0;
}

static int bench_start(void *state)
{
    struct bench *b = state;
    bench_store_close_stale(b);
    return bench_api_register(b);
}

static void bench_stop(void *state)
{
    struct bench *b = state;
    /* The core cancels and waits for our job after this returns; the flag
     * makes the generator see it at its next 100 ms tick. */
    atomic_store(&b->stopping, true);
}

static void bench_fini(void *state)
{
    struct bench *b = state;
    if (!b)
        return;
    pthread_mutex_destroy(&b->lock);
    free(b);
}

TLSBOX_PLUGIN(.name = "bench", .version = PACKAGE_VERSION,
              .description = "Load generator (ab/h2load-like), crypto ceiling, reports, policy A/B",
              .settings = bench_settings, .init = bench_init, .start = bench_start,
              .stop = bench_stop, .fini = bench_fini, .migrations = bench_migrations);
