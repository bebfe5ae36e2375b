/* sysstat: the /proc parsers on sample text, a sample from a fake /proc and
 * /sys tree, the history transaction, and a short real run.  The store is
 * stubbed with a plain SQLite file so this does not depend on core/store.c. */
#include "core/sysstat.c"

#include <sys/stat.h>

#include "tests/tap.h"

static char stub_db_path[256];

sqlite3 *store_connect(void)
{
    sqlite3 *db = NULL;
    if (sqlite3_open(stub_db_path, &db) != SQLITE_OK) {
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 5000);
    return db;
}

void store_disconnect(sqlite3 *db)
{
    sqlite3_close(db);
}

static void write_file(const char *root, const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s%s", root, rel);
    /* mkdir -p of the parent */
    for (char *p = path + strlen(root) + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0700);
            *p = '/';
        }
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(99);
    }
    fputs(text, f);
    fclose(f);
}

static int64_t gauge(const char *name)
{
    struct tlsbox_metric *m = metrics_find(name);
    return m ? metrics_value(m) : -999;
}

static int64_t db_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void reset_gauges(void)
{
    metrics_free_all();
    for (int g = 0; g < G_MAX; g++)
        sysstat_gauges[g].m = NULL;
    sysstat_proc_cpu_ms = NULL;
    memset(&sysstat_prev_cpu, 0, sizeof(sysstat_prev_cpu));
    sysstat_prev_proc_ticks = 0;
    sysstat_proc_ms_reported = 0;
}

static const char self_stat_fmt[] =
    "4242 (tls box) (x)) S 1 4242 4242 0 -1 4194560 500 0 0 0 %d %d 0 0 20 0 3 0 100 "
    "10000000 600 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";

int main(void)
{
    /* ---- parsers ---- */
    struct cpu_times a, b;
    is_int(sysstat_parse_stat("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4\n", &a), 0,
           "parse /proc/stat");
    is_int(a.total, 1000, "total ticks");
    is_int(a.busy, 150, "busy = total - idle - iowait");
    sysstat_parse_stat("cpu  200 0 100 1500 100 0 0 0 0 0\n", &b);
    is_int(sysstat_cpu_x100(&a, &b), 1667, "16.67 %% busy between samples");
    is_int(sysstat_cpu_x100(&b, &b), 0, "no time passed: 0");
    is_int(sysstat_cpu_x100(&b, &a), 0, "counters going back: 0");
    is_int(sysstat_parse_stat("cpu  1 2 3 4\n", &a), 0, "old kernel with 4 fields");
    is_int(a.total, 10, "4-field total");
    is_int(sysstat_parse_stat("cpu0 1 2 3 4 5\n", &a), -EINVAL, "per-CPU line is not the total");
    is_int(sysstat_parse_stat("cpu  1 2\n", &a), -EINVAL, "too few fields refused");
    is_int(sysstat_parse_stat("", &a), -EINVAL, "empty refused");

    int64_t load[3];
    is_int(sysstat_parse_loadavg("0.23 0.16 0.08 2/96 8658\n", load), 0, "parse loadavg");
    ok(load[0] == 230 && load[1] == 160 && load[2] == 80, "load x1000: %lld %lld %lld",
       (long long)load[0], (long long)load[1], (long long)load[2]);
    sysstat_parse_loadavg("12.5 3 0.0019 1/1 1\n", load);
    ok(load[0] == 12500 && load[1] == 3000 && load[2] == 1, "odd forms: %lld %lld %lld",
       (long long)load[0], (long long)load[1], (long long)load[2]);
    is_int(sysstat_parse_loadavg("x y z", load), -EINVAL, "garbage refused");

    int64_t total = 0, avail = 0;
    is_int(sysstat_parse_meminfo("MemTotal:  1000 kB\nMemFree:  100 kB\nMemAvailable:   600 kB\n"
                                 "Buffers: 10 kB\nCached: 20 kB\n",
                                 &total, &avail),
           0, "parse meminfo");
    ok(total == 1024000 && avail == 614400, "bytes from kB (%lld, %lld)", (long long)total,
       (long long)avail);
    sysstat_parse_meminfo("MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 10 kB\nCached: 20 kB\n",
                          &total, &avail);
    is_int(avail, 130 * 1024, "no MemAvailable: free + buffers + cached");
    is_int(sysstat_parse_meminfo("MemFree: 1 kB\n", &total, &avail), -EINVAL,
           "no MemTotal refused");

    char self[512];
    uint64_t ticks = 0, pages = 0;
    snprintf(self, sizeof(self), self_stat_fmt, 111, 222);
    is_int(sysstat_parse_self_stat(self, &ticks), 0, "parse /proc/self/stat");
    is_int(ticks, 333, "utime + stime past a comm with spaces and ')'");
    is_int(sysstat_parse_self_stat("1 (x) S 1 2", &ticks), -EINVAL, "truncated refused");
    is_int(sysstat_parse_statm("765 424 395 5 0 123 0\n", &pages), 0, "parse statm");
    is_int(pages, 424, "resident pages");

    /* ---- a sample from a fake tree ---- */
    char root[] = "/tmp/sysstat_test.XXXXXX";
    if (!mkdtemp(root))
        return 99;
    write_file(root, "/proc/stat", "cpu  100 0 50 800 50 0 0 0 0 0\n");
    write_file(root, "/proc/loadavg", "1.50 0.75 0.25 1/100 999\n");
    write_file(root, "/proc/meminfo", "MemTotal: 2048 kB\nMemFree: 1 kB\nMemAvailable: 1024 kB\n");
    snprintf(self, sizeof(self), self_stat_fmt, 10, 10);
    write_file(root, "/proc/self/stat", self);
    write_file(root, "/proc/self/statm", "100 50 10 1 0 20 0\n");
    write_file(root, "/sys/class/thermal/thermal_zone0/temp", "45000\n");
    write_file(root, "/sys/class/thermal/thermal_zone1/temp", "52500\n");
    write_file(root, "/sys/class/thermal/thermal_zone2/temp", "garbage\n");
    sysstat_root = root;
    sysstat_register();
    sysstat_sample();
    write_file(root, "/proc/stat", "cpu  200 0 100 1500 100 0 0 0 0 0\n");
    snprintf(self, sizeof(self), self_stat_fmt, 40, 70); /* +90 ticks of 900 */
    write_file(root, "/proc/self/stat", self);
    sysstat_sample();
    is_int(gauge("tlsbox_system_cpu_percent_x100"), 1667, "cpu gauge from the delta");
    is_int(gauge("tlsbox_system_load1_x1000"), 1500, "load1 gauge");
    is_int(gauge("tlsbox_system_load15_x1000"), 250, "load15 gauge");
    is_int(gauge("tlsbox_system_memory_total_bytes"), 2048 * 1024, "memory total gauge");
    is_int(gauge("tlsbox_system_memory_available_bytes"), 1024 * 1024, "memory available gauge");
    is_int(gauge("tlsbox_system_temperature_millicelsius"), 52500, "hottest zone wins");
    is_int(gauge("tlsbox_process_cpu_percent_x100"), 1000, "process share of all CPUs");
    is_int(gauge("tlsbox_process_rss_bytes"), 50 * sysconf(_SC_PAGESIZE), "process rss");
    is_int(gauge("tlsbox_process_cpu_milliseconds_total"), 110 * 1000 / sysconf(_SC_CLK_TCK),
           "process cpu time counter");

    /* ---- history ---- */
    snprintf(stub_db_path, sizeof(stub_db_path), "%s/history.db", root);
    sqlite3 *db = store_connect();
    sqlite3_exec(db,
                 "CREATE TABLE metrics_history (ts INTEGER NOT NULL, name TEXT NOT NULL,"
                 " value REAL NOT NULL, PRIMARY KEY (ts, name)) WITHOUT ROWID;"
                 "INSERT INTO metrics_history VALUES (1, 'tlsbox_system_load1_x1000', 1);"
                 "INSERT INTO metrics_history VALUES (1, 'tlsbox_site_requests', 1);",
                 NULL, NULL, NULL);
    int64_t ts = 2000000000;
    is_int(sysstat_write_history(db, ts), 0, "history written");
    is_int(db_int(db, "SELECT count(*) FROM metrics_history WHERE ts = 2000000000"), G_MAX,
           "one row per gauge");
    is_int(db_int(db, "SELECT value FROM metrics_history WHERE ts = 2000000000 AND "
                      "name = 'tlsbox_system_temperature_millicelsius'"),
           52500, "with the gauge's value");
    is_int(db_int(db, "SELECT count(*) FROM metrics_history WHERE ts = 1"), 1,
           "old sampler rows pruned, other rows kept");
    is_int(sysstat_write_history(db, ts), 0, "writing the same second again replaces");
    sqlite3_exec(db, "DROP TABLE metrics_history", NULL, NULL, NULL);
    is_int(sysstat_write_history(db, ts), -EIO, "a failing store reports -EIO");
    ok(sqlite3_get_autocommit(db), "and leaves no transaction open");
    store_disconnect(db);

    /* ---- no thermal zone: no temperature gauge ---- */
    reset_gauges();
    char root2[] = "/tmp/sysstat_test2.XXXXXX";
    if (!mkdtemp(root2))
        return 99;
    write_file(root2, "/proc/loadavg", "0.01 0.02 0.03 1/1 1\n");
    sysstat_root = root2;
    sysstat_register();
    sysstat_sample();
    ok(metrics_find("tlsbox_system_temperature_millicelsius") == NULL,
       "no thermal zone: temperature not registered");
    is_int(gauge("tlsbox_system_load5_x1000"), 20, "missing files do not stop the rest");

    /* ---- a real run on this machine ---- */
    reset_gauges();
    sysstat_root = "";
    db = store_connect();
    sqlite3_exec(db,
                 "CREATE TABLE metrics_history (ts INTEGER NOT NULL, name TEXT NOT NULL,"
                 " value REAL NOT NULL, PRIMARY KEY (ts, name)) WITHOUT ROWID;",
                 NULL, NULL, NULL);
    jobs_start(1);
    timers_start();
    is_int(sysstat_start(100, -1), -EINVAL, "negative history period refused");
    is_int(sysstat_start(10, 1), -EINVAL, "sample period under 100 ms refused");
    is_int(sysstat_start(100, 1), 0, "sysstat_start(100 ms, 1 s)");
    is_int(sysstat_start(100, 1), -EALREADY, "second start refused");
    usleep(1300 * 1000);
    sysstat_stop();
    int64_t cpu = gauge("tlsbox_system_cpu_percent_x100");
    ok(cpu >= 0 && cpu <= 10000, "real cpu %% x100 in range (%lld)", (long long)cpu);
    ok(gauge("tlsbox_system_memory_total_bytes") > 1 << 20, "real memory total (%lld)",
       (long long)gauge("tlsbox_system_memory_total_bytes"));
    ok(gauge("tlsbox_process_rss_bytes") > 0, "real rss (%lld)",
       (long long)gauge("tlsbox_process_rss_bytes"));
    int64_t rows = db_int(db, "SELECT count(DISTINCT ts) FROM metrics_history");
    ok(rows >= 1 && rows <= 2, "history written once per period (%lld batches)", (long long)rows);
    int64_t before = db_int(db, "SELECT count(*) FROM metrics_history");
    usleep(300 * 1000);
    is_int(db_int(db, "SELECT count(*) FROM metrics_history"), before,
           "nothing written after sysstat_stop");
    store_disconnect(db);
    timers_stop();
    jobs_stop();
    metrics_free_all();

    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", root, root2);
    if (system(cmd) != 0)
        diag("could not remove %s", root);
    return done_testing();
}
