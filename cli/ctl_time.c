/* Times in tlsboxctl's listings: always UTC, the same layout everywhere. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cli/ctl.h"

const char *ctl_utc(time_t t, char *buf, size_t n)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
}

void ctl_print_when(const char *label, json_t *v)
{
    if (!json_is_integer(v)) {
        printf("  %-14s -\n", label);
        return;
    }
    time_t t = (time_t)json_integer_value(v);
    char buf[32];
    long long d = (long long)(t - time(NULL)), a = llabs(d);
    if (a < 3600)
        printf("  %-14s %s UTC (%s%lldm%02llds%s)\n", label, ctl_utc(t, buf, sizeof buf),
               d < 0 ? "" : "in ", a / 60, a % 60, d < 0 ? " ago" : "");
    else
        printf("  %-14s %s UTC (%s%lldh%02lldm%s)\n", label, ctl_utc(t, buf, sizeof buf),
               d < 0 ? "" : "in ", a / 3600, a % 3600 / 60, d < 0 ? " ago" : "");
}
