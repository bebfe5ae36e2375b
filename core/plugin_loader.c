/* Loading plugins: dlopen, ABI check before any other field is read, and the
 * init/start/stop/fini lifecycle. */
#include "core/plugin_loader.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/api.h"
#include "core/events.h"
#include "core/host.h"
#include "core/http_routes.h"
#include "core/jobs.h"
#include "core/log.h"
#include "core/plugin_schema.h"
#include "core/store.h"
#include "core/store_guard.h"
#include "core/settings.h"
#include "core/xalloc.h"

/* gcc says __SANITIZE_ADDRESS__, clang __has_feature(address_sanitizer). */
#if defined(__SANITIZE_ADDRESS__)
#define TLSBOX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TLSBOX_ASAN 1
#endif
#endif

static const struct tlsbox_plugin_desc core_desc = {
    .abi_major = TLSBOX_ABI_MAJOR,
    .abi_minor = TLSBOX_ABI_MINOR,
    .size = sizeof(struct tlsbox_plugin_desc),
    .name = "core",
    .version = PACKAGE_VERSION,
    .description = "tlsboxd core: store, settings, TLS bundle, metrics, API",
    .settings = core_settings,
};

static struct tlsbox_plugin core_plugin = {
    .name = "core",
    .desc = &core_desc,
    .pstate = PLUGIN_STARTED,
};

/* Load order; appended at the tail so start follows load order. */
static struct tlsbox_plugin *plugins_head;

struct tlsbox_plugin *core_self(void)
{
    return &core_plugin;
}

struct tlsbox_plugin *plugins_first(void)
{
    return plugins_head;
}

struct tlsbox_plugin *plugins_find(const char *name)
{
    if (strcmp(name, "core") == 0)
        return &core_plugin;
    for (struct tlsbox_plugin *p = plugins_head; p; p = p->next)
        if (strcmp(p->name, name) == 0)
            return p;
    return NULL;
}

const char *plugin_state_name(enum plugin_state s)
{
    switch (s) {
    case PLUGIN_LOADED:
        return "loaded";
    case PLUGIN_INITED:
        return "initialised";
    case PLUGIN_STARTED:
        return "running";
    case PLUGIN_STOPPED:
        return "stopped";
    case PLUGIN_FAILED:
        return "failed";
    case PLUGIN_DISABLED:
        return "disabled";
    }
    return "unknown";
}

int plugin_check_abi(const char *path, const struct tlsbox_plugin_desc *d, char **err)
{
    /* Only the first three fields are read before the version is known good:
     * their layout is the one thing every ABI major promises. */
    if (d->abi_major != TLSBOX_ABI_MAJOR) {
        *err = xasprintf("%s: refused: built for plugin ABI %u.%u, this tlsboxd has ABI %d.%d "
                         "(the major version must match); rebuild the plugin against this kit",
                         path, d->abi_major, d->abi_minor, TLSBOX_ABI_MAJOR, TLSBOX_ABI_MINOR);
        return -EPROTO;
    }
    if (d->abi_minor > TLSBOX_ABI_MINOR) {
        *err = xasprintf("%s: refused: built for plugin ABI %u.%u, newer than this tlsboxd's "
                         "ABI %d.%d; upgrade tlsbox or rebuild the plugin",
                         path, d->abi_major, d->abi_minor, TLSBOX_ABI_MAJOR, TLSBOX_ABI_MINOR);
        return -EPROTO;
    }
    if (d->size < offsetof(struct tlsbox_plugin_desc, fini) + sizeof(d->fini)) {
        *err = xasprintf("%s: refused: descriptor size %u is smaller than ABI %u.%u defines", path,
                         d->size, d->abi_major, d->abi_minor);
        return -EINVAL;
    }
    return 0;
}

static int name_is_valid(const char *name)
{
    if (!name || !*name || !(name[0] >= 'a' && name[0] <= 'z'))
        return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
            return 0;
    return strlen(name) <= 32;
}

/* Put p->error aside, not free it: the control and admin threads read it
 * without a lock (GET plugins, GET status) while the main thread starts a
 * plugin again.  Freed when the plugin is unloaded. */
static void plugin_retire_error(struct tlsbox_plugin *p)
{
    if (!p->error)
        return;
    p->errors_before =
        xrealloc(p->errors_before, (p->n_errors_before + 1) * sizeof(*p->errors_before));
    p->errors_before[p->n_errors_before++] = p->error;
    p->error = NULL;
}

/* Bring the plugin's own tables up to its descriptor's migrations; a plugin
 * whose schema cannot be applied is kept, marked failed (schema_failed),
 * and not started: its migrations are tried again at the next start, or
 * when it is disabled and enabled again (plugins_follow_disabled).  Main
 * thread. */
static void plugin_apply_schema(struct tlsbox_plugin *p)
{
    const struct tlsbox_migration *steps =
        TLSBOX_DESC_HAS(p->desc, migrations) ? p->desc->migrations : NULL;
    if (plugin_schema_count(steps) == 0)
        return;
    char *err = NULL;
    int rc = store_main() ? plugin_schema_migrate(store_main(), p->name, steps, &err) : -ENODEV;
    if (rc >= 0)
        return;
    plugin_retire_error(p);
    p->error = err ? err : xasprintf("its tables need the store, and none is open");
    p->pstate = PLUGIN_FAILED;
    p->schema_failed = true;
    log_err("%s; tlsboxd goes on without it", p->error);
}

/* Refuse to start a plugin whose tables, as the store holds them, refer to
 * tables it does not own (plugin_schema_check): marked failed like a
 * schema that cannot be applied, the store unchanged.  Once every plugin is
 * loaded: which tables are a plugin's depends on the others' names.  0, or
 * -1 when refused.  Main thread. */
static int plugin_check_tables(struct tlsbox_plugin *p)
{
    char *err = NULL;
    if (!store_main() || plugin_schema_check(store_main(), p->name, &err) == 0)
        return 0;
    plugin_retire_error(p);
    p->error = err;
    p->pstate = PLUGIN_FAILED;
    p->schema_failed = true;
    log_err("%s; tlsboxd goes on without it", p->error);
    return -1;
}

/* Load @p path into the list, its schema not yet applied: *out set.  0 or
 * a negative errno (logged). */
static int load_one(const char *path, struct tlsbox_plugin **out)
{
    char *err = NULL;
    int rc = -EINVAL;
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        log_err("%s: refused: cannot load: %s", path, dlerror());
        return -ENOENT;
    }
    const struct tlsbox_plugin_desc *d = dlsym(dl, TLSBOX_PLUGIN_SYMBOL);
    if (!d) {
        log_err("%s: refused: no symbol %s (not a tlsbox plugin, or built without "
                "TLSBOX_PLUGIN())",
                path, TLSBOX_PLUGIN_SYMBOL);
        goto out;
    }
    if (plugin_check_abi(path, d, &err) < 0) {
        log_err("%s", err);
        goto out;
    }
    if (!name_is_valid(d->name)) {
        log_err("%s: refused: plugin name \"%s\" must match [a-z][a-z0-9_]* (at most 32)", path,
                d->name ? d->name : "(null)");
        goto out;
    }
    if (plugins_find(d->name)) {
        log_err("%s: refused: a plugin named \"%s\" is already loaded", path, d->name);
        rc = -EEXIST;
        goto out;
    }
    if (d->settings && settings_register(d->name, d->settings) < 0) {
        log_err("%s: refused: its settings table is invalid", path);
        goto out;
    }

    struct tlsbox_plugin *p = xcalloc(1, sizeof *p);
    p->name = xstrdup(d->name);
    p->path = xstrdup(path);
    p->dl = dl;
    p->desc = d;
    p->pstate = PLUGIN_LOADED;
    struct tlsbox_plugin **tail = &plugins_head;
    while (*tail)
        tail = &(*tail)->next;
    *tail = p;
    log_info("loaded plugin %s %s (ABI %u.%u) from %s", d->name, d->version ? d->version : "?",
             d->abi_major, d->abi_minor, path);
    store_guard_set_plugins(plugins_first); /* a neighbour's tables are not this plugin's */
    *out = p;
    return 0;
out:
    free(err);
    dlclose(dl);
    return rc;
}

int plugins_load_files(char *const *paths, size_t n)
{
    /* All loaded before any migrates: which tables are a plugin's depends
     * on the others' names (the longest name that prefixes a table owns
     * it), and "zz.so" sorts before "zz_big.so".  Migrated on load, zz's
     * steps ran while zz_big was unknown, so zz_big's tables counted as
     * zz's: its migration could rewrite or drop them. */
    struct tlsbox_plugin **loaded = xcalloc(n ? n : 1, sizeof *loaded);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (load_one(paths[i], &loaded[k]) == 0)
            k++;
    for (size_t i = 0; i < k; i++)
        plugin_apply_schema(loaded[i]);
    free(loaded);
    return 0;
}

int plugins_load_file(const char *path)
{
    struct tlsbox_plugin *p = NULL;
    int rc = load_one(path, &p);
    if (rc == 0)
        plugin_apply_schema(p);
    return rc;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int plugins_load_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        log_err("plugin directory %s: %s", dir, strerror(errno));
        return -errno;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 3 && strcmp(e->d_name + len - 3, ".so") == 0 && e->d_name[0] != '.') {
            names = xrealloc(names, (n + 1) * sizeof *names);
            names[n++] = xasprintf("%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    /* Sorted, so the load (and start) order is the same on every machine. */
    if (n) /* qsort's array may not be NULL, even for no element */
        qsort(names, n, sizeof *names, cmp_names);
    plugins_load_files(names, n);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return 0;
}

/* @p list (core.plugins_disabled as stored, or NULL) names @p name. */
static bool list_names(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *t = list; t && *t; t += strcspn(t, ",")) {
        t += strspn(t, ", ");
        if (strncmp(t, name, n) == 0 && (t[n] == '\0' || t[n] == ',' || t[n] == ' '))
            return true;
    }
    return false;
}

/* A hook's errno says little ("Invalid argument"); the ERROR line the plugin
 * logged before it returned says what was wrong, and it goes into the status
 * that tlsboxctl plugins and the web UI show.  Threads the start hook began
 * may log too, hence the lock. */
static pthread_mutex_t hook_err_lock = PTHREAD_MUTEX_INITIALIZER;

void plugin_note_error(struct tlsbox_plugin *p, const char *msg)
{
    pthread_mutex_lock(&hook_err_lock);
    if (p->in_hooks) {
        free(p->hook_err);
        p->hook_err = xstrdup(msg);
    }
    pthread_mutex_unlock(&hook_err_lock);
}

/* Begin (@p on) or end the hooks of @p p; ending returns what it logged last
 * (caller frees), or NULL. */
static char *hooks_running(struct tlsbox_plugin *p, bool on)
{
    pthread_mutex_lock(&hook_err_lock);
    char *said = p->hook_err;
    p->hook_err = NULL;
    p->in_hooks = on;
    pthread_mutex_unlock(&hook_err_lock);
    if (on)
        free(said);
    return on ? NULL : said;
}

/* Set with a plugin's start_again: the main thread has plugins to start. */
static atomic_bool again_wanted;

/*
 * The applier of a plugin that does not run: a change of its settings is
 * stored, and whoever made it is told what follows (tlsboxctl prints the
 * note, the API answers restart_needed with it), not left to wonder why
 * nothing changed.  A plugin whose init or start failed is started again
 * with the change once it is stored (plugins_start_again: a setting that
 * kept it from starting can be mended from the web UI); one disabled starts
 * with it once enabled (plugins_follow_disabled); one whose schema failed
 * waits for the next start, or to be disabled and enabled again (which
 * applies its migrations first).  Registered on the main
 * thread once p->pstate and p->error are final; called under the settings
 * write lock, on the thread making the change.
 */
static int not_running_apply(void *arg, const struct tlsbox_setting_value *changes, char **err)
{
    struct tlsbox_plugin *p = arg;
    (void)changes;
    char *note;
    if (p->pstate == PLUGIN_DISABLED) {
        note = xasprintf("plugin %s is disabled (core.plugins_disabled): stored, it starts "
                         "with this once it is enabled",
                         p->name);
    } else if (p->start_failed) {
        atomic_store(&p->start_again, true);
        atomic_store(&again_wanted, true);
        note = xasprintf("plugin %s is not running (%s): stored, tlsboxd starts it again with "
                         "this now (tlsboxctl plugins says how that went)",
                         p->name, p->error ? p->error : "it failed");
    } else {
        note = xasprintf("plugin %s is not running (%s): stored, it starts with this when "
                         "tlsboxd restarts",
                         p->name, p->error ? p->error : "it failed");
    }
    if (err)
        *err = note;
    else
        free(note);
    return TLSBOX_APPLY_AT_RESTART;
}

static void plugin_fail(struct tlsbox_plugin *p, const char *hook, int rc)
{
    char *said = hooks_running(p, false);
    plugin_retire_error(p);
    p->error = said ? xasprintf("%s hook failed: %s", hook, said)
                    : xasprintf("%s hook failed: %s", hook, strerror(rc < 0 ? -rc : rc));
    free(said);
    p->pstate = PLUGIN_FAILED;
    log_err("plugin %s: %s; tlsboxd goes on without it", p->name, p->error);
    if (p->desc->settings)
        settings_set_applier(p->name, not_running_apply, p);
}

/* Remove everything the plugin registered: it may not run after stop.
 * What can submit a job (event callbacks, routes, timers) goes first, the
 * jobs last: a callback that submitted one after jobs_cancel_owner returned
 * left a job that ran after fini, or after dlclose (a crash at stop). */
static void plugin_unhook(struct tlsbox_plugin *p)
{
    events_unsubscribe_owner(p);
    api_routes_remove_owner(p);
    http_routes_remove_owner(p);
    timers_cancel_owner(p);
    jobs_cancel_owner(p);
}

/* Init then start @p p; 0 once started, else the failing hook's errno (its
 * state freed, the failure noted in p->error and logged). */
static int plugin_start_one(struct tlsbox_plugin *p)
{
    hooks_running(p, true);
    int rc = p->desc->init ? p->desc->init(p, host_table(), &p->state) : 0;
    if (rc != 0) {
        plugin_fail(p, "init", rc);
        if (p->desc->fini)
            p->desc->fini(p->state);
        p->state = NULL;
        p->start_failed = true;
        return rc;
    }
    p->pstate = PLUGIN_INITED;
    rc = p->desc->start ? p->desc->start(p->state) : 0;
    if (rc != 0) {
        plugin_fail(p, "start", rc);
        if (p->desc->stop)
            p->desc->stop(p->state);
        plugin_unhook(p);
        if (p->desc->fini)
            p->desc->fini(p->state);
        p->state = NULL;
        p->start_failed = true;
        return rc;
    }
    free(hooks_running(p, false));
    p->pstate = PLUGIN_STARTED;
    p->start_failed = false;
    plugin_retire_error(p);
    /* Only now: before start there is nothing running to apply a change to.
     * A plugin started again replaces not_running_apply (or has none). */
    if (TLSBOX_DESC_HAS(p->desc, apply_settings) && p->desc->apply_settings && p->desc->settings)
        settings_set_applier(p->name, p->desc->apply_settings, p->state);
    else if (p->desc->settings)
        settings_set_applier(p->name, NULL, NULL);
    return 0;
}

int plugins_start_all(void)
{
    int ret = 0;
    char *disabled = settings_get("core.plugins_disabled");
    for (struct tlsbox_plugin *p = plugins_head; p; p = p->next) {
        if (p->pstate == PLUGIN_FAILED && !list_names(disabled, p->name)) {
            /* its schema could not be applied */
            if (p->desc->settings)
                settings_set_applier(p->name, not_running_apply, p);
            continue;
        }
        if (list_names(disabled, p->name)) {
            /* Disabled: why its schema failed no longer matters (it is
             * applied again when the plugin is enabled). */
            plugin_retire_error(p);
            p->pstate = PLUGIN_DISABLED;
            log_info("plugin %s disabled by core.plugins_disabled", p->name);
            if (p->desc->settings)
                settings_set_applier(p->name, not_running_apply, p);
            continue;
        }
        if (plugin_check_tables(p) < 0) {
            if (p->desc->settings)
                settings_set_applier(p->name, not_running_apply, p);
            continue;
        }
        if (plugin_start_one(p) == -EADDRINUSE)
            ret = -EADDRINUSE;
    }
    free(disabled);
    return ret;
}

int plugins_retry_failed(bool (*prepare)(const char *name, void *arg), void *arg)
{
    int ret = 0;
    for (struct tlsbox_plugin *p = plugins_head; p; p = p->next) {
        if (p->pstate != PLUGIN_FAILED || !p->start_failed)
            continue;
        /* Before prepare changes its settings: nothing runs to be told. */
        if (p->desc->settings)
            settings_set_applier(p->name, NULL, NULL);
        if (!prepare(p->name, arg)) {
            if (p->desc->settings)
                settings_set_applier(p->name, not_running_apply, p);
            continue;
        }
        log_info("plugin %s: starting again", p->name);
        if (plugin_start_one(p) == -EADDRINUSE)
            ret = -EADDRINUSE;
        else if (p->pstate == PLUGIN_STARTED)
            log_info("plugin %s started", p->name);
    }
    return ret;
}

bool plugins_take_start_again(void)
{
    return atomic_exchange(&again_wanted, false);
}

void plugins_start_again(bool changed_only)
{
    for (struct tlsbox_plugin *p = plugins_head; p; p = p->next) {
        if (p->pstate != PLUGIN_FAILED || !p->start_failed)
            continue;
        bool mine = atomic_exchange(&p->start_again, false);
        if (changed_only && !mine)
            continue;
        /* not_running_apply stays while it starts: a change stored meanwhile
         * (which the hooks may have read too late) asks for one more try. */
        for (int n = 0; n < 3; n++) {
            log_info("plugin %s: starting again (%s)", p->name,
                     mine ? "its settings changed" : "SIGUSR2");
            if (plugin_start_one(p) == 0) {
                log_info("plugin %s started", p->name);
                break;
            }
            if (!atomic_exchange(&p->start_again, false))
                break;
        }
    }
}

/* Stop and fini a started plugin; it stays loaded (its module, settings
 * declarations and list entry), so that it can be started again.  The
 * caller sets p->pstate. */
static void plugin_stop_one(struct tlsbox_plugin *p)
{
    /* Before stop: a change made meanwhile is stored, not applied. */
    settings_set_applier(p->name, NULL, NULL);
    if (p->pstate == PLUGIN_STARTED && p->desc->stop)
        p->desc->stop(p->state);
    plugin_unhook(p);
    if (p->desc->fini)
        p->desc->fini(p->state);
    p->state = NULL;
}

/* Stop @p p if core.plugins_disabled names it, or show it disabled if it
 * failed; the ones after it first (a plugin may use what an earlier one
 * serves, as at shutdown). */
static void plugins_disable_rev(struct tlsbox_plugin *p, const char *disabled)
{
    if (!p)
        return;
    plugins_disable_rev(p->next, disabled);
    if (!list_names(disabled, p->name))
        return;
    if (p->pstate == PLUGIN_STARTED || p->pstate == PLUGIN_INITED) {
        plugin_stop_one(p);
        p->pstate = PLUGIN_DISABLED;
        log_info("plugin %s stopped: core.plugins_disabled names it now", p->name);
    } else if (p->pstate == PLUGIN_FAILED && (p->start_failed || p->schema_failed)) {
        /* Why it failed no longer matters: it is not to run.  A schema
         * failure is remembered (schema_failed): enabled again, the
         * plugin's migrations are tried first. */
        atomic_store(&p->start_again, false);
        p->start_failed = false;
        plugin_retire_error(p);
        p->pstate = PLUGIN_DISABLED;
        log_info("plugin %s disabled by core.plugins_disabled", p->name);
    } else {
        return;
    }
    if (p->desc->settings)
        settings_set_applier(p->name, not_running_apply, p);
}

void plugins_follow_disabled(void)
{
    /* Read once: both passes follow the same list. */
    char *disabled = settings_get("core.plugins_disabled");
    plugins_disable_rev(plugins_head, disabled);
    for (struct tlsbox_plugin *p = plugins_head; p; p = p->next) {
        if (p->pstate != PLUGIN_DISABLED || list_names(disabled, p->name))
            continue;
        log_info("plugin %s: starting (core.plugins_disabled no longer names it)", p->name);
        if (p->schema_failed) {
            p->schema_failed = false;
            plugin_apply_schema(p); /* failing again: failed, saying why */
            if (p->pstate == PLUGIN_FAILED)
                continue;
        }
        if (plugin_check_tables(p) < 0)
            continue;
        /* Started, it has its own applier; failed, not_running_apply again. */
        if (plugin_start_one(p) == 0)
            log_info("plugin %s started", p->name);
    }
    free(disabled);
}

static void plugins_stop_rev(struct tlsbox_plugin *p)
{
    if (!p)
        return;
    plugins_stop_rev(p->next);
    if (p->pstate == PLUGIN_STARTED || p->pstate == PLUGIN_INITED) {
        plugin_stop_one(p);
        p->pstate = PLUGIN_STOPPED;
        log_info("plugin %s stopped", p->name);
    }
}

void plugins_stop_running(void)
{
    plugins_stop_rev(plugins_head);
}

void plugins_stop_all(void)
{
    plugins_stop_rev(plugins_head);
    struct tlsbox_plugin *p = plugins_head;
    plugins_head = NULL;
    while (p) {
        struct tlsbox_plugin *next = p->next;
        settings_unregister(p->name);
        /* Under ASan keep the code mapped so leak reports can name plugin frames
         * (and a plugin's static pointers stay visible to LeakSanitizer). */
#ifndef TLSBOX_ASAN
        dlclose(p->dl);
#endif
        free(p->name);
        free(p->path);
        free(p->error);
        for (size_t i = 0; i < p->n_errors_before; i++)
            free(p->errors_before[i]);
        free(p->errors_before);
        free(p->hook_err);
        free(p);
        p = next;
    }
}
