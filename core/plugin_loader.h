/* Loading plugins and running their hooks; the core's own handle ("core"). */
#ifndef TLSBOX_CORE_PLUGIN_LOADER_H
#define TLSBOX_CORE_PLUGIN_LOADER_H

#include <stdatomic.h>
#include <stdbool.h>

#include <tlsbox/plugin.h>

enum plugin_state {
    PLUGIN_LOADED,   /* dlopen'd and ABI-checked */
    PLUGIN_INITED,   /* init hook returned 0 */
    PLUGIN_STARTED,  /* start hook returned 0 */
    PLUGIN_STOPPED,  /* stop hook ran */
    PLUGIN_FAILED,   /* a hook failed; kept for status only */
    PLUGIN_DISABLED, /* disabled by core.plugins_disabled */
};

/* A loaded plugin (also the core's pseudo-plugin "core").  Owned by the loader. */
struct tlsbox_plugin {
    char *name;
    char *path; /* NULL for "core" */
    void *dl;   /* dlopen handle, NULL for "core" */
    const struct tlsbox_plugin_desc *desc;
    void *state;
    /* pstate, error and start_failed are written by the main thread (start,
     * stop, disable) while the control and admin threads read them (GET
     * status and plugins, not_running_apply): atomics, sequentially
     * consistent, so that a reader that sees a new error pointer also sees
     * the text it points to (on arm64 and armhf too), and no read is torn.
     * An error text is retired, not freed, while the plugin is loaded. */
    _Atomic(enum plugin_state) pstate;
    _Atomic(char *) error; /* why it failed, or NULL */
    /* Earlier failures' texts, kept until unload (see plugin_retire_error). */
    char **errors_before;
    size_t n_errors_before;
    /* While its init and start hooks run: the last ERROR line it logged, so
     * that a failed hook says why (plugin_note_error; under the loader's lock). */
    bool in_hooks;
    char *hook_err;
    atomic_bool start_failed; /* its init or start hook failed (not its schema) */
    bool schema_failed;       /* its migrations failed: applied again before it starts */
    /* A change of its settings was stored while it had failed: the main
     * thread starts it again (plugins_start_again). */
    atomic_bool start_again;
    struct tlsbox_plugin *next;
};

/* The core's own handle: name "core", settings table core_settings. */
struct tlsbox_plugin *core_self(void);

/* Check a descriptor's ABI fields.  Returns 0, or -EPROTO (another major, a
 * newer minor) or -EINVAL (a short descriptor) with *err set (caller frees)
 * to "<path>: plugin ABI <maj>.<min>, core ABI <maj>.<min>: ..." */
int plugin_check_abi(const char *path, const struct tlsbox_plugin_desc *d, char **err);

/* An ERROR line @p p logged (any thread): kept while its init or start hook
 * runs, as the reason a failing hook gives in its status. */
void plugin_note_error(struct tlsbox_plugin *p, const char *msg);

/* Load every *.so in @p dir (sorted by name).  Refused files are logged and skipped. */
int plugins_load_dir(const char *dir);
/* Load one file and apply its schema; returns 0 or a negative errno
 * (logged).  Several plugins: plugins_load_files. */
int plugins_load_file(const char *path);
/* Load @p n files, in that order, then apply their schemas: every
 * plugin's name is known before any migration step runs, so the store
 * guard gives each table to its owner.  Refused files are logged and
 * skipped; returns 0.  Main thread. */
int plugins_load_files(char *const *paths, size_t n);
/* Run init then start on every loaded plugin not disabled by setting.
 * Returns 0, or -EADDRINUSE when a plugin could not start because another
 * process holds its port: a second instance must not run half-started. */
int plugins_start_all(void);
/* After plugins_start_all: for each plugin whose init or start hook failed,
 * ask @p prepare(name, @p arg) (it may change the plugin's settings, e.g.
 * undo the ones tlsboxd --set gave it); when it returns true, run init then
 * start once more.  Returns as plugins_start_all, for the plugins started
 * again.  Main thread, before privileges are dropped for good. */
int plugins_retry_failed(bool (*prepare)(const char *name, void *arg), void *arg);
/* True, once, after a change of a failed plugin's settings was stored (any
 * thread): the caller then wakes the main thread for plugins_start_again. */
bool plugins_take_start_again(void);
/* Main thread, while serving: run init then start once more on each plugin
 * whose init or start hook failed and whose settings changed since (all of
 * them unless @p changed_only: SIGUSR2 sent from outside).  Without
 * CAP_NET_BIND_SERVICE by now: a port below 1024 fails. */
void plugins_start_again(bool changed_only);
/* Main thread, while serving: make the plugins follow core.plugins_disabled
 * as it is stored now.  A running plugin it names is stopped (stop, its
 * routes, subscriptions, timers and jobs removed, fini) and shown disabled;
 * a failed one is shown disabled; a disabled one it no longer names gets
 * init then start (failing as at start-up, with the same error shown).
 * Plugins stay loaded either way.  Without CAP_NET_BIND_SERVICE by now: a
 * port below 1024 fails. */
void plugins_follow_disabled(void);
/* Stop then fini every started plugin, in reverse order; they stay loaded,
 * their settings declared (a change is stored, not applied). */
void plugins_stop_running(void);
/* Stop then fini every plugin, in reverse order; unload them. */
void plugins_stop_all(void);
/* First plugin (load order), or NULL; the list is stable after plugins_start_all. */
struct tlsbox_plugin *plugins_first(void);
struct tlsbox_plugin *plugins_find(const char *name);
const char *plugin_state_name(enum plugin_state s);

#endif
