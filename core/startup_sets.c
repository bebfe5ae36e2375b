/* tlsboxd --set: store before the plugins start, undo for one that cannot.
 *
 * Why undo: a value can be sound on its own and still keep its plugin from
 * starting (the site's two ports set equal, a port another process holds,
 * an address in site.bind this machine does not have).  Given live
 * (tlsboxctl set) such a change is refused and nothing is stored; given to
 * tlsboxd --set it used to stay stored, so every later start failed the
 * same way until someone changed it back.  Now the store is left as it was
 * before this start, as for a refused change.  The admin web UI (owner
 * "admin", part of the core) is treated the same. */
#include "config.h"

#include <string.h>

#include <jansson.h>

#include "core/log.h"
#include "core/settings.h"
#include "core/startup_sets.h"
#include "core/xalloc.h"

/* "owner.key" -> the value stored before --set (JSON null: none stored), for
 * the keys whose stored value --set changed. */
static json_t *before;

static bool same(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

int startup_sets_apply(char *const *sets, int n)
{
    if (n == 0)
        return 0;
    json_t *pairs = json_object();
    for (int i = 0; i < n; i++) {
        const char *eq = strchr(sets[i], '=');
        char *key = xstrndup(sets[i], (size_t)(eq - sets[i]));
        /* Bytes as given: the settings' validation judges them. */
        json_object_set_new_nocheck(pairs, key, json_string_nocheck(eq + 1));
        free(key);
    }
    json_t *old = json_object();
    const char *key;
    json_t *v;
    json_object_foreach(pairs, key, v)
    {
        char *s = settings_get_stored(key);
        json_object_set_new_nocheck(old, key, s ? json_string_nocheck(s) : json_null());
        wipe_free_str(s);
    }
    char *err = NULL;
    int rc = settings_set_many(pairs, NULL, "tlsboxd --set", &err);
    if (rc < 0)
        log_err("--set refused, no setting stored: %s", err ? err : "refused");
    free(err); /* a note (rc 1) needs no word: no plugin has started yet */
    if (rc >= 0) {
        json_decref(before);
        before = json_object();
        json_object_foreach(old, key, v)
        {
            char *now = settings_get_stored(key);
            if (!same(json_string_value(v), now))
                json_object_set_nocheck(before, key, v);
            wipe_free_str(now);
        }
    }
    json_decref(old);
    json_decref(pairs);
    return rc < 0 ? rc : 0;
}

/* Undo the values --set gave to @p plugin's settings, or to every owner's
 * (@p plugin NULL: tlsboxd is not starting). */
static bool undo(const char *plugin)
{
    if (!before)
        return false;
    size_t len = plugin ? strlen(plugin) : 0;
    json_t *mine = json_object();
    char *keys = NULL;
    const char *key;
    json_t *v;
    json_object_foreach(before, key, v)
    {
        if (plugin && (strncmp(key, plugin, len) != 0 || key[len] != '.'))
            continue;
        json_object_set_nocheck(mine, key, v);
        char *k = keys ? xasprintf("%s, %s", keys, key) : xstrdup(key);
        free(keys);
        keys = k;
    }
    bool undone = false;
    if (keys) {
        char *err = NULL;
        if (settings_set_many(mine, NULL, "tlsboxd --set undone", &err) < 0) {
            log_err("tlsboxd --set: %s could not start with the values given to %s, and they "
                    "cannot be undone: %s",
                    plugin ? plugin : "tlsboxd", keys, err ? err : "refused");
        } else if (!plugin) {
            log_err("tlsboxd --set: tlsboxd is not starting: the values given to %s are "
                    "undone, the values stored before are back",
                    keys);
            undone = true;
            json_object_foreach(mine, key, v) json_object_del(before, key);
        } else {
            log_err("tlsboxd --set: %s could not start with the values given to %s (see "
                    "above): undone, the values stored before are back",
                    plugin, keys);
            undone = true;
            /* Undone once: a second failure is the old values' own. */
            json_object_foreach(mine, key, v) json_object_del(before, key);
        }
        free(err);
    }
    free(keys);
    json_decref(mine);
    return undone;
}

bool startup_sets_undo(const char *plugin, void *arg)
{
    (void)arg;
    return undo(plugin);
}

bool startup_sets_undo_only(const char *plugin, void *arg)
{
    (void)arg;
    undo(plugin);
    return false;
}

void startup_sets_undo_all(void)
{
    undo(NULL);
}

void startup_sets_free(void)
{
    json_decref(before);
    before = NULL;
}
