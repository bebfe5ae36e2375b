/* The mock host's settings: the plugin's declared table, values validated
 * as the core validates them, "settings.changed" queued on every change. */
#include <errno.h>
#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mock.h"

static struct value {
    char *key; /* "<plugin>.<key>" */
    char *value;
} * values;
static size_t nvalues;

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

/* The current value (caller frees), or NULL.  tlsbox_mockp.lock held. */
static char *lookup(const char *key)
{
    char *full = full_key(key);
    char *v = NULL;
    for (size_t i = 0; i < nvalues && !v; i++)
        if (strcmp(values[i].key, full) == 0)
            v = tlsbox_xstrdup(values[i].value);
    const struct tlsbox_setting_def *d = v ? NULL : own_def(full);
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
    char *v = tlsbox_mockp_setting_get(self, key), *end = NULL;
    long long r = v && *v ? strtoll(v, &end, 10) : dflt;
    if (end && *end)
        r = dflt;
    free(v);
    return r;
}

/* 1 true, 0 false, -1 neither (the spellings the core accepts). */
static int parse_bool(const char *v)
{
    static const char *const yes[] = {"true", "1", "yes", "on"}, *const no[] = {"false", "0", "no",
                                                                                "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return 1;
        if (strcasecmp(v, no[i]) == 0)
            return 0;
    }
    return -1;
}

bool tlsbox_mockp_setting_get_bool(struct tlsbox_plugin *self, const char *key, bool dflt)
{
    char *v = tlsbox_mockp_setting_get(self, key);
    int b = v ? parse_bool(v) : -1;
    free(v);
    return b < 0 ? dflt : b == 1;
}

static int matches(const char *pattern, const char *v)
{
    regex_t re;
    if (!pattern)
        return 1;
    if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
        return 0;
    int ok = regexec(&re, v, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

static int choice_of(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *c = choices; c && *c;) {
        const char *bar = strchr(c, '|');
        size_t len = bar ? (size_t)(bar - c) : strlen(c);
        if (len == n && strncmp(c, v, n) == 0)
            return 1;
        c = bar ? bar + 1 : c + len;
    }
    return 0;
}

/* Within .max bytes (STRING, LIST item; 0 = any), as the core checks. */
static int short_enough(const struct tlsbox_setting_def *d, const char *v)
{
    return d->max <= 0 || strlen(v) <= (unsigned long long)d->max;
}

/* Every comma-separated item of @p v, blanks trimmed, is not empty and
 * matches the pattern and the bound, as core/settings_check.c splits a LIST:
 * "a.org ," is one item of 5 bytes and "a.org," has an empty one.  Blanks
 * alone are the empty list. */
static int list_matches(const struct tlsbox_setting_def *d, const char *v)
{
    char *copy = tlsbox_xstrdup(v), *p = copy;
    int ok = 1;
    while (*p == ' ' || *p == '\t')
        p++;
    while (*p && ok) {
        char *comma = strchr(p, ','), *e = comma ? comma : p + strlen(p), *s = p;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        *e = '\0';
        ok = s < e && short_enough(d, s) && matches(d->pattern, s);
        if (!comma)
            break;
        p = comma + 1;
        if (!*p)
            ok = 0; /* a trailing comma: an empty last item */
    }
    free(copy);
    return ok;
}

/* NULL when @p v is valid for @p d, else why not (static text). */
static const char *check(const struct tlsbox_setting_def *d, const char *v)
{
    char *end = NULL;
    long long n;
    switch (d->type) {
    case TLSBOX_SETTING_BOOL:
        return parse_bool(v) < 0 ? "not a boolean (true/false)" : NULL;
    case TLSBOX_SETTING_INT:
        n = strtoll(v, &end, 10);
        if (!*v || *end)
            return "not an integer";
        return (d->min || d->max) && (n < d->min || n > d->max) ? "out of range" : NULL;
    case TLSBOX_SETTING_ENUM:
        return choice_of(d->choices, v) ? NULL : "not one of the choices";
    case TLSBOX_SETTING_LIST:
        return list_matches(d, v) ? NULL
                                  : "an item is empty, too long or does not match the pattern";
    case TLSBOX_SETTING_STRING:
        if (!short_enough(d, v))
            return "longer than .max";
        return matches(d->pattern, v) ? NULL : "does not match the pattern";
    default:
        return "unknown type";
    }
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
    if (in_apply) {
        if (err)
            *err = tlsbox_xasprintf("%s: set from .apply_settings, which the core refuses "
                                    "(it would wait for itself)",
                                    key);
        return -EDEADLK;
    }
    char *full = full_key(key);
    const struct tlsbox_setting_def *d = own_def(full);
    size_t n = strlen(tlsbox_mockp.self.name);
    const char *why = NULL;
    if (!d && strncmp(full, tlsbox_mockp.self.name, n) == 0 && full[n] == '.')
        why = "no such setting";
    else if (d)
        why = check(d, value);
    if (why) {
        char *msg = tlsbox_xasprintf("%s: %s: %s", full, value, why);
        if (err)
            *err = msg;
        else
            free(msg);
        free(full);
        return -EINVAL;
    }
    pthread_mutex_lock(&set_lock);
    int rc = apply(d, full, value, err);
    if (rc < 0) {
        pthread_mutex_unlock(&set_lock);
        free(full);
        return rc;
    }
    pthread_mutex_lock(&tlsbox_mockp.lock);
    size_t i = 0;
    while (i < nvalues && strcmp(values[i].key, full) != 0)
        i++;
    if (i == nvalues) {
        values = tlsbox_xrealloc(values, (nvalues + 1) * sizeof *values);
        values[nvalues++].key = tlsbox_xstrdup(full);
    } else {
        free(values[i].value);
    }
    values[i].value = tlsbox_xstrdup(value);
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    pthread_mutex_unlock(&set_lock);
    char *q = tlsbox_mockp_json_string(full);
    char *data = tlsbox_xasprintf("{\"key\":%s}", q);
    tlsbox_mock_publish("settings.changed", data);
    free(data);
    free(q);
    free(full);
    return rc;
}

int tlsbox_mockp_setting_set(struct tlsbox_plugin *self, const char *key, const char *value,
                             char **err)
{
    (void)self;
    if (!key || !value)
        return -EINVAL;
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
    int rc = key && value ? set_value(key, value, &err) : -EINVAL;
    if (err)
        fprintf(stderr, "# mock host: refused: %s\n", err);
    free(err);
    return rc;
}

void tlsbox_mockp_settings_reset(void)
{
    tlsbox_mock_stopped();
    for (size_t i = 0; i < nvalues; i++) {
        free(values[i].key);
        free(values[i].value);
    }
    free(values);
    values = NULL;
    nvalues = 0;
}
