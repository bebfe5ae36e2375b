#include "core/store_guard.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/log.h"
#include "core/plugin_loader.h"
#include "core/xalloc.h"

/* The loaded plugins (plugins_first), set by the loader; NULL where there is
 * no loader (the kit's mock host): then only the calling plugin's name counts. */
static struct tlsbox_plugin *(*guard_plugins)(void);

void store_guard_set_plugins(struct tlsbox_plugin *(*first)(void))
{
    guard_plugins = first;
}

/* The core's schema objects whose names look like "<plugin>_...": a plugin
 * named "admin", "tls", "plugin", "policy"... must not own them by the name
 * rule.  Keep in step with db/migrations (plugin_schema_test checks that
 * every core object of a fresh store is here). */
static int is_core_object(const char *name)
{
    static const char *const core[] = {"admin_recovery_codes",
                                       "admin_sessions",
                                       "admin_sessions_expiry",
                                       "admin_users",
                                       "internal_ca",
                                       "metrics_history",
                                       "plugin_kv",
                                       "plugin_schema",
                                       "policy_one_active",
                                       "policy_versions",
                                       "settings_change_items",
                                       "settings_change_items_key",
                                       "settings_changes",
                                       "settings_changes_undo",
                                       "ticket_keys",
                                       "tls_dh",
                                       "tls_staples"};
    /* SQLite's names are the same in any case of ASCII letters: so are these
     * comparisons, or "settings_CHANGES" would pass for another name. */
    for (size_t i = 0; i < sizeof core / sizeof *core; i++)
        if (strcasecmp(name, core[i]) == 0)
            return 1;
    return 0;
}

/* "<plugin>_" followed by at least one character, in any case (as SQLite
 * compares names: plugin "site" must not lose "site_stats_x" to "site" as
 * "site_STATS_x"). */
static int named_for(const char *plugin, const char *name)
{
    size_t n = strlen(plugin);
    return name && strncasecmp(name, plugin, n) == 0 && name[n] == '_' && name[n + 1] != '\0';
}

/* The loaded plugin with a longer name than @p plugin that @p name is named
 * for, or NULL: plugin "site" must not own "site_stats_hits" when a plugin
 * named "site_stats" is loaded (the longest loaded name that fits wins).
 * The list changes only before plugins start and after they stopped. */
static const struct tlsbox_plugin *longer_owner(const char *plugin, const char *name)
{
    size_t n = strlen(plugin);
    for (const struct tlsbox_plugin *p = guard_plugins ? guard_plugins() : NULL; p; p = p->next)
        if (strlen(p->name) > n && named_for(p->name, name))
            return p;
    return NULL;
}

int store_guard_owns(const char *plugin, const char *name)
{
    return named_for(plugin, name) && !is_core_object(name) && !longer_owner(plugin, name);
}

/* Pragmas that only report, even when given an argument (a table name). */
static int pragma_reads(const char *name)
{
    static const char *const ok[] = {"table_info",        "table_xinfo",     "index_list",
                                     "index_info",        "index_xinfo",     "foreign_key_list",
                                     "foreign_key_check", "integrity_check", "quick_check"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        if (strcmp(name, ok[i]) == 0)
            return 1;
    return 0;
}

/* SQLite's own tables: written only as a side effect of DDL that is checked
 * by its own action code (sqlite_master), of creating or inserting into an
 * AUTOINCREMENT table (sqlite_sequence), or of ANALYZE (sqlite_stat1).
 * SQLite itself refuses to let SQL create, alter or drop them by name. */
static int is_internal(const char *name)
{
    return name && strncasecmp(name, "sqlite_", 7) == 0;
}

static const char *action_name(int action)
{
    switch (action) {
    case SQLITE_INSERT:
        return "insert into";
    case SQLITE_UPDATE:
        return "update";
    case SQLITE_DELETE:
        return "delete from";
    case SQLITE_ALTER_TABLE:
        return "alter table";
    case SQLITE_CREATE_TABLE:
    case SQLITE_CREATE_VTABLE:
        return "create table";
    case SQLITE_DROP_TABLE:
    case SQLITE_DROP_VTABLE:
        return "drop table";
    case SQLITE_CREATE_INDEX:
        return "create an index on";
    case SQLITE_DROP_INDEX:
        return "drop an index of";
    case SQLITE_CREATE_TRIGGER:
        return "create a trigger on";
    case SQLITE_DROP_TRIGGER:
        return "drop a trigger of";
    case SQLITE_CREATE_VIEW:
        return "create view";
    case SQLITE_DROP_VIEW:
        return "drop view";
    case SQLITE_ATTACH:
        return "attach";
    case SQLITE_DETACH:
        return "detach";
    case SQLITE_PRAGMA:
        return "set pragma";
    }
    return "write";
}

/* Columns of the core that hold secrets: no plugin reads them, even though
 * reading the rest of the store is allowed.  (Secret settings are kept in
 * settings.value like the others: read them through host->setting_get.) */
static int is_secret_column(const char *table, const char *column)
{
    static const char *const secret[][2] = {
        {"certificates", "key_pem"},      {"internal_ca", "key_pem"},
        {"ticket_keys", "key"},           {"admin_users", "pw_salt"},
        {"admin_users", "pw_hash"},       {"admin_sessions", "token_hash"},
        {"admin_sessions", "csrf_token"}, {"admin_users", "totp_secret"},
        {"admin_users", "totp_pending"},  {"admin_recovery_codes", "hash"}};
    for (size_t i = 0; table && column && i < sizeof secret / sizeof *secret; i++)
        if (strcmp(table, secret[i][0]) == 0 && strcmp(column, secret[i][1]) == 0)
            return 1;
    return 0;
}

static int refuse_verb(const char *plugin, const char *verb, const char *object)
{
    /* "(named admin_...)" would read as if admin_users were the plugin's. */
    if (object && is_core_object(object)) {
        log_err("plugin %s: store: refused to %s %s: it is the core's (a plugin writes only its "
                "own tables; core data is changed through host calls)",
                plugin, verb, object);
        return SQLITE_DENY;
    }
    const struct tlsbox_plugin *other = longer_owner(plugin, object);
    if (other) {
        log_err("plugin %s: store: refused to %s %s: it is plugin %s's (a plugin writes only its "
                "own tables)",
                plugin, verb, object, other->name);
        return SQLITE_DENY;
    }
    log_err("plugin %s: store: refused to %s %s: a plugin writes only its own tables "
            "(named %s_...); core data is changed through host calls",
            plugin, verb, object ? object : "?", plugin);
    return SQLITE_DENY;
}

static int refuse(const char *plugin, int action, const char *object)
{
    return refuse_verb(plugin, action_name(action), object);
}

/* The object a write or schema action touches, and (for an index or a
 * trigger) the table it sits on. */
static void action_objects(int action, const char *a1, const char *a2, const char **obj,
                           const char **on)
{
    *obj = a1;
    *on = NULL;
    switch (action) {
    case SQLITE_CREATE_INDEX:
    case SQLITE_CREATE_TRIGGER:
    case SQLITE_DROP_INDEX:
    case SQLITE_DROP_TRIGGER:
        *on = a2;
        break;
    case SQLITE_ALTER_TABLE:
        *obj = a2; /* a1 is the database name */
        break;
    default:
        break;
    }
}

/* The authorizer of a plugin's connections; @p migration for the one that
 * applies its migration steps, after each of which the core checks what the
 * authorizer cannot see (store_guard_verify). */
static int guard(const char *plugin, int migration, int action, const char *a1, const char *a2,
                 const char *dbname)
{
    const char *obj, *on;

    switch (action) {
    case SQLITE_INSERT:
    case SQLITE_UPDATE:
    case SQLITE_DELETE:
    case SQLITE_ALTER_TABLE:
    case SQLITE_CREATE_INDEX:
    case SQLITE_CREATE_TABLE:
    case SQLITE_CREATE_TRIGGER:
    case SQLITE_CREATE_VIEW:
    case SQLITE_DROP_INDEX:
    case SQLITE_DROP_TABLE:
    case SQLITE_DROP_TRIGGER:
    case SQLITE_DROP_VIEW:
    case SQLITE_CREATE_VTABLE:
    case SQLITE_DROP_VTABLE:
        break;
    case SQLITE_CREATE_TEMP_INDEX:
    case SQLITE_CREATE_TEMP_TABLE:
    case SQLITE_CREATE_TEMP_TRIGGER:
    case SQLITE_CREATE_TEMP_VIEW:
    case SQLITE_DROP_TEMP_INDEX:
    case SQLITE_DROP_TEMP_TABLE:
    case SQLITE_DROP_TEMP_TRIGGER:
    case SQLITE_DROP_TEMP_VIEW:
        return SQLITE_OK; /* the connection's own scratch space */
    case SQLITE_ATTACH:
    case SQLITE_DETACH:
        return refuse(plugin, action, a1);
    case SQLITE_ANALYZE: {
        /* It writes the statistics of the tables it names, or of all; SQLite
         * asks once per table, so one line per statement (a second) says it. */
        static _Thread_local struct timespec last;
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - last.tv_sec > 1) /* the first time too: last is 0 */
            log_err("plugin %s: store: refused to analyze: the query planner's statistics "
                    "cover every table, the core's too",
                    plugin);
        last = now;
        return SQLITE_DENY;
    }
    case SQLITE_READ:
        if (!is_secret_column(a1, a2))
            return SQLITE_OK;
        log_err("plugin %s: store: refused to read %s.%s: it holds secrets of the core", plugin, a1,
                a2);
        return SQLITE_DENY;
    case SQLITE_PRAGMA:
        /* Reading a pragma is fine; setting one (user_version, writable_schema,
         * foreign_keys, journal_mode...) changes what the core relies on. */
        return a2 == NULL || pragma_reads(a1) ? SQLITE_OK : refuse(plugin, action, a1);
    default:
        return SQLITE_OK; /* reads, transactions, functions */
    }
    /* ALTER TABLE names the database first (and a dropped column third). */
    if (action == SQLITE_ALTER_TABLE ? a1 && strcmp(a1, "temp") == 0
                                     : dbname && strcmp(dbname, "temp") == 0)
        return SQLITE_OK;
    action_objects(action, a1, a2, &obj, &on);
    /* SQLite keeps the counter of an AUTOINCREMENT table without asking,
     * but for the DELETE of a DROP TABLE and the UPDATE of the name of a
     * RENAME, which it asks for like a plugin's own statements: the guard
     * cannot tell which rows they change.  A counter of the core's set to the
     * largest rowid (its row deleted and a plugin's renamed to it) makes
     * every later insert into audit or policy_versions fail with "database
     * or disk is full".  So a plugin's connection writes none of it; a
     * migration step may drop and rename its own AUTOINCREMENT tables, and
     * the core then checks that no other table's counter changed. */
    if (obj && strcasecmp(obj, "sqlite_sequence") == 0 &&
        (!migration || action == SQLITE_INSERT ||
         (action == SQLITE_UPDATE && a2 && strcmp(a2, "seq") == 0))) {
        log_err("plugin %s: store: refused to %s sqlite_sequence: it holds the AUTOINCREMENT "
                "counters of every table, the core's too (SQLite keeps the plugin's own%s)",
                plugin, action_name(action),
                migration ? ""
                          : "; a table with AUTOINCREMENT is dropped or renamed by a "
                            "migration step");
        return SQLITE_DENY;
    }
    /* The query planner's statistics (ANALYZE's sqlite_stat1, and _stat4
     * where built in) cover every table: rows made up for the core's would
     * change the core's query plans. */
    if (obj && strncasecmp(obj, "sqlite_stat", 11) == 0 &&
        (action == SQLITE_INSERT || action == SQLITE_UPDATE || action == SQLITE_DELETE)) {
        log_err("plugin %s: store: refused to %s %s: it holds the query planner's statistics "
                "of every table, the core's too",
                plugin, action_name(action), obj);
        return SQLITE_DENY;
    }
    if (is_internal(obj))
        return SQLITE_OK;
    if (on && !is_internal(on) && !store_guard_owns(plugin, on))
        return refuse(plugin, action, on);
    if (!store_guard_owns(plugin, obj))
        return on ? refuse_verb(plugin, "name an index or trigger", obj)
                  : refuse(plugin, action, obj);
    /* SQLite names only the old table to the authorizer of a rename (the
     * plugin could give its table the name of another plugin's or of a
     * future core table), and nothing of a table's foreign keys (one to a
     * core table makes the core's deletes there cascade into the plugin's
     * table, or fail; the core's connections fire no trigger of the
     * plugin's there, store_set_triggers).  A
     * migration step's tables are checked after the step
     * (store_guard_verify); on other connections, where nothing can be
     * checked after a statement, no table is created or altered. */
    if (!migration && (action == SQLITE_CREATE_TABLE || action == SQLITE_ALTER_TABLE ||
                       action == SQLITE_CREATE_VTABLE)) {
        log_err("plugin %s: store: refused to %s %s here: a plugin's tables are created and "
                "altered only by its migration steps (struct tlsbox_migration), after which the "
                "core checks their names and foreign keys",
                plugin, action_name(action), obj);
        return SQLITE_DENY;
    }
    return SQLITE_OK;
}

static int on_authorize(void *arg, int action, const char *a1, const char *a2, const char *dbname,
                        const char *trigger)
{
    (void)trigger;
    return guard(arg, 0, action, a1, a2, dbname);
}

int store_guard_attach(sqlite3 *db, const char *plugin)
{
    if (!db || !plugin)
        return -EINVAL;
    return sqlite3_set_authorizer(db, on_authorize, (void *)plugin) == SQLITE_OK ? 0 : -EIO;
}

/* A migration step runs inside the core's transaction: a COMMIT in it would
 * make the steps before it permanent without the version that records them
 * (the next start runs them again and fails for good), a ROLLBACK would undo
 * them behind the core's back. */
static int on_authorize_migration(void *arg, int action, const char *a1, const char *a2,
                                  const char *dbname, const char *trigger)
{
    if (action == SQLITE_TRANSACTION) {
        log_err("plugin %s: store: refused %s in a migration step: the core applies all "
                "pending steps in one transaction of its own",
                (const char *)arg, a1 ? a1 : "a transaction statement");
        return SQLITE_DENY;
    }
    (void)trigger;
    return guard(arg, 1, action, a1, a2, dbname);
}

int store_guard_attach_migration(sqlite3 *db, const char *plugin)
{
    if (!db || !plugin)
        return -EINVAL;
    return sqlite3_set_authorizer(db, on_authorize_migration, (void *)plugin) == SQLITE_OK ? 0
                                                                                           : -EIO;
}

void store_guard_detach(sqlite3 *db)
{
    if (db)
        sqlite3_set_authorizer(db, NULL, NULL);
}

/* One thing a migration step must leave as it was. */
struct mark_item {
    char kind;   /* 'c': the AUTOINCREMENT counter of a table the plugin does not own;
                  * 'o': a schema object it does not own; 't': a temporary object */
    char *type;  /* of the object: "table", "index"...; "" for a counter */
    char *name;  /* of the object, or of the counter's table */
    char *value; /* the counter, or the object's SQL */
    char *key;   /* all of it: what is compared */
};

struct store_guard_mark {
    struct mark_item *items;
    size_t n;
};

static int item_cmp(const void *a, const void *b)
{
    return strcmp(((const struct mark_item *)a)->key, ((const struct mark_item *)b)->key);
}

static void mark_clear(struct store_guard_mark *m)
{
    for (size_t i = 0; i < m->n; i++) {
        free(m->items[i].type);
        free(m->items[i].name);
        free(m->items[i].value);
        free(m->items[i].key);
    }
    free(m->items);
    m->items = NULL;
    m->n = 0;
}

static void mark_add(struct store_guard_mark *m, char kind, const char *type, const char *name,
                     const char *value)
{
    if ((m->n & (m->n - 1)) == 0) /* 0, 1, 2, 4...: double */
        m->items = xrealloc(m->items, (m->n ? 2 * m->n : 1) * sizeof *m->items);
    struct mark_item *it = &m->items[m->n++];
    it->kind = kind;
    it->type = xstrdup(type ? type : "");
    it->name = xstrdup(name ? name : "");
    it->value = xstrdup(value ? value : "");
    /* Objects sort first: a table renamed with its counter is named as a
     * table. */
    it->key = xasprintf("%c%c\x1f%s\x1f%s\x1f%s", kind == 'c' ? '2' : '1', kind, it->name, it->type,
                        it->value);
}

/* What of @p db the plugin may not change, sorted by key. */
static int collect(sqlite3 *db, const char *plugin, struct store_guard_mark *m, char **err)
{
    sqlite3_stmt *st = NULL;
    int has_counters = 0, rc;
    /* The objects (SQLite's own aside: an autoindex follows its table).
     * Temporary ones all count: a step runs on the core's connection, where
     * a temporary view or table would stand in for the core's table of the
     * same name, and a temporary trigger on a core table would fire for the
     * core's writes, unguarded. */
    if (sqlite3_prepare_v2(db,
                           "SELECT 'o', type, name, sql FROM main.sqlite_master UNION ALL "
                           "SELECT 't', type, name, sql FROM temp.sqlite_master",
                           -1, &st, NULL) != SQLITE_OK)
        goto fail;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char kind = *(const char *)sqlite3_column_text(st, 0);
        const char *type = (const char *)sqlite3_column_text(st, 1);
        const char *name = (const char *)sqlite3_column_text(st, 2);
        const char *sql = (const char *)sqlite3_column_text(st, 3);
        if (kind == 'o' && name && strcmp(name, "sqlite_sequence") == 0)
            has_counters = 1;
        if (kind == 't' || (name && !is_internal(name) && !store_guard_owns(plugin, name)))
            mark_add(m, kind, type, name, sql);
    }
    if (rc != SQLITE_DONE)
        goto fail;
    sqlite3_finalize(st);
    st = NULL;
    if (has_counters) {
        if (sqlite3_prepare_v2(db, "SELECT name, seq FROM main.sqlite_sequence", -1, &st, NULL) !=
            SQLITE_OK)
            goto fail;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(st, 0);
            const char *seq = (const char *)sqlite3_column_text(st, 1);
            if (!store_guard_owns(plugin, name))
                mark_add(m, 'c', NULL, name, seq);
        }
        if (rc != SQLITE_DONE)
            goto fail;
        sqlite3_finalize(st);
    }
    if (m->n)
        qsort(m->items, m->n, sizeof *m->items, item_cmp);
    return 0;
fail:
    xset_err(err, "cannot read the store's schema: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    mark_clear(m);
    return -EIO;
}

struct store_guard_mark *store_guard_mark(sqlite3 *db, const char *plugin, char **err)
{
    struct store_guard_mark *m = xcalloc(1, sizeof *m);
    if (collect(db, plugin, m, err) < 0) {
        free(m);
        return NULL;
    }
    return m;
}

void store_guard_mark_free(struct store_guard_mark *m)
{
    if (m) {
        mark_clear(m);
        free(m);
    }
}

/* The values of the counters named @p name in @p m, "none" when none. */
static char *counter_values(const struct store_guard_mark *m, const char *name)
{
    char *s = NULL;
    for (size_t i = 0; i < m->n; i++)
        if (m->items[i].kind == 'c' && strcmp(m->items[i].name, name) == 0) {
            char *t = s ? xasprintf("%s and %s", s, m->items[i].value) : xstrdup(m->items[i].value);
            free(s);
            s = t;
        }
    return s ? s : xstrdup("none");
}

/* Whether @p m has an object of @p it's type and name. */
static int has_object(const struct store_guard_mark *m, const struct mark_item *it)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->items[i].kind == it->kind && strcmp(m->items[i].name, it->name) == 0 &&
            strcmp(m->items[i].type, it->type) == 0)
            return 1;
    return 0;
}

/* Say what differs: @p it is in @p before but not in @p now, or the other
 * way round. */
static void describe(const char *plugin, const struct mark_item *it,
                     const struct store_guard_mark *before, const struct store_guard_mark *now,
                     char **err)
{
    if (it->kind == 't') {
        if (!has_object(before, it))
            xset_err(err,
                     "it left temporary %s %s on the core's connection: a step drops the "
                     "temporary objects it makes",
                     it->type, it->name);
        else
            xset_err(err, "it changed temporary %s %s of the core's connection", it->type,
                     it->name);
        return;
    }
    if (it->kind == 'o') {
        /* Only a rename makes a name here: the guard refuses to create one. */
        if (!has_object(before, it))
            xset_err(err,
                     "it made %s %s, not plugin %s's: a step names its tables \"%s_...\", "
                     "by a rename too",
                     it->type, it->name, plugin, plugin);
        else
            xset_err(err, "it changed %s %s, not plugin %s's", it->type, it->name, plugin);
        return;
    }
    char *was = counter_values(before, it->name), *is = counter_values(now, it->name);
    xset_err(err,
             "it changed the AUTOINCREMENT counter of %s in sqlite_sequence (now %s, was %s), "
             "not plugin %s's: a step changes only the counters of its own tables",
             it->name, is, was, plugin);
    free(was);
    free(is);
}

int store_guard_check_foreign_keys(sqlite3 *db, const char *plugin, char **err)
{
    sqlite3_stmt *st = NULL;
    int rc = 0, s;
    if (sqlite3_prepare_v2(db,
                           "SELECT m.name, f.\"table\" FROM main.sqlite_master AS m, "
                           "pragma_foreign_key_list(m.name, 'main') AS f "
                           "WHERE m.type = 'table' ORDER BY m.name, f.id",
                           -1, &st, NULL) != SQLITE_OK) {
        xset_err(err, "cannot read foreign keys: %s", sqlite3_errmsg(db));
        return -EIO;
    }
    while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *table = (const char *)sqlite3_column_text(st, 0);
        const char *to = (const char *)sqlite3_column_text(st, 1);
        if (table && to && store_guard_owns(plugin, table) && !store_guard_owns(plugin, to)) {
            xset_err(err,
                     "table %s has a foreign key to %s, not plugin %s's: a plugin's foreign keys "
                     "refer only to its own tables (the owner's deletes there would cascade "
                     "into the plugin's table, or fail)",
                     table, to, plugin);
            rc = -EPERM;
        }
    }
    if (rc == 0 && s != SQLITE_DONE) {
        xset_err(err, "cannot read foreign keys: %s", sqlite3_errmsg(db));
        rc = -EIO;
    }
    sqlite3_finalize(st);
    return rc;
}

int store_guard_verify(sqlite3 *db, const char *plugin, const struct store_guard_mark *before,
                       char **err)
{
    struct store_guard_mark now = {0};
    if (!db || !plugin || !before)
        return -EINVAL;
    if (collect(db, plugin, &now, err) < 0)
        return -EIO;
    /* Both sorted: the first key that is in one and not in the other. */
    size_t i = 0, j = 0;
    while (i < before->n && j < now.n && strcmp(before->items[i].key, now.items[j].key) == 0)
        i++, j++;
    int rc = 0;
    if (i < before->n || j < now.n) {
        int gone =
            j == now.n || (i < before->n && strcmp(before->items[i].key, now.items[j].key) < 0);
        describe(plugin, gone ? &before->items[i] : &now.items[j], before, &now, err);
        rc = -EPERM;
    }
    if (rc == 0)
        rc = store_guard_check_foreign_keys(db, plugin, err);
    mark_clear(&now);
    return rc;
}
