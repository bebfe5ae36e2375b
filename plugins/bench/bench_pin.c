/* CPU placement of the generator against the site workers; see bench_pin.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "plugins/bench/bench_pin.h"

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugins/bench/bench_util.h"

/* The site plugin names its worker threads "site-w<N>" (site_worker.c). */
static void find_workers(struct bench_pin *p)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    p->nworkers = 0;
    while (d && (e = readdir(d)) && p->nworkers < BENCH_PIN_MAX_WORKERS) {
        if (e->d_name[0] == '.')
            continue;
        char path[300];
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        char *comm = bench_read_file(path);
        if (comm && strncmp(comm, "site-w", 6) == 0)
            p->tids[p->nworkers++] = (pid_t)atoi(e->d_name);
        free(comm);
    }
    if (d)
        closedir(d);
}

static void cpus_text(const cpu_set_t *set, int ncpu, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < ncpu && len + 8 < cap; i++)
        if (CPU_ISSET(i, set))
            len += (size_t)snprintf(out + len, cap - len, "%s%d", len ? "," : "", i);
}

/* Move every worker off @p cpu (saving its mask); false if one cannot move. */
static bool move_workers(struct bench_pin *p, int cpu)
{
    for (int i = 0; i < p->nworkers; i++) {
        cpu_set_t m = p->saved[i];
        CPU_CLR(cpu, &m);
        if (sched_setaffinity(p->tids[i], sizeof(m), &m) < 0) {
            for (int k = 0; k < i; k++)
                sched_setaffinity(p->tids[k], sizeof(p->saved[k]), &p->saved[k]);
            return false;
        }
    }
    p->workers_moved = true;
    return true;
}

/* Pin this thread to @p cpu (saving its mask); false when refused. */
static bool pin_self(struct bench_pin *p, int cpu)
{
    cpu_set_t mine;
    CPU_ZERO(&mine);
    CPU_SET(cpu, &mine);
    pthread_getaffinity_np(pthread_self(), sizeof(p->self_saved), &p->self_saved);
    if (pthread_setaffinity_np(pthread_self(), sizeof(mine), &mine) != 0)
        return false;
    p->self_pinned = true;
    p->client_cpu = cpu;
    return true;
}

void bench_pin_begin(struct bench_pin *p, enum bench_pin_target target)
{
    bool local = target == BENCH_PIN_SITE;
    memset(p, 0, sizeof(*p));
    p->client_cpu = -1;
    int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu > CPU_SETSIZE)
        ncpu = CPU_SETSIZE;
    if (local)
        find_workers(p);
    if (ncpu < 2) {
        p->one_core = local;
        snprintf(p->note, sizeof(p->note), "%s",
                 local ? "one core: the client competes with the server for it, so the "
                         "numbers are below what the server alone can do"
                       : "one core: not pinned");
        return;
    }
    if (target == BENCH_PIN_REMOTE) {
        snprintf(p->note, sizeof(p->note), "remote target: client not pinned");
        return;
    }
    if (target == BENCH_PIN_LOOPBACK) {
        /* Another server here, on CPUs we do not know: at least keep the
         * client on one CPU, the last (where servers start least). */
        if (pin_self(p, ncpu - 1))
            snprintf(p->note, sizeof(p->note),
                     "loopback target: client on cpu %d (the server's CPUs are not known)",
                     ncpu - 1);
        else
            snprintf(p->note, sizeof(p->note), "loopback target: cpu %d refused, not pinned",
                     ncpu - 1);
        return;
    }
    cpu_set_t used;
    CPU_ZERO(&used);
    for (int i = 0; i < p->nworkers; i++) {
        if (sched_getaffinity(p->tids[i], sizeof(p->saved[i]), &p->saved[i]) < 0)
            CPU_ZERO(&p->saved[i]);
        CPU_OR(&used, &used, &p->saved[i]);
    }
    int cpu = -1;
    for (int i = ncpu - 1; i >= 0 && cpu < 0; i--)
        if (!CPU_ISSET(i, &used))
            cpu = i;
    if (cpu < 0) {
        cpu = ncpu - 1;
        if (!move_workers(p, cpu)) {
            snprintf(p->note, sizeof(p->note), "could not move the site workers: not pinned");
            return;
        }
        CPU_CLR(cpu, &used);
    }
    if (!pin_self(p, cpu)) {
        bench_pin_end(p);
        snprintf(p->note, sizeof(p->note), "cpu %d refused (cpuset?): not pinned", cpu);
        return;
    }
    cpus_text(&used, ncpu, p->server_cpus, sizeof(p->server_cpus));
    snprintf(p->note, sizeof(p->note), "client on cpu %d, %d site worker%s on cpu %s%s", cpu,
             p->nworkers, p->nworkers == 1 ? "" : "s", p->server_cpus,
             p->workers_moved ? " (moved there for the run)" : "");
}

void bench_pin_end(struct bench_pin *p)
{
    if (p->workers_moved)
        for (int i = 0; i < p->nworkers; i++)
            sched_setaffinity(p->tids[i], sizeof(p->saved[i]), &p->saved[i]);
    p->workers_moved = false;
    if (p->self_pinned)
        pthread_setaffinity_np(pthread_self(), sizeof(p->self_saved), &p->self_saved);
    p->self_pinned = false;
}

uint64_t bench_pin_server_cpu_ns(const struct bench_pin *p)
{
    uint64_t sum = 0;
    for (int i = 0; i < p->nworkers; i++) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)p->tids[i]);
        char *v = bench_read_file(path);
        if (v)
            sum += strtoull(v, NULL, 10);
        free(v);
    }
    return sum;
}

json_t *bench_pin_json(const struct bench_pin *p)
{
    json_t *j = json_pack("{s:s,s:s}", "note", p->note, "server_cpus", p->server_cpus);
    json_object_set_new(j, "client_cpu",
                        p->client_cpu >= 0 ? json_integer(p->client_cpu) : json_null());
    if (p->one_core)
        json_object_set_new(j, "warning",
                            json_string("one core: the client competes with the server"));
    return j;
}
