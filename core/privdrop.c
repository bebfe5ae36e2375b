/* Privilege drop, in two steps, so that no thread of tlsboxd ever serves as
 * root and none keeps a capability:
 *  1. privdrop_user(), before the first thread starts: started as root
 *     (by hand, an init script, a test), give the service user the state
 *     directory and the store's files and become it, keeping
 *     CAP_NET_BIND_SERVICE alone;
 *     started by systemd as User=tlsbox with that capability ambient, or as
 *     an ordinary user in demo mode, there is no user to change.
 *  2. privdrop_finish(), once every plugin has started (and bound its
 *     ports): every thread empties its capability sets.  Capabilities are
 *     per thread and threads inherit them, so each thread is signalled
 *     (TLSBOX_SIGNAL_CAPDROP) to drop its own; /proc is then read back until
 *     no thread holds one. */
#include "core/privdrop.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/store.h"
#include "core/xalloc.h"
#include "tlsbox/plugin.h"

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

/* Only CAP_NET_BIND_SERVICE in the effective and permitted sets (if held at
 * all), none inheritable, no ambient ones: the state between becoming the
 * service user and privdrop_finish. */
static int keep_bind_cap_only(void)
{
    struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &hdr, data) < 0)
        return -errno;
    uint32_t bind = 1u << CAP_NET_BIND_SERVICE; /* capability 10: in the first word */
    uint32_t held = data[0].permitted & bind;
    memset(data, 0, sizeof data);
    data[0].permitted = data[0].effective = held;
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return -errno;
    if (syscall(SYS_capset, &hdr, data) < 0)
        return -errno;
    return 0;
}

/* @p name is the store file @p store or one SQLite keeps beside it. */
static int is_store_file(const char *name, const char *store)
{
    size_t n = strlen(store);
    if (strncmp(name, store, n) != 0)
        return 0;
    name += n;
    return !*name || !strcmp(name, "-wal") || !strcmp(name, "-shm") || !strcmp(name, "-journal");
}

/* The state directory and the store's root-owned files in it (the database,
 * its WAL, shm and journal) go to the service user, which must write them
 * after the drop.  Nothing else there is given away: a state directory
 * named by mistake (--state-dir . or /etc) must not hand the service user
 * root's files.  Subdirectories (a site root kept there) are left alone:
 * their owner decides what the service may read. */
static int give_state_files(const char *dir, uid_t uid, gid_t gid, char **err)
{
    const char *store = strrchr(store_path(), '/');
    store = store ? store + 1 : store_path();
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
        if (!is_store_file(e->d_name, store) ||
            fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_uid != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        rc = fchownat(dfd, e->d_name, uid, gid, AT_SYMLINK_NOFOLLOW);
    }
    if (rc < 0)
        xset_err(err, "%s: cannot give it to the service user: %s", dir, strerror(errno));
    closedir(d);
    return rc;
}

/* The state directory as tlsboxd found it, before the store was opened in
 * it (privdrop_check_state_dir): what privdrop_user() may give away. */
static struct {
    int existed;     /* it was there before this start */
    uid_t uid;       /* its owner then */
    int store;       /* it held a store */
    char other[256]; /* an entry in it tlsboxd does not make ("" if none) */
} seen;

/* Whether the entry @p name (stat @p st) of a state directory is one tlsboxd
 * makes there itself: the store and SQLite's files beside it, the control
 * socket, the demo's sample site (www/, counted only beside a store: see
 * note_state_dir).  Sets *store for the store itself. */
static int made_by_tlsboxd(const char *name, const struct stat *st, int *store)
{
    if (is_store_file(name, STORE_FILE) && S_ISREG(st->st_mode)) {
        *store |= strcmp(name, STORE_FILE) == 0;
        return 1;
    }
    return (strcmp(name, "control.sock") == 0 && S_ISSOCK(st->st_mode)) ||
           (strcmp(name, "www") == 0 && S_ISDIR(st->st_mode));
}

/* Note in seen what @p dir holds; 0, or -1 if it cannot be read (store_init
 * then says why). */
static int note_state_dir(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    DIR *d = dfd >= 0 && fstat(dfd, &st) == 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    seen.existed = 1;
    seen.uid = st.st_uid;
    /* The root of a file system (a new disk mounted for the state): its
     * lost+found is mkfs's, not a sign of someone's files.  It stays
     * root's: give_state_files() leaves subdirectories alone. */
    struct stat up;
    int fs_root =
        fstatat(dfd, "..", &up, 0) == 0 && (up.st_dev != st.st_dev || up.st_ino == st.st_ino);
    int www = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        struct stat est;
        int got = fstatat(dfd, e->d_name, &est, AT_SYMLINK_NOFOLLOW) == 0;
        if (got && fs_root && !strcmp(e->d_name, "lost+found") && S_ISDIR(est.st_mode))
            continue;
        if (got && made_by_tlsboxd(e->d_name, &est, &seen.store)) {
            www |= strcmp(e->d_name, "www") == 0;
            continue;
        }
        if (!seen.other[0])
            snprintf(seen.other, sizeof seen.other, "%s", e->d_name);
    }
    closedir(d);
    /* A www/ alone is a web server's site as likely as the demo's (/srv). */
    if (www && !seen.store && !seen.other[0])
        snprintf(seen.other, sizeof seen.other, "www");
    return 0;
}

/* The refusal of refuse_takeover(), for the service user @p user (NULL: not
 * known yet, core.user in the store there). */
static int refuse_named(const char *dir, const char *user, char **err)
{
    char buf[4096], owner[64];
    struct passwd opw, *o = NULL;
    getpwuid_r(seen.uid, &opw, buf, sizeof buf, &o);
    if (o)
        snprintf(owner, sizeof owner, "%s", o->pw_name);
    else
        snprintf(owner, sizeof owner, "uid %u", (unsigned)seen.uid);
    char *who = user ? xasprintf("'%s'", user) : xstrdup("(core.user in its store)");
    xset_err(err,
             "%s: refused as the state directory: it was there before, belongs to %s, not to "
             "the service user %s, and holds '%s', which tlsboxd did not make; started as "
             "root, tlsboxd gives its state directory to that user. Name a new or empty "
             "directory with --state-dir, or chown %s: %s first if this one is meant for tlsboxd",
             dir, owner, who, seen.other, user ? user : "USER", dir);
    free(who);
    return -1;
}

/* Started as root, privdrop_user() gives the state directory itself to the
 * service user: a directory that was there already, holds anything besides
 * what tlsboxd makes and is not that user's (--state-dir /etc by mistake)
 * must not change hands.  One tlsboxd created, an empty one, or one that is
 * the service user's already (/var/lib/tlsbox from the package) may. */
static int refuse_takeover(const char *dir, const struct passwd *pw, char **err)
{
    if (!seen.existed || !seen.other[0] || seen.uid == pw->pw_uid)
        return 0;
    return refuse_named(dir, pw->pw_name, err);
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

/* Before the first thread: leave root for @pw keeping CAP_NET_BIND_SERVICE
 * alone, in this thread only, for the ports the plugins bind when they start.
 * Every other capability leaves the bounding set first (while this thread
 * still has CAP_SETPCAP), so none can come back. */
static int become(const struct passwd *pw, char **err)
{
    for (int c = 0; c <= CAP_LAST_CAP; c++)
        if (c != CAP_NET_BIND_SERVICE && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 &&
            errno != EINVAL) {
            xset_err(err, "cannot drop capability %d from the bounding set: %s", c,
                     strerror(errno));
            return -1;
        }
    if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 || setgroups(0, NULL) < 0 ||
        setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
        setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0 ||
        prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0) {
        xset_err(err, "cannot become user '%s': %s", pw->pw_name, strerror(errno));
        return -1;
    }
    int rc = keep_bind_cap_only();
    if (rc < 0) {
        xset_err(err, "user '%s': cannot keep CAP_NET_BIND_SERVICE: %s", pw->pw_name,
                 strerror(-rc));
        return -1;
    }
    if (setuid(0) == 0 || geteuid() == 0) {
        xset_err(err, "user '%s': root could be regained; stopping", pw->pw_name);
        return -1;
    }
    return 0;
}

/* Threads that exist before tlsboxd starts its first one are not its own:
 * under qemu-user (the arm64 and armhf package checks) the emulator runs a
 * host thread of its own that blocks every signal and can run no guest
 * code; a ThreadSanitizer build has one too.  They are noted by
 * privdrop_user() and left alone by the drop. */
static pid_t foreign_tids[16];
static int n_foreign;

#if defined(__SANITIZE_THREAD__)
#define TLSBOX_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TLSBOX_TSAN 1
#endif
#endif

#ifdef TLSBOX_TSAN
static void *no_op(void *arg)
{
    return arg;
}

/* ThreadSanitizer starts a runtime thread of its own at the first
 * pthread_create, and that thread blocks every signal, as qemu-user's does:
 * start (and join) one thread now, so that it exists to be noted. */
static void start_sanitizer_thread(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, no_op, NULL) == 0)
        pthread_join(t, NULL);
}
#else
static void start_sanitizer_thread(void)
{
}
#endif

static void note_foreign_threads(void)
{
    start_sanitizer_thread();
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    pid_t self = (pid_t)syscall(SYS_gettid);
    struct dirent *e;
    n_foreign = 0;
    while ((e = readdir(d)) != NULL &&
           n_foreign < (int)(sizeof foreign_tids / sizeof *foreign_tids))
        if (e->d_name[0] != '.' && atoi(e->d_name) != self)
            foreign_tids[n_foreign++] = (pid_t)atoi(e->d_name);
    closedir(d);
}

static int is_foreign(pid_t tid)
{
    for (int i = 0; i < n_foreign; i++)
        if (foreign_tids[i] == tid)
            return 1;
    return 0;
}

/* The core.user kept in the store of @p dir, read without writing there:
 * 1 with *user set (NULL: not set, so the default), or 0 if it cannot be
 * told now (privdrop_user() checks once the store is open).  The store is
 * opened read-only and immutable: no lock, no -wal or -shm created, no
 * migration.  Immutable ignores a -wal file, so a store with a non-empty
 * one (its newest settings may be there only) is left for later. */
static int stored_user(const char *dir, char **user)
{
    *user = NULL;
    char *path = xasprintf("%s/%s", dir, STORE_FILE);
    char *wal = xasprintf("%s-wal", path);
    struct stat st, wst;
    int known = lstat(path, &st) == 0 && S_ISREG(st.st_mode) &&
                (lstat(wal, &wst) < 0 ? errno == ENOENT : wst.st_size == 0);
    free(wal);
    if (!known || st.st_size == 0) { /* an empty file holds no setting */
        free(path);
        return known;
    }
    /* A URI, for immutable=1: '%', '?' and '#' in the path are escaped. */
    size_t n = strlen(path);
    char *uri = xmalloc(3 * n + 32), *u = uri + sprintf(uri, "file:");
    for (const char *c = path; *c; c++)
        u += strchr("%?#", *c) ? sprintf(u, "%%%02X", (unsigned char)*c) : sprintf(u, "%c", *c);
    strcpy(u, "?immutable=1");
    free(path);
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    int rc = 0;
    if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOFOLLOW,
                        NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT value FROM settings WHERE key = 'core.user'", -1, &q,
                           NULL) == SQLITE_OK) {
        int step = sqlite3_step(q);
        if (step == SQLITE_ROW && sqlite3_column_text(q, 0))
            *user = xstrdup((const char *)sqlite3_column_text(q, 0));
        rc = step == SQLITE_ROW || step == SQLITE_DONE;
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    free(uri);
    return rc;
}

/* How many leading directories of @p path (absolute) user @p pw may pass
 * through (search permission), told by a child that becomes that user as
 * become() does (uid, primary gid, no other group), so that ACLs count as
 * the kernel counts them; -1 when it cannot be told.  Before any thread. */
static int passable_depth(const char *path, const struct passwd *pw)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        if (setgroups(0, NULL) < 0 || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) < 0 ||
            setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) < 0)
            _exit(255);
        char *p = strdup(path);
        int depth = 0;
        for (char *slash = p ? strchr(p + 1, '/') : NULL; slash && depth < 254;
             slash = strchr(slash + 1, '/'), depth++) {
            *slash = '\0';
            int pass = access(p, X_OK) == 0 || errno != EACCES;
            *slash = '/';
            if (!pass)
                break;
        }
        _exit(p ? depth : 255);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) != 255 ? WEXITSTATUS(st) : -1;
}

/*
 * Started as root, tlsboxd opens the store in @p dir as the service user
 * @p pw from privdrop_user() on: every directory above @p dir must let that
 * user through (the state directory itself it is given).  One that does
 * not (a home directory, 0700 on Debian 12) would leave tlsboxd running
 * and "ready" with a store it cannot open, refusing every change: refused
 * here, naming it.
 */
static int check_reach(const char *dir, const struct passwd *pw, char **err)
{
    char cwd[4096];
    char *path = dir[0] == '/'             ? xstrdup(dir)
                 : getcwd(cwd, sizeof cwd) ? xasprintf("%s/%s", cwd, dir)
                                           : NULL;
    if (!path)
        return 0; /* the store's own open says what is wrong */
    int parents = 0;
    for (const char *c = path + 1; *c; c++)
        parents += *c == '/' && c[1] != '\0';
    int depth = passable_depth(path, pw);
    if (depth < 0 || depth >= parents || depth >= 254) {
        free(path);
        return 0;
    }
    char *end = path;
    for (int i = 0; i <= depth; i++)
        end = strchr(end + 1, '/');
    *end = '\0';
    struct stat st = {0};
    char buf[4096], owner[64];
    struct passwd opw, *o = NULL;
    if (stat(path, &st) == 0)
        getpwuid_r(st.st_uid, &opw, buf, sizeof buf, &o);
    if (o)
        snprintf(owner, sizeof owner, "%s", o->pw_name);
    else
        snprintf(owner, sizeof owner, "uid %u", (unsigned)st.st_uid);
    xset_err(err,
             "%s: the service user '%s' cannot reach the store there: it may not pass through "
             "%s (mode %03o, owner %s); started as root, tlsboxd opens its store as that user. "
             "Let it through (chmod o+x %s, or an ACL for it) or name a state directory it can "
             "reach with --state-dir",
             dir, pw->pw_name, path, (unsigned)(st.st_mode & 07777), owner, path);
    free(path);
    return -1;
}

/* The state directory can be reached by the service user (--user, else the
 * last --set core.user: @p user, else the default): -1 with *err if it
 * cannot.  An unknown user is left for privdrop_user() to report. */
static int check_reach_named(const char *dir, const char *user, char **err)
{
    struct passwd pw;
    char *buf = NULL;
    int rc = lookup(user ? user : "tlsbox", &pw, &buf, NULL) < 0 ? 0 : check_reach(dir, &pw, err);
    free(buf);
    return rc;
}

int privdrop_check_state_dir(const char *state_dir, const char *user, char **err)
{
    memset(&seen, 0, sizeof seen);
    if (geteuid() != 0)
        return 0;
    if (note_state_dir(state_dir) < 0 || !seen.other[0])
        return seen.store && !user ? 0 : check_reach_named(state_dir, user, err);
    /* The service user may be a core.user kept in that store.  That user is
     * never root (lookup), so a directory of root's is refused at once;
     * otherwise the store is read without writing to it, so that another
     * user's directory is refused before the store is opened (and
     * migrated).  What cannot be read now privdrop_user() checks later. */
    char *kept = NULL;
    if (!user && seen.store) {
        if (seen.uid == 0)
            return refuse_named(state_dir, NULL, err);
        if (!stored_user(state_dir, &kept))
            return 0;
        user = kept;
    }
    struct passwd pw;
    char *buf = NULL;
    int rc = lookup(user ? user : "tlsbox", &pw, &buf, err);
    if (rc == 0)
        rc = refuse_takeover(state_dir, &pw, err);
    if (rc == 0)
        rc = check_reach(state_dir, &pw, err);
    free(buf);
    free(kept);
    return rc;
}

int privdrop_user(const char *user, const char *state_dir, const char *control_socket, char **err)
{
    note_foreign_threads();
    if (geteuid() != 0) {
        /* systemd's User=tlsbox with CAP_NET_BIND_SERVICE, or demo mode: no
         * user to change.  Ambient and inheritable sets go now (nothing this
         * daemon executes gets a capability); the bind capability, if
         * systemd gave it, stays until privdrop_finish. */
        int rc = keep_bind_cap_only();
        if (rc < 0)
            log_warn("dropping capabilities: %s", strerror(-rc));
        return 0;
    }
    struct passwd pw;
    char *buf = NULL;
    int rc = lookup(user, &pw, &buf, err);
    if (rc == 0)
        rc = refuse_takeover(state_dir, &pw, err);
    if (rc == 0)
        rc = check_reach(state_dir, &pw, err);
    if (rc == 0)
        rc = give_state_files(state_dir, pw.pw_uid, pw.pw_gid, err);
    if (rc == 0 && control_socket && lchown(control_socket, pw.pw_uid, pw.pw_gid) < 0) {
        xset_err(err, "%s: %s", control_socket, strerror(errno));
        rc = -1;
    }
    if (rc == 0)
        rc = become(&pw, err);
    if (rc == 0) {
        /* A changed uid makes the process non-dumpable: /proc/PID/fd and
         * friends become root's.  Started by systemd as User=tlsbox it is
         * dumpable, and uid tlsbox owns the store anyway, so nothing is
         * hidden from it by that; dumpable, a second tlsboxd (also tlsbox)
         * can name the process holding its port, and LeakSanitizer can
         * ptrace the threads at exit. */
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
        log_debug("became user %s (uid %u, gid %u), CAP_NET_BIND_SERVICE kept until the "
                  "plugins have started",
                  pw.pw_name, (unsigned)pw.pw_uid, (unsigned)pw.pw_gid);
    }
    free(buf);
    return rc;
}

/* The capability sets of one of this process's threads, from
 * /proc/self/task/TID/status: 1 if any of CapInh, CapPrm, CapEff, CapAmb is
 * not empty, 0 if all are, -1 if the thread is gone. */
static int task_has_caps(const char *tid, char *comm, size_t commlen)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%.20s/status", tid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    static const char *const sets[] = {"CapInh:", "CapPrm:", "CapEff:", "CapAmb:"};
    char line[256];
    int any = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "Name:\t", 6) == 0) {
            snprintf(comm, commlen, "%.*s", (int)strcspn(line + 6, "\n"), line + 6);
            continue;
        }
        for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
            if (strncmp(line, sets[i], 7) == 0 && strtoull(line + 7, NULL, 16) != 0)
                any = 1;
    }
    fclose(f);
    return any;
}

static void on_capdrop_signal(int sig)
{
    (void)sig;
    int e = errno;
    drop_caps();
    errno = e;
}

/* One pass over the threads: signal each that still holds a capability.
 * Returns how many do; the last one's name and tid go to @who. */
static int signal_holders(int sig, int resend, char *who, size_t wholen)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -errno;
    pid_t self = (pid_t)syscall(SYS_gettid);
    int held = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char comm[64] = "?";
        if (e->d_name[0] == '.' || atoi(e->d_name) == self || is_foreign(atoi(e->d_name)) ||
            task_has_caps(e->d_name, comm, sizeof comm) != 1)
            continue;
        held++;
        snprintf(who, wholen, "thread %.20s (%.63s)", e->d_name, comm);
        if (resend)
            syscall(SYS_tgkill, getpid(), atoi(e->d_name), sig);
    }
    closedir(d);
    return held;
}

int privdrop_finish(char **err)
{
    int sig = TLSBOX_SIGNAL_CAPDROP;
    struct sigaction sa = {.sa_handler = on_capdrop_signal, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL) < 0) {
        xset_err(err, "capability drop: sigaction: %s", strerror(errno));
        return -1;
    }
    int rc = drop_caps();
    if (rc < 0) {
        xset_err(err, "dropping capabilities: %s", strerror(-rc));
        return -1;
    }
    /* Threads cannot be made to drop theirs from here: each one runs the
     * handler itself.  Ask again every 100 ms for 2 s, until none holds one
     * (a thread started by a thread that had not dropped yet is caught by
     * the next pass). */
    char who[128] = "";
    int held = 0;
    for (int round = 0; round < 200; round++) {
        held = signal_holders(sig, round % 10 == 0, who, sizeof who);
        if (held <= 0)
            break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (held != 0) {
        xset_err(err,
                 held < 0 ? "capability drop: cannot list this process's threads: %s"
                          : "%s still holds a capability after 2 s: it blocks signal %d "
                            "(SIGRTMIN+%d), which the plugin kit says every thread must take; "
                            "tlsboxd does not serve with capabilities",
                 held < 0 ? strerror(-held) : who, sig, sig - SIGRTMIN);
        return -1;
    }
    if (n_foreign)
        log_info("%d thread%s not started by tlsboxd (an emulator's or a sanitizer's own) "
                 "left as %s",
                 n_foreign, n_foreign == 1 ? "" : "s", n_foreign == 1 ? "it is" : "they are");
    char buf[4096];
    struct passwd pw, *found = NULL;
    getpwuid_r(getuid(), &pw, buf, sizeof buf, &found);
    log_info("running as user %s (uid %u, gid %u), no capabilities in any thread",
             found ? found->pw_name : "?", (unsigned)getuid(), (unsigned)getgid());
    return 0;
}
