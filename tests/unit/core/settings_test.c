/* Settings: validation of every type, writes all-or-nothing, cache, secrets,
 * default overrides, reload after an external change. */
#include "core/settings.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/events.h"
#include "core/settings_check.h"
#include "core/store.h"
#include "core/xalloc.h"
#include "tests/tap.h"

/* A recording events_publish: the real one lives in core/events.c. */
static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static char ev_log[8192];
static int ev_count;

int events_publish(const char *event, const char *data)
{
    pthread_mutex_lock(&ev_lock);
    size_t len = strlen(ev_log);
    snprintf(ev_log + len, sizeof(ev_log) - len, "%s %s\n", event, data);
    ev_count++;
    pthread_mutex_unlock(&ev_lock);
    return 0;
}

/* A COMMIT that fails after every statement of it ran: the commit hook of
 * the connection that settings_set opens for itself (store_connect) turns
 * its COMMIT into a rollback while fail_commits is set.  Installed on every
 * connection this process opens (sqlite3_auto_extension), it does nothing
 * otherwise.  (The core's connections fire no trigger of the store, so a
 * trigger cannot inject this.) */
static int fail_commits;

static int on_commit(void *arg)
{
    (void)arg;
    return fail_commits; /* non-zero: the COMMIT becomes a rollback */
}

static int install_commit_hook(sqlite3 *db, char **msg, const struct sqlite3_api_routines *api)
{
    (void)msg;
    (void)api;
    sqlite3_commit_hook(db, on_commit, NULL);
    return SQLITE_OK;
}

static void ev_reset(void)
{
    pthread_mutex_lock(&ev_lock);
    ev_log[0] = '\0';
    ev_count = 0;
    pthread_mutex_unlock(&ev_lock);
}

static const struct tlsbox_setting_def t_defs[] = {
    {.key = "flag", .type = TLSBOX_SETTING_BOOL, .default_value = "false", .help = "A flag"},
    {.key = "workers",
     .type = TLSBOX_SETTING_INT,
     .default_value = "4",
     .min = 1,
     .max = 64,
     .help = "Workers"},
    {.key = "anyint", .type = TLSBOX_SETTING_INT, .default_value = "-5"},
    {.key = "name",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "box",
     .pattern = "^[a-z]{1,8}$"},
    {.key = "free", .type = TLSBOX_SETTING_STRING, .default_value = ""},
    {.key = "mode",
     .type = TLSBOX_SETTING_ENUM,
     .default_value = "fast",
     .choices = "fast|slow|off"},
    {.key = "names", .type = TLSBOX_SETTING_LIST, .default_value = "a,b", .pattern = "^[a-z]+$"},
    {.key = "password",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .pattern = "^$|^.{8,}$",
     .flags = TLSBOX_SETTING_SECRET},
    {.key = "port",
     .type = TLSBOX_SETTING_INT,
     .default_value = "443",
     .min = 1,
     .max = 65535,
     .flags = TLSBOX_SETTING_RESTART},
    TLSBOX_SETTINGS_END};

static char tmp[] = "/tmp/tlsbox-settings-test-XXXXXX";

static char *db_value(const char *key)
{
    sqlite3_stmt *st = NULL;
    char *v = NULL;
    sqlite3_prepare_v2(store_main(), "SELECT value FROM settings WHERE key = ?", -1, &st, NULL);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = xstrdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return v;
}

static long long db_int(const char *sql)
{
    sqlite3_stmt *st = NULL;
    long long v = -1;
    if (sqlite3_prepare_v2(store_main(), sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* @p v for a TAP description: control characters would break the line. */
static const char *printable(const char *v)
{
    static char buf[80];
    size_t i = 0;
    for (; v && v[i] && i < sizeof(buf) - 1; i++)
        buf[i] = (unsigned char)v[i] < 0x20 ? '?' : v[i];
    buf[i] = '\0';
    return v ? buf : "(null)";
}

/* Validation only: value accepted, and stored as @p canon. */
static void good(const char *key, const char *value, const char *canon)
{
    char *err = NULL;
    const struct tlsbox_setting_def *d = settings_def(key);
    int rc = settings_validate(key, d, value, &err);
    if (!ok(rc == 0, "%s = \"%s\" is valid", key, value))
        diag("  %s", err ? err : "(no error)");
    free(err);
    err = NULL;
    rc = settings_set(key, value, "test", &err);
    char *got = settings_get(key), *stored = db_value(key);
    ok(rc == 0 && got && strcmp(got, canon) == 0 && stored && strcmp(stored, canon) == 0,
       "%s = \"%s\" stored and cached as \"%s\"", key, value, canon);
    if (rc != 0 || !got || strcmp(got, canon) != 0)
        diag("  rc %d err %s got %s stored %s", rc, err ? err : "-", got ? got : "-",
             stored ? stored : "-");
    free(err);
    free(got);
    free(stored);
}

/* Refused with exactly @p msg; store, cache, audit and events unchanged. */
static void bad(const char *key, const char *value, const char *msg)
{
    char *err = NULL;
    char *before = settings_get(key), *stored0 = db_value(key);
    long long audits = db_int("SELECT count(*) FROM audit");
    ev_reset();
    int rc = settings_set(key, value, "test", &err);
    is_int(rc, -EINVAL, "%s = \"%s\" refused", key, printable(value));
    is_str(err, msg, "  message");
    char *after = settings_get(key), *stored1 = db_value(key);
    ok((before == after || (before && after && strcmp(before, after) == 0)) &&
           (stored0 == stored1 || (stored0 && stored1 && strcmp(stored0, stored1) == 0)) &&
           db_int("SELECT count(*) FROM audit") == audits && ev_count == 0,
       "  store, cache, audit and events unchanged");
    free(err);
    free(before);
    free(after);
    free(stored0);
    free(stored1);
}

static void test_core_defaults(void)
{
    char *v = settings_get("core.log_level");
    is_str(v, "info", "core.log_level defaults to info");
    free(v);
    is_int(settings_get_int("core.maintenance_threads", -1), 2, "core.maintenance_threads = 2");
    is_int(settings_get_int("core.metrics_history_period", -1), 60, "metrics_history_period = 60");
    ok(settings_get_int("core.api_max_body", -1) > 0, "api_max_body has a default");
    v = settings_get("core.hostname");
    is_str(v, "", "hostname defaults to empty (system host name)");
    free(v);
    ok(settings_def("core.maintenance_threads")->flags & TLSBOX_SETTING_RESTART,
       "maintenance_threads needs a restart");
    ok(settings_get("core.nope") == NULL, "unknown key: NULL");
    ok(settings_get("nokey") == NULL, "key without owner: NULL");
    is_int(settings_get_int("core.nope", 77), 77, "settings_get_int default for unknown key");

    good("core.hostname", "tlsbox.example.org", "tlsbox.example.org");
    good("core.hostname", "box-1", "box-1");
    good("core.hostname", "", "");
    bad("core.hostname", "bad host",
        "core.hostname: \"bad host\" does not match "
        "^$|^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
        "(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$");
    char *err = NULL;
    ok(settings_set("core.hostname", "-x.org", "t", &err) < 0, "hostname label starting with -");
    free(err);
    err = NULL;
    ok(settings_set("core.hostname", "a..b", "t", &err) < 0, "hostname with an empty label");
    free(err);
    good("core.log_level", "debug", "debug");
    bad("core.log_level", "loud", "core.log_level: \"loud\" is not one of err|warn|info|debug");
    good("core.maintenance_threads", "8", "8");
    bad("core.maintenance_threads", "9", "core.maintenance_threads: \"9\" is out of range 1..8");
    bad("core.metrics_history_period", "59",
        "core.metrics_history_period: \"59\" is out of range 60..86400");
    good("core.plugins_disabled", " acme , bench", "acme,bench");
    bad("core.plugins_disabled", "acme,Bench",
        "core.plugins_disabled: item \"Bench\" does not match ^[a-z][a-z0-9_]*$");
    good("core.plugins_disabled", "", "");
}

static void test_types(void)
{
    /* BOOL */
    good("t.flag", "true", "true");
    good("t.flag", "0", "false");
    good("t.flag", "YES", "true");
    good("t.flag", "off", "false");
    good("t.flag", "On", "true");
    bad("t.flag", "maybe", "t.flag: \"maybe\" is not a boolean (true/false, yes/no, on/off, 1/0)");
    bad("t.flag", "", "t.flag: \"\" is not a boolean (true/false, yes/no, on/off, 1/0)");
    is_int(settings_parse_bool("no"), 0, "parse_bool no");
    is_int(settings_parse_bool("1"), 1, "parse_bool 1");
    is_int(settings_parse_bool("2"), -EINVAL, "parse_bool 2");
    is_int(settings_parse_bool(NULL), -EINVAL, "parse_bool NULL");
    is_int(settings_get_bool("t.flag", false), 1, "get_bool reads the cache");

    /* INT */
    good("t.workers", "1", "1");
    good("t.workers", "64", "64");
    good("t.workers", "007", "7");
    bad("t.workers", "0", "t.workers: \"0\" is out of range 1..64");
    bad("t.workers", "65", "t.workers: \"65\" is out of range 1..64");
    bad("t.workers", "abc", "t.workers: \"abc\" is not an integer");
    bad("t.workers", " 5", "t.workers: \" 5\" is not an integer");
    bad("t.workers", "+5", "t.workers: \"+5\" is not an integer");
    bad("t.workers", "5x", "t.workers: \"5x\" is not an integer");
    bad("t.workers", "", "t.workers: \"\" is not an integer");
    bad("t.workers", "99999999999999999999",
        "t.workers: \"99999999999999999999\" is not an integer");
    is_int(settings_get_int("t.workers", -1), 7, "get_int reads the cache");
    good("t.anyint", "-9223372036854775808", "-9223372036854775808");
    good("t.anyint", "0", "0");

    /* STRING */
    good("t.name", "abc", "abc");
    bad("t.name", "ABC", "t.name: \"ABC\" does not match ^[a-z]{1,8}$");
    bad("t.name", "abcdefghi", "t.name: \"abcdefghi\" does not match ^[a-z]{1,8}$");
    good("t.free", "any thing: at all \"quoted\"", "any thing: at all \"quoted\"");
    bad("t.free", "two\nlines", "t.free: \"two\\x0alines\" contains a control character");
    char big[SETTINGS_VALUE_MAX + 2];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    bad("t.free", big, "t.free: value is longer than 4096 bytes");

    /* ENUM */
    good("t.mode", "slow", "slow");
    good("t.mode", "off", "off");
    bad("t.mode", "of", "t.mode: \"of\" is not one of fast|slow|off");
    bad("t.mode", "fast|slow", "t.mode: \"fast|slow\" is not one of fast|slow|off");
    bad("t.mode", "", "t.mode: \"\" is not one of fast|slow|off");

    /* LIST */
    good("t.names", "x", "x");
    good("t.names", " x ,y,  z ", "x,y,z");
    good("t.names", "", "");
    good("t.names", "  ", "");
    bad("t.names", "x,,y", "t.names: \"x,,y\" has an empty item (#2)");
    bad("t.names", "x,", "t.names: \"x,\" has an empty item (#2)");
    bad("t.names", ",x", "t.names: \",x\" has an empty item (#1)");
    bad("t.names", "x, Y", "t.names: item \"Y\" does not match ^[a-z]+$");

    /* Unknown keys and missing values */
    bad("t.nosuch", "1", "t.nosuch: no such setting");
    bad("nosuch.key", "1", "nosuch.key: no such setting");
    bad("t.workers", NULL, "t.workers: no value given");
}

static void test_write_side_effects(void)
{
    char *err = NULL;
    ev_reset();
    long long audits = db_int("SELECT count(*) FROM audit");
    is_int(settings_set("t.workers", "12", "alice", &err), 0, "set t.workers 12");
    is_str(ev_log, "settings.changed {\"key\":\"t.workers\"}\n", "one settings.changed event");
    is_int(db_int("SELECT count(*) FROM audit"), audits + 1, "one audit row");
    is_int(db_int("SELECT count(*) FROM audit WHERE actor='alice' AND action='settings.set' "
                  "AND target='t.workers' AND detail='12'"),
           1, "audit row names actor, key and value");
    is_int(db_int("SELECT count(*) FROM settings WHERE key='t.workers' AND updated_by='alice' "
                  "AND updated_at >= strftime('%s','now') - 5"),
           1, "settings row records who and when");

    /* Reset: the default serves again. */
    ev_reset();
    is_int(settings_reset("t.workers", "alice", &err), 0, "settings_reset");
    is_int(settings_get_int("t.workers", -1), 4, "default again after reset");
    char *v = db_value("t.workers");
    ok(v == NULL, "row deleted");
    free(v);
    is_int(ev_count, 1, "reset publishes");
    free(err);
}

static void test_set_many(void)
{
    char *err = NULL;
    json_t *p;

    settings_set("t.workers", "3", "t", NULL);
    settings_set("t.mode", "fast", "t", NULL);
    long long audits = db_int("SELECT count(*) FROM audit");
    ev_reset();

    /* One bad value: nothing written. */
    p = json_pack("{s:s, s:s, s:s}", "t.workers", "10", "t.mode", "slow", "t.flag", "maybe");
    is_int(settings_set_many(p, NULL, "bob", &err), -EINVAL, "set_many with one bad value fails");
    is_str(err, "t.flag: \"maybe\" is not a boolean (true/false, yes/no, on/off, 1/0)",
           "message names the bad one");
    json_decref(p);
    free(err);
    err = NULL;
    is_int(settings_get_int("t.workers", -1), 3, "t.workers unchanged in cache");
    char *v = db_value("t.workers");
    is_str(v, "3", "t.workers unchanged in store");
    free(v);
    v = settings_get("t.mode");
    is_str(v, "fast", "t.mode unchanged");
    free(v);
    is_int(db_int("SELECT count(*) FROM audit"), audits, "no audit rows");
    is_int(ev_count, 0, "no events");

    /* Unknown key among good ones: nothing written. */
    p = json_pack("{s:s, s:s}", "t.workers", "10", "t.bogus", "1");
    is_int(settings_set_many(p, NULL, "bob", &err), -EINVAL, "set_many with an unknown key fails");
    is_str(err, "t.bogus: no such setting", "message names the unknown key");
    json_decref(p);
    free(err);
    err = NULL;
    is_int(settings_get_int("t.workers", -1), 3, "still unchanged");

    /* Another owner's key through an owner-scoped call. */
    p = json_pack("{s:s}", "core.log_level", "err");
    is_int(settings_set_many(p, "t", "bob", &err), -EINVAL,
           "owner-scoped set_many refuses other keys");
    is_str(err, "core.log_level: not a setting of t", "message");
    json_decref(p);
    free(err);
    err = NULL;

    /* A list item with a comma is refused by its place, not its text:
     * the setting may be a secret. */
    p = json_pack("{s:[s,s]}", "names", "first", "hunter2,hunter3");
    is_int(settings_set_many(p, "t", "bob", &err), -EINVAL, "a list item with a comma is refused");
    is_str(err, "t.names: list item 2 contains a comma (a list is stored comma-separated)",
           "the message names the item's place, not its text (no secret in it)");
    json_decref(p);
    free(err);
    err = NULL;
    /* A list for a setting of one value: refused, not joined into one. */
    p = json_pack("{s:[s,s]}", "password", "first one", "hunter2");
    is_int(settings_set_many(p, "t", "bob", &err), -EINVAL, "a list for a single value is refused");
    is_str(err, "t.password: a list is given, but the setting is one value, not a list",
           "saying so, without the value (a secret)");
    json_decref(p);
    free(err);
    err = NULL;

    /* Values are text: invalid UTF-8 is refused and changes nothing. */
    is_int(settings_set("t.free", "ok\xff\xfe", "bob", &err), -EINVAL,
           "a value that is not UTF-8 is refused");
    is_str(err, "t.free: the value is not valid UTF-8 (byte 3)", "and the message says where");
    free(err);
    err = NULL;
    is_int(settings_set("t.free", "caf\xc3\xa9 \xe2\x82\xac", "bob", &err), 0,
           "valid UTF-8 is taken");
    is_int(settings_set("t.free", "\xed\xa0\x80", "bob", &err), -EINVAL,
           "a surrogate (invalid in UTF-8) is refused");
    free(err);
    err = NULL;
    v = settings_get("t.free");
    is_str(v, "caf\xc3\xa9 \xe2\x82\xac", "the refusals left the value as it was");
    free(v);
    settings_reset("t.free", "bob", NULL);

    /* All good, with JSON types and relative keys. */
    p = json_pack("{s:i, s:b, s:s, s:[s,s], s:n}", "workers", 10, "flag", 1, "t.mode", "slow",
                  "names", "p", "q", "name", "zz");
    /* "name" = null resets; make sure it is stored first. */
    settings_set("t.name", "stored", "t", NULL);
    ev_reset();
    audits = db_int("SELECT count(*) FROM audit");
    is_int(settings_set_many(p, "t", "bob", &err), 0, "set_many of 5 good values");
    if (err)
        diag("%s", err);
    json_decref(p);
    is_int(settings_get_int("t.workers", -1), 10, "int from a JSON number");
    is_int(settings_get_bool("t.flag", false), 1, "bool from a JSON true");
    v = settings_get("t.mode");
    is_str(v, "slow", "string");
    free(v);
    v = settings_get("t.names");
    is_str(v, "p,q", "list from a JSON array");
    free(v);
    v = settings_get("t.name");
    is_str(v, "box", "null reset t.name to its default");
    free(v);
    v = db_value("t.names");
    is_str(v, "p,q", "stored");
    free(v);
    is_int(db_int("SELECT count(*) FROM audit"), audits + 5, "five audit rows");
    is_int(ev_count, 5, "five events");
    like(ev_log, "settings.changed {\"key\":\"t.names\"}", "event for t.names");

    p = json_pack("{s:{}}", "workers");
    is_int(settings_set_many(p, "t", "bob", &err), -EINVAL, "an object value is refused");
    like(err, "t.workers: a value must be", "message");
    json_decref(p);
    free(err);
    err = NULL;
    p = json_pack("{s:f}", "workers", 2.5);
    is_int(settings_set_many(p, "t", "bob", &err), -EINVAL, "a fractional number for an int");
    is_str(err, "t.workers: 2.5 is not a whole number (write it without a point or exponent)",
           "message");
    json_decref(p);
    free(err);
    err = NULL;
    p = json_object();
    is_int(settings_set_many(p, "t", "bob", &err), 0, "an empty object is a no-op");
    json_decref(p);
    free(err);
}

static void test_secrets(void)
{
    char *err = NULL;
    json_t *d;

    is_int(settings_set("t.password", "s3cr3t", "t", &err), -EINVAL, "a short secret is refused");
    is_str(err, "t.password: the secret value does not match ^$|^.{8,}$",
           "message hides the value");
    ok(err && !strstr(err, "s3cr3t"), "secret not in the message");
    free(err);
    err = NULL;
    is_int(settings_set("t.password", "bad\x01pass", "t", &err), -EINVAL,
           "control char in a secret");
    ok(err && !strstr(err, "bad"), "secret not in that message either");
    free(err);
    err = NULL;

    d = settings_describe("t");
    json_t *pw = NULL, *it;
    size_t i;
    json_array_foreach(d, i, it) if (strcmp(json_string_value(json_object_get(it, "key")),
                                            "password") == 0) pw = it;
    is_str(json_string_value(json_object_get(pw, "value")), "", "unset secret shows empty");
    json_decref(d);

    is_int(settings_set("t.password", "correct horse", "t", &err), 0, "a good secret is stored");
    char *v = settings_get("t.password");
    is_str(v, "correct horse", "settings_get returns the secret to the core");
    free(v);
    d = settings_describe("t");
    char *dump = json_dumps(d, JSON_COMPACT);
    ok(dump && !strstr(dump, "correct horse"), "describe never shows the secret");
    like(dump, "\"key\":\"password\"", "describe lists it");
    like(dump, "\"value\":\"********\"", "shown as ********");
    like(dump, "\"secret\":true", "flagged secret");
    free(dump);
    json_decref(d);
    is_int(db_int("SELECT count(*) FROM audit WHERE target='t.password' AND detail LIKE '%horse%'"),
           0, "audit row does not hold the secret");
    is_int(db_int("SELECT count(*) FROM audit WHERE target='t.password' AND detail='********'"), 1,
           "audit row says ********");
    free(err);
}

static json_t *find(json_t *arr, const char *key)
{
    json_t *it;
    size_t i;
    json_array_foreach(arr, i, it) if (strcmp(json_string_value(json_object_get(it, "key")), key) ==
                                       0) return it;
    return NULL;
}

static void test_describe(void)
{
    json_t *d = settings_describe("t");
    ok(json_is_array(d) && json_array_size(d) == 9, "describe t: 9 settings");
    json_t *w = find(d, "workers");
    is_str(json_string_value(json_object_get(w, "full_key")), "t.workers", "full_key");
    is_str(json_string_value(json_object_get(w, "type")), "int", "type");
    is_str(json_string_value(json_object_get(w, "value")), "10", "value");
    is_str(json_string_value(json_object_get(w, "default")), "4", "default");
    is_int(json_integer_value(json_object_get(w, "min")), 1, "min");
    is_int(json_integer_value(json_object_get(w, "max")), 64, "max");
    is_str(json_string_value(json_object_get(w, "help")), "Workers", "help");
    ok(json_is_false(json_object_get(w, "is_default")), "not default");
    ok(json_is_false(json_object_get(w, "restart")), "no restart");
    ok(json_is_true(json_object_get(find(d, "port"), "restart")), "port needs a restart");
    ok(json_is_true(json_object_get(find(d, "port"), "is_default")), "port is default");
    json_t *ch = json_object_get(find(d, "mode"), "choices");
    ok(json_is_array(ch) && json_array_size(ch) == 3 &&
           strcmp(json_string_value(json_array_get(ch, 2)), "off") == 0,
       "enum choices as an array");
    is_str(json_string_value(json_object_get(find(d, "names"), "pattern")), "^[a-z]+$", "pattern");
    is_str(json_string_value(json_object_get(find(d, "flag"), "type")), "bool", "bool type");
    ok(json_object_get(find(d, "anyint"), "min") == NULL, "no min/max for an unbounded int");
    json_decref(d);
    d = settings_describe("nosuchowner");
    ok(json_is_array(d) && json_array_size(d) == 0, "unknown owner: empty array");
    json_decref(d);
    d = settings_describe(NULL);
    ok(json_array_size(d) == 9 + 8, "describe(NULL): every owner");
    json_decref(d);
}

static void test_override(void)
{
    char *err = NULL;
    is_int(settings_override_default("t.port", "8443", &err), 0, "override t.port default");
    is_int(settings_get_int("t.port", -1), 8443, "override serves while nothing is stored");
    json_t *d = settings_describe("t");
    is_str(json_string_value(json_object_get(find(d, "port"), "default")), "8443",
           "describe shows the overridden default");
    ok(json_is_true(json_object_get(find(d, "port"), "is_default")), "and is_default");
    json_decref(d);
    char *v = db_value("t.port");
    ok(v == NULL, "override is not stored");
    free(v);
    is_int(settings_override_default("t.port", "0", &err), -EINVAL,
           "an invalid override is refused");
    is_str(err, "t.port: \"0\" is out of range 1..65535", "message");
    free(err);
    err = NULL;
    is_int(settings_get_int("t.port", -1), 8443, "previous override kept");
    is_int(settings_override_default("t.nope", "1", &err), -EINVAL, "override of an unknown key");
    is_str(err, "t.nope: no such setting", "message");
    free(err);
    err = NULL;
    settings_set("t.port", "9000", "t", NULL);
    is_int(settings_get_int("t.port", -1), 9000, "a stored value beats the override");
    settings_reset("t.port", "t", NULL);
    is_int(settings_get_int("t.port", -1), 8443, "after reset the override serves again");
}

static void test_load(void)
{
    sqlite3 *other = NULL;
    char *v;

    settings_set("t.workers", "10", "t", NULL);
    /* Another process edits the store behind our back (tlsboxctl offline, a
     * restore...): the cache holds until settings_load (SIGHUP). */
    sqlite3_open(store_path(), &other);
    sqlite3_busy_timeout(other, 5000);
    sqlite3_exec(other,
                 "UPDATE settings SET value='20' WHERE key='t.workers';"
                 "INSERT INTO settings (key, value, updated_at) VALUES ('t.mode', 'nonsense', 0)"
                 " ON CONFLICT (key) DO UPDATE SET value='nonsense';"
                 "INSERT INTO settings (key, value, updated_at) VALUES ('t.name', 'loaded', 0)"
                 " ON CONFLICT (key) DO UPDATE SET value='loaded';"
                 "INSERT INTO settings (key, value, updated_at) VALUES ('gone.key', 'x', 0);"
                 "INSERT INTO settings (key, value, updated_at) VALUES ('t.flag', 'YES', 0)"
                 " ON CONFLICT (key) DO UPDATE SET value='YES';",
                 NULL, NULL, NULL);
    is_int(settings_get_int("t.workers", -1), 10, "cache holds before reload");
    is_int(settings_load(), 0, "settings_load");
    is_int(settings_get_int("t.workers", -1), 20, "external change seen after reload");
    v = settings_get("t.mode");
    is_str(v, "fast", "a stored value that no longer validates is ignored: default serves");
    free(v);
    v = settings_get("t.name");
    is_str(v, "loaded", "new stored value loaded");
    free(v);
    v = settings_get("t.flag");
    is_str(v, "true", "loaded values are canonicalised");
    free(v);

    /* Registering an owner picks up its stored values. */
    sqlite3_exec(other,
                 "INSERT INTO settings (key, value, updated_at) VALUES ('late.level', '7', 0)",
                 NULL, NULL, NULL);
    sqlite3_close(other);
    static const struct tlsbox_setting_def late[] = {
        {.key = "level", .type = TLSBOX_SETTING_INT, .default_value = "1", .min = 0, .max = 9},
        TLSBOX_SETTINGS_END};
    is_int(settings_register("late", late), 0, "register late owner");
    is_int(settings_get_int("late.level", -1), 7, "its stored value is loaded at register");
    settings_unregister("late");
    ok(settings_get("late.level") == NULL, "unregistered: unknown");
}

static void test_register_checks(void)
{
    static const struct tlsbox_setting_def bad_default[] = {
        {.key = "n", .type = TLSBOX_SETTING_INT, .default_value = "0", .min = 1, .max = 2},
        TLSBOX_SETTINGS_END};
    static const struct tlsbox_setting_def bad_pattern[] = {
        {.key = "s", .type = TLSBOX_SETTING_STRING, .default_value = "", .pattern = "(["},
        TLSBOX_SETTINGS_END};
    static const struct tlsbox_setting_def dup[] = {
        {.key = "a", .type = TLSBOX_SETTING_BOOL, .default_value = "true"},
        {.key = "a", .type = TLSBOX_SETTING_BOOL, .default_value = "true"},
        TLSBOX_SETTINGS_END};
    static const struct tlsbox_setting_def bad_key[] = {
        {.key = "A-b", .type = TLSBOX_SETTING_BOOL, .default_value = "true"}, TLSBOX_SETTINGS_END};
    static const struct tlsbox_setting_def no_choices[] = {
        {.key = "e", .type = TLSBOX_SETTING_ENUM, .default_value = "x"}, TLSBOX_SETTINGS_END};
    ok(settings_register("x1", bad_default) < 0, "invalid default refused at register");
    ok(settings_register("x2", bad_pattern) < 0, "uncompilable pattern refused");
    ok(settings_register("x3", dup) < 0, "duplicate key refused");
    ok(settings_register("x4", bad_key) < 0, "bad key name refused");
    ok(settings_register("x5", no_choices) < 0, "enum without choices refused");
    ok(settings_register("Bad", NULL) < 0, "bad owner name refused");
    ok(settings_register("t", t_defs) == -EEXIST, "owner registered twice refused");
    is_int(settings_register("empty", NULL), 0, "owner without settings");
    json_t *d = settings_describe("empty");
    ok(json_is_array(d) && json_array_size(d) == 0, "describe: empty array");
    json_decref(d);
    settings_unregister("empty");
    ok(settings_def("x1.n") == NULL, "nothing left of refused owners");

    /* settings_validate with an unregistered def compiles its pattern on the fly. */
    char *err = NULL;
    static const struct tlsbox_setting_def loose = {
        .key = "k", .type = TLSBOX_SETTING_STRING, .default_value = "", .pattern = "^[0-9]+$"};
    is_int(settings_validate("y.k", &loose, "123", &err), 0, "validate unregistered def: good");
    is_int(settings_validate("y.k", &loose, "12a", &err), -EINVAL,
           "validate unregistered def: bad");
    is_str(err, "y.k: \"12a\" does not match ^[0-9]+$", "message");
    free(err);
    /* A pattern too long to read gives way to the help, for a person. */
    static const struct tlsbox_setting_def long_pattern = {
        .key = "k",
        .type = TLSBOX_SETTING_LIST,
        .default_value = "",
        .pattern = "^(a|aa|aaa|aaaa|aaaaa|aaaaaa|aaaaaaa|aaaaaaaa|aaaaaaaaa|aaaaaaaaaa|aaaaaaaaaaa|"
                   "b|bb|bbb|bbbb|bbbbb|bbbbbb|bbbbbbb|bbbbbbbb|bbbbbbbbb|bbbbbbbbbb|bbbbbbbbbbb|"
                   "c|cc|ccc|cccc|ccccc|cccccc|ccccccc|cccccccc|ccccccccc|cccccccccc|ccccccccccc)$",
        .help = "Runs of one letter, a to c"};
    err = NULL;
    is_int(settings_validate("y.k", &long_pattern, "aa,ab", &err), -EINVAL, "a long pattern: bad");
    is_str(err, "y.k: item \"ab\" does not match the form it takes: Runs of one letter, a to c",
           "its message says the help, not the pattern");
    free(err);
}

struct writer {
    int id;
    int failures;
};

static void *writer_main(void *arg)
{
    struct writer *w = arg;
    for (int i = 0; i < 25; i++) {
        char val[16];
        snprintf(val, sizeof(val), "%d", 1 + (w->id * 25 + i) % 64);
        char *err = NULL;
        if (settings_set("t.workers", val, "thread", &err) < 0) {
            w->failures++;
            fprintf(stderr, "%s\n", err);
        }
        free(err);
    }
    return NULL;
}

static double ms_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (t1.tv_sec - t0->tv_sec) * 1e3 + (t1.tv_nsec - t0->tv_nsec) / 1e6;
}

static void test_timing(void)
{
    struct timespec t0;
    int fails = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 20; i++)
        fails += settings_set("t.workers", i % 2 ? "5" : "6", "t", NULL) < 0;
    diag("settings_set (own connection, IMMEDIATE, synchronous=FULL): %.2f ms each",
         ms_since(&t0) / 20);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long long sum = 0;
    for (int i = 0; i < 100000; i++)
        sum += settings_get_int("t.workers", 0);
    diag("settings_get_int (cache): %.3f us each", ms_since(&t0) * 1e3 / 100000);
    ok(fails == 0 && sum > 0, "timing loops ran");
}

static void test_concurrent(void)
{
    pthread_t th[3];
    struct writer w[3] = {{0, 0}, {1, 0}, {2, 0}};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, writer_main, &w[i]);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    is_int(w[0].failures + w[1].failures + w[2].failures, 0, "75 concurrent writes succeed");
    char *cached = settings_get("t.workers"), *stored = db_value("t.workers");
    is_str(cached, stored, "cache equals the store after concurrent writes");
    free(cached);
    free(stored);
    diag("75 settings_set calls (3 threads): %.1f ms each",
         ((t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6) / 75);
}

/* settings_check on its own: a value shown in an error is cut between
 * characters; SETTINGS_CORE_ADDRESS takes only numeric addresses. */
static void check_err(const struct tlsbox_setting_def *d, const char *v, const char *want)
{
    char *err = NULL;
    is_int(settings_check("x.k", d, NULL, v, NULL, &err), want ? -EINVAL : 0, "x.k = \"%.20s\"", v);
    is_str(err, want, "  and its error");
    free(err);
}

static void test_check_text(void)
{
    const struct tlsbox_setting_def name = {
        .key = "k", .type = TLSBOX_SETTING_STRING, .default_value = "", .pattern = "^[a-z]*$"};
    char v[80], want[160];
    memset(v, 'a', 63);
    strcpy(v + 63, "\xc3\xa9"); /* U+00E9 across the 64-byte cut */
    snprintf(want, sizeof(want), "x.k: \"%.63s\"... does not match ^[a-z]*$", v);
    check_err(&name, v, want);

    const struct tlsbox_setting_def addr = {.key = "k",
                                            .type = TLSBOX_SETTING_STRING,
                                            .default_value = "",
                                            .pattern = "^$|^[0-9A-Fa-f:.]+$",
                                            .flags = SETTINGS_CORE_ADDRESS};
    check_err(&addr, "", NULL);
    check_err(&addr, "127.0.0.1", NULL);
    check_err(&addr, "::1", NULL);
    check_err(&addr, "fe80::1:2", NULL);
    check_err(&addr, "1.2.3.4.5", "x.k: \"1.2.3.4.5\" is not an IPv4 or IPv6 address");
    check_err(&addr, "::::", "x.k: \"::::\" is not an IPv4 or IPv6 address");
    check_err(&addr, "...", "x.k: \"...\" is not an IPv4 or IPv6 address");
    check_err(&addr, "host.example", "x.k: \"host.example\" is not an IPv4 or IPv6 address");

    /* .max bounds a STRING's length and each LIST item's (a DNS name: 253). */
    const struct tlsbox_setting_def str = {
        .key = "k", .type = TLSBOX_SETTING_STRING, .default_value = "", .max = 5};
    check_err(&str, "abcde", NULL);
    check_err(&str, "abcdef", "x.k: \"abcdef\" is 6 bytes long, more than the 5 allowed");
    const struct tlsbox_setting_def list = {.key = "k",
                                            .type = TLSBOX_SETTING_LIST,
                                            .default_value = "",
                                            .pattern = "^[a-z.]+$",
                                            .max = 253};
    char names[300];
    memset(names, 'a', 253);
    names[253] = '\0';
    check_err(&list, names, NULL);
    memcpy(names, "ok.test,", 8);
    memset(names + 8, 'a', 254);
    names[262] = '\0';
    snprintf(want, sizeof(want),
             "x.k: item \"%.64s\"... is 254 bytes long, more than the 253 allowed", names + 8);
    check_err(&list, names, want);
}

/* ---- appliers: a live change its owner cannot apply is refused ---------------- */

static const struct tlsbox_setting_def ap_defs[] = {
    {.key = "port", .type = TLSBOX_SETTING_INT, .default_value = "443", .min = 1, .max = 65535},
    {.key = "name", .type = TLSBOX_SETTING_STRING, .default_value = "box"},
    TLSBOX_SETTINGS_END};
static const struct tlsbox_setting_def bp_defs[] = {
    {.key = "level", .type = TLSBOX_SETTING_STRING, .default_value = "low"}, TLSBOX_SETTINGS_END};

/* What each applier was given, "key=value ..." per call, ";" after each call,
 * and what settings_get said of the owner's first key during the call. */
struct applied {
    const char *owner, *refuse_key, *refuse_value;
    const char *later_value; /* this value of refuse_key: TLSBOX_APPLY_AT_RESTART */
    bool say_why;
    char calls[512], seen[128];
};

static int t_apply(void *arg, const struct tlsbox_setting_value *ch, char **err)
{
    struct applied *a = arg;
    size_t len = strlen(a->calls);
    int rc = 0;
    char *k0 = xasprintf("%s.%s", a->owner, ch[0].key);
    char *now = settings_get(k0); /* an applier may read settings */

    snprintf(a->seen + strlen(a->seen), sizeof(a->seen) - strlen(a->seen), "%s;", now);
    for (size_t i = 0; ch[i].key; i++) {
        len += (size_t)snprintf(a->calls + len, sizeof(a->calls) - len, "%s%s=%s", i ? " " : "",
                                ch[i].key, ch[i].value);
        if (strcmp(ch[i].key, a->refuse_key) == 0 && strcmp(ch[i].value, a->refuse_value) == 0) {
            rc = -EADDRINUSE;
            if (a->say_why)
                *err = xasprintf("%s.%s: cannot listen on 127.0.0.1 port %s: %s", a->owner,
                                 ch[i].key, ch[i].value, strerror(EADDRINUSE));
        }
        if (a->later_value && strcmp(ch[i].key, a->refuse_key) == 0 &&
            strcmp(ch[i].value, a->later_value) == 0) {
            rc = TLSBOX_APPLY_AT_RESTART;
            *err = xasprintf("%s.%s: port %s opens at the next start", a->owner, ch[i].key,
                             ch[i].value);
        }
    }
    snprintf(a->calls + len, sizeof(a->calls) - len, ";");
    free(now);
    free(k0);
    return rc;
}

/* Set ap.port to @p port with bp.level "bad", which bp refuses: the change
 * is taken back, and ap's calls must be @p want. */
static void taken_back(struct applied *a, struct applied *b, const char *port, const char *want,
                       const char *what)
{
    char *err = NULL;
    a->calls[0] = b->calls[0] = '\0';
    json_t *p = json_pack("{s:s, s:s}", "ap.port", port, "bp.level", "bad");
    is_int(settings_set_many(p, NULL, "alice", &err), -EADDRINUSE,
           "ap.port with a refused bp.level: refused");
    json_decref(p);
    is_str(a->calls, want, "%s", what);
    free(err);
}

static void test_applier(void)
{
    struct applied a = {.owner = "ap",
                        .refuse_key = "port",
                        .refuse_value = "9999",
                        .later_value = "80",
                        .say_why = true};
    struct applied b = {.owner = "bp", .refuse_key = "level", .refuse_value = "bad"};
    char *err = NULL, *v;
    json_t *p;

    is_int(settings_register("ap", ap_defs), 0, "register ap");
    is_int(settings_register("bp", bp_defs), 0, "register bp");
    is_int(settings_set_applier("ap", t_apply, &a), 0, "ap has an applier");
    is_int(settings_set_applier("bp", t_apply, &b), 0, "bp has an applier");
    is_int(settings_set_applier("nosuch", t_apply, &a), -ENOENT, "an unknown owner: -ENOENT");

    ev_reset();
    is_int(settings_set("ap.port", "08443", "alice", &err), 0, "ap.port 8443: applied and stored");
    is_str(a.calls, "port=8443;", "the applier got the canonical value, once");
    is_str(a.seen, "443;", "settings_get gave the old value during the call");
    is_int(settings_get_int("ap.port", 0), 8443, "the cache has it");
    is_str(ev_log, "settings.changed {\"key\":\"ap.port\"}\n", "and it was announced");

    long long audits = db_int("SELECT count(*) FROM audit");
    a.calls[0] = a.seen[0] = '\0';
    ev_reset();
    is_int(settings_set("ap.port", "9999", "alice", &err), -EADDRINUSE,
           "a port the owner cannot listen on: refused with the applier's errno");
    is_str(err, "ap.port: cannot listen on 127.0.0.1 port 9999: Address already in use",
           "and its message");
    is_str(a.calls, "port=9999;", "the applier was asked once (nothing to take back)");
    is_int(settings_get_int("ap.port", 0), 8443, "the cache keeps the old value");
    v = db_value("ap.port");
    is_str(v, "8443", "the store keeps the old value");
    free(v);
    is_int(db_int("SELECT count(*) FROM audit"), audits, "no audit row");
    is_int(ev_count, 0, "no event");

    /* bp applies first, ap refuses: bp gets its old value back. */
    a.calls[0] = b.calls[0] = '\0';
    p = json_pack("{s:s, s:s, s:s}", "bp.level", "high", "ap.name", "new", "ap.port", "9999");
    is_int(settings_set_many(p, NULL, "alice", &err), -EADDRINUSE,
           "set_many with one change refused by its owner: refused");
    json_decref(p);
    is_str(b.calls, "level=high;level=low;", "the owner that had applied went back to its value");
    is_str(a.calls, "name=new port=9999;", "the refusing owner got all its changes in one call");
    v = db_value("bp.level");
    ok(v == NULL, "bp.level not stored");
    free(v);
    is_int(settings_get_int("ap.port", 0), 8443, "ap.port unchanged");
    v = settings_get("bp.level");
    is_str(v, "low", "bp.level unchanged in the cache");
    free(v);

    /* Stored for the next start: rc 1, the applier's note, stored, announced. */
    a.calls[0] = '\0';
    audits = db_int("SELECT count(*) FROM audit");
    ev_reset();
    is_int(settings_set("ap.port", "80", "alice", &err), 1,
           "ap.port 80: stored for the next start");
    is_str(err, "ap.port: port 80 opens at the next start", "the caller gets the applier's note");
    is_str(a.calls, "port=80;", "the applier was asked once");
    is_int(settings_get_int("ap.port", 0), 80, "the cache has it");
    v = db_value("ap.port");
    is_str(v, "80", "the store has it");
    free(v);
    is_int(db_int("SELECT count(*) FROM audit"), audits + 1, "one audit row");
    is_str(ev_log, "settings.changed {\"key\":\"ap.port\"}\n", "and it was announced");

    /* ap serves 8443 with 80 stored for the next start.  A change it applies
     * that is then not stored must hand it back 8443 (what it serves), not
     * the stored 80: first another owner refuses, then the commit fails. */
    taken_back(&a, &b, "9000", "port=9000;port=8443;",
               "ap went back to the port it serves, not the stored 80");
    /* The COMMIT fails after every statement ran. */
    a.calls[0] = '\0';
    fail_commits = 1;
    is_int(settings_set("ap.port", "9001", "alice", &err), -EIO, "ap.port 9001: the commit fails");
    fail_commits = 0;
    is_str(a.calls, "port=9001;port=8443;",
           "ap went back to the port it serves, not the stored 80");
    v = db_value("ap.port");
    is_str(v, "80", "the store keeps 80 for the next start");
    free(v);
    a.calls[0] = '\0';
    is_int(settings_set("ap.port", "9002", "alice", &err), 0, "ap.port 9002: applied and stored");
    is_int(settings_set("ap.port", "9999", "alice", &err), -EADDRINUSE, "then 9999 refused");
    is_int(settings_set("ap.port", "8443", "alice", NULL), 0, "back to 8443, no err pointer");

    /* A refusal without a message still says what was refused. */
    b.calls[0] = '\0';
    is_int(settings_set("bp.level", "bad", "alice", &err), -EADDRINUSE, "bp refuses \"bad\"");
    is_str(err, "bp.level: bp refused the change: Address already in use",
           "a message naming the setting, made by the core");

    /* A reload (SIGHUP) hands the applier what the store holds that differs
     * from what is in effect; the store wins even when it refuses. */
    static const char *const stored[] = {"9000", "9999"};
    for (size_t k = 0; k < 2; k++) {
        char *sql = xasprintf("UPDATE settings SET value = '%s' WHERE key = 'ap.port'", stored[k]);
        char *want = xasprintf("port=%s;", stored[k]);
        a.calls[0] = '\0';
        sqlite3_exec(store_main(), sql, NULL, NULL, NULL);
        is_int(settings_load(), 0, "reload");
        is_str(a.calls, want, "the applier got the stored value that changed (9999: refused)");
        is_int(settings_get_int("ap.port", 0), atoi(stored[k]),
               "the store's value is in the cache");
        free(sql);
        free(want);
    }
    /* ap refused the reload's 9999 and serves 9000: a change it applies
     * that is then taken back must hand it 9000, not the refused 9999. */
    taken_back(&a, &b, "9003", "port=9003;port=9000;",
               "ap went back to the port it serves, not the reload's refused 9999");
    a.calls[0] = '\0';
    is_int(settings_load(), 0, "reload, nothing changed");
    is_str(a.calls, "", "the applier is not called");

    /* A reset hands over the default; no applier: stored as before. */
    a.calls[0] = '\0';
    is_int(settings_reset("ap.port", "alice", &err), 0, "reset ap.port");
    is_str(a.calls, "port=443;", "the applier got the default");
    is_int(settings_set_applier("ap", NULL, NULL), 0, "applier removed");
    a.calls[0] = '\0';
    is_int(settings_set("ap.port", "9999", "alice", &err), 0, "without an applier: stored");
    is_str(a.calls, "", "and the old applier not called");

    settings_unregister("ap");
    settings_unregister("bp");
    free(err);
}

int main(void)
{
    char *err = NULL;
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    char *state = xasprintf("%s/state", tmp);
    if (sqlite3_auto_extension((void (*)(void))install_commit_hook) != SQLITE_OK) {
        printf("Bail out! sqlite3_auto_extension failed\n");
        return 1;
    }
    if (store_init(state, &err) < 0) {
        printf("Bail out! store_init: %s\n", err);
        return 1;
    }
    is_int(settings_register("core", core_settings), 0, "register core settings");
    is_int(settings_register("t", t_defs), 0, "register test settings");
    is_int(settings_load(), 0, "settings_load on an empty store");

    test_core_defaults();
    test_types();
    test_check_text();
    test_write_side_effects();
    test_set_many();
    test_secrets();
    test_describe();
    test_override();
    test_load();
    test_register_checks();
    test_applier();
    test_timing();
    test_concurrent();

    settings_unregister("t");
    settings_unregister("core");
    store_close();
    free(state);
    if (getenv("TLSBOX_KEEP_TMP") == NULL) {
        char *cmd = xasprintf("rm -rf '%s'", tmp);
        if (system(cmd) != 0)
            diag("could not remove %s", tmp);
        free(cmd);
    }
    return done_testing();
}
