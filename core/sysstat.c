/* The system sampler: a core timer that reads /proc and /sys every
 * sample period into integer gauges, and every history period writes them
 * to metrics_history in one transaction (SD cards: few, batched writes).
 *
 * Units (integer gauges keep the unit in the name; HELP says it again):
 *   tlsbox_system_cpu_percent_x100        busy share of all CPUs over the last
 *                                         sample, percent * 100 (0..10000)
 *   tlsbox_system_load{1,5,15}_x1000      load average * 1000
 *   tlsbox_system_memory_total_bytes / tlsbox_system_memory_available_bytes
 *   tlsbox_system_temperature_millicelsius  hottest thermal zone; registered
 *                                         only when a zone is readable
 *   tlsbox_process_cpu_percent_x100       the daemon's share of all CPUs, same scale
 *   tlsbox_process_cpu_milliseconds_total the daemon's CPU time (user + system)
 *   tlsbox_process_rss_bytes              the daemon's resident memory
 * metrics_history rows carry the same names and the same units. */
#include "core/metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/jobs.h"
#include "core/log.h"
#include "core/mono_clock.h"
#include "core/store.h"
#include "core/xalloc.h"

/* History older than this is pruned (only the rows this file writes). */
#define SYSSTAT_HISTORY_KEEP_S (30 * 24 * 3600)

/* Prefix for /proc and /sys paths: tests point it at a fake tree. */
static const char *sysstat_root = "";

/* The owner of the sampler's timer, so sysstat_stop can wait for exactly its
 * job without touching other core jobs. */
static char sysstat_owner_tag;
#define SYSSTAT_OWNER ((struct tlsbox_plugin *)(void *)&sysstat_owner_tag)

enum {
    G_CPU,
    G_LOAD1,
    G_LOAD5,
    G_LOAD15,
    G_MEM_TOTAL,
    G_MEM_AVAIL,
    G_TEMP,
    G_PROC_CPU,
    G_PROC_RSS,
    G_MAX
};

static struct {
    const char *name;
    const char *help;
    struct tlsbox_metric *m;
} sysstat_gauges[G_MAX] = {
    [G_CPU] = {.name = "tlsbox_system_cpu_percent_x100",
               .help = "Busy share of all CPUs over the last sample, in percent * 100 (0..10000)"},
    [G_LOAD1] = {.name = "tlsbox_system_load1_x1000", .help = "1-minute load average * 1000"},
    [G_LOAD5] = {.name = "tlsbox_system_load5_x1000", .help = "5-minute load average * 1000"},
    [G_LOAD15] = {.name = "tlsbox_system_load15_x1000", .help = "15-minute load average * 1000"},
    [G_MEM_TOTAL] = {.name = "tlsbox_system_memory_total_bytes",
                     .help = "Total usable RAM in bytes"},
    [G_MEM_AVAIL] = {.name = "tlsbox_system_memory_available_bytes",
                     .help = "RAM available for new work without swapping, in bytes"},
    [G_TEMP] = {.name = "tlsbox_system_temperature_millicelsius",
                .help = "Temperature of the hottest thermal zone in millidegrees Celsius"},
    [G_PROC_CPU] = {.name = "tlsbox_process_cpu_percent_x100",
                    .help =
                        "The daemon's share of all CPUs over the last sample, in percent * 100"},
    [G_PROC_RSS] = {.name = "tlsbox_process_rss_bytes",
                    .help = "The daemon's resident memory in bytes"},
};
static struct tlsbox_metric *sysstat_proc_cpu_ms;

struct cpu_times {
    uint64_t busy, total; /* USER_HZ ticks summed over all CPUs */
};

static struct cpu_times sysstat_prev_cpu;
static uint64_t sysstat_prev_proc_ticks;
static uint64_t sysstat_proc_ms_reported;
static uint64_t sysstat_last_history_ns;
static uint64_t sysstat_history_period_ns;
static int64_t sysstat_timer = -1;

/* ---- parsers (pure, tested on sample text) --------------------------- */

/* First line of /proc/stat: "cpu  user nice system idle iowait irq softirq
 * steal guest guest_nice".  Guest time is already inside user and nice. */
static int sysstat_parse_stat(const char *text, struct cpu_times *out)
{
    uint64_t v[8] = {0};
    if (strncmp(text, "cpu ", 4) != 0)
        return -EINVAL;
    const char *p = text + 4;
    int n = 0;
    for (; n < 8; n++) {
        char *end;
        while (*p == ' ')
            p++;
        if (*p < '0' || *p > '9')
            break;
        v[n] = strtoull(p, &end, 10);
        p = end;
    }
    if (n < 4) /* user nice system idle are always there */
        return -EINVAL;
    uint64_t idle = v[3] + v[4];
    out->total = 0;
    for (int i = 0; i < 8; i++)
        out->total += v[i];
    out->busy = out->total - idle;
    return 0;
}

/* Busy share between two samples, percent * 100; 0 when no time passed. */
static int64_t sysstat_cpu_x100(const struct cpu_times *prev, const struct cpu_times *cur)
{
    if (cur->total <= prev->total || cur->busy < prev->busy)
        return 0;
    uint64_t dt = cur->total - prev->total, db = cur->busy - prev->busy;
    if (db > dt)
        db = dt;
    return (int64_t)((db * 10000 + dt / 2) / dt);
}

/* "12.34" -> 12340, without strtod (locale) or floating point. */
static const char *parse_fixed3(const char *p, int64_t *out)
{
    while (*p == ' ')
        p++;
    if (*p < '0' || *p > '9')
        return NULL;
    int64_t v = 0;
    while (*p >= '0' && *p <= '9' && v < INT64_MAX / 10000)
        v = v * 10 + (*p++ - '0');
    v *= 1000;
    if (*p == '.') {
        p++;
        int64_t scale = 100;
        while (*p >= '0' && *p <= '9') {
            v += (*p - '0') * scale;
            scale /= 10;
            p++;
        }
    }
    *out = v;
    return p;
}

/* /proc/loadavg: "0.23 0.16 0.08 2/96 8658" -> {230, 160, 80}. */
static int sysstat_parse_loadavg(const char *text, int64_t out[3])
{
    const char *p = text;
    for (int i = 0; i < 3; i++) {
        p = parse_fixed3(p, &out[i]);
        if (!p)
            return -EINVAL;
    }
    return 0;
}

static int meminfo_field(const char *text, const char *key, int64_t *bytes)
{
    size_t kl = strlen(key);
    for (const char *line = text; line && *line; line = strchr(line, '\n')) {
        if (*line == '\n')
            line++;
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            char *end;
            unsigned long long kb = strtoull(line + kl + 1, &end, 10);
            if (end == line + kl + 1)
                return -EINVAL;
            *bytes = (int64_t)kb * 1024;
            return 0;
        }
    }
    return -ENOENT;
}

/* /proc/meminfo; kernels before 3.14 lack MemAvailable: estimate it. */
static int sysstat_parse_meminfo(const char *text, int64_t *total, int64_t *avail)
{
    if (meminfo_field(text, "MemTotal", total) < 0)
        return -EINVAL;
    if (meminfo_field(text, "MemAvailable", avail) == 0)
        return 0;
    int64_t free_b = 0, buffers = 0, cached = 0;
    if (meminfo_field(text, "MemFree", &free_b) < 0)
        return -EINVAL;
    meminfo_field(text, "Buffers", &buffers);
    meminfo_field(text, "Cached", &cached);
    *avail = free_b + buffers + cached;
    return 0;
}

/* /proc/self/stat: utime + stime (fields 14 and 15) in USER_HZ ticks.  The
 * command name (field 2) may contain spaces and ')', so count from the last
 * ')'. */
static int sysstat_parse_self_stat(const char *text, uint64_t *ticks)
{
    const char *p = strrchr(text, ')');
    if (!p)
        return -EINVAL;
    p++;
    /* After ')' come fields 3.. ; utime is the 12th of those. */
    for (int field = 3; field < 14; field++) {
        while (*p == ' ')
            p++;
        while (*p && *p != ' ')
            p++;
        if (!*p)
            return -EINVAL;
    }
    char *end;
    uint64_t utime = strtoull(p, &end, 10);
    if (end == p)
        return -EINVAL;
    p = end;
    uint64_t stime = strtoull(p, &end, 10);
    if (end == p)
        return -EINVAL;
    *ticks = utime + stime;
    return 0;
}

/* /proc/self/statm: "size resident shared ..." in pages. */
static int sysstat_parse_statm(const char *text, uint64_t *rss_pages)
{
    char *end;
    strtoull(text, &end, 10);
    if (end == text)
        return -EINVAL;
    const char *p = end;
    uint64_t r = strtoull(p, &end, 10);
    if (end == p)
        return -EINVAL;
    *rss_pages = r;
    return 0;
}

/* ---- reading ------------------------------------------------------------ */

static int read_text(const char *rel, char *buf, size_t size)
{
    char path[512];
    snprintf(path, sizeof(path), "%s%s", sysstat_root, rel);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    size_t len = 0;
    while (len + 1 < size) {
        ssize_t n = read(fd, buf + len, size - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return (int)len;
}

/* Hottest readable thermal zone; -ENOENT when there is none. */
static int sysstat_read_temperature(int64_t *millic)
{
    char pattern[512], buf[64];
    glob_t g;
    int rc = -ENOENT;
    snprintf(pattern, sizeof(pattern), "%s/sys/class/thermal/thermal_zone*/temp", sysstat_root);
    if (glob(pattern, 0, NULL, &g) != 0)
        return -ENOENT;
    size_t skip = strlen(sysstat_root);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        if (read_text(g.gl_pathv[i] + skip, buf, sizeof(buf)) <= 0)
            continue;
        char *end;
        long long v = strtoll(buf, &end, 10);
        if (end == buf)
            continue;
        if (rc < 0 || v > *millic)
            *millic = v;
        rc = 0;
    }
    globfree(&g);
    return rc;
}

static void gauge_set(int g, int64_t v)
{
    metrics_set(sysstat_gauges[g].m, v);
}

/* Read everything once and update the gauges.  Runs on one thread at a time
 * (the timer never overlaps with itself). */
static void sysstat_sample(void)
{
    char buf[8192];
    struct cpu_times cpu = {0};
    bool have_cpu = false;
    if (read_text("/proc/stat", buf, sizeof(buf)) > 0 && sysstat_parse_stat(buf, &cpu) == 0) {
        have_cpu = true;
        if (sysstat_prev_cpu.total)
            gauge_set(G_CPU, sysstat_cpu_x100(&sysstat_prev_cpu, &cpu));
    }
    int64_t load[3];
    if (read_text("/proc/loadavg", buf, sizeof(buf)) > 0 && sysstat_parse_loadavg(buf, load) == 0) {
        gauge_set(G_LOAD1, load[0]);
        gauge_set(G_LOAD5, load[1]);
        gauge_set(G_LOAD15, load[2]);
    }
    int64_t total, avail;
    if (read_text("/proc/meminfo", buf, sizeof(buf)) > 0 &&
        sysstat_parse_meminfo(buf, &total, &avail) == 0) {
        gauge_set(G_MEM_TOTAL, total);
        gauge_set(G_MEM_AVAIL, avail);
    }
    int64_t temp;
    if (sysstat_gauges[G_TEMP].m && sysstat_read_temperature(&temp) == 0)
        gauge_set(G_TEMP, temp);

    uint64_t ticks;
    if (read_text("/proc/self/stat", buf, sizeof(buf)) > 0 &&
        sysstat_parse_self_stat(buf, &ticks) == 0) {
        if (have_cpu && sysstat_prev_cpu.total && cpu.total > sysstat_prev_cpu.total &&
            ticks >= sysstat_prev_proc_ticks) {
            struct cpu_times p0 = {sysstat_prev_proc_ticks, sysstat_prev_cpu.total};
            struct cpu_times p1 = {ticks, cpu.total};
            gauge_set(G_PROC_CPU, sysstat_cpu_x100(&p0, &p1));
        }
        sysstat_prev_proc_ticks = ticks;
        long hz = sysconf(_SC_CLK_TCK);
        uint64_t ms = hz > 0 ? ticks * 1000 / (uint64_t)hz : 0;
        if (ms > sysstat_proc_ms_reported) {
            metrics_add(sysstat_proc_cpu_ms, (int64_t)(ms - sysstat_proc_ms_reported));
            sysstat_proc_ms_reported = ms;
        }
    }
    uint64_t pages;
    if (read_text("/proc/self/statm", buf, sizeof(buf)) > 0 &&
        sysstat_parse_statm(buf, &pages) == 0)
        gauge_set(G_PROC_RSS, (int64_t)(pages * (uint64_t)sysconf(_SC_PAGESIZE)));
    if (have_cpu)
        sysstat_prev_cpu = cpu;
}

/* ---- history -------------------------------------------------------------- */

/* Write every sampler gauge at @p ts (Unix seconds) and prune old rows, in
 * one transaction.  Returns 0 or -EIO (logged). */
static int sysstat_write_history(sqlite3 *db, int64_t ts)
{
    sqlite3_stmt *ins = NULL, *del = NULL;
    int rc = -EIO;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        goto out;
    if (sqlite3_prepare_v2(db,
                           "INSERT OR REPLACE INTO metrics_history (ts, name, value) "
                           "VALUES (?1, ?2, ?3)",
                           -1, &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "DELETE FROM metrics_history WHERE ts < ?1 AND "
                           "(name LIKE 'tlsbox\\_system\\_%' ESCAPE '\\' OR "
                           "name LIKE 'tlsbox\\_process\\_%' ESCAPE '\\')",
                           -1, &del, NULL) != SQLITE_OK)
        goto rollback;
    for (int g = 0; g < G_MAX; g++) {
        if (!sysstat_gauges[g].m)
            continue;
        sqlite3_bind_int64(ins, 1, ts);
        sqlite3_bind_text(ins, 2, sysstat_gauges[g].name, -1, SQLITE_STATIC);
        sqlite3_bind_double(ins, 3, (double)metrics_value(sysstat_gauges[g].m));
        if (sqlite3_step(ins) != SQLITE_DONE)
            goto rollback;
        sqlite3_reset(ins);
    }
    sqlite3_bind_int64(del, 1, ts - SYSSTAT_HISTORY_KEEP_S);
    if (sqlite3_step(del) != SQLITE_DONE)
        goto rollback;
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        goto rollback;
    rc = 0;
    goto out;
rollback:
    log_warn("sysstat: writing metrics_history failed: %s", sqlite3_errmsg(db));
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
    sqlite3_finalize(ins);
    sqlite3_finalize(del);
    return rc;
}

static void sysstat_job(void *arg, struct tlsbox_job *job)
{
    sysstat_sample();
    uint64_t now = mono_ns();
    if (!sysstat_history_period_ns || now - sysstat_last_history_ns < sysstat_history_period_ns ||
        job_cancelled(job))
        return;
    sysstat_last_history_ns = now;
    sqlite3 *db = store_connect();
    if (!db)
        return; /* store_connect logged it */
    sysstat_write_history(db, (int64_t)time(NULL));
    store_disconnect(db);
}

/* ---- start / stop ---------------------------------------------------------- */

static void sysstat_register(void)
{
    int64_t temp;
    bool have_temp = sysstat_read_temperature(&temp) == 0;
    for (int g = 0; g < G_MAX; g++) {
        if (g == G_TEMP && !have_temp)
            continue;
        sysstat_gauges[g].m = metrics_register(NULL, sysstat_gauges[g].name, TLSBOX_METRIC_GAUGE,
                                               sysstat_gauges[g].help, NULL, 0);
    }
    sysstat_proc_cpu_ms =
        metrics_register(NULL, "tlsbox_process_cpu_milliseconds_total", TLSBOX_METRIC_COUNTER,
                         "CPU time used by the daemon (user + system) in milliseconds", NULL, 0);
}

int sysstat_start(int sample_period_ms, int history_period_s)
{
    if (sample_period_ms < 100 || sample_period_ms > 3600 * 1000) {
        log_err("sysstat: sample period %d ms is out of range 100..3600000", sample_period_ms);
        return -EINVAL;
    }
    if (history_period_s < 0) {
        log_err("sysstat: history period %d s is negative", history_period_s);
        return -EINVAL;
    }
    if (sysstat_timer > 0)
        return -EALREADY;
    sysstat_register();
    /* A first reading now, so the first timer sample already has a CPU delta. */
    sysstat_sample();
    sysstat_history_period_ns = (uint64_t)history_period_s * 1000000000ULL;
    sysstat_last_history_ns = mono_ns();
    int64_t id = timers_add(SYSSTAT_OWNER, "sysstat", (uint64_t)sample_period_ms,
                            (uint64_t)sample_period_ms, 0, sysstat_job, NULL);
    if (id < 0) {
        log_err("sysstat: cannot add the sampling timer: %s", strerror((int)-id));
        return (int)id;
    }
    sysstat_timer = id;
    return 0;
}

void sysstat_stop(void)
{
    if (sysstat_timer <= 0)
        return;
    /* Cancels the timer and waits for a sample (and history write) in progress. */
    jobs_cancel_owner(SYSSTAT_OWNER);
    sysstat_timer = -1;
}
