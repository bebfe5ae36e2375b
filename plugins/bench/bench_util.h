/* Small helpers shared by the bench plugin's files: clocks, text, and
 * asprintf that aborts on failure (the rest of the allocation family is the
 * kit's <tlsbox/xalloc.h>). */
#ifndef TLSBOX_BENCH_UTIL_H
#define TLSBOX_BENCH_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* tlsbox_xmalloc, tlsbox_xcalloc, tlsbox_xrealloc, tlsbox_xstrdup */
#include <tlsbox/xalloc.h>

char *bench_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* CLOCK_MONOTONIC in microseconds. */
int64_t bench_now_us(void);
/* CPU time of the calling thread in seconds. */
double bench_thread_cpu_s(void);
/* Copy @p src into @p dst of @p cap bytes, always terminated, NULL as "". */
void bench_strlcpy(char *dst, const char *src, size_t cap);
/* Whole small file (e.g. under /sys) with trailing whitespace cut, or NULL. */
char *bench_read_file(const char *path);

#endif
