/* The maintenance thread pool (blocking work: network, key generation, DH,
 * benchmarks) and timers that submit jobs to it. */
#ifndef TLSBOX_CORE_JOBS_H
#define TLSBOX_CORE_JOBS_H

#include <stdbool.h>
#include <stdint.h>

#include <tlsbox/host.h>

int jobs_start(int nthreads);
/* Cancel everything (queued jobs are dropped with free_arg called, running ones
 * see job_cancelled()), then join the threads. */
void jobs_stop(void);
int64_t jobs_submit(struct tlsbox_plugin *owner, const char *name, tlsbox_job_fn fn, void *arg,
                    void (*free_arg)(void *));
int jobs_cancel(int64_t id);
/* jobs_cancel for a plugin (host->job_cancel): only its own jobs; another
 * owner's id is -ENOENT, as if there were no such job. */
int jobs_cancel_of(const struct tlsbox_plugin *owner, int64_t id);
/* Cancel @p id only while it is still queued (it never runs, free_arg is
 * called); a running job is left alone.  0, or -ENOENT. */
int jobs_cancel_queued(int64_t id);
/* Cancel @p owner's jobs and timers and wait until none of its jobs runs;
 * a timer or job one of them set meanwhile is cancelled too. */
void jobs_cancel_owner(struct tlsbox_plugin *owner);
bool job_cancelled(struct tlsbox_job *job);
bool job_sleep(struct tlsbox_job *job, uint64_t ms);
/* Number of jobs queued or running (status API). */
int jobs_pending(void);

/* Timers: one thread sleeps until the next deadline and submits the job. */
int timers_start(void);
void timers_stop(void);
int64_t timers_add(struct tlsbox_plugin *owner, const char *name, uint64_t first_ms,
                   uint64_t period_ms, uint64_t jitter_ms, tlsbox_job_fn fn, void *arg);
int timers_cancel(int64_t id);
/* timers_cancel for a plugin (host->timer_cancel): only its own timers. */
int timers_cancel_of(const struct tlsbox_plugin *owner, int64_t id);
/* Cancel every timer of @p owner; returns how many. */
int timers_cancel_owner(struct tlsbox_plugin *owner);

#endif
