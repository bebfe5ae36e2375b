#include "core/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/xalloc.h"

#define STORE_BUSY_MS 5000

static char *store_file;  /* "<state_dir>/tlsbox.db" */
static sqlite3 *store_db; /* the main thread's connection */

static const char *db_name(sqlite3 *db)
{
    const char *f = db ? sqlite3_db_filename(db, "main") : NULL;
    return f && *f ? f : "store";
}

int store_exec(sqlite3 *db, const char *sql, char **err)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        xset_err(err, "%s: %s", db_name(db), msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return -EIO;
    }
    return 0;
}

int store_begin(sqlite3 *db, char **err)
{
    /* IMMEDIATE takes the write lock now: a deferred transaction that reads
     * then writes can fail with SQLITE_BUSY_SNAPSHOT, which the busy timeout
     * does not cure. */
    return store_exec(db, "BEGIN IMMEDIATE", err);
}

int store_commit(sqlite3 *db, char **err)
{
    if (store_exec(db, "COMMIT", err) < 0) {
        /* A failed COMMIT may leave the transaction open; never leave a
         * connection holding the write lock. */
        store_rollback(db);
        return -EIO;
    }
    return 0;
}

void store_rollback(sqlite3 *db)
{
    if (db && !sqlite3_get_autocommit(db))
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

int store_schema_version(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int v = -EIO;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

static int newest_known(const struct store_migration *migs, int n)
{
    int v = 0;
    for (int i = 0; i < n; i++)
        if (migs[i].version > v)
            v = migs[i].version;
    return v;
}

static void set_too_new(char **err, sqlite3 *db, int found, int known)
{
    xset_err(err,
             "%s: store schema version %d is newer than this tlsboxd knows (%d); "
             "upgrade tlsbox or restore a backup",
             db_name(db), found, known);
}

/* The migration with the smallest version above @p cur, or NULL. */
static const struct store_migration *next_migration(const struct store_migration *migs, int n,
                                                    int cur)
{
    const struct store_migration *best = NULL;
    for (int i = 0; i < n; i++)
        if (migs[i].version > cur && (!best || migs[i].version < best->version))
            best = &migs[i];
    return best;
}

int store_migrate(sqlite3 *db, const struct store_migration *migs, int n, char **err)
{
    int known = newest_known(migs, n);
    int rc = -EIO;

    for (;;) {
        /* The version is read inside the write transaction, so two processes
         * migrating the same file cannot both apply the same step. */
        if (store_begin(db, err) < 0)
            return -EIO;
        int cur = store_schema_version(db);
        if (cur < 0) {
            xset_err(err, "%s: cannot read the schema version: %s", db_name(db),
                     sqlite3_errmsg(db));
            goto fail;
        }
        if (cur > known) {
            set_too_new(err, db, cur, known);
            rc = -EPROTO;
            goto fail;
        }
        const struct store_migration *m = next_migration(migs, n, cur);
        if (!m) {
            store_rollback(db); /* nothing was written */
            return 0;
        }
        char *e = NULL;
        if (store_exec(db, m->sql, &e) < 0) {
            xset_err(err, "migration %s: %s", m->name, e);
            free(e);
            goto fail;
        }
        /* PRAGMA takes no bound parameters; the version is an int we own. */
        char *bump = xasprintf("PRAGMA user_version = %d", m->version);
        int brc = store_exec(db, bump, err);
        free(bump);
        if (brc < 0 || store_commit(db, err) < 0)
            goto fail;
        log_info("store: applied migration %s (schema %d -> %d)", m->name, cur, m->version);
    }

fail:
    store_rollback(db);
    return rc;
}

int store_set_triggers(sqlite3 *db, int on)
{
    int now = -1;
    if (sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, on ? 1 : 0, &now) != SQLITE_OK ||
        now != (on ? 1 : 0))
        return -EIO;
    return 0;
}

/* Apply the connection settings every connection shares. */
static int setup_conn(sqlite3 *db, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;

    sqlite3_busy_timeout(db, STORE_BUSY_MS);
    sqlite3_extended_result_codes(db, 1);
    /* journal_mode answers with the mode in effect: check it really is WAL
     * (it stays "delete" on a file system without shared memory, for one). */
    if (sqlite3_prepare_v2(db, "PRAGMA journal_mode=WAL", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        xset_err(err, "%s: cannot set WAL mode: %s", db_name(db), sqlite3_errmsg(db));
        goto out;
    }
    const char *mode = (const char *)sqlite3_column_text(st, 0);
    if (!mode || strcmp(mode, "wal") != 0) {
        xset_err(err, "%s: journal mode is %s, not wal", db_name(db), mode ? mode : "unknown");
        goto out;
    }
    /* journal_size_limit: the WAL is reused at its largest size after a
     * checkpoint, so one big transaction (a restore, a long history
     * prune) would keep megabytes on an SD card for good; cut it back to
     * STORE_WAL_LIMIT when it starts over. */
    if (store_exec(db,
                   "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; "
                   "PRAGMA journal_size_limit=" STORE_WAL_LIMIT_STR,
                   err) < 0)
        goto out;
    /* A core connection: no plugin's trigger runs with its rights. */
    if (store_set_triggers(db, 0) < 0) {
        xset_err(err, "%s: cannot turn triggers off: %s", db_name(db), sqlite3_errmsg(db));
        goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(st);
    return rc;
}

/* Open @p path (which must exist: never let SQLite create it with its own
 * mode) and apply only the busy timeout; the caller finishes the setup. */
static sqlite3 *open_raw(const char *path, char **err)
{
    sqlite3 *db = NULL;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_EXRESCODE;
    int rc = sqlite3_open_v2(path, &db, flags, NULL);
    if (rc != SQLITE_OK) {
        xset_err(err, "%s: cannot open: %s", path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, STORE_BUSY_MS);
    return db;
}

static sqlite3 *open_conn(const char *path, char **err)
{
    sqlite3 *db = open_raw(path, err);
    if (db && setup_conn(db, err) < 0) {
        sqlite3_close(db);
        db = NULL;
    }
    return db;
}

/* The state directory: created 0700 when missing.  An existing one is used as
 * it is (the packaging owns its mode) but a world-accessible one is reported
 * and a group- or world-writable one refused. */
static int make_state_dir(const char *dir, char **err)
{
    struct stat sb;
    /* The store is opened with SQLITE_OPEN_NOFOLLOW, which refuses a path
     * through any symbolic link: say so before anything is made there
     * (tlsbox.db in the link's target, which privdrop_check_state_dir()
     * did not look at). */
    char *part = xstrdup(dir);
    for (char *slash = part; slash;) {
        slash = strchr(slash + 1, '/');
        if (slash)
            *slash = '\0';
        char to[256];
        ssize_t n = part[0] && lstat(part, &sb) == 0 && S_ISLNK(sb.st_mode)
                        ? readlink(part, to, sizeof to - 1)
                        : -1;
        if (n >= 0) {
            to[n] = '\0';
            xset_err(err,
                     "%s: %s is a symbolic link (to %s): the store is never opened through one; "
                     "name the directory it leads to with --state-dir",
                     dir, part, to);
            free(part);
            return -ELOOP;
        }
        if (slash)
            *slash = '/';
    }
    free(part);
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        int e = errno;
        xset_err(err, "%s: cannot create the state directory: %s", dir, strerror(e));
        return -e;
    }
    if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
        xset_err(err, "%s: not a directory", dir);
        return -ENOTDIR;
    }
    /* Whoever can write the directory can swap the store for one of theirs. */
    if (sb.st_mode & 0022) {
        xset_err(err,
                 "%s: the state directory is writable by %s (mode %03o): refused; "
                 "chmod 0700 it",
                 dir, (sb.st_mode & 0002) ? "everyone" : "its group",
                 (unsigned)(sb.st_mode & 0777));
        return -1;
    }
    if (sb.st_mode & 0007)
        log_warn("%s: state directory is accessible to others (mode %03o); 0700 is expected", dir,
                 (unsigned)(sb.st_mode & 0777));
    return 0;
}

/* The state directory, open and flock()ed shared while the store is open:
 * tlsboxctl restore holds it exclusively from its checks to its last rename,
 * so a tlsboxd that starts meanwhile never opens a store being swapped out
 * (and a restore never swaps one that a tlsboxd has open). */
static int state_dir_fd = -1;

static int lock_state_dir(const char *dir, char **err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        xset_err(err, "%s: %s", dir, strerror(e));
        return -e;
    }
    if (flock(fd, LOCK_SH | LOCK_NB) < 0) {
        int e = errno;
        if (e == EWOULDBLOCK)
            xset_err(err,
                     "%s: tlsboxctl restore is replacing the store in it: start tlsboxd "
                     "again when the restore has finished",
                     dir);
        else
            xset_err(err, "%s: cannot lock the state directory: %s", dir, strerror(e));
        close(fd);
        return e == EWOULDBLOCK ? -EBUSY : -e;
    }
    state_dir_fd = fd;
    return 0;
}

static void unlock_state_dir(void)
{
    if (state_dir_fd >= 0)
        close(state_dir_fd);
    state_dir_fd = -1;
}

/* Create the database file 0600 before SQLite sees it: SQLite would create it
 * with 0644 & ~umask, and the -wal/-shm files copy the database's mode. */
static int precreate(const char *path, char **err)
{
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        close(fd);
        return 0;
    }
    if (errno != EEXIST) {
        int e = errno;
        xset_err(err, "%s: cannot create: %s", path, strerror(e));
        return -e;
    }
    /* An existing file (a symlink is left for SQLite to refuse).  It holds
     * private keys: tighten a copy restored with a looser mode. */
    struct stat sb;
    if (lstat(path, &sb) == 0 && S_ISREG(sb.st_mode) && (sb.st_mode & 0077)) {
        if (chmod(path, 0600) < 0) {
            int e = errno;
            xset_err(err, "%s: mode %03o is too open and cannot be changed: %s", path,
                     (unsigned)(sb.st_mode & 0777), strerror(e));
            return -e;
        }
        log_warn("%s: mode %03o was too open; now 0600", path, (unsigned)(sb.st_mode & 0777));
    }
    return 0;
}

int store_init(const char *state_dir, char **err)
{
    sqlite3 *db = NULL;
    char *path = NULL;
    int known = newest_known(store_migrations, store_migrations_count);
    int rc;

    if (store_db) {
        xset_err(err, "%s: store already open", store_file);
        return -EALREADY;
    }
    rc = make_state_dir(state_dir, err);
    if (rc < 0)
        return rc;
    rc = lock_state_dir(state_dir, err);
    if (rc < 0)
        return rc;
    path = xasprintf("%s/%s", state_dir, STORE_FILE);
    rc = precreate(path, err);
    if (rc < 0)
        goto fail;
    rc = -EIO;
    db = open_raw(path, err);
    if (!db)
        goto fail;
    /* Refuse a newer store before any pragma writes to it (switching a
     * rollback-journal file to WAL rewrites its header): no change made. */
    int cur = store_schema_version(db);
    if (cur < 0) {
        xset_err(err, "%s: cannot read the schema version: %s", path, sqlite3_errmsg(db));
        goto fail;
    }
    if (cur > known) {
        set_too_new(err, db, cur, known);
        rc = -EPROTO;
        goto fail;
    }
    if (setup_conn(db, err) < 0)
        goto fail;
    rc = store_migrate(db, store_migrations, store_migrations_count, err);
    if (rc < 0)
        goto fail;
    store_db = db;
    free(store_file);
    store_file = path;
    return 0;
fail:
    sqlite3_close(db);
    free(path);
    unlock_state_dir();
    return rc;
}

sqlite3 *store_main(void)
{
    return store_db;
}

const char *store_path(void)
{
    return store_file;
}

sqlite3 *store_connect(void)
{
    char *err = NULL;
    if (!store_file)
        return NULL;
    sqlite3 *db = open_conn(store_file, &err);
    if (!db) {
        log_err("%s", err);
        free(err);
    }
    return db;
}

static void close_conn(sqlite3 *db)
{
    if (!db)
        return;
    store_rollback(db);
    if (sqlite3_close(db) != SQLITE_OK) {
        /* Unfinalized statements: a bug.  Say so, and let SQLite close the
         * handle once they are finalized rather than leak it silently. */
        log_err("%s: closing with statements still open", db_name(db));
        sqlite3_close_v2(db);
    }
}

void store_disconnect(sqlite3 *db)
{
    close_conn(db);
}

void store_close(void)
{
    close_conn(store_db);
    store_db = NULL;
    unlock_state_dir();
    /* store_path() stays valid: late readers (a log line at shutdown) are fine. */
}

void store_audit(sqlite3 *db, const char *actor, const char *action, const char *target,
                 const char *detail)
{
    static const char sql[] =
        "INSERT INTO audit (at, actor, action, target, detail) VALUES (?, ?, ?, ?, ?)";
    sqlite3_stmt *st = NULL;

    if (!db || !action) {
        log_err("audit: no %s", db ? "action" : "store");
        return;
    }
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)time(NULL));
    sqlite3_bind_text(st, 2, actor && *actor ? actor : "system", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, action, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, target, -1, SQLITE_STATIC); /* NULL binds NULL */
    sqlite3_bind_text(st, 5, detail, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_DONE) {
        sqlite3_finalize(st);
        return;
    }
out:
    log_err("audit: cannot record %s %s: %s", action, target ? target : "", sqlite3_errmsg(db));
    sqlite3_finalize(st);
}

int store_step_row(sqlite3_stmt *st)
{
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW)
        return 0;
    return s == SQLITE_DONE ? -ENOENT : -EIO;
}
