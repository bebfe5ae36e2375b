/* Privilege drop.  Started as root (by hand, by an init script, by a test),
 * tlsboxd binds its ports and opens its store as root, then becomes the
 * unprivileged service user before it announces itself ready.  Started by
 * systemd as User=tlsbox with AmbientCapabilities=CAP_NET_BIND_SERVICE, or as
 * an ordinary user in demo mode, there is no user to change: only the
 * capabilities are dropped. */
#include "core/privdrop.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/log.h"
#include "core/xalloc.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PRIVDROP_CLANG_ASAN 1
#endif
#endif
#ifndef PRIVDROP_CLANG_ASAN
#define PRIVDROP_CLANG_ASAN 0
#endif

void privdrop_early(void)
{
    umask(077);
    /* No exec of a set-uid program can ever give privileges back.  Set before
     * the first thread starts: the flag is per thread and inherited. */
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        log_warn("PR_SET_NO_NEW_PRIVS: %s", strerror(errno));
}

/* Empty effective, permitted and inheritable sets, and no ambient ones, for
 * the calling thread (capabilities are per thread: see privdrop_apply). */
static int drop_caps(void)
{
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return -errno;
    if (syscall(SYS_capset, &hdr, data) < 0)
        return -errno;
    return 0;
}

/* Root-owned files directly in the state directory (the store and its WAL
 * files, the control socket) go to the service user, which must write them
 * after the drop.  Subdirectories (a site root kept there) are left alone:
 * their owner decides what the service may read. */
static int give_state_files(const char *dir, uid_t uid, gid_t gid, char **err)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        xset_err(err, "%s: %s", dir, strerror(errno));
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    int rc = fchown(dfd, uid, gid);
    struct dirent *e;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        struct stat st;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_uid != 0 ||
            !(S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode)))
            continue;
        rc = fchownat(dfd, e->d_name, uid, gid, AT_SYMLINK_NOFOLLOW);
    }
    if (rc < 0)
        xset_err(err, "%s: cannot give it to the service user: %s", dir, strerror(errno));
    closedir(d);
    return rc;
}

static int lookup(const char *user, struct passwd *pw, char **buf, char **err)
{
    struct passwd *found = NULL;
    size_t n = 16384;
    *buf = xmalloc(n);
    int e = getpwnam_r(user, pw, *buf, n, &found);
    if (!found) {
        xset_err(err,
                 "started as root, tlsboxd runs as the user '%s' once its ports are bound, "
                 "but %s%s: create it (adduser --system --group %s) or name another with "
                 "--user or the core.user setting",
                 user, e ? "looking it up failed: " : "there is no such user", e ? strerror(e) : "",
                 user);
        return -1;
    }
    if (pw->pw_uid == 0 || pw->pw_gid == 0) {
        xset_err(err, "user '%s': uid %u gid %u; tlsboxd does not serve the network as root", user,
                 (unsigned)pw->pw_uid, (unsigned)pw->pw_gid);
        return -1;
    }
    return 0;
}

static int become(const struct passwd *pw, char **err)
{
    /* glibc applies each set*id call to every thread of the process, so the
     * threads started before the drop (jobs, timers, the site's workers)
     * change with this one; leaving uid 0 also empties their capability
     * sets (no PR_SET_KEEPCAPS). */
    if (setgroups(0, NULL) < 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
        setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0) {
        xset_err(err, "cannot become user '%s': %s", pw->pw_name, strerror(errno));
        return -1;
    }
    if (setuid(0) == 0 || geteuid() == 0) {
        xset_err(err, "user '%s': root could be regained; stopping", pw->pw_name);
        return -1;
    }
    return 0;
}

int privdrop_apply(const char *user, const char *state_dir, const char *control_socket, char **err)
{
    if (geteuid() != 0) {
        /* systemd's User=tlsbox with CAP_NET_BIND_SERVICE, or demo mode.  The
         * capability is dropped for this thread; threads started earlier keep
         * what systemd gave (CAP_NET_BIND_SERVICE at most: the unit's
         * bounding set). */
        int rc = drop_caps();
        if (rc < 0)
            log_warn("dropping capabilities: %s", strerror(-rc));
        return 0;
    }
    struct passwd pw;
    char *buf = NULL;
    int rc = lookup(user, &pw, &buf, err);
    if (rc == 0)
        rc = give_state_files(state_dir, pw.pw_uid, pw.pw_gid, err);
    if (rc == 0 && control_socket && lchown(control_socket, pw.pw_uid, pw.pw_gid) < 0) {
        xset_err(err, "%s: %s", control_socket, strerror(errno));
        rc = -1;
    }
    if (rc == 0)
        rc = become(&pw, err);
    if (rc == 0) {
#if defined(__SANITIZE_ADDRESS__) || PRIVDROP_CLANG_ASAN
        /* A changed uid makes the process non-dumpable, and LeakSanitizer's
         * check at exit needs to ptrace the threads: sanitizer builds only. */
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
#endif
        log_info("running as user %s (uid %u, gid %u), no capabilities", pw.pw_name,
                 (unsigned)pw.pw_uid, (unsigned)pw.pw_gid);
    }
    free(buf);
    return rc;
}
