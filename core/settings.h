/* Typed, validated settings: declared by plugins, stored as text, cached in memory. */
#ifndef TLSBOX_CORE_SETTINGS_H
#define TLSBOX_CORE_SETTINGS_H

#include <stdbool.h>

#include <jansson.h>
#include <tlsbox/plugin.h>

#include "core/settings_tables.h"

/*
 * Validate @p value against @p def.  Returns 0, or -EINVAL with *err (caller frees)
 * naming the key (@p full_key), the value and the rule broken, e.g.
 * "site.workers: 0 is out of range 1..64".
 */
int settings_validate(const char *full_key, const struct tlsbox_setting_def *def, const char *value,
                      char **err);

/* Declare the settings of @p owner (table borrowed for the daemon's life).  Main thread. */
int settings_register(const char *owner, const struct tlsbox_setting_def *defs);
/* Forget @p owner's declarations (plugin unloaded).  Main thread. */
void settings_unregister(const char *owner);

/*
 * The function that applies a live change of @p owner's settings before it is
 * stored (a plugin's .apply_settings, called with @p arg as its state; see
 * <tlsbox/plugin.h> for its contract), or NULL for none.  Waits for a write in
 * progress, so once it returns with NULL the old function is never called
 * again.  Returns -ENOENT when @p owner has no settings registered.  Main thread.
 */
typedef int (*settings_apply_fn)(void *arg, const struct tlsbox_setting_value *changes, char **err);
int settings_set_applier(const char *owner, settings_apply_fn fn, void *arg);

/* Replace the declared default of "owner.key" for this run (demo mode: ports
 * 8443/8080, site root in the state dir).  Not stored.  Main thread, before
 * plugins start.  Returns -EINVAL when the key is unknown or the value invalid. */
int settings_override_default(const char *full_key, const char *value, char **err);

/* Load stored values (from store_main()).  Values that no longer validate are
 * ignored with a warning (the default serves).  Called at start and on SIGHUP;
 * an owner with an applier (settings_set_applier) is first given the values
 * that differ from those in effect, and its refusal is logged, not returned. */
int settings_load(void);

/* Whether @p full_key ("owner.key") is one of @p owner's settings' names. */
bool settings_key_of(const char *full_key, const char *owner);
/* The declaration of "owner.key", or NULL.  The pointer lives as long as the owner. */
const struct tlsbox_setting_def *settings_def(const char *full_key);
/* Current value (stored or default), caller frees; NULL for an unknown key. */
char *settings_get(const char *full_key);
/* The stored value of "owner.key" (caller frees; wipe a secret's), or NULL
 * when none is stored (the default serves) or the key is unknown. */
char *settings_get_stored(const char *full_key);
long long settings_get_int(const char *full_key, long long dflt);
bool settings_get_bool(const char *full_key, bool dflt);
/* settings_parse_bool: see core/settings_check.h. */

/*
 * Validate, write (own connection, one IMMEDIATE transaction, audit row),
 * let the owner's applier apply it (settings_set_applier), commit, update
 * the cache and publish "settings.changed".  Unknown key or invalid value:
 * -EINVAL (-EIO: the store failed) with *err, nothing written.  Refused by the
 * applier: its negative errno and message (e.g. -EADDRINUSE, "site.https_port:
 * cannot listen on ..."), nothing written.  Stored, but an applier said it
 * takes effect only at the next start (TLSBOX_APPLY_AT_RESTART): 1, with its
 * note in *err (caller frees; freed here when @p err is NULL).  Not from a
 * site worker, nor from an applier.
 */
int settings_set(const char *full_key, const char *value, const char *actor, char **err);
/*
 * Several "owner.key" -> value pairs at once (JSON object of strings, numbers
 * or booleans): all validated first, then written in one transaction, or none.
 * Returns as settings_set.
 */
int settings_set_many(json_t *pairs, const char *owner, const char *actor, char **err);
/*
 * (Added.)  Delete the stored value of "owner.key" so the default serves
 * again; audited and published like settings_set.  In settings_set_many a
 * JSON null does the same; with @p owner, keys may also be given without the
 * "owner." prefix, and a LIST may be given as a JSON array of strings.
 */
int settings_reset(const char *full_key, const char *actor, char **err);

/*
 * Undo settings change @p id of the history (core/settings_history.h): put
 * each setting it changed back to the value it had before, as one new change
 * (*new_id; its "undo_of" is @p id), validated, applied and audited like
 * settings_set_many.  Refused, with nothing written and *err saying why:
 * -ENOENT no such change (or dropped: the newest SETTINGS_HISTORY_KEEP are
 * kept); -EPERM it changed a secret (whose old value is not kept); -ESTALE
 * a setting it changed holds another value now (changed again since: that
 * change must be undone first); -EINVAL an old value no longer valid or a
 * setting no longer declared; or an applier's refusal.  Returns 1 with the
 * note in *err when stored but in effect at the next start.  As
 * settings_set: not from a site worker nor an applier.
 */
int settings_undo(long long id, const char *actor, long long *new_id, char **err);
/*
 * The settings history, newest first: {"changes": [...], "next_before": N}
 * as settings_history_list() gives it for @p owner (NULL: every owner),
 * each change with "undoable" and, when false, "undo_blocked" (why not).
 * New reference, or NULL with *err on a store error.  Any thread.
 */
json_t *settings_history_json(const char *owner, int limit, long long before, char **err);
/* JSON array describing @p owner's settings: key, type, value, default, limits,
 * help, flags (secrets shown as "********").  New reference.  @p owner NULL:
 * every owner's; an owner without settings (or unknown): an empty array. */
json_t *settings_describe(const char *owner);

#endif
