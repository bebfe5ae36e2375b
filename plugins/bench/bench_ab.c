/*
 * Policy A/B: run a scenario under the current TLS policy (A), apply a
 * candidate policy, run the same scenario (B), show the difference, then
 * keep B or roll back to A through the policy history.  The policy calls go
 * through the in-process API (host->api_call), so they are recorded in the
 * history like any other change.
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

/* One API call returning parsed JSON; *status set; NULL on transport error. */
static json_t *call(struct bench *b, const char *method, const char *path, json_t *body,
                    int *status)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL, *reply = NULL;
    json_t *j = NULL;
    *status = 0;
    if (b->host->api_call(b->self, method, path, text, status, &reply) == 0)
        j = json_loads(reply ? reply : "null", JSON_DECODE_ANY, NULL);
    free(text);
    free(reply);
    return j;
}

/* Wait (<= 5 s) until the TLS bundle is newer than @p gen. */
static void wait_bundle(struct bench_order *ord, uint64_t gen)
{
    struct bench *b = ord->b;
    for (int i = 0; i < 100 && !bench_job_cancelled(ord); i++) {
        struct tlsbox_bundle *bu = b->host->bundle_acquire();
        uint64_t g = bu ? b->host->bundle_generation(bu) : 0;
        if (bu)
            b->host->bundle_release(bu);
        if (g > gen)
            return;
        b->host->job_sleep(ord->job, 50);
    }
}

static uint64_t bundle_gen(struct bench *b)
{
    struct tlsbox_bundle *bu = b->host->bundle_acquire();
    uint64_t g = bu ? b->host->bundle_generation(bu) : 0;
    if (bu)
        b->host->bundle_release(bu);
    return g;
}

/* Apply the candidate {"preset": ..} | {"priority": ..} | {"fields": {..}}. */
static int apply_candidate(struct bench_order *ord, json_t *cand, char **err)
{
    struct bench *b = ord->b;
    const char *path = json_object_get(cand, "preset")     ? "policy/preset"
                       : json_object_get(cand, "priority") ? "policy/raw"
                                                           : "policy";
    const char *method = strcmp(path, "policy") == 0 ? "PUT" : "POST";
    json_t *body = json_deep_copy(cand);
    if (!json_object_get(body, "comment"))
        json_object_set_new(body, "comment",
                            json_sprintf("bench A/B #%lld candidate", (long long)ord->run_id));
    int status;
    uint64_t gen = bundle_gen(b);
    json_t *r = call(b, method, path, body, &status);
    json_decref(body);
    if (status != 200) {
        const char *e = json_string_value(json_object_get(r, "error"));
        *err =
            bench_xasprintf("bench ab: the candidate policy was refused: %s", e ? e : "no reply");
        json_decref(r);
        return -EINVAL;
    }
    json_decref(r);
    wait_bundle(ord, gen);
    return 0;
}

static int rollback(struct bench_order *ord, json_int_t version)
{
    json_t *body = json_pack("{s:I}", "version", version);
    int status;
    uint64_t gen = bundle_gen(ord->b);
    json_t *r = call(ord->b, "POST", "policy/rollback", body, &status);
    json_decref(body);
    json_decref(r);
    if (status == 200)
        wait_bundle(ord, gen);
    return status == 200 ? 0 : -EIO;
}

static double num(json_t *r, const char *a, const char *b)
{
    json_t *v = json_object_get(r, a);
    if (b)
        v = json_object_get(v, b);
    return json_number_value(v);
}

/* B relative to A: ratios of req/s, p50 latency and server CPU per request. */
static json_t *difference(json_t *a, json_t *b)
{
    double ra = num(a, "rps", NULL), rb = num(b, "rps", NULL);
    double la = num(a, "latency_ms", "50"), lb = num(b, "latency_ms", "50");
    double ca = num(json_object_get(a, "server"), "cpu_us_per_request", NULL);
    double cb = num(json_object_get(b, "server"), "cpu_us_per_request", NULL);
    json_t *d = json_pack("{s:f,s:f}", "a_rps", ra, "b_rps", rb);
    json_object_set_new(d, "rps_ratio", ra > 0 ? json_real(rb / ra) : json_null());
    json_object_set_new(d, "p50_ratio", la > 0 ? json_real(lb / la) : json_null());
    json_object_set_new(d, "cpu_per_request_ratio", ca > 0 ? json_real(cb / ca) : json_null());
    return d;
}

int bench_ab_run(struct bench_order *ord, json_t *info, char **err)
{
    struct bench *b = ord->b;
    int status;
    json_t *cur = call(b, "GET", "policy", NULL, &status);
    json_int_t version = json_integer_value(json_object_get(cur, "id"));
    json_decref(cur);
    if (status != 200 || version <= 0) {
        *err = tlsbox_xstrdup("bench ab: no active TLS policy to compare against");
        return -EIO;
    }
    const char *keep = json_string_value(json_object_get(ord->params, "keep"));
    keep = keep ? keep : "better";
    json_t *ra = bench_job_step(ord, &ord->opts, "A (current policy)", 1, 2);
    if (!ra)
        return 0;
    bench_store_result_add(b, ord->run_id, 1, "A", ra);
    int r = apply_candidate(ord, json_object_get(ord->params, "candidate"), err);
    json_t *rb = r == 0 ? bench_job_step(ord, &ord->opts, "B (candidate policy)", 2, 2) : NULL;
    bool kept = false;
    if (rb) {
        bench_store_result_add(b, ord->run_id, 2, "B", rb);
        json_t *d = difference(ra, rb);
        bool better = json_number_value(json_object_get(d, "rps_ratio")) > 1.0 &&
                      json_integer_value(json_object_get(rb, "failed")) == 0;
        kept = !bench_job_cancelled(ord) &&
               (strcmp(keep, "always") == 0 || (strcmp(keep, "better") == 0 && better));
        json_object_set_new(info, "difference", d);
    }
    if (r == 0 && !kept && rollback(ord, version) < 0 && !*err)
        *err = bench_xasprintf("bench ab: rolling back to policy version %lld failed",
                               (long long)version);
    json_object_set_new(info, "policy_a", json_integer(version));
    json_object_set_new(info, "kept", json_string(kept ? "B (candidate)" : "A (rolled back)"));
    if (json_object_get(ra, "pinning"))
        json_object_set(info, "pinning", json_object_get(ra, "pinning"));
    json_decref(ra);
    json_decref(rb);
    return r < 0 || *err ? -EIO : 0;
}
