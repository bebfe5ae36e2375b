/*
 * tlsboxctl bench run|report|ceiling|ab|status|cancel|list|show|compare.
 * Jobs are queued through the API, then followed: a progress bar on a
 * terminal, plain lines otherwise; Ctrl-C while following cancels the job.
 * How results are printed is in cli/cmd_bench_show.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cmd_bench.h"
#include "cli/ctl.h"

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* One progress line: "[#####     ] 52% h2 (1/1) 15600/30000". */
static void progress_line(json_t *p, bool tty, char *last, size_t cap)
{
    const char *phase = json_string_value(json_object_get(p, "phase"));
    long long step = json_integer_value(json_object_get(p, "step"));
    long long steps = json_integer_value(json_object_get(p, "steps"));
    long long done = json_integer_value(json_object_get(p, "done"));
    long long total = json_integer_value(json_object_get(p, "total"));
    long long el = json_integer_value(json_object_get(p, "elapsed_ms"));
    long long tms = json_integer_value(json_object_get(p, "total_ms"));
    double frac = total > 0 ? (double)done / total : tms > 0 ? (double)el / tms : 0;
    if (frac > 1)
        frac = 1;
    char what[160];
    if (total == 0 && tms == 0)
        snprintf(what, sizeof(what), "%s (%lld/%lld)", phase ? phase : "", step, steps);
    else if (total > 0)
        snprintf(what, sizeof(what), "%s (%lld/%lld) %lld/%lld requests", phase ? phase : "", step,
                 steps, done, total);
    else
        snprintf(what, sizeof(what), "%s (%lld/%lld) %.1f/%.1f s, %lld requests",
                 phase ? phase : "", step, steps, el / 1000.0, tms / 1000.0, done);
    if (tty) {
        char bar[31];
        int n = (int)(frac * 30);
        memset(bar, '#', (size_t)n);
        memset(bar + n, ' ', (size_t)(30 - n));
        bar[30] = '\0';
        fprintf(stderr, "\r[%s] %3d%% %-60.60s", bar, (int)(frac * 100), what);
        fflush(stderr);
        return;
    }
    /* Not a terminal: a line when the step changes, and about once a second. */
    static time_t last_t;
    time_t now = time(NULL);
    if (strncmp(last, what, strcspn(what, ")")) != 0 || now != last_t) {
        fprintf(stderr, "bench: %s\n", what);
        last_t = now;
    }
    snprintf(last, cap, "%s", what);
}

/* Follow job @p id until it ends, then show the stored run. */
static int follow(struct ctl *c, long long id)
{
    bool tty = isatty(STDERR_FILENO);
    char last[160] = "";
    struct sigaction sa = {.sa_handler = on_sigint}, old;
    sigaction(SIGINT, &sa, &old);
    bool cancel_sent = false;
    for (;;) {
        json_t *st = NULL;
        int rc = ctl_call(c, "GET", "bench/status", NULL, &st);
        if (rc) {
            sigaction(SIGINT, &old, NULL);
            return rc;
        }
        bool running = json_is_true(json_object_get(st, "running")) &&
                       json_integer_value(json_object_get(st, "id")) == id;
        if (running)
            progress_line(json_object_get(st, "progress"), tty, last, sizeof(last));
        json_decref(st);
        if (!running)
            break;
        if (interrupted && !cancel_sent) {
            fprintf(stderr, "%sbench: cancelling #%lld\n", tty ? "\n" : "", id);
            ctl_call(c, "POST", "bench/cancel", "{}", NULL);
            cancel_sent = true;
        }
        sleep_ms(200);
    }
    sigaction(SIGINT, &old, NULL);
    if (tty && last[0])
        fputc('\n', stderr);
    char path[64];
    snprintf(path, sizeof(path), "bench/runs/%lld", id);
    json_t *run = NULL;
    int rc = ctl_call(c, "GET", path, NULL, &run);
    if (rc)
        return rc;
    if (c->json)
        ctl_print_json(c, run);
    else
        bench_show_run(run);
    const char *state = json_string_value(json_object_get(run, "state"));
    rc = state && strcmp(state, "done") == 0 ? CTL_EXIT_OK : CTL_EXIT_REFUSED;
    json_decref(run);
    return rc;
}

/* POST the body; follow unless --detach. */
static int submit(struct ctl *c, const char *path, json_t *body, bool detach)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    json_t *r = NULL;
    int rc = ctl_call(c, "POST", path, text, &r);
    free(text);
    if (rc)
        return rc;
    long long id = json_integer_value(json_object_get(r, "id"));
    json_decref(r);
    if (detach) {
        if (c->json)
            printf("{\"id\":%lld}\n", id);
        else
            printf("bench #%lld queued; follow it with tlsboxctl bench status\n", id);
        return CTL_EXIT_OK;
    }
    return follow(c, id);
}

static int cmd_run(struct ctl *c, int argc, char **argv)
{
    bool detach = false;
    json_t *body = json_object();
    if (bench_parse_run_args(argc, argv, body, &detach, "run") < 0) {
        json_decref(body);
        return CTL_EXIT_USAGE;
    }
    return submit(c, "bench/run", body, detach);
}

static int cmd_report(struct ctl *c, int argc, char **argv)
{
    bool detach = false;
    json_t *body = json_object();
    if (bench_parse_run_args(argc, argv, body, &detach, "report") < 0) {
        json_decref(body);
        return CTL_EXIT_USAGE;
    }
    return submit(c, "bench/report", body, detach);
}

static int cmd_ceiling(struct ctl *c, int argc, char **argv)
{
    bool detach = argc == 1 && strcmp(argv[0], "--detach") == 0;
    if (argc > 1 || (argc == 1 && !detach)) {
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl bench ceiling [--detach]\n");
        return CTL_EXIT_USAGE;
    }
    return submit(c, "bench/ceiling", json_object(), detach);
}

static int cmd_ab(struct ctl *c, int argc, char **argv)
{
    bool detach = false;
    json_t *body = json_object();
    if (bench_parse_run_args(argc, argv, body, &detach, "ab") < 0) {
        json_decref(body);
        return CTL_EXIT_USAGE;
    }
    return submit(c, "bench/ab", body, detach);
}

static void show_status(struct ctl *c, json_t *j)
{
    (void)c;
    if (!json_is_true(json_object_get(j, "running"))) {
        printf("no benchmark is running\n");
        return;
    }
    char last[160] = "";
    printf("%s #%lld running\n", json_string_value(json_object_get(j, "kind")),
           (long long)json_integer_value(json_object_get(j, "id")));
    progress_line(json_object_get(j, "progress"), false, last, sizeof(last));
}

static int cmd_status(struct ctl *c, int argc, char **argv)
{
    (void)argv;
    if (argc)
        return fprintf(stderr, "tlsboxctl: usage: tlsboxctl bench status\n"), CTL_EXIT_USAGE;
    return ctl_show(c, "GET", "bench/status", NULL, show_status);
}

static void show_cancel(struct ctl *c, json_t *j)
{
    (void)c;
    printf("cancelling bench #%lld\n", (long long)json_integer_value(json_object_get(j, "id")));
}

static int cmd_cancel(struct ctl *c, int argc, char **argv)
{
    (void)argv;
    if (argc)
        return fprintf(stderr, "tlsboxctl: usage: tlsboxctl bench cancel\n"), CTL_EXIT_USAGE;
    return ctl_show(c, "POST", "bench/cancel", "{}", show_cancel);
}

static int cmd_list(struct ctl *c, int argc, char **argv)
{
    (void)argv;
    if (argc)
        return fprintf(stderr, "tlsboxctl: usage: tlsboxctl bench list\n"), CTL_EXIT_USAGE;
    return ctl_show(c, "GET", "bench/runs", NULL, bench_show_list);
}

static int cmd_show(struct ctl *c, int argc, char **argv)
{
    bool csv = argc == 2 && strcmp(argv[1], "--csv") == 0;
    long long id = argc >= 1 ? ctl_positive(argv[0]) : 0;
    if (id <= 0 || (argc == 2 && !csv) || argc > 2) {
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl bench show ID [--csv]\n");
        return CTL_EXIT_USAGE;
    }
    char path[64];
    snprintf(path, sizeof(path), "bench/runs/%lld%s", id, csv ? "/csv" : "");
    json_t *j = NULL;
    int rc = ctl_call(c, "GET", path, NULL, &j);
    if (rc)
        return rc;
    if (csv && !c->json)
        fputs(json_string_value(json_object_get(j, "csv")), stdout);
    else if (c->json)
        ctl_print_json(c, j);
    else
        bench_show_run(j);
    json_decref(j);
    return CTL_EXIT_OK;
}

static int cmd_compare(struct ctl *c, int argc, char **argv)
{
    long long a = argc == 2 ? ctl_positive(argv[0]) : 0;
    long long b = argc == 2 ? ctl_positive(argv[1]) : 0;
    if (a <= 0 || b <= 0) {
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl bench compare A B\n");
        return CTL_EXIT_USAGE;
    }
    char path[96];
    snprintf(path, sizeof(path), "bench/compare/%lld/%lld", a, b);
    return ctl_show(c, "GET", path, NULL, bench_show_compare);
}

const struct ctl_command ctl_bench_commands[] = {
    {"bench", "run", "[OPTIONS]", "load the site (or --url) like ab/h2load; see tlsboxctl(1)",
     cmd_run},
    {"bench", "report", "[-n N] [-c N] [-m N] [--path P] [--timeout S] [--detach]",
     "the seeds' questions as a ratio table", cmd_report},
    {"bench", "ceiling", "[--detach]", "signatures, key exchanges, ciphers per core", cmd_ceiling},
    {"bench", "ab", "--preset P|--priority S|--set F=V [--keep K] [OPTIONS]",
     "run, apply a candidate policy, run, keep or roll back", cmd_ab},
    {"bench", "status", "", "progress of the running benchmark", cmd_status},
    {"bench", "cancel", "", "cancel the running benchmark", cmd_cancel},
    {"bench", "list", "", "stored runs, newest first", cmd_list},
    {"bench", "show", "ID [--csv]", "one stored run (JSON with --json, CSV with --csv)", cmd_show},
    {"bench", "compare", "A B", "run B against run A, step by step", cmd_compare},
    {NULL, NULL, NULL, NULL, NULL}};
