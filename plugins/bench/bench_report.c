/*
 * The seeds' questions in one job: the same load (count, concurrency, path)
 * in every step, each scenario once, then a table of ratios like the blog
 * posts' ("a new HTTPS connection: 60.8 req/s against 561.6 for plain HTTP,
 * x9").  Steps that cannot run here (no plain HTTP port, no RSA
 * certificate) are marked so in the table instead of failing the report.
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

static const struct {
    const char *name, *scenario, *key, *cipher;
} steps[] = {
    {"http", "http", NULL, NULL},
    {"https-new", "https-new", NULL, NULL},
    {"https-resume", "https-resume", NULL, NULL},
    {"h1", "h1", NULL, NULL},
    {"h2", "h2", NULL, NULL},
    {"https-new ecdsa", "https-new", "ecdsa", NULL},
    {"https-new rsa", "https-new", "rsa", NULL},
    {"h1 aes128gcm", "h1", NULL, "aes128gcm"},
    {"h1 chacha20", "h1", NULL, "chacha20"},
};
#define NSTEPS ((int)(sizeof(steps) / sizeof(steps[0])))

/* The questions: a / b. */
static const struct {
    const char *question, *a, *b;
} rows[] = {
    {"plain HTTP vs HTTPS, new connection each request", "http", "https-new"},
    {"resumed vs full handshake", "https-resume", "https-new"},
    {"h2 vs h1 keep-alive", "h2", "h1"},
    {"h2 keep-alive vs plain HTTP new connection", "h2", "http"},
    {"ECDSA vs RSA-2048 handshake", "https-new ecdsa", "https-new rsa"},
    {"AES-128-GCM vs ChaCha20-Poly1305 (h1 keep-alive)", "h1 aes128gcm", "h1 chacha20"},
};

/* The options a report takes; every step runs with them. */
static const char *const keys[] = {"requests", "concurrency", "path", "streams", "timeout"};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

/* The JSON options of step @p i from the report's parameters. */
static json_t *step_params(json_t *params, int i)
{
    json_t *p = json_object();
    for (size_t k = 0; k < NKEYS; k++)
        if (json_object_get(params, keys[k]))
            json_object_set(p, keys[k], json_object_get(params, keys[k]));
    if (!json_object_get(p, "requests"))
        json_object_set_new(p, "requests", json_integer(2000));
    json_object_set_new(p, "scenario", json_string(steps[i].scenario));
    if (steps[i].key)
        json_object_set_new(p, "key", json_string(steps[i].key));
    if (steps[i].cipher)
        json_object_set_new(p, "cipher", json_string(steps[i].cipher));
    return p;
}

int bench_report_check(json_t *params, const struct bench_limits *lim,
                       const struct bench_local *local, char **err)
{
    const char *key;
    json_t *v;
    json_object_foreach(params, key, v)
    {
        size_t k = 0;
        while (k < NKEYS && strcmp(key, keys[k]) != 0)
            k++;
        if (k == NKEYS) {
            *err = bench_xasprintf("bench report: \"%s\" is not an option of the report (it "
                                   "takes requests, concurrency, path, streams, timeout)",
                                   key);
            return -EINVAL;
        }
    }
    /* As the steps will run, with their defaults: the h1 step (steps[3]) needs
     * only the HTTPS port; steps that cannot run here are marked, not refused. */
    json_t *p = step_params(params, 3);
    struct bench_opts o;
    int r = bench_opts_parse(p, lim, local, &o, err);
    json_decref(p);
    return r;
}

static double step_rps(json_t *results, const char *name, const char **why)
{
    json_t *r = json_object_get(results, name);
    *why = json_string_value(json_object_get(r, "error"));
    if (!r)
        *why = "not run";
    if (*why)
        return 0;
    long long ok = json_integer_value(json_object_get(r, "complete"));
    long long bad = json_integer_value(json_object_get(r, "failed"));
    if (ok == 0 || bad > ok / 100) {
        *why = "failed requests (e.g. no certificate of that key type)";
        return 0;
    }
    return json_number_value(json_object_get(r, "rps"));
}

static json_t *report_table(json_t *results)
{
    json_t *table = json_array();
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const char *wa = NULL, *wb = NULL;
        double a = step_rps(results, rows[i].a, &wa), b = step_rps(results, rows[i].b, &wb);
        json_t *row = json_pack("{s:s,s:s,s:s}", "question", rows[i].question, "a", rows[i].a, "b",
                                rows[i].b);
        json_object_set_new(row, "a_rps", a > 0 ? json_real(a) : json_null());
        json_object_set_new(row, "b_rps", b > 0 ? json_real(b) : json_null());
        json_object_set_new(row, "ratio", a > 0 && b > 0 ? json_real(a / b) : json_null());
        if (wa || wb)
            json_object_set_new(row, "note", json_string(wa ? wa : wb));
        json_array_append_new(table, row);
    }
    return table;
}

int bench_report_run(struct bench_order *ord, json_t *info)
{
    json_t *results = json_object();
    for (int i = 0; i < NSTEPS && !bench_job_cancelled(ord); i++) {
        json_t *p = step_params(ord->params, i);
        struct bench_opts o;
        char *err = NULL;
        json_t *res;
        if (bench_opts_parse(p, &ord->limits, &ord->local, &o, &err) < 0) {
            res = json_pack("{s:s,s:s}", "name", steps[i].name, "error", err);
            free(err);
        } else {
            res = bench_job_step(ord, &o, steps[i].name, i + 1, NSTEPS);
        }
        json_decref(p);
        if (!res)
            break;
        bench_store_result_add(ord->b, ord->run_id, i + 1, steps[i].name, res);
        if (!json_object_get(info, "pinning") && json_object_get(res, "pinning"))
            json_object_set(info, "pinning", json_object_get(res, "pinning"));
        json_object_set_new(results, steps[i].name, res);
    }
    json_object_set_new(info, "report", report_table(results));
    json_decref(results);
    return 0;
}
