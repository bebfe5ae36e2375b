/* The metrics registry: counters, gauges and histograms updated lock-free
 * from any thread (per-thread slots summed on read). */
#ifndef TLSBOX_CORE_METRICS_H
#define TLSBOX_CORE_METRICS_H

#include <stdint.h>

#include <jansson.h>
#include <tlsbox/host.h>

/* See host.h metric_register.  @p owner may be NULL (core). */
struct tlsbox_metric *metrics_register(struct tlsbox_plugin *owner, const char *name,
                                       enum tlsbox_metric_type type, const char *help,
                                       const double *buckets, size_t nbuckets);
void metrics_add(struct tlsbox_metric *m, int64_t delta);
void metrics_set(struct tlsbox_metric *m, int64_t value);
void metrics_observe(struct tlsbox_metric *m, double value);
/* Current value of a counter/gauge (sum of slots), or observation count of a histogram. */
int64_t metrics_value(const struct tlsbox_metric *m);
/* Find a series by full name (with labels), or NULL. */
struct tlsbox_metric *metrics_find(const char *name);
/* Take series @p m out of the rendering (a certificate removed, say); its
 * memory stays until metrics_free_all, so a pointer still held updates
 * nothing visible.  Registering the name again makes a new series.  Any
 * thread.  NULL is fine. */
void metrics_retire(struct tlsbox_metric *m);
/* metrics_retire when @p owner registered @p m (host call metric_retire:
 * a plugin retires only its own series); else nothing. */
void metrics_retire_owned(struct tlsbox_plugin *owner, struct tlsbox_metric *m);

/* Prometheus text exposition format 0.0.4, caller frees. */
char *metrics_render_prometheus(void);
/* JSON object {"name{labels}": value | {"count":..,"sum":..,"buckets":[[le,n],..]}}. */
json_t *metrics_json(void);

/* Free every metric (at exit, after all threads stopped). */
void metrics_free_all(void);

/* System sampler: CPU % (/proc/stat), load average, memory, temperature
 * (/sys/class/thermal when present) as gauges tlsbox_system_*; history written
 * to metrics_history at most every @p history_period_s (a timer job). */
int sysstat_start(int sample_period_ms, int history_period_s);
void sysstat_stop(void);

#endif
