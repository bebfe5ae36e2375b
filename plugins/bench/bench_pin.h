/*
 * Keeping the generator off the site's cores.  With a local target and two
 * cores or more, the generator thread is pinned to one CPU the site workers
 * do not use; when the workers may run everywhere they are moved off that
 * CPU for the run and put back after.  On one core nothing is pinned and the
 * result carries a warning.  Also reads the workers' CPU time (same process:
 * /proc/self/task/TID/schedstat, nanoseconds).
 */
#ifndef TLSBOX_BENCH_PIN_H
#define TLSBOX_BENCH_PIN_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#define BENCH_PIN_MAX_WORKERS 64

struct bench_pin {
    int client_cpu; /* -1 when not pinned */
    bool self_pinned, workers_moved, one_core;
    cpu_set_t self_saved;
    int nworkers;
    pid_t tids[BENCH_PIN_MAX_WORKERS];
    cpu_set_t saved[BENCH_PIN_MAX_WORKERS];
    char server_cpus[128]; /* "0" or "0-2": where the workers may run during the run */
    char note[256];        /* room for the longest server_cpus and both numbers */
};

/* Where the target runs, for placing the generator. */
enum bench_pin_target {
    BENCH_PIN_SITE,     /* the box's own site: off its workers' CPUs */
    BENCH_PIN_LOOPBACK, /* another server on this machine: the last CPU */
    BENCH_PIN_REMOTE,   /* another machine: not pinned */
};

/* Pin the calling thread for a run against @p target. */
void bench_pin_begin(struct bench_pin *p, enum bench_pin_target target);
/* Undo bench_pin_begin (workers' and this thread's affinity restored). */
void bench_pin_end(struct bench_pin *p);
/* CPU time of the site workers so far, nanoseconds (0 without workers). */
uint64_t bench_pin_server_cpu_ns(const struct bench_pin *p);
/* {"client_cpu", "server_cpus", "note", "warning"}; new reference. */
json_t *bench_pin_json(const struct bench_pin *p);

#endif
