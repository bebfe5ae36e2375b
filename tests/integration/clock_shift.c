/* LD_PRELOAD for tests: CLOCK_REALTIME as the system's plus the seconds in
 * the file $CLOCK_SHIFT_FILE (read again at most every 100 ms), so a test
 * can step one process's wall clock as NTP does after a Raspberry Pi boots
 * without an RTC.  Other clocks are left alone, and so is time() unless
 * $CLOCK_SHIFT_TIME is set (it bypasses clock_gettime in glibc). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static atomic_llong shift_s;
static atomic_llong checked_ms = -1000;

int clock_gettime(clockid_t clock, struct timespec *ts)
{
    int (*real)(clockid_t, struct timespec *) =
        (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    int rc = real(clock, ts);
    if (rc != 0 || clock != CLOCK_REALTIME)
        return rc;
    struct timespec mono;
    real(CLOCK_MONOTONIC, &mono);
    long long now = (long long)mono.tv_sec * 1000 + mono.tv_nsec / 1000000;
    const char *path = getenv("CLOCK_SHIFT_FILE");
    if (path && now - atomic_load(&checked_ms) >= 100) {
        atomic_store(&checked_ms, now);
        FILE *f = fopen(path, "re");
        long long v;
        if (f && fscanf(f, "%lld", &v) == 1)
            atomic_store(&shift_s, v);
        if (f)
            fclose(f);
    }
    ts->tv_sec += (time_t)atomic_load(&shift_s);
    return 0;
}

time_t time(time_t *t)
{
    struct timespec ts;
    if (getenv("CLOCK_SHIFT_TIME"))
        clock_gettime(CLOCK_REALTIME, &ts);
    else
        ((int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime"))(CLOCK_REALTIME,
                                                                                   &ts);
    if (t)
        *t = ts.tv_sec;
    return ts.tv_sec;
}
