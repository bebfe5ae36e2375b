/* A plugin's own tables: applying the migration steps of its descriptor
 * (plugin kit ABI 1.1) and tracking the applied count in plugin_schema. */
#ifndef TLSBOX_CORE_PLUGIN_SCHEMA_H
#define TLSBOX_CORE_PLUGIN_SCHEMA_H

#include <sqlite3.h>

#include <tlsbox/plugin.h>

/* Number of steps in @p steps (ended by TLSBOX_MIGRATIONS_END; NULL = 0). */
int plugin_schema_count(const struct tlsbox_migration *steps);

/* The version the store records for @p plugin: 0 when none, or a negative
 * errno when it cannot be read. */
int plugin_schema_version(sqlite3 *db, const char *plugin);

/*
 * Apply the steps of @p steps the store has not applied for @p plugin, in one
 * BEGIN IMMEDIATE transaction together with the new version.  Returns the
 * number of steps applied (0 when up to date), or a negative errno with *err
 * set (caller frees) and the store unchanged:
 *   -EPROTO  the store records a newer version than @p steps has (downgrade);
 *   -EIO     a step failed (message names plugin, step and SQLite's error).
 * Main thread, before the plugin's init hook.
 */
int plugin_schema_migrate(sqlite3 *db, const char *plugin, const struct tlsbox_migration *steps,
                          char **err);

/*
 * Whether the tables @p plugin already has may be used: 0 when each refers
 * (by foreign key) only to the plugin's own tables; else -EPERM with *err
 * set (caller frees) naming the plugin, the table and the table it refers
 * to, or -EIO.  A store made before the core checked foreign keys after each
 * step may hold such a table: the core's deletes would cascade into it.
 * Reads only: the store is left as it is.  Main thread, before the plugin
 * starts, once every plugin is loaded (ownership follows store_guard_owns).
 */
int plugin_schema_check(sqlite3 *db, const char *plugin, char **err);

#endif
