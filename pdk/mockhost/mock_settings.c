/* The mock host's settings: the plugin's declared table, checked and its
 * values validated by the core's own code (core/settings_check.c, compiled
 * into the kit under tlsbox_mock_* names), "settings.changed" queued on
 * every change. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/settings_check.h"
#include "core/settings_tables.h"
#include "mock.h"

static struct value {
    char *key;   /* "<plugin>.<key>" */
    char *value; /* canonical, as the core stores it (settings_check) */
    bool secret; /* wiped when freed, as the core wipes a secret */
} * values;
static size_t nvalues;

static void free_value(struct value *v)
{
    if (v->secret)
        tlsbox_wipe_free_str(v->value);
    else
        free(v->value);
    v->value = NULL;
}

/* The started plugin's state for its .apply_settings (tlsbox_mock_started),
 * and set_lock: one change at a time, hook and store, as the core's set_lock
 * makes it.  in_apply: this thread runs the hook (a setting_set from it
 * would wait for itself in the core). */
static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;
static bool started;
static void *started_state;
static _Thread_local bool in_apply;

/* "key" or "<plugin>.key" -> "<plugin>.key"; another owner's key as it is. */
static char *full_key(const char *key)
{
    return strchr(key, '.') ? tlsbox_xstrdup(key)
                            : tlsbox_xasprintf("%s.%s", tlsbox_mockp.self.name, key);
}

static const struct tlsbox_setting_def *own_def(const char *full)
{
    size_t n = strlen(tlsbox_mockp.self.name);
    if (!tlsbox_mockp.desc || strncmp(full, tlsbox_mockp.self.name, n) != 0 || full[n] != '.')
        return NULL;
    for (const struct tlsbox_setting_def *d = tlsbox_mockp.desc->settings; d && d->key; d++)
        if (strcmp(d->key, full + n + 1) == 0)
            return d;
    return NULL;
}

/* Other plugins the test says the daemon has loaded (tlsbox_mock_neighbour):
 * descriptors borrowed, forgotten at teardown. */
static const struct tlsbox_plugin_desc **neighbours;
static size_t nneighbours;

/* @p full's declaration in @p defs of owner @p owner, or NULL. */
static const struct tlsbox_setting_def *
def_in(const char *owner, const struct tlsbox_setting_def *defs, const char *full)
{
    size_t n = strlen(owner);
    if (strncmp(full, owner, n) != 0 || full[n] != '.')
        return NULL;
    for (const struct tlsbox_setting_def *d = defs; d && d->key; d++)
        if (strcmp(d->key, full + n + 1) == 0)
            return d;
    return NULL;
}

/* A key of the core's own tables ("core.hostname", "admin.port"), which the
 * daemon always has registered, or of a neighbour's, or NULL: another
 * plugin's key without a neighbour is NULL, as in a daemon that has not
 * loaded that plugin.  tlsbox_mockp.lock held. */
static const struct tlsbox_setting_def *other_def(const char *full)
{
    const struct tlsbox_setting_def *d = def_in("core", core_settings, full);
    if (!d)
        d = def_in("admin", admin_settings, full);
    for (size_t i = 0; !d && i < nneighbours; i++)
        d = def_in(neighbours[i]->name, neighbours[i]->settings, full);
    return d;
}

/* The current value (caller frees), or NULL.  tlsbox_mockp.lock held. */
static char *lookup(const char *key)
{
    char *full = full_key(key);
    char *v = NULL;
    for (size_t i = 0; i < nvalues && !v; i++)
        if (strcmp(values[i].key, full) == 0)
            v = tlsbox_xstrdup(values[i].value);
    /* Not stored: the declared default, the plugin's own, the core's or a
     * neighbour's (the daemon answers "core.hostname" with "" when nothing
     * is stored). */
    const struct tlsbox_setting_def *d = v ? NULL : own_def(full);
    if (!v && !d)
        d = other_def(full);
    if (d && d->default_value)
        v = tlsbox_xstrdup(d->default_value);
    free(full);
    return v;
}

char *tlsbox_mockp_setting_get(struct tlsbox_plugin *self, const char *key)
{
    (void)self;
    if (!key)
        return NULL;
    pthread_mutex_lock(&tlsbox_mockp.lock);
    char *v = lookup(key);
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return v;
}

long long tlsbox_mockp_setting_get_int(struct tlsbox_plugin *self, const char *key, long long dflt)
{
    char *v = tlsbox_mockp_setting_get(self, key);
    long long n;
    if (!v || settings_check_parse_int(v, &n) < 0)
        n = dflt;
    free(v);
    return n;
}

bool tlsbox_mockp_setting_get_bool(struct tlsbox_plugin *self, const char *key, bool dflt)
{
    char *v = tlsbox_mockp_setting_get(self, key);
    int b = settings_parse_bool(v);
    free(v);
    return b < 0 ? dflt : b == 1;
}

/*
 * Let the started plugin's .apply_settings apply the change of its own
 * setting @p d to @p value, as the core does before it stores one: 0 (apply
 * it), TLSBOX_APPLY_AT_RESTART (store it; the note is logged, as the core's
 * host call logs it), or the hook's refusal with its message in *err.
 * set_lock held, tlsbox_mockp.lock not: the hook may read settings.
 */
static int apply(const struct tlsbox_setting_def *d, const char *full, const char *value,
                 char **err)
{
    const struct tlsbox_plugin_desc *desc = tlsbox_mockp.desc;
    if (!started || !d || !TLSBOX_DESC_HAS(desc, apply_settings) || !desc->apply_settings)
        return 0;
    const struct tlsbox_setting_value change[] = {{.key = d->key, .value = value},
                                                  TLSBOX_VALUES_END};
    char *why = NULL;
    in_apply = true;
    int rc = desc->apply_settings(started_state, change, &why);
    in_apply = false;
    if (rc == TLSBOX_APPLY_AT_RESTART) {
        tlsbox_mockp_log(&tlsbox_mockp.self, TLSBOX_LOG_INFO, "%s",
                         why ? why : "takes effect when tlsboxd restarts");
        free(why);
        return rc;
    }
    if (rc >= 0) {
        free(why);
        return 0;
    }
    if (!why)
        why = tlsbox_xasprintf("%s: %s refused the change: %s", full, desc->name, strerror(-rc));
    if (err)
        *err = why;
    else
        free(why);
    return rc;
}

/* Validate, apply and store; the event is queued after the locks are
 * dropped.  0, TLSBOX_APPLY_AT_RESTART, or a negative errno with *err. */
static int set_value(const char *key, const char *value, char **err)
{
    char *full = full_key(key), *canon = NULL;
    if (in_apply) {
        /* The core's answer and message (core/settings.c). */
        if (err)
            *err = tlsbox_xasprintf("%s: set from .apply_settings, which the core refuses "
                                    "(it would wait for itself)",
                                    full);
        free(full);
        return -EDEADLK;
    }
    const struct tlsbox_setting_def *d = own_def(full);
    size_t n = strlen(tlsbox_mockp.self.name);
    bool secret = d && settings_is_secret(d);
    int rc = -EINVAL;
    if (!value) {
        /* Before the key, as core/settings.c's settings_set asks. */
        if (err)
            *err = tlsbox_xasprintf("%s: no value given", full);
        goto out;
    }
    /* The plugin's own keys go through the daemon's check (NULL def: "no
     * such setting"), which also gives the canonical text the core stores
     * and hands the hook; another owner's key is taken as given. */
    if (d || (strncmp(full, tlsbox_mockp.self.name, n) == 0 && full[n] == '.')) {
        if (settings_check(full, d, NULL, value, &canon, err) < 0)
            goto out;
    } else {
        canon = tlsbox_xstrdup(value);
    }
    pthread_mutex_lock(&set_lock);
    rc = apply(d, full, canon, err);
    if (rc < 0) {
        pthread_mutex_unlock(&set_lock);
        goto out;
    }
    pthread_mutex_lock(&tlsbox_mockp.lock);
    size_t i = 0;
    while (i < nvalues && strcmp(values[i].key, full) != 0)
        i++;
    if (i == nvalues) {
        values = tlsbox_xrealloc(values, (nvalues + 1) * sizeof *values);
        values[nvalues++].key = tlsbox_xstrdup(full);
    } else {
        free_value(&values[i]);
    }
    values[i].value = canon;
    values[i].secret = secret;
    canon = NULL;
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    pthread_mutex_unlock(&set_lock);
    char *q = tlsbox_mockp_json_string(full);
    char *data = tlsbox_xasprintf("{\"key\":%s}", q);
    tlsbox_mock_publish("settings.changed", data);
    free(data);
    free(q);
out:
    if (secret)
        tlsbox_wipe_free_str(canon);
    else
        free(canon);
    free(full);
    return rc;
}

int tlsbox_mockp_setting_set(struct tlsbox_plugin *self, const char *key, const char *value,
                             char **err)
{
    (void)self;
    if (!key)
        return -EINVAL;
    /* As the core answers: another owner's key is read, not written. */
    size_t n = strlen(tlsbox_mockp.self.name);
    if (strchr(key, '.') && (strncmp(key, tlsbox_mockp.self.name, n) != 0 || key[n] != '.')) {
        if (err)
            *err = tlsbox_xasprintf("%s: plugin %s sets only its own settings (%s.KEY); another "
                                    "owner's are read, not written",
                                    key, tlsbox_mockp.self.name, tlsbox_mockp.self.name);
        return -EPERM;
    }
    int rc = set_value(key, value, err);
    return rc == TLSBOX_APPLY_AT_RESTART ? 0 : rc; /* as the host call answers it */
}

void tlsbox_mock_started(void *state)
{
    pthread_mutex_lock(&set_lock);
    started = true;
    started_state = state;
    pthread_mutex_unlock(&set_lock);
}

void tlsbox_mock_stopped(void)
{
    pthread_mutex_lock(&set_lock);
    started = false;
    started_state = NULL;
    pthread_mutex_unlock(&set_lock);
}

int tlsbox_mock_set(const char *key, const char *value)
{
    char *err = NULL;
    int rc = key ? set_value(key, value, &err) : -EINVAL;
    if (err)
        fprintf(stderr, "# mock host: refused: %s\n", err);
    free(err);
    return rc;
}

int tlsbox_mockp_settings_check(const struct tlsbox_plugin_desc *desc)
{
    char *err = NULL;
    int rc = 0;
    /* As the plugin loader hands a table to settings_register, which
     * refuses the plugin when one declaration is bad. */
    if (desc->settings && settings_check_owner(desc->name, &err) < 0)
        rc = -EINVAL;
    for (size_t i = 0; rc == 0 && desc->settings && desc->settings[i].key; i++) {
        regex_t *re = NULL;
        rc = settings_check_decl(desc->name, desc->settings, i, &re, &err);
        settings_check_free_regex(re);
    }
    if (rc < 0)
        fprintf(stderr,
                "# mock host: settings: %s\n# mock host: %s refused: its settings table "
                "is invalid\n",
                err, desc->name);
    free(err);
    return rc;
}

int tlsbox_mockp_settings_neighbour(const struct tlsbox_plugin_desc *desc)
{
    pthread_mutex_lock(&tlsbox_mockp.lock);
    bool taken = strcmp(desc->name, tlsbox_mockp.self.name) == 0;
    for (size_t i = 0; i < nneighbours && !taken; i++)
        taken = strcmp(neighbours[i]->name, desc->name) == 0;
    if (!taken) {
        neighbours = tlsbox_xrealloc(neighbours, (nneighbours + 1) * sizeof *neighbours);
        neighbours[nneighbours++] = desc;
    }
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    if (taken)
        fprintf(stderr, "# mock host: refused: a plugin named \"%s\" is loaded already\n",
                desc->name);
    return taken ? -EEXIST : 0;
}

void tlsbox_mockp_settings_reset(void)
{
    tlsbox_mock_stopped();
    free(neighbours);
    neighbours = NULL;
    nneighbours = 0;
    for (size_t i = 0; i < nvalues; i++) {
        free(values[i].key);
        free_value(&values[i]);
    }
    free(values);
    values = NULL;
    nvalues = 0;
}
