/* The SQLite store: one file in the state directory, WAL, migrations.
 * Return convention: the one of <tlsbox/host.h>. */
#ifndef TLSBOX_CORE_STORE_H
#define TLSBOX_CORE_STORE_H

#include <sqlite3.h>

/* The store's file name in the state directory. */
#define STORE_FILE "tlsbox.db"
/* The size the WAL file is cut back to when it starts over after a
 * checkpoint (PRAGMA journal_size_limit), in bytes: 4 MiB. */
#define STORE_WAL_LIMIT 4194304
#define STORE_WAL_LIMIT_STR "4194304"

/* One embedded migration (generated from db/migrations/NNNN_name.sql). */
struct store_migration {
    int version;      /* NNNN */
    const char *name; /* file name */
    const char *sql;
};
extern const struct store_migration store_migrations[];
extern const int store_migrations_count;

/*
 * Open (creating when absent) "<state_dir>/tlsbox.db": the directory is made
 * 0700 when missing, the file created 0600 with O_EXCL before SQLite opens it,
 * WAL, busy timeout 5 s, synchronous FULL, foreign keys on, triggers off
 * (store_set_triggers); then migrate.  The state directory is flock()ed
 * shared until store_close: tlsboxctl restore locks it exclusively while it
 * replaces the store.
 * Remembers the path for store_connect.  Returns 0, or a negative errno with
 * *err set (caller frees): -EPROTO for a store newer than this build knows,
 * -EBUSY while a restore holds the directory, -EIO for SQLite, the errno of a
 * file operation, -EALREADY when open.
 */
int store_init(const char *state_dir, char **err);
/* The main-thread connection opened by store_init (NULL before). */
sqlite3 *store_main(void);
/* Path of the database file (valid after store_init). */
const char *store_path(void);
/* A new connection for the calling thread, set up like the main one; NULL on failure. */
sqlite3 *store_connect(void);
/*
 * Whether the triggers of the store's schema fire on @p db (temporary
 * triggers, the connection's own, always do).  A trigger runs with the
 * rights of the connection that fires it, and every trigger in the store is
 * a plugin's (the core's schema has none): fired on a core connection, by a
 * core delete that cascades into a plugin's table, its body would write core
 * tables past the guard of store_guard.h.  So the core's connections keep
 * them off; the core turns them on only under a plugin's guard (the
 * plugin's connections, its migration steps).  0, or -EIO.
 */
int store_set_triggers(sqlite3 *db, int on);
/* Close a connection from store_connect. */
void store_disconnect(sqlite3 *db);
/* Close the main connection. */
void store_close(void);

/*
 * Apply @p migs[0..n) above the database's PRAGMA user_version, each in one
 * BEGIN IMMEDIATE transaction with the version bump.  Returns 0, -EPROTO
 * (*err set) for a database whose user_version is above the newest known,
 * or -EIO (*err set) when a step fails (nothing of it remains).
 * Exposed with explicit arrays for tests.
 */
int store_migrate(sqlite3 *db, const struct store_migration *migs, int n, char **err);
/* PRAGMA user_version, or -EIO. */
int store_schema_version(sqlite3 *db);

/* Small helpers.  All return 0 or -EIO (err set, caller frees, may be NULL). */
int store_exec(sqlite3 *db, const char *sql, char **err);
int store_begin(sqlite3 *db, char **err); /* BEGIN IMMEDIATE */
int store_commit(sqlite3 *db, char **err);
void store_rollback(sqlite3 *db);

/* Step a statement expected to give one row: 0 on a row, -ENOENT when there
 * is none, -EIO on an error.  For "SELECT ... WHERE id = ?" lookups. */
int store_step_row(sqlite3_stmt *st);

/* Append to the audit table (best effort, logged on failure). */
void store_audit(sqlite3 *db, const char *actor, const char *action, const char *target,
                 const char *detail);

#endif
