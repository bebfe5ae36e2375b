/* tlsboxctl backup FILE|- | restore FILE|-: the whole store (certificates
 * and their keys, settings, the TLS policy and its history, accounts, plugin
 * tables) as one SQLite file, and back; "-" is standard output or input.
 *
 * Both work on the store file itself, not through the daemon: a backup must
 * be possible when tlsboxd does not start, and a restore must not happen
 * under a running one.  The backup is SQLite's online backup, so it is one
 * consistent snapshot even while tlsboxd writes (the store is in WAL mode). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cli/ctl.h"
#include "core/store.h"
#include "core/xalloc.h"

/* The tables every tlsbox store has had since schema 1. */
static const char *const core_tables[] = {"settings", "certificates", "policy_versions",
                                          "admin_users"};

static int newest_schema(void)
{
    int v = 0;
    for (int i = 0; i < store_migrations_count; i++)
        if (store_migrations[i].version > v)
            v = store_migrations[i].version;
    return v;
}

/* One integer from @p sql, or -1 (no such table, ...). */
static long long one_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    long long v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* What a store holds, in one line, for the user to recognise it. */
static char *describe(sqlite3 *db)
{
    return xasprintf(
        "schema %lld, %lld certificates, %lld settings, TLS policy version %lld, %lld admin "
        "users",
        one_int(db, "PRAGMA user_version"), one_int(db, "SELECT count(*) FROM certificates"),
        one_int(db, "SELECT count(*) FROM settings"),
        one_int(db, "SELECT ifnull(max(id), 0) FROM policy_versions WHERE active = 1"),
        one_int(db, "SELECT count(*) FROM admin_users"));
}

static int open_ro(const char *path, sqlite3 **db)
{
    int rc = sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW, NULL);
    if (*db)
        sqlite3_busy_timeout(*db, 5000);
    return rc == SQLITE_OK ? 0 : -1;
}

/* NULL when SQLite's integrity check finds @p db whole, else what it
 * found first (caller frees). */
static char *integrity(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    char *bad = NULL;
    if (sqlite3_prepare_v2(db, "PRAGMA integrity_check(1)", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW)
        bad = xstrdup(sqlite3_errmsg(db));
    else {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        if (!t || strcmp(t, "ok") != 0)
            bad = xstrdup(t ? t : "no answer");
    }
    sqlite3_finalize(st);
    return bad;
}

/* The files SQLite may put beside a database named NAME: NAME-journal,
 * NAME-wal, NAME-shm (with "" first, for NAME itself). */
static const char *const sqlite_sides[] = {"", "-journal", "-wal", "-shm"};
#define N_SQLITE_SIDES (sizeof sqlite_sides / sizeof *sqlite_sides)

static void guard_file(const char *file);
static void stop_set(sigset_t *set);

/* fsync a file or directory by name; 0 or -1. */
static int sync_path(const char *path, int dir)
{
    int fd = open(path, (dir ? O_RDONLY | O_DIRECTORY : O_RDWR) | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/*
 * rename(2) that never replaces: -1 with EEXIST when @p to exists.  The check
 * before the copy is not enough: a copy takes seconds, and a file may appear
 * at @p to meanwhile (another backup to the same name, a user's file), which
 * plain rename() would silently replace.  RENAME_NOREPLACE makes the check and
 * the rename one step.  A file system without it (EINVAL: an NFS share, FAT
 * before Linux 4.9) gets the check again just before the rename.
 */
static int rename_noreplace(const char *from, const char *to)
{
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
    struct stat sb;
    if (lstat(to, &sb) == 0) {
        errno = EEXIST;
        return -1;
    }
    return rename(from, to);
}

/*
 * Copy store @p src into the new file @p to (created 0600, never over an
 * existing one nor through a symbolic link) with SQLite's online backup, in
 * rollback-journal mode (a single file, no -wal beside it), synced.  When
 * @p no_sessions, the copy is emptied of web UI sessions.  0, or -1 with the
 * reason printed.  @p to is removed on a signal from its creation on.
 */
static int copy_store(sqlite3 *src, const char *to, int no_sessions)
{
    /* Guarded only once it is ours: the handler must never remove a file
     * that was there before (O_EXCL failed), and none may land between. */
    sigset_t stop, old;
    stop_set(&stop);
    sigprocmask(SIG_BLOCK, &stop, &old);
    int fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int e = errno;
    if (fd >= 0)
        guard_file(to);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (fd < 0) {
        fprintf(stderr, "tlsboxctl: %s: %s\n", to, strerror(e));
        return -1;
    }
    close(fd);
    sqlite3 *dst = NULL;
    char *whole = NULL;
    int rc = -1;
    if (sqlite3_open_v2(to, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL) != SQLITE_OK)
        goto out;
    sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
    if (!b)
        goto out;
    int step, tries = 0;
    /* Busy: tlsboxd holds a lock for a moment; try again, up to 10 s. */
    while ((step = sqlite3_backup_step(b, -1)) == SQLITE_BUSY || step == SQLITE_LOCKED) {
        if (++tries > 100)
            break;
        usleep(100 * 1000);
    }
    sqlite3_backup_finish(b);
    if (step != SQLITE_DONE || sqlite3_errcode(dst) != SQLITE_OK)
        goto out;
    if (no_sessions &&
        sqlite3_exec(dst, "DELETE FROM admin_sessions", NULL, NULL, NULL) != SQLITE_OK)
        goto out;
    if (sqlite3_exec(dst, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL) != SQLITE_OK)
        goto out;
    /* The copy is read back whole before it is called a backup. */
    if ((whole = integrity(dst)) == NULL)
        rc = 0;
out:
    if (rc < 0)
        fprintf(stderr, "tlsboxctl: %s: cannot copy the store: %s\n", to,
                whole ? whole
                : dst ? sqlite3_errmsg(dst)
                      : "out of memory");
    free(whole);
    sqlite3_close(dst);
    if (rc == 0 && sync_path(to, 0) < 0) {
        fprintf(stderr, "tlsboxctl: %s: cannot sync: %s\n", to, strerror(errno));
        rc = -1;
    }
    if (rc < 0)
        unlink(to);
    return rc;
}

/* Copy what is left of @p in to @p out; 0, or -1 with errno. */
static int copy_fd(int in, int out)
{
    char buf[65536];
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n == 0)
            return 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                return -1;
            off += w;
        }
    }
}

/* Copy file @p path to standard output; 0, or -1 with errno. */
static int cat_file(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = copy_fd(fd, STDOUT_FILENO);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/*
 * The files a copy passes through ($TMPDIR's for backup - and restore -,
 * FILE.partial, the state directory's .tlsbox.db.restoring) each hold the
 * private keys.  Ended by a signal midway (the reader of backup - gone:
 * SIGPIPE; ssh dropped: SIGHUP; Ctrl-C), tlsboxctl removes them before it
 * dies of that signal, so no copy of the keys is left where nobody looks.
 */
#define GUARD_MAX 12
static char *volatile guarded[GUARD_MAX]; /* files; set before a copy starts */
static char *volatile guarded_dir;        /* own_tmpdir's directory, or NULL */
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT};
#define N_STOP_SIGNALS (sizeof stop_signals / sizeof *stop_signals)

static void remove_guarded_and_die(int sig)
{
    for (size_t i = 0; i < GUARD_MAX; i++)
        if (guarded[i])
            unlink(guarded[i]); /* async-signal-safe, as rmdir */
    if (guarded_dir)
        rmdir(guarded_dir);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void stop_set(sigset_t *set)
{
    sigemptyset(set);
    for (size_t i = 0; i < N_STOP_SIGNALS; i++)
        sigaddset(set, stop_signals[i]);
}

static void guard_signals(void)
{
    struct sigaction sa = {.sa_handler = remove_guarded_and_die};
    stop_set(&sa.sa_mask); /* one handler at a time */
    for (size_t i = 0; i < N_STOP_SIGNALS; i++)
        sigaction(stop_signals[i], &sa, NULL);
}

/* Remove @p file, and the journal, WAL and shm SQLite may put beside it,
 * should a signal end tlsboxctl (the names are made now: the handler cannot
 * allocate). */
static void guard_file(const char *file)
{
    for (size_t s = 0; s < N_SQLITE_SIDES; s++) {
        size_t i = 0;
        while (i < GUARD_MAX && guarded[i])
            i++;
        if (i < GUARD_MAX)
            guarded[i] = xasprintf("%s%s", file, sqlite_sides[s]);
    }
}

/*
 * 0 when neither @p tmp (FILE.partial) nor a file SQLite would put beside
 * it exists, else -1 with the one found named.  Such a file is not
 * removed: it may be the user's, or a symbolic link planted to have the
 * keys written elsewhere.  A backup killed outright (SIGKILL, a crash)
 * leaves its FILE.partial, keys in it: the user hears of it here.
 */
static int partial_free(const char *tmp)
{
    for (size_t s = 0; s < N_SQLITE_SIDES; s++) {
        char *side = xasprintf("%s%s", tmp, sqlite_sides[s]);
        struct stat sb;
        const char *why = lstat(side, &sb) == 0 ? "exists"
                          : errno != ENOENT     ? strerror(errno)
                                                : NULL;
        if (why)
            fprintf(stderr,
                    "tlsboxctl: %s: %s: a backup writes its copy there first and never replaces "
                    "or follows a file; if a backup that was killed left it (it holds the "
                    "private keys), remove it, else name another FILE; nothing was written\n",
                    side, why);
        free(side);
        if (why)
            return -1;
    }
    return 0;
}

/* Nothing more to remove on a signal: the copies are gone or in place. */
static void unguard_all(void)
{
    sigset_t stop, old;
    stop_set(&stop);
    sigprocmask(SIG_BLOCK, &stop, &old);
    for (size_t i = 0; i < GUARD_MAX; i++) {
        free(guarded[i]);
        guarded[i] = NULL;
    }
    free(guarded_dir);
    guarded_dir = NULL;
    sigprocmask(SIG_SETMASK, &old, NULL);
}

/* Remove @p file (with the -wal and -shm SQLite may have put beside it)
 * and directory @p dir made by own_tmpdir. */
static void drop_tmp(const char *dir, const char *file)
{
    char *side[] = {xasprintf("%s-wal", file), xasprintf("%s-shm", file)};
    unlink(file);
    for (size_t i = 0; i < 2; i++) {
        unlink(side[i]);
        free(side[i]);
    }
    rmdir(dir);
}

/* A directory of its own (0700) under $TMPDIR for a copy that passes
 * through; NULL with why printed.  Caller frees. */
static char *own_tmpdir(void)
{
    const char *t = getenv("TMPDIR");
    char *dir = xasprintf("%s/tlsboxctl-backup.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "tlsboxctl: %s: %s\n", dir, strerror(errno));
        free(dir);
        return NULL;
    }
    guarded_dir = xstrdup(dir);
    return dir;
}

/*
 * backup FILE, or backup - for standard output (ssh box tlsboxctl backup -
 * > box.db): the copy is made in a directory of its own under $TMPDIR,
 * sent, and removed.
 */
static int cmd_backup(struct ctl *c, int argc, char **argv)
{
    if (argc != 1) {
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl backup FILE|-\n");
        return CTL_EXIT_USAGE;
    }
    bool to_stdout = strcmp(argv[0], "-") == 0;
    if (to_stdout && isatty(STDOUT_FILENO)) {
        fprintf(stderr, "tlsboxctl: backup -: standard output is a terminal: send it to a file "
                        "or a pipe (tlsboxctl backup - > FILE)\n");
        return CTL_EXIT_USAGE;
    }
    guard_signals();
    char *store = xasprintf("%s/%s", c->state_dir, STORE_FILE);
    char *tmpdir = NULL, *dest = NULL, *tmp = NULL, *what = NULL;
    sqlite3 *src = NULL;
    int rc = CTL_EXIT_IO;
    struct stat sb;
    if (stat(store, &sb) < 0) {
        fprintf(stderr, "tlsboxctl: %s: %s (no store here: name its directory with --state-dir)\n",
                store, strerror(errno));
        goto out;
    }
    if (open_ro(store, &src) < 0) {
        fprintf(stderr, "tlsboxctl: %s: %s\n", store, src ? sqlite3_errmsg(src) : "out of memory");
        goto out;
    }
    /* Read in the same snapshot the copy is made of: a write meanwhile would
     * make the line describe another state. */
    if (sqlite3_exec(src, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
        one_int(src, "SELECT count(*) FROM sqlite_master") < 0) {
        fprintf(stderr, "tlsboxctl: %s: %s\n", store, sqlite3_errmsg(src));
        goto out;
    }
    if (to_stdout) {
        if (!(tmpdir = own_tmpdir()))
            goto out;
        dest = xasprintf("%s/%s", tmpdir, STORE_FILE);
        guard_file(dest); /* the copy that is sent */
    } else if (lstat(argv[0], &sb) == 0) {
        fprintf(stderr,
                "tlsboxctl: %s exists: a backup never replaces a file (remove it or "
                "name another)\n",
                argv[0]);
        goto out;
    } else {
        dest = xstrdup(argv[0]);
    }
    what = describe(src);
    tmp = xasprintf("%s.partial", dest);
    if (partial_free(tmp) < 0 || copy_store(src, tmp, 0) < 0)
        goto out;
    if (rename_noreplace(tmp, dest) < 0) {
        if (errno == EEXIST)
            fprintf(stderr,
                    "tlsboxctl: %s appeared while the backup was written: a backup never "
                    "replaces a file (the copy is removed; remove %s or name another)\n",
                    dest, dest);
        else
            fprintf(stderr, "tlsboxctl: %s: %s\n", dest, strerror(errno));
        unlink(tmp);
        goto out;
    }
    stat(dest, &sb);
    if (to_stdout) {
        if (cat_file(dest) < 0) {
            fprintf(stderr, "tlsboxctl: standard output: %s\n", strerror(errno));
            goto out;
        }
        fprintf(stderr, "backup of %s (%s) written to standard output: %lld bytes.\n", store, what,
                (long long)sb.st_size);
    } else {
        char *dir = xstrdup(dest);
        sync_path(dirname(dir), 1);
        free(dir);
        printf("backup of %s (%s) written to %s: %lld bytes, mode 0600.\n"
               "It holds the private keys: keep it as safe as the box.\n",
               store, what, dest, (long long)sb.st_size);
    }
    rc = CTL_EXIT_OK;
out:
    if (tmpdir) { /* nothing of it stays */
        if (tmp)
            unlink(tmp);
        drop_tmp(tmpdir, dest);
    }
    unguard_all();
    sqlite3_close(src);
    free(what);
    free(tmp);
    free(dest);
    free(tmpdir);
    free(store);
    return rc;
}

/* Whether a daemon answers on the control socket (connect() succeeds). */
static int daemon_listens(const char *sock)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(sock) >= sizeof sa.sun_path)
        return 0;
    strcpy(sa.sun_path, sock);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    int up = connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    close(fd);
    return up;
}

/*
 * The pid of a process that has the store whose shared-memory file is
 * @p shm open, or 0.  Each SQLite connection to a WAL database holds a read
 * lock on one byte of that file (the unix VFS's "DMS" byte, offset 128)
 * for as long as it is open.  This sees a tlsboxd whose control socket is
 * not where this command looks (the packaged service's is under /run,
 * whatever --state-dir says), and any other program with the store open.
 */
static pid_t store_open_by(const char *shm)
{
    int fd = open(shm, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 128, .l_len = 1};
    pid_t pid = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK ? fl.l_pid : 0;
    close(fd);
    return pid;
}

/* Whether @p path is a tlsbox store this build can use: 0 with *db open on
 * it, or -1 with what is wrong printed, naming it @p shown (and nothing
 * opened). */
static int check_backup(const char *path, const char *shown, sqlite3 **db)
{
    struct stat sb;
    char head[16] = "";
    *db = NULL;
    if (lstat(path, &sb) < 0) {
        fprintf(stderr, "tlsboxctl: %s: %s\n", shown, strerror(errno));
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        fprintf(stderr, "tlsboxctl: %s: not a regular file\n", shown);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(head, 1, sizeof head, f) : 0;
    if (f)
        fclose(f);
    if (n != sizeof head || memcmp(head, "SQLite format 3", 16) != 0) {
        fprintf(stderr, "tlsboxctl: %s: not an SQLite database (a tlsbox backup is one)\n", shown);
        return -1;
    }
    if (open_ro(path, db) < 0) {
        fprintf(stderr, "tlsboxctl: %s: %s\n", shown, *db ? sqlite3_errmsg(*db) : "out of memory");
        goto bad;
    }
    char *bad_why = integrity(*db);
    if (bad_why) {
        fprintf(stderr, "tlsboxctl: %s: damaged: %s\n", shown, bad_why);
        free(bad_why);
        goto bad;
    }
    long long v = one_int(*db, "PRAGMA user_version");
    for (size_t i = 0; i < sizeof core_tables / sizeof *core_tables; i++) {
        char *q =
            xasprintf("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '%s'",
                      core_tables[i]);
        long long has = one_int(*db, q);
        free(q);
        if (has != 1 || v < 1) {
            fprintf(stderr, "tlsboxctl: %s: not a tlsbox store (no table %s)\n", shown,
                    core_tables[i]);
            goto bad;
        }
    }
    if (v > newest_schema()) {
        fprintf(stderr,
                "tlsboxctl: %s: made by a newer tlsbox (store schema version %lld; this one "
                "knows up to %d): upgrade tlsbox first\n",
                shown, v, newest_schema());
        goto bad;
    }
    return 0;
bad:
    sqlite3_close(*db);
    *db = NULL;
    return -1;
}

/* How many stores set aside by restores stay: each holds the private keys
 * of its time, so they are not kept for ever; three undo the last three. */
#define RESTORE_KEEP 3
#define KEEP_PREFIX STORE_FILE ".before-restore-"

/* Whether @p name is a store set aside by a restore: KEEP_PREFIX, then
 * YYYYmmddTHHMMSSZ, then -N when several were set aside in one second. */
static bool is_kept_store(const char *name)
{
    if (strncmp(name, KEEP_PREFIX, strlen(KEEP_PREFIX)) != 0)
        return false;
    const char *p = name + strlen(KEEP_PREFIX);
    for (int i = 0; i < 16; i++) {
        bool want_digit = i != 8 && i != 15;
        if (want_digit ? !isdigit((unsigned char)p[i]) : p[i] != (i == 8 ? 'T' : 'Z'))
            return false;
    }
    p += 16;
    if (*p == '-' && isdigit((unsigned char)p[1]))
        for (p++; isdigit((unsigned char)*p); p++)
            ;
    return *p == '\0';
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Remove the stores set aside in @p dir but @p made (the one this restore
 * set aside) and the RESTORE_KEEP - 1 newest others (the names sort by
 * time), with their -wal and -shm, saying which.  @p made stays whatever
 * its name: a Pi without a real-time clock may start before NTP with its
 * clock behind the names of earlier copies. */
static void prune_kept(const char *dir, const char *made)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!is_kept_store(de->d_name) || strcmp(de->d_name, made) == 0)
            continue;
        names = xrealloc(names, (n + 1) * sizeof *names);
        names[n++] = xstrdup(de->d_name);
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        if (i + RESTORE_KEEP - 1 < n) {
            char *path = xasprintf("%s/%s", dir, names[i]);
            /* Its WAL, and the -shm SQLite leaves when a restore reads it. */
            char *wal = xasprintf("%s-wal", path), *shm = xasprintf("%s-shm", path);
            if (unlink(path) == 0 || errno == ENOENT) {
                unlink(wal);
                unlink(shm);
                printf("Removed an older store set aside: %s (%d are kept).\n", path, RESTORE_KEEP);
            } else {
                fprintf(stderr, "tlsboxctl: %s: cannot remove it: %s\n", path, strerror(errno));
            }
            free(wal);
            free(shm);
            free(path);
        }
        free(names[i]);
    }
    free(names);
}

/* Where to set @p store aside: STORE.before-restore-STAMP, or with -2, -3...
 * when a restore in the same second took that name (rename would replace
 * it).  NULL when 99 did. */
static char *keep_name(const char *store, const char *stamp)
{
    struct stat sb;
    for (int i = 1; i < 100; i++) {
        char *keep = i == 1 ? xasprintf("%s.before-restore-%s", store, stamp)
                            : xasprintf("%s.before-restore-%s-%d", store, stamp, i);
        char *wal = xasprintf("%s-wal", keep);
        bool taken = lstat(keep, &sb) == 0 || lstat(wal, &sb) == 0;
        free(wal);
        if (!taken)
            return keep;
        free(keep);
    }
    return NULL;
}

/*
 * Hand the restored copy @p tmp to @p uid:@p gid, through the open file and
 * only when it is still the one this command made: a regular file of ours
 * with one link.  The state directory is the service user's, who could put
 * a symbolic link (to /etc/shadow) at that name after the copy; root's
 * chown() by name would follow it and hand over the file it names.  0, or
 * -1 with why printed.
 */
static int give_copy(const char *tmp, uid_t uid, gid_t gid)
{
    int fd = open(tmp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_uid != geteuid() ||
        sb.st_nlink != 1) {
        fprintf(stderr,
                "tlsboxctl: %s: the copy was replaced while it was written (another process "
                "of the state directory's owner?); nothing was changed\n",
                tmp);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int rc = 0;
    if (fchown(fd, uid, gid) < 0 && geteuid() == 0) {
        fprintf(stderr, "tlsboxctl: %s: chown: %s; nothing was changed\n", tmp, strerror(errno));
        rc = -1;
    }
    close(fd);
    return rc;
}

/* Move @p from to @p to when it exists, never over a file at @p to when
 * @p noreplace; 0, or -1 with errno. */
static int move_if_there(const char *from, const char *to, bool noreplace)
{
    int r = noreplace ? rename_noreplace(from, to) : rename(from, to);
    return r == 0 || errno == ENOENT ? 0 : -1;
}

/*
 * The state directory @p dir, open and flock()ed exclusively, or -1 with why
 * printed.  tlsboxd holds it shared while its store is open (store_init), so
 * from here to the last rename no tlsboxd starts on a store being swapped
 * out, and no second restore runs alongside (both would write the same
 * .restoring file).  Held until closed, or until tlsboxctl exits.
 */
static int lock_state_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "tlsboxctl: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) == 0)
        return fd;
    if (errno == EWOULDBLOCK)
        fprintf(stderr,
                "tlsboxctl: %s: in use by another tlsboxctl restore, or by a tlsboxd "
                "starting on it: try again when it has finished; nothing was changed\n",
                dir);
    else
        fprintf(stderr, "tlsboxctl: %s: cannot lock it: %s; nothing was changed\n", dir,
                strerror(errno));
    close(fd);
    return -1;
}

/* Set @p store (when @p had) aside as @p keep, with its WAL, and put @p tmp
 * in its place; 0, or -1 with why printed and the store as it was. */
static int swap_in(const char *store, const char *tmp, const char *keep, bool had)
{
    char *store_wal = xasprintf("%s-wal", store), *keep_wal = xasprintf("%s-wal", keep);
    char *store_shm = xasprintf("%s-shm", store);
    int rc = -1;
    /* The store as it was stays beside, whole: the database with its WAL. */
    if (had &&
        (move_if_there(store_wal, keep_wal, true) < 0 || rename_noreplace(store, keep) < 0)) {
        fprintf(stderr, "tlsboxctl: %s: cannot set the store aside as %s: %s\n", store, keep,
                strerror(errno));
        move_if_there(keep_wal, store_wal, false);
        unlink(tmp);
        goto out;
    }
    unlink(store_shm);
    if (rename(tmp, store) < 0) {
        fprintf(stderr, "tlsboxctl: %s: %s\n", store, strerror(errno));
        if (had && rename(keep, store) == 0)
            move_if_there(keep_wal, store_wal, false);
        unlink(tmp);
        goto out;
    }
    rc = 0;
out:
    free(store_wal);
    free(keep_wal);
    free(store_shm);
    return rc;
}

static int cmd_restore(struct ctl *c, int argc, char **argv)
{
    if (argc != 1) {
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl restore FILE|-\n");
        return CTL_EXIT_USAGE;
    }
    bool from_stdin = strcmp(argv[0], "-") == 0;
    if (from_stdin && isatty(STDIN_FILENO)) {
        fprintf(stderr, "tlsboxctl: restore -: standard input is a terminal: send a backup "
                        "into it (tlsboxctl restore - < FILE)\n");
        return CTL_EXIT_USAGE;
    }
    if (daemon_listens(c->socket_path)) {
        fprintf(stderr,
                "tlsboxctl: tlsboxd is running (%s): stop it first (systemctl stop tlsbox), "
                "restore, then start it again; nothing was changed\n",
                c->socket_path);
        return CTL_EXIT_REFUSED;
    }
    struct stat dir_sb, sb;
    if (stat(c->state_dir, &dir_sb) < 0) {
        fprintf(stderr, "tlsboxctl: %s: %s\n", c->state_dir, strerror(errno));
        return CTL_EXIT_IO;
    }
    char *open_shm = xasprintf("%s/%s-shm", c->state_dir, STORE_FILE);
    pid_t user = store_open_by(open_shm);
    free(open_shm);
    if (user > 0) {
        fprintf(stderr,
                "tlsboxctl: %s/%s is open in process %ld (tlsboxd, or another program using "
                "it): stop it first (systemctl stop tlsbox), restore, then start it again; "
                "nothing was changed\n",
                c->state_dir, STORE_FILE, (long)user);
        return CTL_EXIT_REFUSED;
    }
    if (!S_ISDIR(dir_sb.st_mode)) {
        fprintf(stderr, "tlsboxctl: %s: not a directory\n", c->state_dir);
        return CTL_EXIT_IO;
    }
    int lock = lock_state_dir(c->state_dir);
    if (lock < 0)
        return CTL_EXIT_REFUSED;
    /* From standard input (ssh box tlsboxctl restore - < box.db): into a
     * file of its own first, which SQLite can read and check. */
    char *in_dir = NULL, *in_file = NULL;
    guard_signals();
    if (from_stdin) {
        if (!(in_dir = own_tmpdir())) {
            close(lock);
            return CTL_EXIT_IO;
        }
        in_file = xasprintf("%s/%s", in_dir, STORE_FILE);
        guard_file(in_file);
        int fd = open(in_file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0 || copy_fd(STDIN_FILENO, fd) < 0) {
            fprintf(stderr, "tlsboxctl: standard input: %s\n", strerror(errno));
            if (fd >= 0)
                close(fd);
            drop_tmp(in_dir, in_file);
            unguard_all();
            free(in_file);
            free(in_dir);
            close(lock);
            return CTL_EXIT_IO;
        }
        close(fd);
    }
    const char *from = from_stdin ? in_file : argv[0];
    const char *shown = from_stdin ? "standard input" : argv[0];
    sqlite3 *src = NULL;
    if (check_backup(from, shown, &src) < 0) {
        fprintf(stderr, "tlsboxctl: nothing was changed\n");
        if (from_stdin)
            drop_tmp(in_dir, in_file);
        unguard_all();
        free(in_file);
        free(in_dir);
        close(lock);
        return CTL_EXIT_IO;
    }
    char *what = describe(src);
    char *store = xasprintf("%s/%s", c->state_dir, STORE_FILE);
    char *tmp = xasprintf("%s/.%s.restoring", c->state_dir, STORE_FILE);
    char stamp[32];
    time_t now = time(NULL);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", gmtime(&now));
    char *keep = keep_name(store, stamp);
    int rc = CTL_EXIT_IO;
    if (!keep) {
        fprintf(stderr, "tlsboxctl: %s: 99 stores set aside this second; nothing was changed\n",
                store);
        goto out;
    }
    /* The restored store belongs to whoever owned the one it replaces (the
     * packaged service's user), else to the state directory's owner. */
    int had = stat(store, &sb) == 0;
    uid_t uid = had ? sb.st_uid : dir_sb.st_uid;
    gid_t gid = had ? sb.st_gid : dir_sb.st_gid;
    unlink(tmp); /* left by a restore killed outright (SIGKILL) */
    if (copy_store(src, tmp, 1) < 0)
        goto out;
    if (give_copy(tmp, uid, gid) < 0) {
        unlink(tmp);
        goto out;
    }
    /* From setting the old store aside to putting the new one in its place
     * no signal may end tlsboxctl: there would be no store at all. */
    sigset_t stop, unblocked;
    stop_set(&stop);
    sigprocmask(SIG_BLOCK, &stop, &unblocked);
    int moved = swap_in(store, tmp, keep, had);
    sigprocmask(SIG_SETMASK, &unblocked, NULL);
    if (moved < 0)
        goto out;
    sync_path(c->state_dir, 1);
    printf("restored %s (%s) into %s.\n", shown, what, store);
    if (had) {
        printf("The store before it is kept as %s.\n", keep);
        const char *slash = strrchr(keep, '/');
        prune_kept(c->state_dir, slash ? slash + 1 : keep);
    }
    printf("Web UI sessions of the backup's time are gone: log in again.  Start tlsboxd "
           "(systemctl start tlsbox).\n");
    rc = CTL_EXIT_OK;
out:
    sqlite3_close(src);
    if (from_stdin) /* nothing of it stays */
        drop_tmp(in_dir, in_file);
    free(in_file);
    free(in_dir);
    free(what);
    free(store);
    free(tmp);
    free(keep);
    unguard_all();
    close(lock);
    return rc;
}

const struct ctl_command ctl_backup_commands[] = {
    {"backup", NULL, "FILE|-",
     "copy the whole store (keys, settings, policy, accounts) into FILE (0600) or stdout",
     cmd_backup},
    {"restore", NULL, "FILE|-",
     "put a backup in place of the store (tlsboxd stopped); the old one is kept beside",
     cmd_restore},
    {NULL, NULL, NULL, NULL, NULL}};
