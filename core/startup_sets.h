/* tlsboxd --set: the settings given on the command line, stored before the
 * plugins start, and undone for a plugin that cannot start with them. */
#ifndef TLSBOX_CORE_STARTUP_SETS_H
#define TLSBOX_CORE_STARTUP_SETS_H

#include <stdbool.h>

/*
 * Validate the @p n "KEY=VALUE" pairs of @p sets (each has an '='), then
 * store them in one transaction: a refused value stores none of them and is
 * logged.  A key given twice takes its last value.  Remembers, for each key
 * whose stored value changed, the value stored before (startup_sets_undo).
 * Returns 0 or a negative errno.  Main thread, after settings_load, before
 * the plugins start.
 */
int startup_sets_apply(char *const *sets, int n);

/*
 * Plugin @p plugin (or the admin web UI, "admin") could not start: put back
 * the values its settings had in the store before startup_sets_apply changed
 * them (one transaction, audited as "tlsboxd --set undone"), and log which
 * keys (never their values: one may be a secret).  Returns true when there
 * were any to undo and they are undone, so that a start with the values
 * stored before is worth a try.  Signature of plugins_retry_failed's prepare
 * (@p arg unused).  Main thread.
 */
bool startup_sets_undo(const char *plugin, void *arg);
/* As startup_sets_undo, but false always: tlsboxd is not starting, the store
 * is only left as it was. */
bool startup_sets_undo_only(const char *plugin, void *arg);

/* tlsboxd is not starting (whatever stopped it: a port held, the service
 * user missing, the control socket): put back every value startup_sets_apply
 * changed that is not undone yet, so that the store is left as it was
 * before this start, and log which keys.  Main thread, before store_close. */
void startup_sets_undo_all(void);

/* Forget what startup_sets_apply remembered.  Main thread. */
void startup_sets_free(void);

#endif
