/* The bench part of the JSON API: run, report, ceiling, ab, status,
 * cancel, runs (list, show, CSV) and compare. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "plugins/bench/bench.h"
#include "plugins/bench/bench_export.h"
#include "plugins/bench/bench_store.h"
#include "plugins/bench/bench_util.h"

static void reply_json(struct tlsbox_api_reply *reply, int status, json_t *j)
{
    reply->status = status;
    reply->body = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(10));
    json_decref(j);
}

static json_t *body_object(struct bench *b, const struct tlsbox_api_request *req,
                           struct tlsbox_api_reply *reply)
{
    if (!req->body || req->body_len == 0)
        return json_object();
    json_error_t e;
    json_t *j = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &e);
    if (!json_is_object(j)) {
        json_decref(j);
        b->host->api_reply_error(reply, 400, "bench: the body must be a JSON object (%s)", e.text);
        return NULL;
    }
    return j;
}

/* The open-files limit leaves room for the connections asked for. */
static int fd_room(struct bench_opts *o, char **err)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (rlim_t)o->concurrency + 256 > rl.rlim_cur) {
        *err = bench_xasprintf("bench: concurrency %d needs more open files than tlsboxd's limit "
                               "of %llu allows (keep it below %llu)",
                               o->concurrency, (unsigned long long)rl.rlim_cur,
                               (unsigned long long)(rl.rlim_cur > 256 ? rl.rlim_cur - 256 : 0));
        return -EINVAL;
    }
    return 0;
}

/* Build, check and queue an order of @p kind from the request body. */
static void submit(struct bench *b, enum bench_kind kind, const struct tlsbox_api_request *req,
                   struct tlsbox_api_reply *reply)
{
    json_t *body = body_object(b, req, reply);
    if (!body)
        return;
    struct bench_order *ord = tlsbox_xcalloc(1, sizeof(*ord));
    ord->b = b;
    ord->kind = kind;
    ord->params = body;
    bench_limits_load(b, &ord->limits);
    bench_local_load(b, &ord->local);
    char *err = NULL;
    int r = 0;
    if (kind == BENCH_KIND_RUN || kind == BENCH_KIND_AB)
        r = bench_opts_parse(body, &ord->limits, &ord->local, &ord->opts, &err);
    if (r == 0 && (kind == BENCH_KIND_RUN || kind == BENCH_KIND_AB))
        r = fd_room(&ord->opts, &err);
    if (r == 0 && kind == BENCH_KIND_AB) {
        json_t *c = json_object_get(body, "candidate");
        json_t *kv = json_object_get(body, "keep");
        const char *keep = json_string_value(kv);
        if (!json_is_object(c) || json_object_size(c) == 0) {
            err = tlsbox_xstrdup("bench ab: give \"candidate\": {\"preset\": NAME} or "
                                 "{\"priority\": STRING} or {\"fields\": {...}}");
            r = -EINVAL;
        } else if (kv && !keep) {
            /* Not taken as the default "better": that may keep the candidate. */
            err = tlsbox_xstrdup("bench ab: \"keep\" must be a string, one of better|always|never");
            r = -EINVAL;
        } else if (keep && strcmp(keep, "better") && strcmp(keep, "always") &&
                   strcmp(keep, "never")) {
            err = bench_xasprintf("bench ab: keep \"%s\" is not one of better|always|never", keep);
            r = -EINVAL;
        } else if (!ord->opts.local) {
            err = tlsbox_xstrdup("bench ab: the target must be the local site (the policy is "
                                 "this box's)");
            r = -EINVAL;
        }
    }
    if (r == 0 && kind == BENCH_KIND_REPORT)
        r = bench_report_check(body, &ord->limits, &ord->local, &err);
    int64_t id = 0;
    if (r == 0) {
        r = bench_job_submit(ord, &id, &err); /* takes ord, even when it refuses */
    } else {
        json_decref(body);
        free(ord);
    }
    if (r < 0) {
        b->host->api_reply_error(reply, r == -EBUSY ? 409 : 400, "%s", err ? err : "refused");
        free(err);
        return;
    }
    reply_json(reply, 202,
               json_pack("{s:I,s:s}", "id", (json_int_t)id, "kind", bench_kind_name(kind)));
}

static void on_run(void *arg, const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply)
{
    submit(arg, BENCH_KIND_RUN, req, reply);
}

static void on_report(void *arg, const struct tlsbox_api_request *req,
                      struct tlsbox_api_reply *reply)
{
    submit(arg, BENCH_KIND_REPORT, req, reply);
}

static void on_ceiling(void *arg, const struct tlsbox_api_request *req,
                       struct tlsbox_api_reply *reply)
{
    submit(arg, BENCH_KIND_CEILING, req, reply);
}

static void on_ab(void *arg, const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply)
{
    submit(arg, BENCH_KIND_AB, req, reply);
}

static void on_status(void *arg, const struct tlsbox_api_request *req,
                      struct tlsbox_api_reply *reply)
{
    struct bench *b = arg;
    (void)req;
    pthread_mutex_lock(&b->lock);
    json_t *j = json_pack("{s:b}", "running", b->busy);
    if (b->busy) {
        const struct bench_progress *p = &b->progress;
        json_object_set_new(j, "id", json_integer(b->run_id));
        json_object_set_new(j, "kind", json_string(bench_kind_name(b->kind)));
        json_object_set_new(j, "progress",
                            json_pack("{s:s,s:i,s:i,s:I,s:I,s:I,s:I}", "phase", p->phase, "step",
                                      p->step, "steps", p->steps, "done", (json_int_t)p->done,
                                      "total", (json_int_t)p->total, "elapsed_ms",
                                      (json_int_t)p->elapsed_ms, "total_ms",
                                      (json_int_t)p->total_ms));
    }
    pthread_mutex_unlock(&b->lock);
    reply_json(reply, 200, j);
}

static void on_cancel(void *arg, const struct tlsbox_api_request *req,
                      struct tlsbox_api_reply *reply)
{
    struct bench *b = arg;
    (void)req;
    pthread_mutex_lock(&b->lock);
    bool busy = b->busy;
    int64_t job = b->job_id, id = b->run_id;
    if (busy)
        atomic_store(&b->cancel, true);
    pthread_mutex_unlock(&b->lock);
    if (!busy) {
        b->host->api_reply_error(reply, 409, "bench: no benchmark is running");
        return;
    }
    if (job > 0)
        b->host->job_cancel(b->self, job);
    reply_json(reply, 200, json_pack("{s:I,s:b}", "id", (json_int_t)id, "cancelling", 1));
}

static void on_runs(void *arg, const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply)
{
    (void)req;
    reply_json(reply, 200, bench_store_list(arg, 50));
}

/* "bench/runs/ID" or "bench/runs/ID/csv". */
static void on_run_get(void *arg, const struct tlsbox_api_request *req,
                       struct tlsbox_api_reply *reply)
{
    struct bench *b = arg;
    const char *rest = req->path + strlen("bench/runs/");
    char *end = NULL;
    long long id = strtoll(rest, &end, 10);
    bool csv = end && strcmp(end, "/csv") == 0;
    if (id <= 0 || !end || end == rest || (*end && !csv)) {
        b->host->api_reply_error(reply, 400, "bench: want bench/runs/ID or bench/runs/ID/csv");
        return;
    }
    json_t *run = bench_store_show(b, id);
    if (!run) {
        b->host->api_reply_error(reply, 404, "bench: no run #%lld", id);
        return;
    }
    if (csv) {
        char *text = bench_export_csv(run);
        json_decref(run);
        reply_json(reply, 200, json_pack("{s:s%}", "csv", text, strlen(text)));
        free(text);
        return;
    }
    reply_json(reply, 200, run);
}

/* "bench/compare/A/B". */
static void on_compare(void *arg, const struct tlsbox_api_request *req,
                       struct tlsbox_api_reply *reply)
{
    struct bench *b = arg;
    long long ids[2] = {0, 0};
    const char *p = req->path + strlen("bench/compare/");
    char *end = NULL;
    ids[0] = strtoll(p, &end, 10);
    if (end && *end == '/')
        ids[1] = strtoll(end + 1, &end, 10);
    if (ids[0] <= 0 || ids[1] <= 0 || !end || *end) {
        b->host->api_reply_error(reply, 400, "bench: want bench/compare/A/B with two run ids");
        return;
    }
    json_t *a = bench_store_show(b, ids[0]), *c = bench_store_show(b, ids[1]);
    if (!a || !c) {
        b->host->api_reply_error(reply, 404, "bench: no run #%lld", !a ? ids[0] : ids[1]);
        json_decref(a);
        json_decref(c);
        return;
    }
    reply_json(reply, 200, bench_export_compare(a, c));
    json_decref(a);
    json_decref(c);
}

int bench_api_register(struct bench *b)
{
    static const struct {
        const char *method, *pattern;
        tlsbox_api_fn fn;
    } routes[] = {
        {"POST", "bench/run", on_run},          {"POST", "bench/report", on_report},
        {"POST", "bench/ceiling", on_ceiling},  {"POST", "bench/ab", on_ab},
        {"GET", "bench/status", on_status},     {"POST", "bench/cancel", on_cancel},
        {"GET", "bench/runs", on_runs},         {"GET", "bench/runs/*", on_run_get},
        {"GET", "bench/compare/*", on_compare},
    };
    for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
        int r =
            b->host->api_route_add(b->self, routes[i].method, routes[i].pattern, routes[i].fn, b);
        if (r < 0) {
            b->host->log(b->self, TLSBOX_LOG_ERR, "API route %s: %s", routes[i].pattern,
                         strerror(-r));
            return r;
        }
    }
    return 0;
}
