/* The control socket: the JSON API on AF_UNIX, by default
 * "<state_dir>/control.sock" (packaged: /run/tlsbox/control.sock), mode 0600:
 * reachable only by root and the user the daemon runs as. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/api.h"
#include "core/api_mhd.h"
#include "core/log.h"
#include "core/settings.h"
#include "core/xalloc.h"

static struct MHD_Daemon *control_daemon;
static char *control_path;
static struct api_mhd_ctx control_ctx = {.user = "control"};

__attribute__((format(printf, 2, 0))) static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    /* MHD's messages end in a newline that log_vmsg folds away. */
    log_vmsg("control", TLSBOX_LOG_WARN, fmt, ap);
}

static int control_fd = -1;

/* @p path as an AF_UNIX address; -ENAMETOOLONG (logged) when it does not fit. */
static int control_addr(const char *path, struct sockaddr_un *sa)
{
    *sa = (struct sockaddr_un){.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa->sun_path) {
        log_err("control socket path %s is too long (max %zu bytes)", path,
                sizeof sa->sun_path - 1);
        return -ENAMETOOLONG;
    }
    strcpy(sa->sun_path, path);
    return 0;
}

int control_in_use(const char *path)
{
    struct sockaddr_un sa;
    if (control_addr(path, &sa) < 0)
        return 0; /* control_listen says so */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int live = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    if (live)
        log_err("another tlsboxd is already running on %s", path);
    return live;
}

int control_listen(const char *path)
{
    struct sockaddr_un sa;
    int rc = control_addr(path, &sa);
    if (rc < 0)
        return rc;
    /* A stale socket from a crashed run would make bind fail; a live daemon
     * would answer a connect, so only unlink when nobody does.  Anything
     * but a socket there is a wrong path (--control-socket naming the store,
     * say): never delete it. */
    if (control_in_use(path))
        return -EADDRINUSE;
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode)) {
        log_err("control socket %s: something that is not a socket is there; left as it is "
                "(remove it or name another path)",
                path);
        return -EEXIST;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        int e = errno;
        log_err("control socket: %s", strerror(e));
        return -e;
    }
    unlink(path);
    mode_t old = umask(0177);
    rc = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (rc < 0 || listen(fd, 32) < 0) {
        int e = errno;
        log_err("control socket %s: %s", path, strerror(e));
        close(fd);
        return -e;
    }
    control_fd = fd;
    control_path = xstrdup(path);
    return 0;
}

int control_start(void)
{
    int fd = control_fd;
    control_fd = -1;
    control_ctx.max_body = (size_t)settings_get_int("core.api_max_body", 1 << 20);
    control_daemon = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG | MHD_USE_POLL, 0, NULL, NULL,
        api_mhd_access, &control_ctx, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
        MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
        MHD_OPTION_NOTIFY_COMPLETED, api_mhd_completed, NULL, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned)64, MHD_OPTION_END);
    if (!control_daemon) {
        log_err("control socket %s: libmicrohttpd did not start", control_path);
        close(fd);
        unlink(control_path);
        return -EIO;
    }
    return 0;
}

void control_stop(void)
{
    if (control_fd >= 0) {
        close(control_fd);
        control_fd = -1;
    }
    if (control_daemon) {
        MHD_stop_daemon(control_daemon);
        control_daemon = NULL;
    }
    if (control_path) {
        unlink(control_path);
        free(control_path);
        control_path = NULL;
    }
}
