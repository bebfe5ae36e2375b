/* One DH parameter generation, in a child process.  A child rather than a
 * thread because GnuTLS's generator cannot be interrupted: at stop the job
 * kills the child and the daemon is never held up (4096 bits take minutes
 * on a Raspberry Pi).  The child runs at SCHED_IDLE and nice 19, so it only
 * takes CPU time nothing else wants; the site workers are untouched.
 *
 * The forked child makes only async-signal-safe calls and then execs the
 * host's own binary as "tlsboxd --generate-dh BITS" (core/dh_generate.h),
 * which generates in a fresh process.  Generating in the forked copy of the
 * multi-threaded daemon itself could hang for ever on a lock another thread
 * held at fork() (seen: the sanitizer allocator's, in 1 start in 10). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/dh_generate.h"
#include "plugins/dhparam/dhparam.h"

#define GEN_PEM_MAX 16384
#define GEN_POLL_MS 200

/* The child: lower its priority, make @p fd its standard output, exec the
 * generator.  Async-signal-safe calls only (see the top of the file). */
static void __attribute__((noreturn)) gen_child(int fd, pid_t parent, char *const argv[], bool idle)
{
    /* Die with the daemon (a crash must not leave an orphan burning CPU);
     * kept across execve(). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(3);
    /* A process group of its own: a stop signalled to tlsboxd's group
     * (Ctrl-C on tlsboxd --foreground, kill -- -PGID) reaches tlsboxd
     * alone, which kills this child and records the run "interrupted";
     * killed by that signal first, the run was recorded "failed". */
    setpgid(0, 0);
    if (dup2(fd, STDOUT_FILENO) < 0)
        _exit(3);
    /* Hold nothing of the daemon's: listening sockets, the store. */
    close_range(3, ~0U, 0);
    /* Nor its signal mask: the daemon blocks SIGTERM, SIGINT and SIGHUP in
     * every thread (it reads them from a signalfd), and execve keeps the
     * mask, so the generator would ignore a kill or systemd's SIGTERM. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (idle) {
        struct sched_param sp = {0};
        sched_setscheduler(0, SCHED_IDLE, &sp);
        setpriority(PRIO_PROCESS, 0, 19);
    }
    execv("/proc/self/exe", argv);
    _exit(4);
}

static void set_pid(struct dhparam *d, pid_t pid)
{
    pthread_mutex_lock(&d->lock);
    d->cur.pid = pid;
    pthread_mutex_unlock(&d->lock);
}

/* Read the child's output until EOF; -ECANCELED when the job is cancelled. */
static int gen_read(struct dhparam *d, struct tlsbox_job *job, int fd, char *buf, size_t *len)
{
    for (;;) {
        if (d->host->job_cancelled(job) || dhparam_run_superseded(d))
            return -ECANCELED;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int r = poll(&pfd, 1, GEN_POLL_MS);
        if (r < 0 && errno != EINTR)
            return -EIO;
        if (r <= 0)
            continue;
        ssize_t n = read(fd, buf + *len, GEN_PEM_MAX - *len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -EIO;
        if (n == 0)
            return 0;
        *len += (size_t)n;
        if (*len >= GEN_PEM_MAX)
            return -EIO;
    }
}

int dhparam_gen(struct dhparam *d, struct tlsbox_job *job, int bits, bool idle, char **pem,
                char **err)
{
    int fds[2], status = 0;
    size_t len = 0;
    *pem = NULL;
    *err = NULL;
    if (pipe2(fds, O_CLOEXEC) < 0) {
        *err = strdup("cannot make a pipe for the generator");
        return -EIO;
    }
    /* Everything the child needs is made before fork(). */
    char bits_arg[16];
    snprintf(bits_arg, sizeof(bits_arg), "%d", bits);
    char *argv[] = {"tlsboxd", TLSBOX_DH_GENERATE_OPTION, bits_arg, NULL};
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0)
        gen_child(fds[1], parent, argv, idle); /* fds[0] is O_CLOEXEC */
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        *err = strdup("cannot start the generator process");
        return -EIO;
    }
    set_pid(d, pid);
    char *buf = malloc(GEN_PEM_MAX + 1);
    int rc = buf ? gen_read(d, job, fds[0], buf, &len) : -ENOMEM;
    close(fds[0]);
    if (rc < 0)
        kill(pid, SIGKILL); /* nothing it holds needs cleaning up */
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    set_pid(d, 0);
    if (rc == -ECANCELED) {
        free(buf);
        return rc;
    }
    if (rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 && len > 0) {
        buf[len] = 0;
        *pem = buf;
        return 0;
    }
    free(buf);
    char msg[96];
    if (WIFEXITED(status) && WEXITSTATUS(status) == 4)
        snprintf(msg, sizeof(msg), "cannot start the generator (tlsboxd %s)",
                 TLSBOX_DH_GENERATE_OPTION);
    else if (WIFSIGNALED(status))
        snprintf(msg, sizeof(msg), "the generator process died of signal %d", WTERMSIG(status));
    else
        snprintf(msg, sizeof(msg), "the generator process failed (exit %d)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    *err = strdup(msg);
    return -EIO;
}
