/*
 * The settings registry and its in-memory cache.
 *
 * Locks, always taken in this order:
 *   set_lock  (mutex)  serializes writers: settings_set*, settings_load and
 *                      settings_unregister, so the cache is updated in commit
 *                      order and an owner cannot vanish while a writer uses
 *                      its declarations;
 *   reg_lock  (rwlock) guards the owner list and the cached values; readers
 *                      (settings_get from any thread) take it shared.
 * An owner's applier is set and called under set_lock only, with reg_lock not
 * held: the plugin's hook may read settings.
 *
 * Writes use their own connection from store_connect(), opened per call:
 * settings change rarely, the API thread must not share the main thread's
 * connection (two threads' transactions would interleave on it), and an open
 * costs well under a millisecond next to the fsyncs of synchronous=FULL.
 */
#include "core/settings.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/events.h"
#include "core/log.h"
#include "core/settings_check.h"
#include "core/settings_history.h"
#include "core/store.h"
#include "core/xalloc.h"

#define SECRET_SHOWN "********"

struct owner {
    char *name;
    const struct tlsbox_setting_def *defs; /* borrowed */
    size_t n;
    regex_t **re;            /* [n] compiled patterns (NULL: none) */
    char **stored;           /* [n] stored canonical value, NULL = not stored */
    char **override;         /* [n] settings_override_default value, NULL = none */
    char **served;           /* [n] set_lock: see set_served */
    settings_apply_fn apply; /* set_lock: the plugin's .apply_settings, or NULL */
    void *apply_arg;
};

static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;
/* This thread runs an owner's applier, under set_lock: a write of settings
 * from it (host->setting_set in .apply_settings) would wait for itself. */
static _Thread_local bool in_applier;
static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct owner **owners;
static size_t n_owners;

static void free_value(const struct tlsbox_setting_def *def, char *v)
{
    if (settings_is_secret(def))
        wipe_free_str(v);
    else
        free(v);
}

/* reg_lock held. */
static struct owner *find_owner_n(const char *name, size_t len)
{
    for (size_t i = 0; i < n_owners; i++)
        if (strlen(owners[i]->name) == len && strncmp(owners[i]->name, name, len) == 0)
            return owners[i];
    return NULL;
}

/* "owner.key" -> owner and index.  reg_lock held. */
static struct owner *find_key(const char *full_key, size_t *idx)
{
    const char *dot = full_key ? strchr(full_key, '.') : NULL;
    if (!dot)
        return NULL;
    struct owner *o = find_owner_n(full_key, (size_t)(dot - full_key));
    if (!o)
        return NULL;
    for (size_t i = 0; i < o->n; i++) {
        if (strcmp(o->defs[i].key, dot + 1) == 0) {
            *idx = i;
            return o;
        }
    }
    return NULL;
}

/* The default in effect (declared or overridden).  reg_lock held. */
static const char *effective_default(const struct owner *o, size_t i)
{
    return o->override[i] ? o->override[i] : o->defs[i].default_value;
}

static const char *effective_value(const struct owner *o, size_t i)
{
    return o->stored[i] ? o->stored[i] : effective_default(o, i);
}

static void owner_free(struct owner *o)
{
    if (!o)
        return;
    for (size_t i = 0; i < o->n; i++) {
        settings_check_free_regex(o->re[i]);
        free_value(&o->defs[i], o->stored[i]);
        free_value(&o->defs[i], o->override[i]);
        free_value(&o->defs[i], o->served[i]);
    }
    free(o->re);
    free(o->served);
    free(o->stored);
    free(o->override);
    free(o->name);
    free(o);
}

/* Record that @p o's applier serves @p value for setting @p i, or NULL: the
 * stored value.  Not NULL after the applier took a stored value for the next
 * start (TLSBOX_APPLY_AT_RESTART) or refused one a reload found, and kept
 * serving this one: a change taken back hands the applier what it serves,
 * not the stored value.  set_lock held. */
static void set_served(struct owner *o, size_t i, const char *value)
{
    if (o->served[i] == value)
        return;
    char *copy = value ? xstrdup(value) : NULL;
    free_value(&o->defs[i], o->served[i]);
    o->served[i] = copy;
}

/* What @p o's applier serves for setting @p i.  set_lock held. */
static const char *served_value(const struct owner *o, size_t i)
{
    return o->served[i] ? o->served[i] : effective_value(o, i);
}

int settings_validate(const char *full_key, const struct tlsbox_setting_def *def, const char *value,
                      char **err)
{
    size_t idx;
    int rc;

    /* Use the compiled pattern when @p def is registered, else compile now. */
    pthread_rwlock_rdlock(&reg_lock);
    struct owner *o = find_key(full_key, &idx);
    const regex_t *re = o && &o->defs[idx] == def ? o->re[idx] : NULL;
    rc = settings_check(full_key, def, re, value, NULL, err);
    pthread_rwlock_unlock(&reg_lock);
    return rc;
}

/*
 * Read @p o's stored rows from @p db into a fresh array (the caller swaps it
 * in).  Values that no longer validate are dropped with a warning.  Without
 * reg_lock: @p o's declarations are immutable, and set_lock (held by every
 * caller but settings_register, whose owner is not yet visible) keeps it alive.
 */
static int read_owner(sqlite3 *db, const struct owner *o, char ***out)
{
    static const char sql[] =
        "SELECT key, value FROM settings WHERE substr(key, 1, ?1) = ?2 ORDER BY key";
    sqlite3_stmt *st = NULL;
    char *prefix = xasprintf("%s.", o->name);
    char **vals = xcalloc(o->n ? o->n : 1, sizeof(*vals));
    int rc = -EIO, s;

    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int(st, 1, (int)strlen(prefix));
    sqlite3_bind_text(st, 2, prefix, -1, SQLITE_STATIC);
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0);
        const char *val = (const char *)sqlite3_column_text(st, 1);
        size_t i;
        for (i = 0; i < o->n; i++)
            if (strcmp(o->defs[i].key, key + strlen(prefix)) == 0)
                break;
        if (i == o->n) {
            log_debug("settings: %s is stored but not declared; ignored", key);
            continue;
        }
        char *err = NULL, *canon = NULL;
        if (settings_check(key, &o->defs[i], o->re[i], val ? val : "", &canon, &err) < 0) {
            log_warn("settings: ignoring the stored value (the default serves): %s", err);
            free(err);
            continue;
        }
        free_value(&o->defs[i], vals[i]);
        vals[i] = canon;
    }
    if (s != SQLITE_DONE)
        goto out;
    rc = 0;
out:
    if (rc < 0) {
        log_err("settings: cannot read %s settings from the store: %s", o->name,
                sqlite3_errmsg(db));
        for (size_t i = 0; i < o->n; i++)
            free_value(&o->defs[i], vals[i]);
        free(vals);
        vals = NULL;
    }
    sqlite3_finalize(st);
    free(prefix);
    *out = vals;
    return rc;
}

/* Swap @p vals in as @p o's stored values; frees the old ones.  reg_lock held. */
static void swap_values(struct owner *o, char **vals)
{
    for (size_t i = 0; i < o->n; i++)
        free_value(&o->defs[i], o->stored[i]);
    free(o->stored);
    o->stored = vals;
}

int settings_register(const char *owner, const struct tlsbox_setting_def *defs)
{
    struct owner *o = xcalloc(1, sizeof(*o));
    char *err = NULL;
    int rc = -EINVAL;

    o->name = xstrdup(owner ? owner : "");
    o->defs = defs;
    while (defs && defs[o->n].key)
        o->n++;
    o->re = xcalloc(o->n ? o->n : 1, sizeof(*o->re));
    o->stored = xcalloc(o->n ? o->n : 1, sizeof(*o->stored));
    o->override = xcalloc(o->n ? o->n : 1, sizeof(*o->override));
    o->served = xcalloc(o->n ? o->n : 1, sizeof(*o->served));

    /* A plugin's table is checked once here, so a bad declaration fails the
     * plugin at load instead of at the first write. */
    if (settings_check_owner(owner, &err) < 0)
        goto fail;
    pthread_rwlock_rdlock(&reg_lock);
    bool dup = find_owner_n(o->name, strlen(o->name)) != NULL;
    pthread_rwlock_unlock(&reg_lock);
    if (dup) {
        xset_err(&err, "settings of %s are already registered", o->name);
        rc = -EEXIST;
        goto fail;
    }
    for (size_t i = 0; i < o->n; i++) {
        const struct tlsbox_setting_def *d = &defs[i];
        int bad = settings_check_decl(owner, defs, i, &o->re[i], &err) < 0;
        /* glibc expands a counted repeat into that many NFA nodes and keeps
         * their closures: "^[A-Za-z0-9_=+/-]{0,512}$" holds 4.5 MB for the
         * daemon's life.  Keep only the proof that it compiles; settings_check
         * compiles such a pattern again for each (rare) write. */
        if (d->pattern && strchr(d->pattern, '{')) {
            settings_check_free_regex(o->re[i]);
            o->re[i] = NULL;
        }
        if (bad)
            goto fail;
    }

    if (store_main()) {
        char **vals;
        if (read_owner(store_main(), o, &vals) == 0)
            swap_values(o, vals);
    }

    pthread_rwlock_wrlock(&reg_lock);
    if (find_owner_n(o->name, strlen(o->name))) {
        pthread_rwlock_unlock(&reg_lock);
        xset_err(&err, "settings of %s are already registered", o->name);
        rc = -EEXIST;
        goto fail;
    }
    owners = xrealloc(owners, (n_owners + 1) * sizeof(*owners));
    owners[n_owners++] = o;
    pthread_rwlock_unlock(&reg_lock);
    return 0;

fail:
    log_err("settings: %s", err);
    free(err);
    owner_free(o);
    return rc;
}

void settings_unregister(const char *owner)
{
    struct owner *o = NULL;

    pthread_mutex_lock(&set_lock);
    pthread_rwlock_wrlock(&reg_lock);
    for (size_t i = 0; owner && i < n_owners; i++) {
        if (strcmp(owners[i]->name, owner) == 0) {
            o = owners[i];
            memmove(&owners[i], &owners[i + 1], (n_owners - i - 1) * sizeof(*owners));
            n_owners--;
            break;
        }
    }
    if (n_owners == 0) {
        free(owners);
        owners = NULL;
    }
    pthread_rwlock_unlock(&reg_lock);
    pthread_mutex_unlock(&set_lock);
    owner_free(o);
}

int settings_set_applier(const char *owner, settings_apply_fn fn, void *arg)
{
    int rc = -ENOENT;

    /* set_lock: a write in progress finishes with the old applier first. */
    pthread_mutex_lock(&set_lock);
    pthread_rwlock_rdlock(&reg_lock);
    struct owner *o = owner ? find_owner_n(owner, strlen(owner)) : NULL;
    pthread_rwlock_unlock(&reg_lock);
    if (o) {
        o->apply = fn;
        o->apply_arg = arg;
        /* A new applier serves what it reads from the store. */
        for (size_t i = 0; i < o->n; i++)
            set_served(o, i, NULL);
        rc = 0;
    }
    pthread_mutex_unlock(&set_lock);
    return rc;
}

int settings_override_default(const char *full_key, const char *value, char **err)
{
    size_t i;
    char *canon = NULL;
    int rc = -EINVAL;

    pthread_rwlock_wrlock(&reg_lock);
    struct owner *o = find_key(full_key, &i);
    if (!o) {
        xset_err(err, "%s: no such setting", full_key ? full_key : "(null)");
        goto out;
    }
    if (settings_check(full_key, &o->defs[i], o->re[i], value, &canon, err) < 0)
        goto out;
    free_value(&o->defs[i], o->override[i]);
    o->override[i] = canon;
    rc = 0;
out:
    pthread_rwlock_unlock(&reg_lock);
    return rc;
}

/* Add @p why (consumed) to the notes in *notes, @p sep between them. */
static void add_note(char **notes, char *why, const char *sep)
{
    if (!why)
        return;
    if (!*notes) {
        *notes = why;
        return;
    }
    char *both = xasprintf("%s%s%s", *notes, sep, why);
    free(*notes);
    free(why);
    *notes = both;
}

/* A reload's values @p o refused, all of them, for reason @p why. */
static void log_refused(const struct owner *o, const char *why)
{
    log_err("settings reload: %s refused the stored values: %s; the old ones stay in effect "
            "until tlsboxd restarts (or tlsboxctl set them again)",
            o->name, why);
}

/* Offer @p o's applier the @p m changes @p v (of its settings @p idx) and
 * note what it serves after them.  Its return, its message in *why.
 * set_lock held. */
static int reload_offer(struct owner *o, const struct tlsbox_setting_value *v, const size_t *idx,
                        size_t m, char **why)
{
    in_applier = true;
    int rc = o->apply(o->apply_arg, v, why);
    in_applier = false;
    /* Applied: served as stored.  For the next start or refused: the old
     * one still serves, though the store (swapped in after) says otherwise. */
    for (size_t j = 0; j < m; j++)
        set_served(o, idx[j], rc == 0 ? NULL : served_value(o, idx[j]));
    return rc;
}

/*
 * @p o's applier refused the @p m > 1 stored values @p v together: offer
 * them one at a time, so that those it can apply run (a new root with a
 * port in use), and log which were applied, which wait for the next start
 * and which were refused.  set_lock held.
 */
static void reload_one_by_one(struct owner *o, const struct tlsbox_setting_value *v,
                              const size_t *idx, size_t m)
{
    char *applied = NULL, *later = NULL, *refused = NULL;

    for (size_t j = 0; j < m; j++) {
        const struct tlsbox_setting_value one[] = {v[j], TLSBOX_VALUES_END};
        char *why = NULL, *full = xasprintf("%s.%s", o->name, v[j].key);
        int rc = reload_offer(o, one, &idx[j], 1, &why);
        if (rc == 0) {
            free(why);
            add_note(&applied, full, ", ");
            continue;
        }
        if (rc == TLSBOX_APPLY_AT_RESTART)
            add_note(&later, why ? why : xasprintf("%s: takes effect when tlsboxd restarts", full),
                     "; ");
        else
            add_note(&refused, why ? why : xasprintf("%s: %s", full, strerror(-rc)), "; ");
        free(full);
    }
    const char *took = applied ? applied : "none of the stored values";
    const char *sep = later ? "; for the next start: " : "";
    if (!applied && !later)
        log_refused(o, refused);
    else if (!refused) /* together refused, one at a time taken */
        log_info("settings reload: %s applied %s%s%s", o->name, took, sep, later ? later : "");
    else
        log_err("settings reload: %s applied %s%s%s; it refused %s; the old values of those "
                "refused stay in effect until tlsboxd restarts (or tlsboxctl set them again)",
                o->name, took, sep, later ? later : "", refused);
    free(applied);
    free(later);
    free(refused);
}

/*
 * A reload (SIGHUP) found @p vals in the store for @p o: let its applier
 * apply the values that differ from the ones in effect, as for a change
 * made live, so that what runs follows the store.  The store is not the
 * applier's to refuse: a refusal is logged, the value stays stored and the
 * old one in effect.  set_lock held (o->stored cannot change), reg_lock not.
 */
static void reload_apply(struct owner *o, char *const *vals)
{
    if (!o->apply)
        return;
    struct tlsbox_setting_value *v = xcalloc(o->n + 1, sizeof(*v));
    size_t *idx = xcalloc(o->n + 1, sizeof(*idx));
    size_t m = 0;
    for (size_t i = 0; i < o->n; i++) {
        const char *next = vals[i] ? vals[i] : effective_default(o, i);
        if (strcmp(next, effective_value(o, i)) != 0) {
            idx[m] = i;
            v[m].key = o->defs[i].key;
            v[m++].value = next;
        }
    }
    char *why = NULL;
    int rc = m ? reload_offer(o, v, idx, m, &why) : 0;
    if (rc < 0 && m > 1)
        reload_one_by_one(o, v, idx, m);
    else if (rc < 0)
        log_refused(o, why ? why : strerror(-rc));
    else if (rc == TLSBOX_APPLY_AT_RESTART)
        log_info("settings reload: %s", why ? why : "takes effect when tlsboxd restarts");
    free(why);
    free(idx);
    free(v);
}

int settings_load(void)
{
    sqlite3 *db = store_main();
    int rc = 0;

    if (!db) {
        log_err("settings: the store is not open");
        return -ENXIO;
    }
    pthread_mutex_lock(&set_lock);
    /* Read every owner first, then swap all at once: a reader never sees
     * half of a reload.  The owner list cannot change under set_lock but for
     * settings_register, which only appends: take a snapshot of it. */
    pthread_rwlock_rdlock(&reg_lock);
    size_t n = n_owners;
    struct owner **snap = xcalloc(n ? n : 1, sizeof(*snap));
    memcpy(snap, owners, n * sizeof(*snap));
    pthread_rwlock_unlock(&reg_lock);

    char ***vals = xcalloc(n ? n : 1, sizeof(*vals));
    for (size_t i = 0; i < n; i++) {
        if (read_owner(db, snap[i], &vals[i]) < 0)
            rc = -EIO; /* that owner keeps its cached values */
        else
            reload_apply(snap[i], vals[i]);
    }

    pthread_rwlock_wrlock(&reg_lock);
    for (size_t i = 0; i < n; i++)
        if (vals[i])
            swap_values(snap[i], vals[i]);
    pthread_rwlock_unlock(&reg_lock);
    pthread_mutex_unlock(&set_lock);
    free(vals);
    free(snap);
    return rc;
}

bool settings_key_of(const char *full_key, const char *owner)
{
    size_t n = strlen(owner);
    return strncmp(full_key, owner, n) == 0 && full_key[n] == '.';
}

const struct tlsbox_setting_def *settings_def(const char *full_key)
{
    size_t i;
    pthread_rwlock_rdlock(&reg_lock);
    struct owner *o = find_key(full_key, &i);
    const struct tlsbox_setting_def *d = o ? &o->defs[i] : NULL;
    pthread_rwlock_unlock(&reg_lock);
    return d;
}

char *settings_get(const char *full_key)
{
    size_t i;
    char *v = NULL;
    pthread_rwlock_rdlock(&reg_lock);
    struct owner *o = find_key(full_key, &i);
    if (o)
        v = xstrdup(effective_value(o, i));
    pthread_rwlock_unlock(&reg_lock);
    return v;
}

char *settings_get_stored(const char *full_key)
{
    size_t i;
    char *v = NULL;
    pthread_rwlock_rdlock(&reg_lock);
    struct owner *o = find_key(full_key, &i);
    if (o && o->stored[i])
        v = xstrdup(o->stored[i]);
    pthread_rwlock_unlock(&reg_lock);
    return v;
}

long long settings_get_int(const char *full_key, long long dflt)
{
    char *v = settings_get(full_key);
    long long n;
    if (!v || settings_check_parse_int(v, &n) < 0)
        n = dflt;
    free(v);
    return n;
}

bool settings_get_bool(const char *full_key, bool dflt)
{
    char *v = settings_get(full_key);
    int b = settings_parse_bool(v);
    free(v);
    return b < 0 ? dflt : b == 1;
}

/* One validated change, ready to write. */
struct change {
    struct owner *o;
    size_t i;
    char *full_key;
    char *value; /* canonical; NULL = back to the default (row deleted) */
    char *now;   /* the value the owner served before the change */
    char *next;  /* the value in effect after it (@p value, or the default) */
    bool secret; /* copied: @p o may be gone when the change is freed */
    bool later;  /* its owner took it for the next start: @p now still serves */
};

static void changes_free(struct change *c, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        free(c[k].full_key);
        char *v[] = {c[k].value, c[k].now, c[k].next};
        for (size_t j = 0; j < sizeof(v) / sizeof(v[0]); j++) {
            if (c[k].secret)
                wipe_free_str(v[j]);
            else
                free(v[j]);
        }
    }
    free(c);
}

/* Validate one pair into @p c.  reg_lock held (shared). */
static int prepare(struct change *c, const char *full_key, const char *value, char **err)
{
    c->full_key = xstrdup(full_key);
    c->o = find_key(full_key, &c->i);
    if (!c->o) {
        xset_err(err, "%s: no such setting", full_key);
        return -EINVAL;
    }
    c->secret = settings_is_secret(&c->o->defs[c->i]);
    /* Not the stored value: one stored for the next start is not served, and
     * taking this change back must hand the owner what it serves. */
    c->now = xstrdup(served_value(c->o, c->i));
    int rc =
        value ? settings_check(full_key, &c->o->defs[c->i], c->o->re[c->i], value, &c->value, err)
              : 0;
    if (rc < 0)
        return rc;
    c->next = xstrdup(c->value ? c->value : effective_default(c->o, c->i));
    return 0;
}

/* True when @p c[k] is the first change of its owner in @p c. */
static bool first_of_owner(const struct change *c, size_t k)
{
    for (size_t j = 0; j < k; j++)
        if (c[j].o == c[k].o)
            return false;
    return true;
}

/* Call the applier of c[k]'s owner with all of that owner's changes in @p c:
 * the values after them, or with @p back the values before.  set_lock held. */
static int call_applier(const struct change *c, size_t n, size_t k, bool back, char **err)
{
    const struct owner *o = c[k].o;
    struct tlsbox_setting_value *v = xcalloc(n + 1, sizeof(*v));
    size_t m = 0;

    for (size_t j = k; j < n; j++) {
        if (c[j].o != o)
            continue;
        v[m].key = o->defs[c[j].i].key;
        v[m++].value = back ? c[j].now : c[j].next;
    }
    in_applier = true;
    int rc = o->apply(o->apply_arg, v, err);
    in_applier = false;
    free(v);
    return rc < 0 ? rc : rc == TLSBOX_APPLY_AT_RESTART ? rc : 0;
}

/* Give the owners whose first change in @p c comes before index @p upto
 * (all of whose changes were applied) their old values back: the store keeps
 * them.  set_lock held. */
static void unapply_changes(const struct change *c, size_t n, size_t upto)
{
    for (size_t k = 0; k < upto; k++) {
        if (!c[k].o->apply || !first_of_owner(c, k))
            continue;
        char *why = NULL;
        if (call_applier(c, n, k, true, &why) < 0)
            log_err("settings: %s cannot go back to the stored values of its settings: %s",
                    c[k].o->name, why ? why : "refused");
        free(why);
    }
}

/*
 * Let the owners of @p c apply them before they are committed, owner by owner
 * in the order of @p c.  On a refusal the owners already applied get their
 * old values back and the refusal is returned, with the owner's message in
 * *err.  Owners that can apply theirs only at the next start leave a note in
 * *notes (caller frees).  set_lock held, reg_lock not: an applier may read
 * settings.
 */
static int apply_changes(struct change *c, size_t n, char **err, char **notes)
{
    for (size_t k = 0; k < n; k++) {
        if (!c[k].o->apply || !first_of_owner(c, k))
            continue;
        char *why = NULL;
        int rc = call_applier(c, n, k, false, &why);
        if (rc == TLSBOX_APPLY_AT_RESTART) {
            for (size_t j = k; j < n; j++)
                c[j].later = c[j].later || c[j].o == c[k].o;
            add_note(notes,
                     why ? why : xasprintf("%s: takes effect when tlsboxd restarts", c[k].full_key),
                     "; ");
            continue;
        }
        if (rc == 0) {
            free(why);
            continue;
        }
        if (why && err) {
            free(*err);
            *err = why;
        } else {
            if (!why)
                xset_err(err, "%s: %s refused the change: %s", c[k].full_key, c[k].o->name,
                         strerror(-rc));
            free(why);
        }
        unapply_changes(c, n, k);
        return rc;
    }
    return 0;
}

/* What a write is besides its values: an undo of an earlier change, whose
 * settings must still hold the values it left (else -ESTALE, *stale the
 * index of the first that does not); and the history id it got. */
struct write_opts {
    long long undo_of;         /* 0: not an undo */
    const char *const *expect; /* with undo_of: the stored value each key must have */
    size_t stale;              /* out: with -ESTALE */
    long long change_id;       /* out: the history's id of this change (0: none) */
};

/* Two stored values (NULL: none stored, the default serves) are the same. */
static bool same_text(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* Record @p c in the settings history, in the open transaction on @p db.
 * set_lock held: o->stored is the value in the store. */
static int record_history(sqlite3 *db, const struct change *c, size_t n, const char *actor,
                          struct write_opts *opts, char **err)
{
    struct settings_history_item *items = xcalloc(n, sizeof(*items));
    size_t m = 0;
    for (size_t k = 0; k < n; k++) {
        char *before = c[k].o->stored[c[k].i], *after = c[k].value;
        if (c[k].secret) {
            /* Compared here: the history never sees a secret's values. */
            if (same_text(before, after))
                continue;
            before = after = NULL;
        }
        items[m].key = c[k].full_key;
        items[m].secret = c[k].secret;
        items[m].old_value = before;
        items[m++].new_value = after;
    }
    int rc = settings_history_record(db, actor, opts->undo_of, items, m, &opts->change_id, err);
    free(items);
    return rc;
}

/*
 * Write @p n validated changes in one transaction with an audit row each and
 * a history entry, then update the cache.  set_lock held by the caller.
 */
static int write_changes(struct change *c, size_t n, const char *actor, struct write_opts *opts,
                         char **err)
{
    static const char upsert[] =
        "INSERT INTO settings (key, value, updated_at, updated_by) VALUES (?1, ?2, ?3, ?4) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value, "
        "updated_at = excluded.updated_at, updated_by = excluded.updated_by";
    static const char del[] = "DELETE FROM settings WHERE key = ?1";
    sqlite3 *db = store_connect();
    sqlite3_stmt *up = NULL, *rm = NULL;
    char *notes = NULL;
    int rc = -EIO;

    if (!actor || !*actor)
        actor = "system";
    if (!db) {
        xset_err(err, "settings: cannot open the store%s%s", store_path() ? " " : "",
                 store_path() ? store_path() : "");
        return -EIO;
    }
    if (store_begin(db, err) < 0)
        goto out;
    if (sqlite3_prepare_v2(db, upsert, -1, &up, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, del, -1, &rm, NULL) != SQLITE_OK)
        goto sqlfail;
    for (size_t k = 0; k < n; k++) {
        const struct tlsbox_setting_def *d = &c[k].o->defs[c[k].i];
        sqlite3_stmt *st = c[k].value ? up : rm;
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, c[k].full_key, -1, SQLITE_STATIC);
        if (c[k].value) {
            sqlite3_bind_text(st, 2, c[k].value, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 3, (sqlite3_int64)time(NULL));
            sqlite3_bind_text(st, 4, actor, -1, SQLITE_STATIC);
        }
        if (sqlite3_step(st) != SQLITE_DONE)
            goto sqlfail;
        const char *shown = !c[k].value             ? "(default)"
                            : settings_is_secret(d) ? SECRET_SHOWN
                                                    : c[k].value;
        store_audit(db, actor, c[k].value ? "settings.set" : "settings.reset", c[k].full_key,
                    shown);
    }
    sqlite3_finalize(up);
    sqlite3_finalize(rm);
    up = rm = NULL;
    if (record_history(db, c, n, actor, opts, err) < 0)
        goto out;
    /* Inside the transaction: a change its owner cannot apply (a port in use)
     * is refused to the caller and never stored, so what the store says is
     * what runs. */
    if ((rc = apply_changes(c, n, err, &notes)) < 0)
        goto out;
    rc = -EIO;
    if (store_commit(db, err) < 0) {
        unapply_changes(c, n, n);
        goto out;
    }

    /* Committed: now the cache. */
    pthread_rwlock_wrlock(&reg_lock);
    for (size_t k = 0; k < n; k++) {
        struct owner *o = c[k].o;
        free_value(&o->defs[c[k].i], o->stored[c[k].i]);
        o->stored[c[k].i] = c[k].value;
        c[k].value = NULL;
        set_served(o, c[k].i, c[k].later ? c[k].now : NULL);
    }
    pthread_rwlock_unlock(&reg_lock);
    rc = 0;
    if (notes) {
        /* Stored, not all in effect yet: the caller says so. */
        rc = 1;
        if (err) {
            free(*err);
            *err = notes;
            notes = NULL;
        }
    }
    goto out;

sqlfail:
    xset_err(err, "%s: cannot write settings: %s", store_path(), sqlite3_errmsg(db));
out:
    free(notes);
    sqlite3_finalize(up);
    sqlite3_finalize(rm);
    store_rollback(db);
    store_disconnect(db);
    return rc;
}

/* Validate all of @p keys/@p values, then write them all or nothing. */
/* Whether @p actor may set a setting declared by @p def: one flagged
 * SETTINGS_FROM_BOX_ONLY only from the box itself. */
static bool may_set(const struct tlsbox_setting_def *def, const char *actor)
{
    if (!(def->flags & SETTINGS_FROM_BOX_ONLY))
        return true;
    return actor && (strcmp(actor, "control") == 0 || strcmp(actor, "system") == 0 ||
                     strncmp(actor, "tlsboxd --set", 13) == 0);
}

static int set_pairs(const char *const *keys, const char *const *values, size_t n,
                     const char *actor, struct write_opts *opts, char **err)
{
    if (in_applier) {
        xset_err(err,
                 "%s: set from .apply_settings, which the core refuses (it would wait for itself)",
                 n && keys[0] ? keys[0] : "settings");
        return -EDEADLK;
    }
    struct change *c = xcalloc(n ? n : 1, sizeof(*c));
    int rc = -EINVAL;

    pthread_mutex_lock(&set_lock);
    pthread_rwlock_rdlock(&reg_lock);
    for (size_t k = 0; k < n; k++) {
        if (prepare(&c[k], keys[k], values[k], err) < 0) {
            pthread_rwlock_unlock(&reg_lock);
            goto out;
        }
        if (!may_set(&c[k].o->defs[c[k].i], actor)) {
            pthread_rwlock_unlock(&reg_lock);
            xset_err(err,
                     "%s: set on the box itself (as root: tlsboxctl set %s NAME), not from the "
                     "web UI: it names the account tlsboxd becomes when started as root",
                     c[k].full_key, c[k].full_key);
            rc = -EPERM;
            goto out;
        }
        for (size_t j = 0; j < k; j++) {
            if (strcmp(c[j].full_key, c[k].full_key) == 0) {
                pthread_rwlock_unlock(&reg_lock);
                xset_err(err, "%s: given twice", c[k].full_key);
                goto out;
            }
        }
        /* Checked under set_lock: no write can come between this and ours. */
        if (opts->expect && !same_text(c[k].o->stored[c[k].i], opts->expect[k])) {
            pthread_rwlock_unlock(&reg_lock);
            opts->stale = k;
            rc = -ESTALE;
            goto out;
        }
    }
    pthread_rwlock_unlock(&reg_lock);
    /* Owners cannot go away while set_lock is held: @p c stays valid. */
    rc = n ? write_changes(c, n, actor, opts, err) : 0;
out:
    pthread_mutex_unlock(&set_lock);
    /* The news goes out with no lock held: a subscriber may read settings
     * (or write them) from the dispatcher thread.  Events carry only the key;
     * subscribers read the value, so order between writers does not matter. */
    for (size_t k = 0; rc >= 0 && k < n; k++) {
        char *data = xasprintf("{\"key\":\"%s\"}", c[k].full_key); /* [a-z0-9_.]: no escaping */
        events_publish("settings.changed", data);
        free(data);
    }
    changes_free(c, n);
    return rc;
}

int settings_set(const char *full_key, const char *value, const char *actor, char **err)
{
    if (!value) {
        xset_err(err, "%s: no value given", full_key ? full_key : "(null)");
        return -EINVAL;
    }
    if (!full_key) {
        xset_err(err, "settings: no key given");
        return -EINVAL;
    }
    return set_pairs(&full_key, &value, 1, actor, &(struct write_opts){0}, err);
}

int settings_reset(const char *full_key, const char *actor, char **err)
{
    const char *value = NULL;
    if (!full_key) {
        xset_err(err, "settings: no key given");
        return -EINVAL;
    }
    return set_pairs(&full_key, &value, 1, actor, &(struct write_opts){0}, err);
}

/* A JSON value as setting text: strings as they are, integers in decimal,
 * booleans as true/false, an array of strings for a LIST, null as "reset".
 * The rest is refused here, as PUT /settings/KEY refuses it: as text, 1.8e3
 * would pass for 1800 and ["1800"] for "1800". */
static int json_to_text(const char *full_key, json_t *v, char **out, char **err)
{
    *out = NULL;
    const struct tlsbox_setting_def *def = settings_def(full_key); /* NULL: set_pairs says so */
    switch (json_typeof(v)) {
    case JSON_STRING:
        *out = xstrdup(json_string_value(v));
        return 0;
    case JSON_INTEGER:
        *out = xasprintf("%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return 0;
    case JSON_REAL:
        xset_err(err, "%s: %.17g is not a whole number (write it without a point or exponent)",
                 full_key, json_real_value(v));
        return -EINVAL;
    case JSON_TRUE:
    case JSON_FALSE:
        *out = xstrdup(json_is_true(v) ? "true" : "false");
        return 0;
    case JSON_NULL:
        return 0;
    case JSON_ARRAY: {
        if (def && def->type != TLSBOX_SETTING_LIST) {
            xset_err(err, "%s: a list is given, but the setting is one value, not a list",
                     full_key);
            return -EINVAL;
        }
        size_t i, len = 0;
        json_t *item;
        json_array_foreach(v, i, item)
        {
            if (!json_is_string(item)) {
                xset_err(err, "%s: a list must hold strings only", full_key);
                return -EINVAL;
            }
            len += strlen(json_string_value(item)) + 1;
        }
        char *s = xmalloc(len + 1), *p = s;
        json_array_foreach(v, i, item)
        {
            const char *t = json_string_value(item);
            if (strchr(t, ',')) {
                /* By its place, not its text: the setting may be a secret. */
                xset_err(err,
                         "%s: list item %zu contains a comma (a list is stored comma-separated)",
                         full_key, i + 1);
                free(s);
                return -EINVAL;
            }
            if (p != s)
                *p++ = ',';
            size_t n = strlen(t);
            memcpy(p, t, n);
            p += n;
        }
        *p = '\0';
        *out = s;
        return 0;
    }
    default:
        xset_err(err, "%s: a value must be a string, number, boolean, list of strings or null",
                 full_key);
        return -EINVAL;
    }
}

int settings_set_many(json_t *pairs, const char *owner, const char *actor, char **err)
{
    const char *key;
    json_t *v;
    size_t n, k = 0;
    int rc = -EINVAL;

    if (!json_is_object(pairs)) {
        xset_err(err, "settings: expected a JSON object of key: value");
        return -EINVAL;
    }
    n = json_object_size(pairs);
    char **keys = xcalloc(n ? n : 1, sizeof(*keys));
    char **vals = xcalloc(n ? n : 1, sizeof(*vals));
    json_object_foreach(pairs, key, v)
    {
        /* With an owner, "key" means "owner.key"; "owner.key" is fine too,
         * but another owner's key is not (the API path names one plugin). */
        if (owner && !strchr(key, '.')) {
            keys[k] = xasprintf("%s.%s", owner, key);
        } else if (owner && !settings_key_of(key, owner)) {
            xset_err(err, "%s: not a setting of %s", key, owner);
            goto out;
        } else {
            keys[k] = xstrdup(key);
        }
        if (json_to_text(keys[k], v, &vals[k], err) < 0) {
            k++;
            goto out;
        }
        k++;
    }
    rc = set_pairs((const char *const *)keys, (const char *const *)vals, n, actor,
                   &(struct write_opts){0}, err);
out:
    for (size_t i = 0; i < n; i++) {
        free(keys[i]);
        wipe_free_str(vals[i]); /* may be a secret */
    }
    free(keys);
    free(vals);
    return rc;
}

/* ---- history: undo ---------------------------------------------------- */

int settings_undo(long long id, const char *actor, long long *new_id, char **err)
{
    struct settings_history_change ch = {0};
    char *why = NULL;
    int rc;

    *new_id = 0;
    sqlite3 *db = store_connect();
    if (!db) {
        xset_err(err, "settings: cannot open the store%s%s", store_path() ? " " : "",
                 store_path() ? store_path() : "");
        return -EIO;
    }
    if ((rc = settings_history_load(db, id, &ch, err)) < 0)
        goto out;
    const char **keys = xcalloc(ch.n, sizeof(*keys));
    const char **olds = xcalloc(ch.n, sizeof(*olds));
    const char **news = xcalloc(ch.n, sizeof(*news));
    for (size_t k = 0; k < ch.n; k++) {
        const struct settings_history_item *it = &ch.items[k];
        if (it->secret) {
            xset_err(err,
                     "cannot undo settings change %lld: it set %s, a secret, whose old value "
                     "is not kept; set it again (tlsboxctl set %s VALUE)",
                     id, it->key, it->key);
            rc = -EPERM;
            goto free_arrays;
        }
        keys[k] = it->key;
        olds[k] = it->old_value;
        news[k] = it->new_value;
    }
    struct write_opts opts = {.undo_of = id, .expect = news};
    rc = set_pairs(keys, olds, ch.n, actor, &opts, &why);
    if (rc == -ESTALE) {
        const struct settings_history_item *it = &ch.items[opts.stale];
        long long newer = settings_history_newer(db, it->key, id);
        char *now = settings_get_stored(it->key);
        if (newer)
            xset_err(err,
                     "cannot undo settings change %lld: %s was changed again by change %lld "
                     "(it is %s now); undo that one first",
                     id, it->key, newer, now ? now : "the default");
        else
            xset_err(err, "cannot undo settings change %lld: %s is %s now, not the %s it left", id,
                     it->key, now ? now : "the default", it->new_value ? it->new_value : "default");
        free(now);
    } else if (rc < 0) {
        xset_err(err, "cannot undo settings change %lld: %s", id, why ? why : "refused");
    } else {
        *new_id = opts.change_id;
        /* A setting read only at start says so, as tlsboxctl set does. */
        for (size_t k = 0; rc == 0 && k < ch.n; k++) {
            const struct tlsbox_setting_def *d = settings_def(ch.items[k].key);
            if (d && (d->flags & TLSBOX_SETTING_RESTART)) {
                why = xasprintf("%s takes effect when tlsboxd restarts", ch.items[k].key);
                rc = 1;
            }
        }
        if (rc > 0 && err) { /* stored, in effect at the next start: the note */
            free(*err);
            *err = why;
            why = NULL;
        }
    }
free_arrays:
    free(keys);
    free(olds);
    free(news);
out:
    free(why);
    settings_history_change_free(&ch);
    store_disconnect(db);
    return rc;
}

/* Why change @p c of a history listing cannot be undone now, or NULL. */
static char *undo_blocker(sqlite3 *db, json_t *c)
{
    long long id = (long long)json_integer_value(json_object_get(c, "id"));
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(c, "items"), i, it)
    {
        const char *key = json_string_value(json_object_get(it, "key"));
        const char *want = json_string_value(json_object_get(it, "new")); /* NULL: default */
        if (json_is_true(json_object_get(it, "secret")))
            return xasprintf("%s is a secret: its old value is not kept", key);
        if (!settings_def(key))
            return xasprintf("%s: no such setting now", key);
        char *now = settings_get_stored(key);
        bool same = same_text(now, want);
        free(now);
        if (!same) {
            long long newer = settings_history_newer(db, key, id);
            return newer ? xasprintf("%s was changed again by change %lld", key, newer)
                         : xasprintf("%s was changed since", key);
        }
    }
    return NULL;
}

json_t *settings_history_json(const char *owner, int limit, long long before, char **err)
{
    long long next = 0;
    sqlite3 *db = store_connect();
    if (!db) {
        xset_err(err, "settings: cannot open the store");
        return NULL;
    }
    json_t *changes = settings_history_list(db, owner, limit, before, &next, err);
    if (changes) {
        size_t i;
        json_t *c;
        json_array_foreach(changes, i, c)
        {
            char *why = undo_blocker(db, c);
            json_object_set_new(c, "undoable", json_boolean(!why));
            if (why)
                json_object_set_new(c, "undo_blocked", json_string(why));
            free(why);
        }
    }
    store_disconnect(db);
    return changes ? json_pack("{s:o,s:I}", "changes", changes, "next_before", (json_int_t)next)
                   : NULL;
}

static json_t *describe_one(const struct owner *o, size_t i)
{
    const struct tlsbox_setting_def *d = &o->defs[i];
    const char *value = effective_value(o, i), *dflt = effective_default(o, i);
    bool secret = settings_is_secret(d);
    json_t *j = json_object();

    json_object_set_new(j, "key", json_string(d->key));
    json_object_set_new(j, "full_key", json_sprintf("%s.%s", o->name, d->key));
    json_object_set_new(j, "type", json_string(settings_check_type_name(d->type)));
    /* A secret shows whether it is set, never what it is. */
    json_object_set_new(j, "value", json_string(secret && *value ? SECRET_SHOWN : value));
    json_object_set_new(j, "default", json_string(secret && *dflt ? SECRET_SHOWN : dflt));
    if (d->type == TLSBOX_SETTING_INT && (d->min || d->max)) {
        json_object_set_new(j, "min", json_integer(d->min));
        json_object_set_new(j, "max", json_integer(d->max));
    }
    if (d->type == TLSBOX_SETTING_ENUM && d->choices) {
        json_t *ch = json_array();
        for (const char *p = d->choices; p;) {
            const char *bar = strchr(p, '|');
            json_array_append_new(ch, json_stringn(p, bar ? (size_t)(bar - p) : strlen(p)));
            p = bar ? bar + 1 : NULL;
        }
        json_object_set_new(j, "choices", ch);
    }
    if ((d->type == TLSBOX_SETTING_STRING || d->type == TLSBOX_SETTING_LIST) && d->pattern)
        json_object_set_new(j, "pattern", json_string(d->pattern));
    if ((d->type == TLSBOX_SETTING_STRING || d->type == TLSBOX_SETTING_LIST) && d->max > 0)
        json_object_set_new(j, "max_length", json_integer(d->max));
    json_object_set_new(j, "help", json_string(d->help ? d->help : ""));
    json_object_set_new(j, "secret", json_boolean(secret));
    json_object_set_new(j, "restart", json_boolean(d->flags & TLSBOX_SETTING_RESTART));
    json_object_set_new(j, "is_default", json_boolean(strcmp(value, dflt) == 0));
    return j;
}

json_t *settings_describe(const char *owner)
{
    json_t *arr = NULL;

    pthread_rwlock_rdlock(&reg_lock);
    for (size_t k = 0; k < n_owners; k++) {
        const struct owner *o = owners[k];
        if (owner && strcmp(o->name, owner) != 0)
            continue;
        if (!arr)
            arr = json_array();
        for (size_t i = 0; i < o->n; i++)
            json_array_append_new(arr, describe_one(o, i));
    }
    pthread_rwlock_unlock(&reg_lock);
    return arr ? arr : json_array();
}
