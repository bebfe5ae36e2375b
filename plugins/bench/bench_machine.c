/* Machine facts for stored runs, from /proc and /sys. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "plugins/bench/bench_machine.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "plugins/bench/bench_util.h"

static char root[256];

void bench_machine_set_root(const char *r)
{
    bench_strlcpy(root, r, sizeof(root));
}

static char *sys_read(const char *path)
{
    char *full = bench_xasprintf("%s%s", root, path);
    char *v = bench_read_file(full);
    free(full);
    return v;
}

/* Value of the first "key<spaces>: value" line of /proc/cpuinfo among @p keys. */
static char *cpuinfo_field(const char *const *keys, size_t nkeys)
{
    char *path = bench_xasprintf("%s/proc/cpuinfo", root);
    FILE *f = fopen(path, "re");
    free(path);
    if (!f)
        return NULL;
    char line[1024], *found[8] = {0};
    while (fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        size_t kl = (size_t)(colon - line);
        while (kl > 0 && (line[kl - 1] == ' ' || line[kl - 1] == '\t'))
            kl--;
        for (size_t i = 0; i < nkeys && i < 8; i++) {
            if (found[i] || strlen(keys[i]) != kl || strncmp(line, keys[i], kl) != 0)
                continue;
            char *v = colon + 1;
            while (*v == ' ')
                v++;
            v[strcspn(v, "\n")] = '\0';
            found[i] = tlsbox_xstrdup(v);
        }
    }
    fclose(f);
    char *best = NULL;
    for (size_t i = 0; i < nkeys && i < 8; i++) {
        if (!best && found[i])
            best = found[i];
        else
            free(found[i]);
    }
    return best;
}

json_t *bench_machine_json(void)
{
    /* x86 says "model name"; a Pi's kernel says "Model" (the board) and
     * "Hardware"; other ARM boards only "CPU part". */
    static const char *const model_keys[] = {"model name", "Model", "Hardware", "CPU part"};
    static const char *const flag_keys[] = {"flags", "Features"};
    char *model = cpuinfo_field(model_keys, 4), *flags = cpuinfo_field(flag_keys, 2);
    char *gov = sys_read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    struct utsname u;
    uname(&u);
    bool aes = flags && (strstr(flags, " aes ") || strncmp(flags, "aes ", 4) == 0 ||
                         (strlen(flags) >= 4 && strcmp(flags + strlen(flags) - 4, " aes") == 0));
    long long mem = (long long)sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE) / 1024;
    json_t *j =
        json_pack("{s:s,s:i,s:s,s:s,s:s,s:b,s:I}", "cpu_model", model ? model : "unknown", "cores",
                  (int)sysconf(_SC_NPROCESSORS_ONLN), "governor", gov ? gov : "none", "kernel",
                  u.release, "arch", u.machine, "aes", aes, "memory_kb", (json_int_t)mem);
    free(model);
    free(flags);
    free(gov);
    return j;
}

int bench_machine_temp(int64_t *millic)
{
    char *pattern = bench_xasprintf("%s/sys/class/thermal/thermal_zone*/temp", root);
    glob_t g;
    int found = -ENOENT;
    if (glob(pattern, 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
            char *v = bench_read_file(g.gl_pathv[i]);
            char *end = NULL;
            long long t = v ? strtoll(v, &end, 10) : 0;
            if (v && end != v && (found < 0 || t > *millic)) {
                *millic = t;
                found = 0;
            }
            free(v);
        }
        globfree(&g);
    }
    free(pattern);
    return found;
}

char *bench_machine_throttled(void)
{
    return sys_read("/sys/devices/platform/soc/soc:firmware/get_throttled");
}
