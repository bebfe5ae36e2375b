/* Minimal TAP producer for C unit tests (read by automake's tap-driver.sh).
 * Header-only: a test file includes it once. */
#ifndef TLSBOX_TESTS_TAP_H
#define TLSBOX_TESTS_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_count, tap_failed;

static inline void tap_vresult(int pass, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static inline void tap_vresult(int pass, const char *fmt, va_list ap)
{
    tap_count++;
    if (!pass)
        tap_failed++;
    printf("%s %d - ", pass ? "ok" : "not ok", tap_count);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
}

static inline int ok(int pass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline int ok(int pass, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tap_vresult(pass, fmt, ap);
    va_end(ap);
    return pass;
}

static inline void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("# ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

#define is_int(got, want, ...)                                                                     \
    do {                                                                                           \
        long long g_ = (long long)(got), w_ = (long long)(want);                                   \
        if (!ok(g_ == w_, __VA_ARGS__))                                                            \
            diag("  got %lld, want %lld", g_, w_);                                                 \
    } while (0)

#define is_str(got, want, ...)                                                                     \
    do {                                                                                           \
        const char *g_ = (got), *w_ = (want);                                                      \
        if (!ok(g_ && w_ ? strcmp(g_, w_) == 0 : g_ == w_, __VA_ARGS__))                           \
            diag("  got '%s', want '%s'", g_ ? g_ : "(null)", w_ ? w_ : "(null)");                 \
    } while (0)

#define like(got, needle, ...)                                                                     \
    do {                                                                                           \
        const char *g_ = (got), *n_ = (needle);                                                    \
        if (!ok(g_ && strstr(g_, n_) != NULL, __VA_ARGS__))                                        \
            diag("  '%s' does not contain '%s'", g_ ? g_ : "(null)", n_);                          \
    } while (0)

/* Print the plan and return the exit status. */
static inline int done_testing(void)
{
    printf("1..%d\n", tap_count);
    return tap_failed ? 1 : 0;
}

#endif
