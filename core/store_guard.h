/* The rule "a plugin writes only its own tables", enforced by SQLite: an
 * authorizer on every connection handed to a plugin (host->store_open) and
 * on the connection that applies its migrations. */
#ifndef TLSBOX_CORE_STORE_GUARD_H
#define TLSBOX_CORE_STORE_GUARD_H

#include <sqlite3.h>

/*
 * From now on, statements prepared on @p db may read anything but may write
 * (INSERT/UPDATE/DELETE) or change the schema of (CREATE/DROP/ALTER) only
 * tables, indexes, triggers and views named "<plugin>_..." (temporary ones
 * are the connection's own and free); triggers and indexes must also sit on
 * such a table.  CREATE TABLE and ALTER TABLE are refused (the guard sees
 * neither a table's foreign keys nor the new name of a rename): a plugin's
 * tables are created and altered by its migration steps.  ATTACH, DETACH and pragmas that
 * set a value are refused, and so is reading the core's secret columns (private keys, ticket keys,
 * password hashes, session tokens), and writing sqlite_sequence (the
 * AUTOINCREMENT counters, the core's too: SQLite keeps the plugin's own).
 * A refused statement fails to prepare with SQLITE_AUTH ("not authorized")
 * and the core logs one line naming the plugin, the action and the object.
 * @p plugin is borrowed: it must outlive the guard (a plugin's name does).
 * Returns 0 or -EIO.  The thread that owns @p db.
 */
int store_guard_attach(sqlite3 *db, const char *plugin);
/* store_guard_attach for the connection that applies a plugin's migration
 * steps: BEGIN, COMMIT and ROLLBACK are refused too (the core's transaction
 * holds every pending step and the version); the DELETE and the name UPDATE
 * of sqlite_sequence that SQLite makes for a DROP or a RENAME of the
 * plugin's own AUTOINCREMENT table are allowed, and store_guard_verify
 * checks after each step that no other table's counter changed. */
int store_guard_attach_migration(sqlite3 *db, const char *plugin);

/* Where the loaded plugins are (plugins_first), for the longer-name rule of
 * store_guard_owns.  Main thread, before any plugin's schema is applied. */
struct tlsbox_plugin;
void store_guard_set_plugins(struct tlsbox_plugin *(*first)(void));

/* What a migration step of @p plugin must leave as it was, read before the
 * first step: the schema objects it does not own (their names, types and
 * SQL: a rename makes a name the authorizer never sees), the AUTOINCREMENT
 * counters of their tables (sqlite_sequence) and the connection's
 * temporary objects.  NULL with *err set (caller frees) when
 * the store cannot be read. */
struct store_guard_mark;
struct store_guard_mark *store_guard_mark(sqlite3 *db, const char *plugin, char **err);
/* After each step, on its connection and inside its transaction, with the
 * guard detached: what the authorizer cannot see.  0 when all of @p before
 * is as it was and the plugin's tables have foreign keys only to its own
 * tables; else -EPERM with *err naming the first difference (caller
 * frees), or -EIO. */
int store_guard_verify(sqlite3 *db, const char *plugin, const struct store_guard_mark *before,
                       char **err);
void store_guard_mark_free(struct store_guard_mark *m);
/* The foreign keys part of store_guard_verify, alone: 0 when every table of
 * @p plugin refers only to its own tables, else -EPERM with *err naming the
 * first table and the table it refers to (caller frees), or -EIO.  Reads
 * only. */
int store_guard_check_foreign_keys(sqlite3 *db, const char *plugin, char **err);

/* Remove the guard (the core's own statements follow). */
void store_guard_detach(sqlite3 *db);

/* True when @p name is "<plugin>_" followed by at least one character, is
 * not one of the core's own tables, indexes or triggers (admin_users,
 * tls_dh, plugin_schema...: no plugin owns them, whatever its name), and is
 * not named for a loaded plugin with a longer name ("site_stats_x" is
 * plugin site_stats's, not site's). */
int store_guard_owns(const char *plugin, const char *name);

#endif
