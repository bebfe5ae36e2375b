/* Small helpers shared by the bench plugin's files: allocation that aborts
 * on failure (one family, as the core's xalloc), clocks, text. */
#ifndef TLSBOX_BENCH_UTIL_H
#define TLSBOX_BENCH_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

void *bench_xmalloc(size_t n);
void *bench_xcalloc(size_t n, size_t size);
void *bench_xrealloc(void *p, size_t n);
char *bench_xstrdup(const char *s);
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
