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
#include <linux/capability.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "site.h"
#include "site_ipcount.h"
#include "site_limits.h"

static const struct tlsbox_setting_def site_settings[] = {
    {.key = "workers",
     .type = TLSBOX_SETTING_INT,
     .default_value = "0",
     .min = 0,
     .max = 64,
     .help = "Worker threads serving the site (0 = one per CPU core); changed live, old "
             "workers drain"},
    {.key = "https_port",
     .type = TLSBOX_SETTING_INT,
     .default_value = "443",
     .min = 1,
     .max = 65535,
     .help = "TCP port of the HTTPS site"},
    {.key = "http_port",
     .type = TLSBOX_SETTING_INT,
     .default_value = "80",
     .min = 0,
     .max = 65535,
     .help = "TCP port of plain HTTP (redirects and ACME challenges; 0 = off)"},
    {.key = "bind",
     .type = TLSBOX_SETTING_LIST,
     .default_value = "0.0.0.0,::",
     .pattern = "^[0-9A-Fa-f:.]+$|^\\[[0-9A-Fa-f:.]+\\]$",
     .help = "Addresses to listen on (IPv4 and IPv6 literals)"},
    {.key = "root",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "/var/lib/tlsbox/www",
     .pattern = "^/.*$",
     .help = "Directory the site is served from"},
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
     .help = "Seconds a response may take to move 4 KB to the client before the connection "
             "is closed (a stalled or byte-at-a-time reader)"},
    {.key = "lingering_time",
     .type = TLSBOX_SETTING_INT,
     .default_value = "30",
     .min = 1,
     .max = 3600,
     .help = "Seconds at most to read and discard a refused request body before closing "
             "(so the answer is not reset away; nginx's lingering_time)"},
    {.key = "lingering_timeout",
     .type = TLSBOX_SETTING_INT,
     .default_value = "5",
     .min = 1,
     .max = 300,
     .help = "Seconds to wait for more of a refused body before closing "
             "(nginx's lingering_timeout)"},
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
    {.key = "max_connections_per_ip",
     .type = TLSBOX_SETTING_INT,
     .default_value = "256",
     .min = 1,
     .max = 1000000,
     .help = "Open connections one client address (IPv4, or IPv6 /64) may hold; more are "
             "closed at once"},
    {.key = "max_header_size",
     .type = TLSBOX_SETTING_INT,
     .default_value = "16384",
     .min = 1024,
     .max = 1048576,
     .help = "Bytes of request headers accepted (431 past it); an HTTP/2 connection keeps "
             "at most 4 times as much for its requests not yet answered",
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
    {.key = "batch_wait_us",
     .type = TLSBOX_SETTING_INT,
     .default_value = "30",
     .min = 0,
     .max = 1000,
     .help = "Microseconds a worker serving several connections at once waits before it "
             "polls for more, so their requests wake it once per batch rather than once each; "
             "it batches only while such waits gather two or more events on average "
             "(0 = wake for every event)"},
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
    {.key = "dotfiles",
     .type = TLSBOX_SETTING_ENUM,
     .default_value = "deny",
     .choices = "deny|allow",
     .help = "Paths with a segment starting with '.' (.git, .env): deny = 404 except "
             "/.well-known/ (RFC 8615), allow = serve them"},
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
    atomic_store(&s->cfg.lingering_time_ms,
                 (int)h->setting_get_int(s->self, "lingering_time", 30) * 1000);
    atomic_store(&s->cfg.lingering_timeout_ms,
                 (int)h->setting_get_int(s->self, "lingering_timeout", 5) * 1000);
    al = h->setting_get(s->self, "access_log");
    atomic_store(&s->cfg.access_log, al && strcmp(al, "stderr") == 0);
    free(al);
    atomic_store(&s->cfg.max_conns_per_ip,
                 (int)h->setting_get_int(s->self, "max_connections_per_ip", 256));
    atomic_store(&s->cfg.batch_wait_us, (int)h->setting_get_int(s->self, "batch_wait_us", 30));
    al = h->setting_get(s->self, "dotfiles");
    atomic_store(&s->cfg.dotfiles_allow, al && strcmp(al, "allow") == 0);
    free(al);
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

static void free_bind(struct site_config *cfg)
{
    for (size_t i = 0; i < cfg->nbind; i++)
        free(cfg->bind[i]);
    free(cfg->bind);
    cfg->bind = NULL;
    cfg->nbind = 0;
}

static int count_workers(int setting)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    return setting > 0 ? setting : (ncpu > 0 ? (int)ncpu : 1);
}

/*
 * Open @p root as the new root: workers take it before their next request.
 * At start a root that cannot be opened is only a warning (every request gets
 * 404 until it exists); with @p keep_old the root served stays instead.
 */
static int root_set(struct site *s, const char *root, bool keep_old)
{
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = -errno;
        SITE_LOG(s, TLSBOX_LOG_WARN, "site.root: %s: %s (%s)", root, strerror(-e),
                 keep_old ? "still serving the old root" : "every request gets 404");
        if (keep_old)
            return e;
    }
    pthread_mutex_lock(&s->root_lock);
    if (s->rootfd >= 0)
        close(s->rootfd);
    s->rootfd = fd;
    atomic_fetch_add(&s->root_gen, 1);
    pthread_mutex_unlock(&s->root_lock);
    free(s->cfg.root);
    s->cfg.root = site_xstrdup(root);
    return fd < 0 ? -ENOENT : 0;
}

/*
 * A live site.root must be a directory the site can open now: a typing error
 * stored would answer every request with 404.  Checked here, applied by the
 * settings event.  The root served already (a call giving the old values
 * back) passes as it is.  gen_lock held.
 */
static int root_check(struct site *s, const char *root, char **err)
{
    if (strcmp(root, s->cfg.root) == 0)
        return 0;
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    int e = -errno;
    *err = tlsbox_xasprintf("site.root: cannot open %s as a directory: %s; create it first "
                            "(the site still serves %s)",
                            root, strerror(-e), s->cfg.root);
    return e;
}

/* What workers and listeners should be: s->cfg's form of them. */
struct site_ports {
    int nworkers, https, http;
    struct site_config bind; /* only bind and nbind are used */
};

/*
 * Move to @p want (consumed): start a new generation of workers on the new
 * listeners (unchanged ports keep their sockets), then let the old one drain.
 * When the new one cannot start (a port in use), the old one keeps serving
 * with the old values, and the error (logged) is returned, with the message
 * in *why when @p why is not NULL.  gen_lock held, s->gen running.
 */
static int workers_switch(struct site *s, struct site_ports *want, char **why)
{
    struct site_config *cfg = &s->cfg;
    struct site_config old = *cfg;
    int onw = s->nworkers;
    struct site_gen *g;
    bool same_bind = want->bind.nbind == cfg->nbind;
    int err = 0;

    for (size_t i = 0; same_bind && i < cfg->nbind; i++)
        same_bind = strcmp(want->bind.bind[i], cfg->bind[i]) == 0;
    if (want->nworkers == s->nworkers && want->https == atomic_load(&cfg->https_port) &&
        want->http == cfg->http_port && same_bind) {
        free_bind(&want->bind);
        return 0;
    }
    s->nworkers = want->nworkers;
    atomic_store(&cfg->https_port, want->https);
    cfg->http_port = want->http;
    cfg->bind = want->bind.bind;
    cfg->nbind = want->bind.nbind;
    want->bind.bind = NULL;
    want->bind.nbind = 0;
    if (cfg->nbind == 0) {
        err = -EINVAL;
        SITE_LOG(s, TLSBOX_LOG_ERR, "site.bind: the list is empty");
        if (why)
            *why = site_xstrdup("site.bind: the list is empty");
        g = NULL;
    } else {
        g = site_gen_start(s, s->gen, &err, why);
    }
    if (!g) {
        err = err ? err : -EINVAL;
        SITE_LOG(s, TLSBOX_LOG_ERR,
                 "site: cannot apply the new workers/ports (%s); still serving "
                 "with %d workers on https port %d, http port %d",
                 strerror(-err), onw, atomic_load(&old.https_port), old.http_port);
        if (why && !*why)
            *why = tlsbox_xasprintf("site.workers: cannot start %d workers: %s", s->nworkers,
                                    strerror(-err));
        free_bind(cfg);
        s->nworkers = onw;
        atomic_store(&cfg->https_port, atomic_load(&old.https_port));
        cfg->http_port = old.http_port;
        cfg->bind = old.bind;
        cfg->nbind = old.nbind;
        return err;
    }
    free_bind(&old);
    site_gen_retire(s, s->gen);
    s->gen = g;
    SITE_LOG(s, TLSBOX_LOG_INFO, "%d workers, https port %d, http port %d (old workers drain)",
             s->nworkers, atomic_load(&cfg->https_port), cfg->http_port);
    return 0;
}

/* The new value of own key @p key in @p changes, or NULL when not changed. */
static const char *change_of(const struct tlsbox_setting_value *changes, const char *key)
{
    for (size_t i = 0; changes && changes[i].key; i++)
        if (strcmp(changes[i].key, key) == 0)
            return changes[i].value;
    return NULL;
}

static int int_or(const char *v, int served)
{
    char *end = NULL;
    long n = v ? strtol(v, &end, 10) : served;
    return v && (end == v || *end) ? served : (int)n; /* the core validated it */
}

/*
 * The workers and listeners @p changes ask for: each one not changed stays as
 * served, not as stored, since a port stored to take effect at the next start
 * (below 1024, site_apply_settings) is not served yet.  gen_lock held.
 */
static void ports_wanted(struct site *s, const struct tlsbox_setting_value *changes,
                         struct site_ports *want)
{
    const char *workers = change_of(changes, "workers"), *bind = change_of(changes, "bind");

    memset(want, 0, sizeof(*want));
    want->nworkers = workers ? count_workers(int_or(workers, 0)) : s->nworkers;
    want->https = int_or(change_of(changes, "https_port"), atomic_load(&s->cfg.https_port));
    want->http = int_or(change_of(changes, "http_port"), s->cfg.http_port);
    if (bind) {
        split_list(&want->bind, bind);
        return;
    }
    for (size_t i = 0; i < s->cfg.nbind; i++) {
        want->bind.bind = site_xrealloc(want->bind.bind, (i + 1) * sizeof(char *));
        want->bind.bind[want->bind.nbind++] = site_xstrdup(s->cfg.bind[i]);
    }
}

/* Whether this process may open ports below 1024 now (CAP_NET_BIND_SERVICE
 * effective): tlsboxd started as root still has it while plugins start. */
static bool may_bind_low_ports(void)
{
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2];

    if (syscall(SYS_capget, &hdr, data) < 0)
        return false;
    return (data[0].effective & (1u << CAP_NET_BIND_SERVICE)) != 0;
}

/*
 * .apply_settings: a change of site.workers, the ports or site.bind is made
 * here, before the core stores it, so a port that cannot be opened is
 * refused to whoever asked (and the store keeps the port that is served).
 * A site.root that cannot be opened is refused here too; the rest, and the
 * new root, follow through "settings.changed".
 */
/*
 * workers_switch() could not open a port below 1024 (-EACCES): such a port
 * opens only before tlsboxd drops root's rights.  When it started with them,
 * a restart serves the stored port: TLSBOX_APPLY_AT_RESTART with a note in
 * *err; otherwise a refusal saying why.  gen_lock held.
 */
static int low_port_outcome(struct site *s, int rc, char **err)
{
    const char *said = *err ? *err : "a port below 1024 opens only at start";
    char *why = s->low_ports_at_start
                    ? tlsbox_xasprintf("%s; stored, it takes effect when tlsboxd restarts "
                                       "(systemctl restart tlsbox); until then the site serves "
                                       "https port %d, http port %d",
                                       said, atomic_load(&s->cfg.https_port), s->cfg.http_port)
                    : tlsbox_xasprintf("%s, and this one did not: refused", said);
    free(*err);
    *err = why;
    return s->low_ports_at_start ? TLSBOX_APPLY_AT_RESTART : rc;
}

/* One live number of @p changes, stored as @p scale times its value. */
static void live_int(_Atomic int *dst, const char *value, int scale)
{
    if (value)
        atomic_store(dst, int_or(value, atomic_load(dst) / scale) * scale);
}

/*
 * The live settings (timeouts, per-address limit, access log, dotfiles,
 * batching) take effect from here, when the change is made, rather than by
 * "settings.changed" a moment after it is stored: what GET site/limits
 * answers (and bench checks a run against), and what the next connection
 * meets, is then already in effect when tlsboxctl set returns.  A change
 * taken back comes here again with the old value; read_live reads the same
 * values from the store afterwards.
 */
static void live_apply(struct site *s, const struct tlsbox_setting_value *changes)
{
    struct site_config *c = &s->cfg;
    const char *v;
    live_int(&c->handshake_timeout_ms, change_of(changes, "handshake_timeout"), 1000);
    live_int(&c->header_timeout_ms, change_of(changes, "header_timeout"), 1000);
    live_int(&c->idle_timeout_ms, change_of(changes, "idle_timeout"), 1000);
    live_int(&c->send_timeout_ms, change_of(changes, "send_timeout"), 1000);
    live_int(&c->lingering_time_ms, change_of(changes, "lingering_time"), 1000);
    live_int(&c->lingering_timeout_ms, change_of(changes, "lingering_timeout"), 1000);
    live_int(&c->max_conns_per_ip, change_of(changes, "max_connections_per_ip"), 1);
    live_int(&c->batch_wait_us, change_of(changes, "batch_wait_us"), 1);
    if ((v = change_of(changes, "access_log")))
        atomic_store(&c->access_log, strcmp(v, "stderr") == 0);
    if ((v = change_of(changes, "dotfiles")))
        atomic_store(&c->dotfiles_allow, strcmp(v, "allow") == 0);
}

static int site_apply_settings(void *state, const struct tlsbox_setting_value *changes, char **err)
{
    static const char *const keys[] = {"workers", "https_port", "http_port", "bind"};
    struct site *s = state;
    struct site_ports want;
    const char *root = change_of(changes, "root");
    bool ours = false;
    int rc = 0;

    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
        ours = ours || change_of(changes, keys[k]) != NULL;
    if (!ours && !root) {
        live_apply(s, changes);
        return 0;
    }
    pthread_mutex_lock(&s->gen_lock);
    /* The root first: refused, it leaves the workers as they are. */
    if (s->gen && root)
        rc = root_check(s, root, err);
    if (s->gen && ours && rc == 0) {
        ports_wanted(s, changes, &want);
        int https = want.https, http = want.http;
        rc = workers_switch(s, &want, err);
        if (rc == -EACCES && (https < 1024 || http < 1024))
            rc = low_port_outcome(s, rc, err);
    }
    pthread_mutex_unlock(&s->gen_lock);
    if (rc >= 0)
        live_apply(s, changes);
    return rc;
}

static void on_settings_changed(void *arg, const char *event, const char *data)
{
    struct site *s = arg;
    char *root;

    /* A reload (SIGHUP) may have changed any of them. */
    if (data && !strstr(data, "\"site.") && !strstr(data, "\"reload\""))
        return;
    read_live(s);
    pthread_mutex_lock(&s->gen_lock);
    if (s->gen) {
        root = s->host->setting_get(s->self, "root");
        if (root && strcmp(root, s->cfg.root) != 0 && root_set(s, root, true) == 0)
            SITE_LOG(s, TLSBOX_LOG_INFO, "root %s", root);
        free(root);
        /* Workers, ports and bind were applied by site_apply_settings before
         * the change was stored (for a reload, before the cache took the
         * store's values): following them here again could undo a newer
         * change still being applied (its value not yet stored). */
    }
    pthread_mutex_unlock(&s->gen_lock);
}

static int site_init(struct tlsbox_plugin *self, const struct tlsbox_host *host, void **state)
{
    struct site *s = site_xcalloc(1, sizeof(*s));
    struct site_config *cfg = &s->cfg;
    uint64_t ip_key;
    char *v;

    s->self = self;
    s->host = host;
    s->rootfd = -1;
    pthread_mutex_init(&s->root_lock, NULL);
    if (getrandom(&ip_key, sizeof(ip_key), 0) != (ssize_t)sizeof(ip_key))
        ip_key = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32); /* never seen fail */
    s->ip_conns = site_ipcount_new(SITE_IP_BUCKETS, ip_key);
    pthread_mutex_init(&s->gen_lock, NULL);
    cfg->workers = (int)host->setting_get_int(self, "workers", 0);
    s->nworkers = count_workers(cfg->workers);
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
    cfg->cache_bytes = (size_t)host->setting_get_int(self, "cache_size", 8192) * 1024;
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

/*
 * The open file limit must cover connections and the files they send (one
 * per HTTP/1 connection, up to SITE_CONN_FILES per HTTP/2 one, but on
 * average about one), plus the reserve for the rest of the daemon: raise the
 * soft limit towards 2 x max_connections + reserve.  Connections and files
 * together stay within fd_budget = limit - reserve (accept and file_open
 * check it), so the store and the control socket never meet EMFILE.
 */
static void fd_limit_setup(struct site *s)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)s->cfg.max_connections * 2 + SITE_FD_RESERVE;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
        s->fd_budget = s->cfg.max_connections;
        return;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t)INT32_MAX)
        s->fd_budget = INT32_MAX;
    else
        s->fd_budget = rl.rlim_cur > 2 * SITE_FD_RESERVE ? (int)(rl.rlim_cur - SITE_FD_RESERVE)
                                                         : (int)rl.rlim_cur / 2;
    if (s->fd_budget < s->cfg.max_connections + 64)
        SITE_LOG(s, TLSBOX_LOG_WARN,
                 "open file limit %llu: %d descriptors for connections and files "
                 "(site.max_connections %d); raise LimitNOFILE",
                 (unsigned long long)rl.rlim_cur, s->fd_budget, s->cfg.max_connections);
}

static int site_start(void *state)
{
    struct site *s = state;
    int r;

    char *root = site_xstrdup(s->cfg.root);
    root_set(s, root, false);
    free(root);
    fd_limit_setup(s);
    site_metrics_register(s);
    s->low_ports_at_start = may_bind_low_ports();
    pthread_mutex_lock(&s->gen_lock);
    s->gen = site_gen_start(s, NULL, &r, NULL);
    pthread_mutex_unlock(&s->gen_lock);
    if (!s->gen)
        return r;
    if (TLSBOX_HOST_HAS(s->host, event_subscribe)) {
        int64_t id = s->host->event_subscribe(s->self, "settings.changed", on_settings_changed, s);
        s->sub_id = id > 0 ? id : 0;
    }
    /* Not fatal: bench then falls back to the stored settings. */
    r = site_limits_register(s);
    if (r < 0)
        SITE_LOG(s, TLSBOX_LOG_WARN, "cannot serve GET site/limits: %s", strerror(-r));
    SITE_LOG(s, TLSBOX_LOG_INFO,
             "%d workers, https port %d, http port %d, root %s; AES-GCM records sealed by %s",
             s->nworkers, atomic_load(&s->cfg.https_port), s->cfg.http_port, s->cfg.root,
             site_rec_aes_impl());
    return 0;
}

static void site_stop(void *state)
{
    struct site *s = state;
    if (s->sub_id > 0) {
        s->host->event_unsubscribe(s->self, s->sub_id);
        s->sub_id = 0;
    }
    pthread_mutex_lock(&s->gen_lock);
    site_gen_stop(s->gen);
    s->gen = NULL;
    site_gen_reap_all(s);
    pthread_mutex_unlock(&s->gen_lock);
}

static void site_fini(void *state)
{
    struct site *s = state;
    if (!s)
        return;
    if (s->rootfd >= 0)
        close(s->rootfd);
    free_bind(&s->cfg);
    site_ipcount_free(s->ip_conns);
    pthread_mutex_destroy(&s->root_lock);
    pthread_mutex_destroy(&s->gen_lock);
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
              .demo_settings = site_demo_settings, .apply_settings = site_apply_settings);
