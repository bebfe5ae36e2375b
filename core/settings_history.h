/* The settings history in the store (tables settings_changes and
 * settings_change_items): what each write of settings changed, from which
 * value to which, so that a change can be undone.  Store access only; the
 * undo itself (validation, appliers, the write) is settings_undo() in
 * core/settings.h.  Every call takes the connection it works on; any thread. */
#ifndef TLSBOX_CORE_SETTINGS_HISTORY_H
#define TLSBOX_CORE_SETTINGS_HISTORY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <sqlite3.h>

/* Changes kept: older ones are dropped as new ones are recorded. */
#define SETTINGS_HISTORY_KEEP 1000

/* One setting of a change.  Values are the stored text (canonical); NULL
 * means no stored value, so the default served.  A secret's values are never
 * recorded: both are NULL and @p secret is set. */
struct settings_history_item {
    char *key; /* "owner.key" */
    char *old_value;
    char *new_value;
    bool secret;
};

/* One change as loaded back. */
struct settings_history_change {
    long long id;
    long long at;
    size_t n;
    struct settings_history_item *items;
};

/*
 * Record one change of @p n items by @p actor (@p undo_of: the change it
 * undid, 0 for none), inside the transaction the caller has open on @p db,
 * so the history commits or rolls back with the settings.  Items whose old
 * and new values are equal are left out (a secret's item is kept: its
 * values are not given, so the caller leaves out an unchanged one); when
 * none is left nothing is recorded and *id is 0.  Changes older than the newest
 * SETTINGS_HISTORY_KEEP are deleted.  Returns 0 with *id, or -EIO with *err.
 */
int settings_history_record(sqlite3 *db, const char *actor, long long undo_of,
                            const struct settings_history_item *items, size_t n, long long *id,
                            char **err);

/* Load change @p id into @p out (free with settings_history_change_free).
 * 0, -ENOENT (no such change, or it was dropped), or -EIO with *err. */
int settings_history_load(sqlite3 *db, long long id, struct settings_history_change *out,
                          char **err);
void settings_history_change_free(struct settings_history_change *c);

/* The newest change after @p id that changed @p key, or 0 (none, or a store error). */
long long settings_history_newer(sqlite3 *db, const char *key, long long id);

/*
 * Newest first: at most @p limit changes with id < @p before (0: from the
 * newest) that changed a setting of @p owner (NULL: any), as
 * [{"id", "at", "actor", "undo_of" (null), "undone_by" (null),
 *   "items": [{"key", "old", "new", "secret"}]}]; old/new null for "the
 * default" (and for secrets).  *next_before: the id to pass as @p before for
 * the next older page, 0 when there is none.  New reference; NULL with *err
 * on a store error.
 */
json_t *settings_history_list(sqlite3 *db, const char *owner, int limit, long long before,
                              long long *next_before, char **err);

#endif
