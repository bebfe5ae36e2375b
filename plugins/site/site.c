/*
 * The site plugin: descriptor, settings and hooks.  The serving code lives
 * in site_worker.c (loop), site_conn.c (connections), site_tls.c, site_h1.c,
 * site_h2.c, site_files.c and site_redirect.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "site.h"

static const struct tlsbox_setting_def site_settings[] = {
    {.key = "workers",
     .type = TLSBOX_SETTING_INT,
     .default_value = "0",
     .min = 0,
     .max = 64,
     .help = "Worker threads serving the site (0 = one per CPU core)",
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "https_port",
     .type = TLSBOX_SETTING_INT,
     .default_value = "443",
     .min = 1,
     .max = 65535,
     .help = "TCP port of the HTTPS site",
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "http_port",
     .type = TLSBOX_SETTING_INT,
     .default_value = "80",
     .min = 0,
     .max = 65535,
     .help = "TCP port of plain HTTP (redirects and ACME challenges; 0 = off)",
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "bind",
     .type = TLSBOX_SETTING_LIST,
     .default_value = "0.0.0.0,::",
     .pattern = "^[0-9A-Fa-f:.]+$|^\\[[0-9A-Fa-f:.]+\\]$",
     .help = "Addresses to listen on (IPv4 and IPv6 literals)",
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "root",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "/var/lib/tlsbox/www",
     .pattern = "^/.*$",
     .help = "Directory the site is served from",
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "handshake_timeout",
     .type = TLSBOX_SETTING_INT,
     .default_value = "10",
     .min = 1,
     .max = 300,
     .help = "Seconds a TLS handshake may take"},
    {.key = "header_timeout",
     .type = TLSBOX_SETTING_INT,
     .default_value = "10",
     .min = 1,
     .max = 300,
     .help = "Seconds a client may take to send a request's headers"},
    {.key = "idle_timeout",
     .type = TLSBOX_SETTING_INT,
     .default_value = "60",
     .min = 1,
     .max = 3600,
     .help = "Seconds an idle keep-alive connection stays open"},
    {.key = "send_timeout",
     .type = TLSBOX_SETTING_INT,
     .default_value = "30",
     .min = 1,
     .max = 3600,
     .help = "Seconds without progress sending a response before closing"},
    {.key = "stop_timeout",
     .type = TLSBOX_SETTING_INT,
     .default_value = "10",
     .min = 0,
     .max = 300,
     .help = "Seconds in-flight responses may finish at stop"},
    {.key = "max_connections",
     .type = TLSBOX_SETTING_INT,
     .default_value = "10000",
     .min = 1,
     .max = 1000000,
     .help = "Open connections; new ones past it are closed at once",
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "max_header_size",
     .type = TLSBOX_SETTING_INT,
     .default_value = "16384",
     .min = 1024,
     .max = 1048576,
     .help = "Bytes of request headers accepted (431 past it)",
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "max_request_line",
     .type = TLSBOX_SETTING_INT,
     .default_value = "8192",
     .min = 256,
     .max = 65536,
     .help = "Bytes of the HTTP/1 request line accepted (414 past it)",
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "h2_max_concurrent_streams",
     .type = TLSBOX_SETTING_INT,
     .default_value = "100",
     .min = 1,
     .max = 1000,
     .help = "HTTP/2 streams a client may open at once",
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "h2_initial_window",
     .type = TLSBOX_SETTING_INT,
     .default_value = "65535",
     .min = 65535,
     .max = 16777215,
     .help = "HTTP/2 initial flow-control window (bytes)",
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "cache_size",
     .type = TLSBOX_SETTING_INT,
     .default_value = "8192",
     .min = 0,
     .max = 4194304,
     .help = "KiB of small files kept in memory (split among workers)",
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "cache_max_file",
     .type = TLSBOX_SETTING_INT,
     .default_value = "256",
     .min = 0,
     .max = 65536,
     .help = "KiB: larger files are read from disk in chunks",
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "access_log",
     .type = TLSBOX_SETTING_ENUM,
     .default_value = "off",
     .choices = "off|stderr",
     .help = "Log each request (stderr goes to the journal)"},
    TLSBOX_SETTINGS_END};

/* ---- settings ---------------------------------------------------------------- */

static void read_live(struct site *s)
{
    const struct tlsbox_host *h = s->host;
    char *al;
    atomic_store(&s->cfg.handshake_timeout_ms,
                 (int)h->setting_get_int(s->self, "handshake_timeout", 10) * 1000);
    atomic_store(&s->cfg.header_timeout_ms,
                 (int)h->setting_get_int(s->self, "header_timeout", 10) * 1000);
    atomic_store(&s->cfg.idle_timeout_ms,
                 (int)h->setting_get_int(s->self, "idle_timeout", 60) * 1000);
    atomic_store(&s->cfg.send_timeout_ms,
                 (int)h->setting_get_int(s->self, "send_timeout", 30) * 1000);
    al = h->setting_get(s->self, "access_log");
    atomic_store(&s->cfg.access_log, al && strcmp(al, "stderr") == 0);
    free(al);
}

static void on_settings_changed(void *arg, const char *event, const char *data)
{
    struct site *s = arg;
    if (!data || strstr(data, "\"site."))
        read_live(s);
}

static void split_list(struct site_config *cfg, const char *list)
{
    char *copy = site_xstrdup(list), *save, *tok;
    for (tok = strtok_r(copy, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        cfg->bind = site_xrealloc(cfg->bind, (cfg->nbind + 1) * sizeof(char *));
        cfg->bind[cfg->nbind++] = site_xstrdup(tok);
    }
    free(copy);
}

static int site_init(struct tlsbox_plugin *self, const struct tlsbox_host *host, void **state)
{
    struct site *s = site_xcalloc(1, sizeof(*s));
    struct site_config *cfg = &s->cfg;
    char *v;
    long ncpu;

    s->self = self;
    s->host = host;
    s->rootfd = -1;
    cfg->workers = (int)host->setting_get_int(self, "workers", 0);
    ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    s->nworkers = cfg->workers > 0 ? cfg->workers : (ncpu > 0 ? (int)ncpu : 1);
    cfg->https_port = (int)host->setting_get_int(self, "https_port", 443);
    cfg->http_port = (int)host->setting_get_int(self, "http_port", 80);
    v = host->setting_get(self, "bind");
    split_list(cfg, v ? v : "0.0.0.0,::");
    free(v);
    v = host->setting_get(self, "root");
    cfg->root = site_xstrdup(v ? v : "/var/lib/tlsbox/www");
    free(v);
    cfg->stop_timeout_ms = (int)host->setting_get_int(self, "stop_timeout", 10) * 1000;
    cfg->max_connections = (int)host->setting_get_int(self, "max_connections", 10000);
    cfg->max_header_size = (int)host->setting_get_int(self, "max_header_size", 16384);
    cfg->max_request_line = (int)host->setting_get_int(self, "max_request_line", 8192);
    cfg->h2_max_streams = (int)host->setting_get_int(self, "h2_max_concurrent_streams", 100);
    cfg->h2_window = (int)host->setting_get_int(self, "h2_initial_window", 65535);
    cfg->cache_bytes =
        (size_t)host->setting_get_int(self, "cache_size", 8192) * 1024 / (size_t)s->nworkers;
    cfg->cache_max_file = (size_t)host->setting_get_int(self, "cache_max_file", 256) * 1024;
    read_live(s);
    if (cfg->nbind == 0) {
        SITE_LOG(s, TLSBOX_LOG_ERR, "site.bind: the list is empty");
        *state = s;
        return -EINVAL;
    }
    *state = s;
    return 0;
}

static int site_start(void *state)
{
    struct site *s = state;
    struct rlimit rl;
    int r;

    s->rootfd = open(s->cfg.root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->rootfd < 0)
        SITE_LOG(s, TLSBOX_LOG_WARN, "site.root: %s: %s (every request gets 404)", s->cfg.root,
                 strerror(errno));
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur < (rlim_t)s->cfg.max_connections + 64) {
        rl.rlim_cur =
            rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (rlim_t)s->cfg.max_connections + 64
                ? (rlim_t)s->cfg.max_connections + 64
                : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    site_metrics_register(s);
    if (TLSBOX_HOST_HAS(s->host, event_subscribe)) {
        int64_t id = s->host->event_subscribe(s->self, "settings.changed", on_settings_changed, s);
        s->sub_id = id > 0 ? id : 0;
    }
    r = site_workers_start(s);
    if (r < 0)
        return r;
    SITE_LOG(s, TLSBOX_LOG_INFO, "%d workers, https port %d, http port %d, root %s", s->nworkers,
             s->cfg.https_port, s->cfg.http_port, s->cfg.root);
    return 0;
}

static void site_stop(void *state)
{
    struct site *s = state;
    if (s->sub_id > 0) {
        s->host->event_unsubscribe(s->self, s->sub_id);
        s->sub_id = 0;
    }
    site_workers_stop(s);
}

static void site_fini(void *state)
{
    struct site *s = state;
    if (!s)
        return;
    if (s->rootfd >= 0)
        close(s->rootfd);
    for (size_t i = 0; i < s->cfg.nbind; i++)
        free(s->cfg.bind[i]);
    free(s->cfg.bind);
    free(s->cfg.root);
    free(s);
}

/* tlsboxd --demo: unprivileged ports, the sample site the core copies into
 * the state directory. */
static const struct tlsbox_setting_value site_demo_settings[] = {
    {.key = "https_port", .value = "8443"},
    {.key = "http_port", .value = "8080"},
    {.key = "root", .value = "${state_dir}/www"},
    TLSBOX_VALUES_END};

TLSBOX_PLUGIN(.name = "site", .version = PACKAGE_VERSION,
              .description = "HTTPS and HTTP/2 static site server", .settings = site_settings,
              .init = site_init, .start = site_start, .stop = site_stop, .fini = site_fini,
              .demo_settings = site_demo_settings);
