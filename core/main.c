/* tlsboxd: start-up order, signals, graceful stop. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/admin.h"
#include "core/api.h"
#include "core/cert_expiry.h"
#include "core/demo.h"
#include "core/dh_generate.h"
#include "core/events.h"
#include "core/http_routes.h"
#include "core/jobs.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/paths.h"
#include "core/plugin_loader.h"
#include "core/privdrop.h"
#include "core/restart.h"
#include "core/settings.h"
#include "core/startup_sets.h"
#include "core/store.h"
#include "core/tls.h"
#include "core/xalloc.h"

struct options {
    const char *state_dir;
    const char *plugin_dir;
    const char *user;           /* --user: else core.user */
    const char *control_socket; /* --control-socket: else <state_dir>/control.sock */
    int demo;
    int foreground;
    int log_level; /* -1: from core.log_level */
    char **sets;   /* "KEY=VALUE" from --set */
    int nsets;
    char **plugins; /* --plugin FILE: load exactly these instead of the directory */
    int nplugins;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tlsboxd [--state-dir DIR] [--plugin-dir DIR] [--demo] [--foreground]\n"
            "               [--log-level err|warn|info|debug] [--set KEY=VALUE]...\n"
            "               [--plugin FILE]... [--data-dir DIR] [--user NAME]\n"
            "               [--control-socket PATH]\n"
            "\n"
            "  --state-dir DIR   store and control socket (default %s/lib/tlsbox)\n"
            "  --plugin-dir DIR  plugins to load (default %s)\n"
            "  --demo            each plugin's demo defaults (unprivileged ports), and a\n"
            "                    sample site copied into DIR/www\n"
            "  --data-dir DIR    installed data, e.g. the sample site (default %s)\n"
            "  --foreground      do not detach (systemd, tests)\n"
            "  --log-level L     overrides the core.log_level setting for this run\n"
            "  --set KEY=VALUE   validate and store a setting before plugins start\n"
            "  --plugin FILE     load this plugin; repeatable; replaces --plugin-dir\n"
            "  --user NAME       started as root: run as NAME once ports are bound\n"
            "                    (default: the core.user setting, tlsbox)\n"
            "  --control-socket PATH  control socket (default DIR/control.sock)\n"
            "  --version         print the version and plugin ABI\n",
            LOCALSTATEDIR, paths_plugindir(), paths_pkgdatadir());
}

static int parse_args(int argc, char **argv, struct options *o)
{
    static const struct option longopts[] = {{"state-dir", required_argument, NULL, 's'},
                                             {"plugin-dir", required_argument, NULL, 'p'},
                                             {"demo", no_argument, NULL, 'd'},
                                             {"foreground", no_argument, NULL, 'f'},
                                             {"log-level", required_argument, NULL, 'l'},
                                             {"set", required_argument, NULL, 'S'},
                                             {"plugin", required_argument, NULL, 'P'},
                                             {"data-dir", required_argument, NULL, 'D'},
                                             {"version", no_argument, NULL, 'V'},
                                             {"user", required_argument, NULL, 'u'},
                                             {"control-socket", required_argument, NULL, 'c'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "s:p:dfl:S:P:D:Vhu:c:", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            o->state_dir = optarg;
            break;
        case 'p':
            o->plugin_dir = optarg;
            break;
        case 'd':
            o->demo = 1;
            break;
        case 'f':
            o->foreground = 1;
            break;
        case 'l':
            o->log_level = log_level_parse(optarg);
            if (o->log_level < 0) {
                fprintf(stderr, "tlsboxd: --log-level %s: use err, warn, info or debug\n", optarg);
                return 2;
            }
            break;
        case 'S':
            if (!strchr(optarg, '=')) {
                fprintf(stderr, "tlsboxd: --set %s: expected KEY=VALUE\n", optarg);
                return 2;
            }
            o->sets = xrealloc(o->sets, (size_t)(o->nsets + 1) * sizeof *o->sets);
            o->sets[o->nsets++] = optarg;
            break;
        case 'P':
            o->plugins = xrealloc(o->plugins, (size_t)(o->nplugins + 1) * sizeof *o->plugins);
            o->plugins[o->nplugins++] = optarg;
            break;
        case 'u':
            o->user = optarg;
            break;
        case 'c':
            o->control_socket = optarg;
            break;
        case 'D':
            paths_set_pkgdatadir(optarg);
            break;
        case 'V':
            printf("tlsboxd %s (plugin ABI %d.%d)\n", PACKAGE_VERSION, TLSBOX_ABI_MAJOR,
                   TLSBOX_ABI_MINOR);
            exit(0);
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "tlsboxd: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    return 0;
}

/* Tell systemd (Type=notify) we are ready; a no-op elsewhere. */
static void notify_systemd(const char *msg)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (!path || (path[0] != '/' && path[0] != '@'))
        return;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t len = strlen(path);
    if (len >= sizeof sa.sun_path)
        return;
    memcpy(sa.sun_path, path, len);
    if (sa.sun_path[0] == '@')
        sa.sun_path[0] = '\0';
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    ssize_t w = sendto(fd, msg, strlen(msg), 0, (struct sockaddr *)&sa,
                       (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
    (void)w;
    close(fd);
}

/* The service user as known before the store is read: --user, else the
 * last --set core.user=NAME, else NULL (core.user in the store, or its
 * default). */
static const char *service_user(const struct options *o)
{
    const char *user = o->user;
    for (int i = 0; !o->user && i < o->nsets; i++)
        if (strncmp(o->sets[i], "core.user=", 10) == 0)
            user = o->sets[i] + 10;
    return user;
}

/* core.log_level, applied at start and whenever it changes (tlsboxctl set,
 * the web UI, SIGHUP): it is not a restart setting.  --log-level fixes the
 * level for the whole run instead. */
static int log_level_fixed;

static void apply_log_level(void)
{
    if (log_level_fixed)
        return;
    char *lvl = settings_get("core.log_level");
    int l = log_level_parse(lvl);
    if (l >= 0)
        log_set_level((enum tlsbox_log_level)l);
    free(lvl);
}

/* The thread that reads the signalfd (SIGUSR2: plugins_follow_disabled,
 * then plugins_start_again).  Sent to it alone (every thread blocks it),
 * with this value when a failed plugin's settings or core.plugins_disabled
 * changed; without it, from outside, for every failed one.  One SIGUSR2
 * may stand for several changes (a signal pending is not queued twice):
 * what to do is read from the plugins and the store, not from the signal. */
static pthread_t main_thread;
#define START_AGAIN_CHANGED 1

static void on_settings_changed(void *arg, const char *event, const char *data)
{
    (void)arg;
    (void)event;
    if (!data || strstr(data, "\"core.log_level\"") || strstr(data, "\"reload\""))
        apply_log_level();
    /* Stored now: a plugin that failed to start tries again with it, and
     * one enabled or disabled starts or stops, on the main thread (plugins
     * start there; this is the event thread). */
    bool follow = !data || strstr(data, "\"core.plugins_disabled\"") || strstr(data, "\"reload\"");
    if (plugins_take_start_again() || follow)
        pthread_sigqueue(main_thread, SIGUSR2, (union sigval){.sival_int = START_AGAIN_CHANGED});
}

/* Detach; the parent exits with the child's start-up status. */
static int daemonize(int *ready_fd)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0)
        return -errno;
    if (pid > 0) {
        close(p[1]);
        char status = 1;
        if (read(p[0], &status, 1) != 1)
            status = 1;
        _exit(status);
    }
    close(p[0]);
    setsid();
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        close(null);
    }
    *ready_fd = p[1];
    return 0;
}

static void report_ready(int *ready_fd, char status)
{
    if (*ready_fd >= 0) {
        ssize_t w = write(*ready_fd, &status, 1);
        (void)w;
        close(*ready_fd);
        *ready_fd = -1;
    }
}

int main(int argc, char **argv)
{
    /* A generator process the dhparam plugin started: nothing else runs. */
    if (argc == 3 && strcmp(argv[1], TLSBOX_DH_GENERATE_OPTION) == 0)
        return dh_generate_main(argv[2]);
    paths_init();
    xalloc_json_wiping();
    struct options o = {
        .state_dir = LOCALSTATEDIR "/lib/tlsbox", .plugin_dir = paths_plugindir(), .log_level = -1};
    bool restart = false; /* POST restart stopped it: exit TLSBOX_EXIT_RESTART */
    bool served = false;  /* ready was reported: --set values stay stored */
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc;
    privdrop_early();
    int ready_fd = -1;
    if (!o.foreground && daemonize(&ready_fd) < 0) {
        fprintf(stderr, "tlsboxd: cannot detach: %s\n", strerror(errno));
        return 1;
    }
    if (o.log_level >= 0) {
        log_set_level((enum tlsbox_log_level)o.log_level);
        log_level_fixed = 1;
    }

    /* Signals are taken synchronously from a signalfd; threads inherit the mask. */
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGUSR2);
    main_thread = pthread_self();
    pthread_sigmask(SIG_BLOCK, &mask, NULL);
    signal(SIGPIPE, SIG_IGN);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC);

    char *err = NULL;
    char *sock =
        o.control_socket ? xstrdup(o.control_socket) : xasprintf("%s/control.sock", o.state_dir);
    rc = 1;
    /* Before the store is opened: a second tlsboxd on a running one's state
     * must not migrate its store or write its --set values under it. */
    if (control_in_use(sock)) {
        free(sock);
        report_ready(&ready_fd, 1);
        return 1;
    }
    /* Before the store is created in it: a directory that is not tlsboxd's
     * to take (--state-dir /etc) is refused with nothing written there. */
    if (privdrop_check_state_dir(o.state_dir, service_user(&o), &err) < 0) {
        log_err("%s", err);
        free(err);
        free(sock);
        report_ready(&ready_fd, 1);
        return 1;
    }
    if (store_init(o.state_dir, &err) < 0) {
        log_err("%s", err ? err : "cannot open the store");
        free(err);
        free(sock);
        report_ready(&ready_fd, 1);
        return 1;
    }
    settings_register("core", core_settings);
    settings_register("admin", admin_settings);
    if (o.nplugins)
        plugins_load_files(o.plugins, (size_t)o.nplugins);
    else
        plugins_load_dir(o.plugin_dir);
    settings_load();
    if (o.demo)
        demo_apply(o.state_dir);
    if (startup_sets_apply(o.sets, o.nsets) < 0)
        goto out_store;
    apply_log_level();

    /* Bound as root (a root-only directory works), then handed over. */
    if (control_listen(sock) < 0)
        goto out_threads;
    /* Leave root before the first thread starts: no thread ever serves as
     * root, and every file created from here on is the service user's.
     * Only CAP_NET_BIND_SERVICE is kept, for the ports plugins bind in their
     * start hooks; privdrop_finish() takes it from every thread below. */
    char *user = o.user ? xstrdup(o.user) : settings_get("core.user");
    rc = privdrop_user(user ? user : "tlsbox", o.state_dir, sock, &err);
    free(user);
    if (rc < 0) {
        log_err("%s", err);
        free(err);
        rc = 1;
        goto out_threads;
    }
    rc = 1;

    if (events_start() < 0 ||
        jobs_start((int)settings_get_int("core.maintenance_threads", 2)) < 0 ||
        timers_start() < 0) {
        log_err("cannot start the core's threads");
        goto out_threads;
    }
    events_subscribe(core_self(), "settings.changed", on_settings_changed, NULL);
    sysstat_start(2000, (int)settings_get_int("core.metrics_history_period", 60));
    api_core_register();
    restart_register();
    if (tls_start() < 0) {
        log_err("TLS bundle: no usable bundle; the site cannot serve HTTPS until this is fixed");
    }
    cert_expiry_start();
    if (control_start() < 0)
        goto out_tls;
    /* The web UI is a convenience: the site and the control socket serve
     * even when its port is taken.  Values from --set it cannot listen with
     * are undone, as a plugin's are, and it tries the ones stored before. */
    if (admin_start() < 0 && !(startup_sets_undo("admin", NULL) && admin_listen() == 0))
        log_err("admin: web UI not served; fix admin.port / admin.bind and restart");
    /* A plugin that failed with values from --set gets those undone: once
     * more with the values stored before, unless tlsboxd is not starting. */
    int started = plugins_start_all();
    if (started != -EADDRINUSE)
        started = plugins_retry_failed(startup_sets_undo, NULL);
    if (started == -EADDRINUSE) {
        log_err("a port this tlsboxd needs is held by another process (see above): not starting");
        plugins_retry_failed(startup_sets_undo_only, NULL);
        goto out_plugins;
    }
    /* The plugins have bound their ports; nothing binds a port below 1024
     * later (ports changed live above 1023 only; lower ones name the
     * restart they need). */
    if (privdrop_finish(&err) < 0) {
        log_err("%s", err);
        free(err);
        goto out_plugins;
    }
    rc = 1; /* the exit status should anything below fail */
    /* Startup leaves holes in the heap (settings patterns compiled and freed:
     * several MB for counted repeats); give those pages back before serving. */
    malloc_trim(0);
    api_core_ready();
    log_info("tlsboxd %s ready (state %s)", PACKAGE_VERSION, o.state_dir);
    notify_systemd("READY=1");
    report_ready(&ready_fd, 0);
    served = true;

    for (;;) {
        struct signalfd_siginfo si;
        ssize_t n = read(sfd, &si, sizeof si);
        if (n != (ssize_t)sizeof si) {
            if (n < 0 && errno == EINTR)
                continue;
            log_err("signalfd: %s", strerror(errno));
            break;
        }
        if (si.ssi_signo == SIGUSR2) {
            plugins_follow_disabled();
            plugins_start_again(si.ssi_code == SI_QUEUE && si.ssi_pid == (uint32_t)getpid() &&
                                si.ssi_int == START_AGAIN_CHANGED);
            continue;
        }
        if (si.ssi_signo == SIGHUP) {
            log_info("SIGHUP: reloading settings");
            settings_load();
            events_publish("settings.changed", "{\"reload\":true}");
            continue;
        }
        restart = restart_asked(&si);
        if (restart) {
            /* Let the 202 reach whoever asked before the API stops. */
            nanosleep(&(struct timespec){.tv_nsec = 300 * 1000 * 1000}, NULL);
            log_info("stopping for the restart asked for");
        } else {
            log_info("%s: stopping", si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
        }
        break;
    }
    notify_systemd("STOPPING=1");
    rc = 0;
out_plugins:
    admin_stop();
    /* Before the plugins go: a control request walks the plugin list and
     * reads definitions inside their modules, which stopping frees. */
    control_stop();
    /* Not started: the --set values are undone while their settings are
     * still declared, with no plugin left to apply them. */
    if (!served) {
        plugins_stop_running();
        startup_sets_undo_all();
    }
    plugins_stop_all();
out_tls:
    cert_expiry_stop();
    tls_stop();
    sysstat_stop();
out_threads:
    control_stop();
    timers_stop();
    jobs_stop();
    events_stop();
    api_routes_free();
    http_routes_free();
out_store:
    /* tlsboxd did not start: the store is left as it was, --set or not
     * (before the starting process is told, which may start another). */
    if (!served)
        startup_sets_undo_all();
    free(sock);
    report_ready(&ready_fd, (char)rc);
    if (rc == 0 && restart)
        log_info("stopped; exit status %d: systemd starts tlsboxd again", TLSBOX_EXIT_RESTART);
    else if (rc == 0)
        log_info("stopped");
    startup_sets_free();
    store_close();
    metrics_free_all();
    free(o.sets);
    free(o.plugins);
    if (sfd >= 0)
        close(sfd);
    return rc == 0 && restart ? TLSBOX_EXIT_RESTART : rc;
}
