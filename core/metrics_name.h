/* What a metric registration must look like: its series name, type and
 * buckets, checked the same way by the core's registry (core/metrics.c) and
 * by the plugin kit's mock host (pdk/mockhost, which compiles this file), so
 * a plugin's unit test refuses what the daemon refuses. */
#ifndef TLSBOX_CORE_METRICS_NAME_H
#define TLSBOX_CORE_METRICS_NAME_H

#include <stdbool.h>
#include <stddef.h>

#include <tlsbox/host.h>

/* The message when a series' type is not its family's ("name", family). */
#define METRICS_CLASH_FMT "metrics: \"%s\" clashes with the type of family %s"

/*
 * Check registering @p name as @p type with @p *buckets (@p *nbuckets; a
 * histogram's NULL becomes the default latency buckets in seconds).  On
 * success *family is the family (base) name and *labels the label text
 * between the braces or NULL (both caller-freed).  On refusal returns false
 * and sets *why (caller frees) to the message the core logs.
 */
bool metrics_name_check(const char *name, enum tlsbox_metric_type type, const double **buckets,
                        size_t *nbuckets, char **family, char **labels, char **why);

#endif
