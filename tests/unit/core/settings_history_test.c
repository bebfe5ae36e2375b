/* Settings history and undo: what a write records (no-op items left out,
 * secrets without values), the newest SETTINGS_HISTORY_KEEP kept, listing by
 * owner and page, and undo: values back as a new change, refused with
 * nothing written when a setting changed since, for a secret, or when the
 * owner's applier refuses the old value. */
#include "core/settings_history.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/events.h"
#include "core/settings.h"
#include "core/store.h"
#include "core/xalloc.h"
#include "tests/tap.h"

int events_publish(const char *event, const char *data)
{
    (void)event;
    (void)data;
    return 0;
}

static const struct tlsbox_setting_def t_defs[] = {
    {.key = "workers", .type = TLSBOX_SETTING_INT, .default_value = "4", .min = 1, .max = 64},
    {.key = "name", .type = TLSBOX_SETTING_STRING, .default_value = "box"},
    {.key = "token",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .flags = TLSBOX_SETTING_SECRET},
    {.key = "threads",
     .type = TLSBOX_SETTING_INT,
     .default_value = "2",
     .min = 1,
     .max = 8,
     .flags = TLSBOX_SETTING_RESTART},
    {0}};

/* "t2" shares the prefix "t": a filter on "t" must not list its changes. */
static const struct tlsbox_setting_def t2_defs[] = {
    {.key = "level", .type = TLSBOX_SETTING_INT, .default_value = "1", .min = 0, .max = 9}, {0}};

/* t2's applier refuses the value in @p refuse (as a site refuses a port in use). */
static char refuse[16];
static int t2_apply(void *arg, const struct tlsbox_setting_value *ch, char **err)
{
    (void)arg;
    for (size_t i = 0; ch[i].key; i++)
        if (strcmp(ch[i].value, refuse) == 0) {
            *err = xasprintf("t2.%s: cannot take %s now", ch[i].key, ch[i].value);
            return -EADDRINUSE;
        }
    return 0;
}

static long long count(const char *sql)
{
    sqlite3_stmt *st = NULL;
    long long n = -1;
    if (sqlite3_prepare_v2(store_main(), sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

static long long newest(void)
{
    return count("SELECT ifnull(max(id), 0) FROM settings_changes");
}

/* The stored settings and the history's size, as one string. */
static char *snapshot(void)
{
    return xasprintf("%lld/%lld/%lld/%lld",
                     count("SELECT count(*) FROM settings WHERE key LIKE 't%'"),
                     count("SELECT total(length(value)) FROM settings WHERE key LIKE 't%'"),
                     count("SELECT count(*) FROM settings_changes"),
                     count("SELECT count(*) FROM settings_change_items"));
}

static void test_record(void)
{
    sqlite3 *db = store_main();
    char *err = NULL;
    long long id = -1;

    struct settings_history_item same[] = {{.key = "t.name", .old_value = "a", .new_value = "a"},
                                           {.key = "t.workers"}};
    is_int(settings_history_record(db, "alice", 0, same, 2, &id, &err), 0, "no-op record");
    is_int(id, 0, "items that changed nothing make no change");
    is_int(count("SELECT count(*) FROM settings_changes"), 0, "and no row");

    /* Whatever a caller passes for a secret, its values are not kept. */
    struct settings_history_item sec[] = {
        {.key = "t.token", .old_value = "old-secret", .new_value = "new-secret", .secret = true},
        {.key = "t.name", .old_value = NULL, .new_value = "x"}};
    is_int(settings_history_record(db, "alice", 0, sec, 2, &id, &err), 0, "a change with a secret");
    ok(id > 0, "has an id (%lld)", id);
    is_int(count("SELECT count(*) FROM settings_change_items WHERE old_value LIKE '%secret%' OR "
                 "new_value LIKE '%secret%'"),
           0, "the secret's values are not stored");
    is_int(count("SELECT count(*) FROM settings_change_items WHERE key = 't.token' AND secret = 1"),
           1, "only that it changed");

    struct settings_history_change ch;
    is_int(settings_history_load(db, id, &ch, &err), 0, "load it back");
    is_int(ch.n, 2, "two items");
    is_str(ch.items[0].key, "t.name", "sorted by key");
    ok(ch.items[0].old_value == NULL, "NULL old value: the default");
    is_str(ch.items[0].new_value, "x", "new value");
    ok(ch.items[1].secret && !ch.items[1].old_value && !ch.items[1].new_value,
       "the secret has no values");
    settings_history_change_free(&ch);

    is_int(settings_history_load(db, 999999, &ch, &err), -ENOENT, "unknown change: -ENOENT");
    is_str(err, "settings change 999999: no such change (the newest 1000 are kept)", "and says so");
    free(err);
    sqlite3_exec(db, "DELETE FROM settings_changes; DELETE FROM settings_change_items", NULL, NULL,
                 NULL);
}

static void test_keep(void)
{
    sqlite3 *db = store_main();
    char *err = NULL;
    long long id = 0, first = 0;
    char v[32];

    store_begin(db, NULL);
    for (int k = 0; k < SETTINGS_HISTORY_KEEP + 5; k++) {
        snprintf(v, sizeof v, "%d", k + 1);
        struct settings_history_item it = {.key = "t.workers", .old_value = NULL, .new_value = v};
        if (settings_history_record(db, "bob", 0, &it, 1, &id, &err) < 0)
            break;
        if (!first)
            first = id;
    }
    store_commit(db, NULL);
    is_int(count("SELECT count(*) FROM settings_changes"), SETTINGS_HISTORY_KEEP,
           "after %d changes the newest %d are kept", SETTINGS_HISTORY_KEEP + 5,
           SETTINGS_HISTORY_KEEP);
    is_int(count("SELECT min(id) FROM settings_changes"), first + 5, "the oldest 5 were dropped");
    is_int(count("SELECT count(*) FROM settings_change_items"), SETTINGS_HISTORY_KEEP,
           "with their items");
    struct settings_history_change ch;
    is_int(settings_history_load(db, first, &ch, &err), -ENOENT, "a dropped change is gone");
    free(err);
    sqlite3_exec(db, "DELETE FROM settings_changes; DELETE FROM settings_change_items", NULL, NULL,
                 NULL);
}

static void test_list(void)
{
    char *err = NULL;
    long long next = -1;

    is_int(settings_set("t.workers", "8", "alice", &err), 0, "t.workers = 8");
    is_int(settings_set("t2.level", "3", "alice", &err), 0, "t2.level = 3");
    is_int(settings_set("t.name", "web", "bob", &err), 0, "t.name = web");

    json_t *all = settings_history_list(store_main(), NULL, 50, 0, &next, &err);
    is_int(json_array_size(all), 3, "three changes");
    is_int(next, 0, "on one page");
    json_decref(all);

    json_t *t = settings_history_list(store_main(), "t", 50, 0, &next, &err);
    is_int(json_array_size(t), 2, "two of owner t (not t2's)");
    char *s = json_dumps(json_array_get(t, 0), JSON_COMPACT | JSON_SORT_KEYS);
    like(s, "\"actor\":\"bob\"", "newest first: bob's");
    like(s, "\"items\":[{\"key\":\"t.name\",\"new\":\"web\",\"old\":null,\"secret\":false}]",
         "with its item");
    free(s);
    json_decref(t);

    json_t *page = settings_history_list(store_main(), NULL, 2, 0, &next, &err);
    is_int(json_array_size(page), 2, "a page of 2");
    is_int(next, json_integer_value(json_object_get(json_array_get(page, 1), "id")),
           "next_before is the last id on it");
    json_decref(page);
    page = settings_history_list(store_main(), NULL, 2, next, &next, &err);
    is_int(json_array_size(page), 1, "the next page has the rest");
    is_int(next, 0, "and no next page");
    json_decref(page);
}

/* Undo of change @p id refused with @p want_rc and the message @p want
 * (a format taking @p id, then @p arg), and nothing written. */
static void refused(long long id, int want_rc, const char *what, const char *want, long long arg)
{
    char *err = NULL, *before = snapshot(), *msg = NULL, *after;
    long long u = -1;
    is_int(settings_undo(id, "carol", &u, &err), want_rc, "%s: refused", what);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
    msg = xasprintf(want, id, arg);
#pragma GCC diagnostic pop
    is_str(err, msg, "%s: says why", what);
    is_int(u, 0, "%s: no new change", what);
    after = snapshot();
    is_str(after, before, "%s: nothing written", what);
    free(after);
    free(msg);
    free(before);
    free(err);
}

static void test_undo(void)
{
    char *err = NULL, *v;
    long long a, b, u = 0;

    settings_set("t.workers", "10", "alice", &err);
    a = newest();
    settings_set("t.workers", "12", "alice", &err);
    b = newest();

    refused(a, -ESTALE, "a change made over",
            "cannot undo settings change %lld: t.workers was changed again by change %lld (it is "
            "12 now); undo that one first",
            b);

    is_int(settings_undo(b, "carol", &u, &err), 0, "undo the newer one");
    is_int(u, newest(), "as a new change");
    is_int(count("SELECT undo_of FROM settings_changes ORDER BY id DESC LIMIT 1"), b, "of it");
    v = settings_get("t.workers");
    is_str(v, "10", "t.workers is 10 again");
    free(v);
    is_int(settings_undo(a, "carol", &u, &err), 0, "now the older one");
    v = settings_get_stored("t.workers");
    is_str(v, "8", "t.workers has the value from before it (8)");
    free(v);
    /* Back to no stored value at all: the first change, from the default. */
    settings_reset("t.workers", "alice", &err);
    settings_set("t.workers", "9", "alice", &err);
    is_int(settings_undo(newest(), "carol", &u, &err), 0, "undo of a change from the default");
    v = settings_get_stored("t.workers");
    ok(v == NULL, "t.workers has no stored value: the default serves");
    free(v);

    /* A secret. */
    settings_set("t.token", "s3cret", "alice", &err);
    long long sid = newest();
    settings_set("t.token", "s3cret", "alice", &err);
    is_int(newest(), sid, "setting a secret to the value it has records nothing");
    refused(newest(), -EPERM, "a secret's change",
            "cannot undo settings change %lld: it set t.token, a secret, whose old value is not "
            "kept; set it again (tlsboxctl set t.token VALUE)",
            0);

    /* The owner's applier refuses the old value: all or nothing. */
    json_t *p = json_pack("{s:s,s:s}", "t.name", "edge", "t2.level", "7");
    is_int(settings_set_many(p, NULL, "alice", &err), 0, "t.name and t2.level in one change");
    json_decref(p);
    long long m = newest();
    snprintf(refuse, sizeof refuse, "3"); /* t2.level's old value */
    refused(m, -EADDRINUSE, "t2 refuses its old value",
            "cannot undo settings change %lld: t2.level: cannot take 3 now", 0);
    v = settings_get("t.name");
    is_str(v, "edge", "t.name still has the change's value");
    free(v);
    refuse[0] = '\0';
    is_int(settings_undo(m, "carol", &u, &err), 0, "once t2 takes it, the undo goes through");
    v = settings_get("t2.level");
    is_str(v, "3", "t2.level is back");
    free(v);

    /* A setting read at start: stored, and the caller is told. */
    settings_set("t.threads", "5", "alice", &err);
    is_int(settings_undo(newest(), "carol", &u, &err), 1, "undo of a start-only setting: 1");
    is_str(err, "t.threads takes effect when tlsboxd restarts", "with a note");
    free(err);
    err = NULL;

    refused(999999, -ENOENT, "no such change",
            "settings change %lld: no such change (the newest 1000 are kept)", 0);
}

int main(void)
{
    char tmp[] = "/tmp/tlsbox-history-test.XXXXXX", *err = NULL;
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    char *state = xasprintf("%s/state", tmp);
    if (store_init(state, &err) < 0) {
        printf("Bail out! store_init: %s\n", err);
        return 1;
    }
    is_int(settings_register("t", t_defs), 0, "register t");
    is_int(settings_register("t2", t2_defs), 0, "register t2");
    is_int(settings_set_applier("t2", t2_apply, NULL), 0, "t2 has an applier");
    is_int(settings_load(), 0, "settings_load");

    test_record();
    test_keep();
    test_list();
    test_undo();

    settings_unregister("t2");
    settings_unregister("t");
    store_close();
    free(state);
    char *cmd = xasprintf("rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        diag("could not remove %s", tmp);
    free(cmd);
    return done_testing();
}
