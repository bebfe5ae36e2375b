/* The monotonic clock in nanoseconds: for durations and deadlines that a
 * wall-clock jump (NTP on a Pi without a real-time clock) must not move.
 * Any thread. */
#ifndef TLSBOX_CORE_MONO_CLOCK_H
#define TLSBOX_CORE_MONO_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#endif
