/*
 * Jobs: one at a time, on a maintenance thread.  A job is a run (one
 * scenario), a report (the seeds' questions), a ceiling or a policy A/B.
 * Every measured step goes through bench_job_step: pinning, the machine's
 * temperature, the server's counters before and after, the generator, and
 * the ratio to the crypto ceiling.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/bench/bench.h"
#include "plugins/bench/bench_machine.h"
#include "plugins/bench/bench_pin.h"
#include "plugins/bench/bench_store.h"
#include "plugins/bench/bench_util.h"

static const char *const kind_names[BENCH_KIND_MAX] = {"run", "report", "ceiling", "ab"};

const char *bench_kind_name(enum bench_kind k)
{
    return k < BENCH_KIND_MAX ? kind_names[k] : "run";
}

bool bench_job_cancelled(struct bench_order *ord)
{
    struct bench *b = ord->b;
    return atomic_load(&b->cancel) || atomic_load(&b->stopping) ||
           (ord->job && b->host->job_cancelled(ord->job));
}

void bench_job_set_phase(struct bench *b, const char *phase, int step, int steps)
{
    pthread_mutex_lock(&b->lock);
    bench_strlcpy(b->progress.phase, phase, sizeof(b->progress.phase));
    b->progress.step = step;
    b->progress.steps = steps;
    b->progress.done = b->progress.total = b->progress.elapsed_ms = b->progress.total_ms = 0;
    pthread_mutex_unlock(&b->lock);
}

static void on_progress(void *arg, long done, long total, long elapsed_ms, long total_ms)
{
    struct bench *b = ((struct bench_order *)arg)->b;
    pthread_mutex_lock(&b->lock);
    b->progress.done = done;
    b->progress.total = total;
    b->progress.elapsed_ms = elapsed_ms;
    b->progress.total_ms = total_ms;
    pthread_mutex_unlock(&b->lock);
}

static bool on_cancel(void *arg)
{
    return bench_job_cancelled(arg);
}

/* Counter @p name from the core's JSON metrics (0 when absent). */
static double metric(json_t *m, const char *name)
{
    json_t *v =
        json_object_get(json_object_get(m, "metrics") ? json_object_get(m, "metrics") : m, name);
    if (json_is_object(v))
        v = json_object_get(v, "count");
    return json_is_number(v) ? json_number_value(v) : 0;
}

/* The core's metrics through the in-process API, or NULL. */
static json_t *server_metrics(struct bench *b)
{
    if (!TLSBOX_HOST_HAS(b->host, api_call))
        return NULL;
    int status = 0;
    char *reply = NULL;
    json_t *j = NULL;
    if (b->host->api_call(b->self, "GET", "metrics", NULL, &status, &reply) == 0 && status == 200)
        j = json_loads(reply, 0, NULL);
    free(reply);
    return j;
}

static double requests_total(json_t *m)
{
    static const char *const protos[] = {"h1", "h2", "http"};
    static const char *const classes[] = {"other", "1xx", "2xx", "3xx", "4xx", "5xx"};
    double sum = 0;
    for (int p = 0; p < 3; p++)
        for (int k = 0; k < 6; k++) {
            char name[128];
            snprintf(name, sizeof(name), "tlsbox_site_requests_total{proto=\"%s\",code=\"%s\"}",
                     protos[p], classes[k]);
            sum += metric(m, name);
        }
    return sum;
}

/* The server's side of a local step: handshakes, requests, CPU. */
static json_t *server_side(json_t *m0, json_t *m1, double cpu_s)
{
    const char *full = "tlsbox_site_handshakes_total{kind=\"full\"}";
    const char *res = "tlsbox_site_handshakes_total{kind=\"resumed\"}";
    double hf = metric(m1, full) - metric(m0, full), hr = metric(m1, res) - metric(m0, res);
    double rq = requests_total(m1) - requests_total(m0);
    json_t *j = json_pack("{s:{s:f,s:f},s:f,s:f}", "handshakes", "full", hf, "resumed", hr,
                          "requests", rq, "cpu_s", cpu_s);
    json_object_set_new(j, "cpu_us_per_request",
                        rq > 0 ? json_real(cpu_s * 1e6 / rq) : json_null());
    /* Per handshake only when each request had its own connection. */
    json_object_set_new(j, "cpu_us_per_handshake",
                        hf + hr > 0 && hf + hr >= rq ? json_real(cpu_s * 1e6 / (hf + hr))
                                                     : json_null());
    return j;
}

/* "achieved / ceiling" for steps with full handshakes. */
static void add_ceiling_ratio(struct bench *b, json_t *res, struct bench_stats *st, json_t *server)
{
    /* Only where every request pays a full handshake: elsewhere the CPU per
     * handshake would charge the requests' work to the few handshakes. */
    if (st->hs_full == 0 || !st->sign[0] || st->hs_resumed > 0 || st->hs_full < st->complete)
        return;
    json_t *ceil = bench_store_latest_ceiling(b);
    bool have_ceiling = ceil != NULL;
    double per_core = ceil ? bench_ceiling_handshakes(ceil, st->sign, st->group) : 0;
    json_decref(ceil);
    double us = json_number_value(json_object_get(server, "cpu_us_per_handshake"));
    json_t *c = json_pack("{s:f,s:f}", "handshakes_per_s", st->hs_full / st->elapsed_s,
                          "ceiling_per_core", per_core);
    /* What one server core achieved: the inverse of its CPU per connection. */
    if (us > 0)
        json_object_set_new(c, "achieved_per_core", json_real(1e6 / us));
    if (per_core > 0 && us > 0)
        json_object_set_new(c, "ratio", json_real(1e6 / us / per_core));
    if (per_core <= 0 && !have_ceiling)
        json_object_set_new(c, "note", json_string("no ceiling measured yet: run bench ceiling"));
    else if (per_core <= 0)
        /* bench ceiling measures only some signatures and groups: running
         * it again would not help. */
        json_object_set_new(c, "note",
                            json_sprintf("the ceiling has no figure for %s with %s (it measures "
                                         "ECDSA P-256, RSA-2048 and Ed25519 signatures with "
                                         "X25519, P-256 and ffdhe2048)",
                                         st->sign, st->group));
    json_object_set_new(res, "ceiling", c);
}

json_t *bench_job_step(struct bench_order *ord, const struct bench_opts *o, const char *name,
                       int step, int steps)
{
    struct bench *b = ord->b;
    if (bench_job_cancelled(ord))
        return NULL;
    bench_job_set_phase(b, name, step, steps);
    struct bench_pin pin;
    struct bench_stats st;
    struct bench_hooks hooks = {.progress = on_progress, .cancelled = on_cancel, .arg = ord};
    bench_stats_init(&st, (size_t)(o->requests > 0 ? o->requests : o->max_requests));
    json_t *m0 = o->local ? server_metrics(b) : NULL;
    bench_pin_begin(&pin, o->local      ? BENCH_PIN_SITE
                          : o->loopback ? BENCH_PIN_LOOPBACK
                                        : BENCH_PIN_REMOTE);
    uint64_t cpu0 = bench_pin_server_cpu_ns(&pin);
    char *err = NULL;
    int r = bench_gen_run(o, &hooks, &st, &err);
    uint64_t cpu1 = bench_pin_server_cpu_ns(&pin);
    bench_pin_end(&pin);
    json_t *m1 = o->local ? server_metrics(b) : NULL;
    json_t *res;
    if (r < 0) {
        res = json_pack("{s:s,s:s}", "name", name, "error", err ? err : strerror(-r));
    } else {
        res = bench_stats_json(&st);
        json_object_set_new(res, "name", json_string(name));
        json_object_set_new(res, "pinning", bench_pin_json(&pin));
        json_t *server = NULL;
        if (m0 && m1) {
            server = server_side(m0, m1, (double)(cpu1 - cpu0) / 1e9);
            json_object_set_new(res, "server", server);
        }
        add_ceiling_ratio(b, res, &st, server);
    }
    json_object_set_new(res, "options", bench_opts_json(o));
    json_decref(m0);
    json_decref(m1);
    free(err);
    bench_stats_free(&st);
    return res;
}

/* Temperatures and throttling flags around the whole job. */
static void machine_mark(json_t *info, const char *when)
{
    int64_t t;
    char key[32];
    snprintf(key, sizeof(key), "temp_%s_mc", when);
    if (bench_machine_temp(&t) == 0)
        json_object_set_new(info, key, json_integer(t));
    char *thr = bench_machine_throttled();
    if (thr) {
        snprintf(key, sizeof(key), "throttled_%s", when);
        json_object_set_new(info, key, json_string(thr));
        free(thr);
    }
}

/* A single run: one step, stored as result 1. */
static int job_single(struct bench_order *ord, json_t *info, char **err)
{
    json_t *res = bench_job_step(ord, &ord->opts, bench_scenario_name(ord->opts.scenario), 1, 1);
    if (!res)
        return 0;
    const char *e = json_string_value(json_object_get(res, "error"));
    if (e)
        *err = tlsbox_xstrdup(e);
    json_object_set(info, "pinning", json_object_get(res, "pinning"));
    bench_store_result_add(ord->b, ord->run_id, 1, bench_scenario_name(ord->opts.scenario), res);
    json_decref(res);
    return e ? -EIO : 0;
}

static int job_ceiling(struct bench_order *ord)
{
    json_t *c = bench_ceiling_measure(ord, 0);
    if (!c)
        return 0;
    bench_store_result_add(ord->b, ord->run_id, 1, "ceiling", c);
    json_decref(c);
    return 0;
}

static void job_main(void *arg, struct tlsbox_job *job)
{
    struct bench_order *ord = arg;
    struct bench *b = ord->b;
    ord->job = job;
    json_t *info = json_object();
    char *err = NULL;
    int r = 0;
    machine_mark(info, "before");
    switch (ord->kind) {
    case BENCH_KIND_RUN:
        r = job_single(ord, info, &err);
        break;
    case BENCH_KIND_CEILING:
        r = job_ceiling(ord);
        break;
    case BENCH_KIND_REPORT:
        r = bench_report_run(ord, info);
        break;
    case BENCH_KIND_AB:
        r = bench_ab_run(ord, info, &err);
        break;
    default:
        break;
    }
    machine_mark(info, "after");
    const char *state = bench_job_cancelled(ord) ? "cancelled" : r < 0 ? "failed" : "done";
    bench_store_run_finish(b, ord->run_id, state, info, r < 0 && err ? err : NULL);
    b->host->log(b->self, TLSBOX_LOG_INFO, "bench %s #%lld %s%s%s", bench_kind_name(ord->kind),
                 (long long)ord->run_id, state, err ? ": " : "", err ? err : "");
    json_decref(info);
    free(err);
    pthread_mutex_lock(&b->lock);
    b->busy = false;
    b->job_id = 0;
    pthread_mutex_unlock(&b->lock);
}

static void order_drop(struct bench_order *ord)
{
    json_decref(ord->params);
    free(ord);
}

void bench_job_free(void *arg)
{
    struct bench_order *ord = arg;
    struct bench *b = ord->b;
    /* A job cancelled before it ran never reached job_main: free the slot. */
    pthread_mutex_lock(&b->lock);
    if (b->busy && b->run_id == ord->run_id && !ord->job) {
        b->busy = false;
        b->job_id = 0;
        pthread_mutex_unlock(&b->lock);
        bench_store_run_finish(b, ord->run_id, "cancelled", NULL, NULL);
    } else {
        pthread_mutex_unlock(&b->lock);
    }
    order_drop(ord);
}

int bench_job_submit(struct bench_order *ord, int64_t *run_id, char **err)
{
    struct bench *b = ord->b;
    pthread_mutex_lock(&b->lock);
    if (b->busy) {
        *err = bench_xasprintf("bench: another benchmark is running (%s #%lld, %s); wait for it "
                               "or cancel it with: tlsboxctl bench cancel",
                               bench_kind_name(b->kind), (long long)b->run_id, b->progress.phase);
        pthread_mutex_unlock(&b->lock);
        order_drop(ord);
        return -EBUSY;
    }
    b->busy = true;
    /* Cleared here, with busy, not after the run is stored: a cancel that
     * comes in between (it sees busy) must stop this run, not be lost. */
    atomic_store(&b->cancel, false);
    b->run_id = 0;
    b->job_id = 0;
    pthread_mutex_unlock(&b->lock);
    int64_t id = 0;
    if (bench_store_run_create(b, ord->kind, ord->params, &id) < 0) {
        pthread_mutex_lock(&b->lock);
        b->busy = false;
        pthread_mutex_unlock(&b->lock);
        *err = tlsbox_xstrdup("bench: could not store the run (see the daemon log)");
        order_drop(ord);
        return -EIO;
    }
    ord->run_id = id;
    *run_id = id;
    pthread_mutex_lock(&b->lock);
    b->run_id = id;
    b->kind = ord->kind;
    memset(&b->progress, 0, sizeof(b->progress));
    bench_strlcpy(b->progress.phase, "queued", sizeof(b->progress.phase));
    pthread_mutex_unlock(&b->lock);
    int64_t job = b->host->job_submit(b->self, "bench", job_main, ord, bench_job_free);
    pthread_mutex_lock(&b->lock);
    if (job < 0) {
        b->busy = false;
        pthread_mutex_unlock(&b->lock);
        bench_store_run_finish(b, id, "failed", NULL, "could not queue the job");
        *err = bench_xasprintf("bench: could not queue the job: %s", strerror((int)-job));
        order_drop(ord); /* a refused job's arg stays ours: free_arg never runs */
        return (int)job;
    }
    /* job_main may have finished already (a tiny run): only record a live id. */
    if (b->busy && b->run_id == id)
        b->job_id = job;
    pthread_mutex_unlock(&b->lock);
    return 0;
}
