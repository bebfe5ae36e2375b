/* The kit's mock host answers the host calls as the daemon does (each
 * checked against tlsboxd too: tests/integration/78_pdk_host_rules.sh), so
 * that a plugin whose unit tests pass meets no other answer in the daemon.
 * Prints TAP. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tlsbox/mock_host.h>
#include <tlsbox/xalloc.h>

#include "tests/tap.h"

static const struct tlsbox_plugin_desc t_desc = {
    .abi_major = TLSBOX_ABI_MAJOR, .abi_minor = TLSBOX_ABI_MINOR, .name = "me", .version = "1"};

/* A "char **err" may be NULL (host.h): the message is dropped. */
static void test_err_null(const struct tlsbox_host *h, struct tlsbox_plugin *me)
{
    is_int(h->dh_set(me, "no pem", "test", TLSBOX_DH_CHECK_ONLY, NULL), -EINVAL,
           "dh_set of junk with err NULL: -EINVAL, no crash");
    struct tlsbox_cert_install in = {.name = "x", .chain_pem = "no pem", .key_pem = "no pem"};
    is_int(h->cert_install(me, &in, NULL), -EINVAL, "cert_install of junk with err NULL: -EINVAL");
}

static void which(void *arg, const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply)
{
    (void)req;
    reply->body = strdup(arg);
}

static void no_body(void *arg, const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply)
{
    (void)req;
    reply->status = *(const int *)arg;
}

static int late_rc = 1;

/* Adds a route from inside a handler. */
static void add_late(void *arg, const struct tlsbox_api_request *req,
                     struct tlsbox_api_reply *reply)
{
    (void)req, (void)reply;
    late_rc = tlsbox_mock_host.api_route_add(arg, "GET", "me/late", which, "late");
}

/* Admin API routes as core/api.c registers and chooses them. */
static void test_api_routes(const struct tlsbox_host *h, struct tlsbox_plugin *me)
{
    static const int created = 201, failed = 500;
    char *body = NULL;
    is_int(h->api_route_add(me, "GET", "/me/slash", which, "slash"), -EINVAL,
           "a pattern starting with '/' is refused, as the core refuses it");
    is_int(h->api_route_add(me, "GET", "me/*", which, "prefix"), 0, "GET me/*");
    is_int(h->api_route_add(me, "GET", "me/a/*", which, "longer"), 0, "GET me/a/*");
    is_int(h->api_route_add(me, "GET", "me/lit", which, "literal"), 0, "GET me/lit, added after");
    is_int(h->api_route_add(me, "POST", "me/empty", no_body, (void *)&created), 0, "POST me/empty");
    is_int(h->api_route_add(me, "POST", "me/fail", no_body, (void *)&failed), 0, "POST me/fail");

    is_int(tlsbox_mock_api("GET", "me/lit", NULL, &body), 200, "GET me/lit");
    is_str(body, "literal", "the literal route wins over the prefix registered first");
    free(body);
    is_int(tlsbox_mock_api("GET", "me/a/b", NULL, &body), 200, "GET me/a/b");
    is_str(body, "longer", "the longest prefix wins");
    free(body);
    is_int(tlsbox_mock_api("GET", "me/other", NULL, &body), 200, "GET me/other");
    is_str(body, "prefix", "the prefix takes the rest");
    free(body);
    is_int(tlsbox_mock_api("GET", "me/", NULL, &body), 404,
           "a prefix route does not take an empty rest");
    is_str(body, "{\"error\":\"no such API path: /api/v1/me/\"}", "the core's message");
    free(body);
    is_int(tlsbox_mock_api("DELETE", "me/lit", NULL, &body), 405,
           "a path served for other methods only: 405");
    is_str(body, "{\"error\":\"method DELETE not allowed on /api/v1/me/lit\"}",
           "the core's message");
    free(body);
    is_int(tlsbox_mock_api("POST", "me/empty", NULL, &body), 201, "a handler that sets no body");
    is_str(body, "{}", "gets \"{}\", as from the core");
    free(body);
    is_int(tlsbox_mock_api("POST", "me/fail", NULL, &body), 500, "an error without a body");
    is_str(body, "{\"error\":\"unknown error\"}", "gets the core's");
    free(body);
    is_int(h->api_route_add(me, "POST", "me/late", add_late, me), 0, "POST me/late");
    is_int(tlsbox_mock_api("POST", "me/late", NULL, NULL), 200, "its handler ran");
    is_int(late_rc, -EDEADLK, "api_route_add from a handler: -EDEADLK, as in the core");
}

static int http_pass(void *arg, const char *method, const char *path,
                     struct tlsbox_http_reply *reply)
{
    (void)arg, (void)method, (void)path;
    reply->status = 418; /* then passes: the next handler must not see it */
    return -ENOENT;
}

static int http_answer(void *arg, const char *method, const char *path,
                       struct tlsbox_http_reply *reply)
{
    (void)method, (void)path;
    *(int *)arg = reply->status;
    reply->status = 200;
    return 0;
}

/* Site HTTP routes as core/http_routes.c keeps them. */
static void test_http_routes(const struct tlsbox_host *h, struct tlsbox_plugin *me)
{
    int seen = -1;
    struct tlsbox_http_reply reply;
    is_int(h->http_route_add(me, "/.well-known/me/", http_pass, NULL), 0, "an HTTP route");
    is_int(h->http_route_add(me, "/.well-known/me/", http_answer, &seen), -EEXIST,
           "a second one for the same prefix: -EEXIST, as the core answers");
    is_int(h->http_route_add(me, "/.well-known/", http_answer, &seen), 0, "a shorter prefix");
    memset(&reply, 0x5a, sizeof reply);
    is_int(tlsbox_mock_http("GET", "/.well-known/me/x", &reply), 0, "dispatched");
    is_int(seen, 0, "the answering handler got a zeroed reply, not the one that passed");
    is_int(h->http_route_dispatch("GET", NULL, &reply), -ENOENT, "no path: -ENOENT");
}

static void tick(void *arg, struct tlsbox_job *job)
{
    (void)job;
    (*(int *)arg)++;
}

/* Timers: the bounds core/timers.c sets (366 days each). */
static void test_timer_bounds(const struct tlsbox_host *h, struct tlsbox_plugin *me)
{
    const uint64_t day = 24ULL * 3600 * 1000;
    int n = 0;
    is_int(h->timer_add(me, "far", 367 * day, 0, 0, tick, &n), -EINVAL,
           "a first firing over 366 days away: -EINVAL, as the core answers");
    is_int(h->timer_add(me, "slow", 0, 367 * day, 0, tick, &n), -EINVAL, "nor such a period");
    is_int(h->timer_add(me, "shaky", 0, day, 367 * day, tick, &n), -EINVAL, "nor such a jitter");
    ok(h->timer_add(me, "year", 366 * day, 366 * day, 366 * day, tick, &n) > 0,
       "366 days each is taken");
}

/* The bundle calls take the NULL bundle_acquire gives before one is built,
 * as core/tls_bundle.c does. */
static void test_no_bundle(const struct tlsbox_host *h)
{
    gnutls_session_t session;
    struct tlsbox_bundle *b = h->bundle_acquire();
    ok(b == NULL, "no bundle loaded: bundle_acquire gives NULL");
    gnutls_init(&session, GNUTLS_SERVER);
    is_int(h->bundle_session_setup(b, session), -EINVAL, "bundle_session_setup(NULL): -EINVAL");
    gnutls_deinit(session);
    ok(h->bundle_hsts(b) == NULL, "bundle_hsts(NULL): NULL");
    is_int((int)h->bundle_generation(b), 0, "bundle_generation(NULL): 0");
    h->bundle_release(b);
}

/* Setup refuses what the daemon's loader refuses (core/plugin_loader.c). */
static void test_loader_names(void)
{
    static const struct tlsbox_setting_def defs[] = {
        {.key = "x", .type = TLSBOX_SETTING_STRING, .default_value = "a"}, TLSBOX_SETTINGS_END};
    struct tlsbox_plugin_desc d = t_desc;
    d.name = "a234567890123456789012345678901234";
    is_int(tlsbox_mock_setup(&d), -EINVAL, "a name of 34 characters: refused, as the daemon does");
    d.name = "Bad";
    is_int(tlsbox_mock_setup(&d), -EINVAL, "a name with a capital (no settings): refused");
    d.name = "core";
    is_int(tlsbox_mock_setup(&d), -EEXIST, "\"core\": refused");
    d.name = "admin";
    d.settings = defs;
    is_int(tlsbox_mock_setup(&d), -EEXIST, "\"admin\" with settings: refused");
    d.abi_minor = TLSBOX_ABI_MINOR + 1;
    d.name = "me";
    is_int(tlsbox_mock_setup(&d), -EPROTO, "a newer minor: refused");
    d.abi_minor = TLSBOX_ABI_MINOR;
    d.name = "a2345678901234567890123456789012";
    is_int(tlsbox_mock_setup(&d), 0, "a name of 32 characters is taken");
    tlsbox_mock_teardown();
}

/* The contents of @p path (caller frees), or NULL. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = f ? calloc(1, 65536) : NULL;
    if (buf && fread(buf, 1, 65535, f) == 0) {
        free(buf);
        buf = NULL;
    }
    if (f)
        fclose(f);
    return buf;
}

/* cert_install names and announces a certificate as core/tls.c does. */
static void test_cert_install(const struct tlsbox_host *h, struct tlsbox_plugin *me)
{
    char dir[] = "/tmp/mock-host-test-XXXXXX", *cmd, *ec_crt, *ec_key, *rsa_crt, *rsa_key, *err;
    if (!mkdtemp(dir)) {
        ok(0, "a temporary directory");
        return;
    }
    cmd = tlsbox_xasprintf(
        "cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 "
        "-subj /CN=cn.example -addext subjectAltName=DNS:san.example,DNS:other.example "
        "-keyout ec.key -out ec.crt && openssl req -x509 -newkey rsa:2048 -nodes -days 30 "
        "-subj /CN=cn.example -addext subjectAltName=IP:192.0.2.9,DNS:rsa.example "
        "-keyout rsa.key -out rsa.crt",
        dir);
    is_int(system(cmd) == 0 ? 0 : -1, 0, "test certificates made (openssl)");
    free(cmd);
#define SLURP(var, file)                                                                           \
    do {                                                                                           \
        char *path = tlsbox_xasprintf("%s/" file, dir);                                            \
        var = slurp(path);                                                                         \
        free(path);                                                                                \
    } while (0)
    SLURP(ec_crt, "ec.crt");
    SLURP(ec_key, "ec.key");
    SLURP(rsa_crt, "rsa.crt");
    SLURP(rsa_key, "rsa.key");
#undef SLURP
    cmd = tlsbox_xasprintf("rm -rf %s", dir);
    if (system(cmd) != 0)
        diag("cannot remove %s", dir);
    free(cmd);
    if (!ec_crt || !ec_key || !rsa_crt || !rsa_key) {
        ok(0, "test certificates read");
        return;
    }

    struct tlsbox_cert_install in = {
        .chain_pem = ec_crt, .key_pem = ec_key, .source = TLSBOX_CERT_IMPORT};
    char *chain = NULL;
    is_int(h->cert_install(me, &in, &err), 0, "no name: installed");
    is_int(h->cert_get(me, "san.example", &chain, NULL), 0,
           "under the leaf's first DNS name, as the core names it");
    free(chain);
    is_str(tlsbox_mock_event_data("cert.changed"),
           "{\"name\":\"san.example\",\"source\":\"import\"}",
           "cert.changed carries the core's data");
    in.chain_pem = rsa_crt;
    in.key_pem = rsa_key;
    in.name = "";
    is_int(h->cert_install(me, &in, &err), 0, "an RSA leaf, name \"\": installed");
    is_int(h->cert_get(me, "rsa.example-rsa", &chain, NULL), 0,
           "under its first DNS name (not the address before it) with \"-rsa\"");
    free(chain);
    in.name = "a b";
    err = NULL;
    is_int(h->cert_install(me, &in, &err), -EINVAL, "a name with a blank: refused");
    is_str(err, "certificate name 'a b' is not valid (1-128 of A-Z a-z 0-9 . - _ *)",
           "with the core's message");
    free(err);
    in.name = "internal";
    err = NULL;
    is_int(h->cert_install(me, &in, &err), -EINVAL, "\"internal\" from a plugin's import: refused");
    is_str(err, "certificate name 'internal' is reserved for the internal CA's leaf",
           "with the core's message");
    free(err);
    free(ec_crt);
    free(ec_key);
    free(rsa_crt);
    free(rsa_key);
}

static const struct tlsbox_migration st_migrations[] = {
    {.name = "0001", .sql = "CREATE TABLE st_items (id INTEGER PRIMARY KEY)"},
    TLSBOX_MIGRATIONS_END};
static const struct tlsbox_plugin_desc st_desc = {.abi_major = TLSBOX_ABI_MAJOR,
                                                  .abi_minor = TLSBOX_ABI_MINOR,
                                                  .size = sizeof(struct tlsbox_plugin_desc),
                                                  .name = "st",
                                                  .version = "1",
                                                  .migrations = st_migrations};

/* store_open connections report result codes as the core's do. */
static void test_store_codes(void)
{
    const struct tlsbox_host *h = &tlsbox_mock_host;
    sqlite3_stmt *ins = NULL;
    is_int(tlsbox_mock_setup(&st_desc), 0, "a plugin with a table");
    sqlite3 *db = h->store_open(tlsbox_mock_self());
    ok(db && sqlite3_prepare_v2(db, "INSERT INTO st_items (id) VALUES (1)", -1, &ins, NULL) ==
                 SQLITE_OK,
       "store_open, an insert prepared");
    is_int(sqlite3_step(ins), SQLITE_DONE, "inserted once");
    sqlite3_reset(ins);
    is_int(sqlite3_step(ins), SQLITE_CONSTRAINT_PRIMARYKEY,
           "the same key again: SQLITE_CONSTRAINT_PRIMARYKEY, the extended code tlsboxd gives");
    sqlite3_finalize(ins);
    h->store_close(tlsbox_mock_self(), db);
    tlsbox_mock_teardown();
}

/* "*" for NULL, else the value; frees it. */
static const char *shown(char *v)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "%s", v ? v : "*");
    free(v);
    return buf;
}

/* Another owner's key, as core/host.c answers it (settings_get): the
 * stored value, else the declared default of the core's and admin's keys
 * the daemon always has (the mock used to answer NULL); NULL for a key no
 * table has, or a plugin's that is not loaded.  The same calls against
 * tlsboxd: tests/integration/78_pdk_host_rules.sh. */
static void test_other_settings(const struct tlsbox_host *h, struct tlsbox_plugin *me)
{
    is_str(shown(h->setting_get(me, "core.hostname")), "", "core.hostname: its default \"\"");
    is_str(shown(h->setting_get(me, "core.cert_warn_days")), "14,7,3,1",
           "core.cert_warn_days: its default");
    is_str(shown(h->setting_get(me, "admin.session_idle")), "1800",
           "admin.session_idle: its default");
    is_int(h->setting_get_int(me, "admin.session_idle", -1), 1800,
           "the same through setting_get_int");
    is_int(h->setting_get_bool(me, "admin.enabled", false), 1,
           "admin.enabled through setting_get_bool");
    is_int(tlsbox_mock_set("admin.port", "9555"), 0, "admin.port stored");
    is_str(shown(h->setting_get(me, "admin.port")), "9555", "admin.port: the stored value");
    is_str(shown(h->setting_get(me, "core.nope")), "*", "a key no table has: NULL");
    is_str(shown(h->setting_get(me, "site.https_port")), "*",
           "a plugin's key, that plugin not loaded: NULL");

    /* A neighbour loaded beside it: its defaults, as the daemon answers
     * (78_pdk_host_rules.sh loads the example plugin with host_rules). */
    static const struct tlsbox_setting_def nb_settings[] = {
        {.key = "greeting", .type = TLSBOX_SETTING_STRING, .default_value = "hello", .help = "h"},
        TLSBOX_SETTINGS_END};
    struct tlsbox_plugin_desc nb = {.abi_major = TLSBOX_ABI_MAJOR,
                                    .abi_minor = TLSBOX_ABI_MINOR,
                                    .name = "example",
                                    .version = "1",
                                    .settings = nb_settings};
    is_int(tlsbox_mock_neighbour(&nb), 0, "the example plugin loaded beside it");
    is_str(shown(h->setting_get(me, "example.greeting")), "hello", "example.greeting: its default");
    is_int(tlsbox_mock_set("example.greeting", "hi"), 0, "example.greeting stored");
    is_str(shown(h->setting_get(me, "example.greeting")), "hi", "then the stored value");
    is_str(shown(h->setting_get(me, "example.nope")), "*", "a key its table does not have: NULL");
    is_int(tlsbox_mock_neighbour(&nb), -EEXIST, "the same neighbour twice: -EEXIST");
    nb.name = "me";
    is_int(tlsbox_mock_neighbour(&nb), -EEXIST, "a neighbour with the plugin's own name: -EEXIST");
    nb.name = "core";
    is_int(tlsbox_mock_neighbour(&nb), -EEXIST, "nor the core's");
}

int main(void)
{
    const struct tlsbox_host *h = &tlsbox_mock_host;
    if (tlsbox_mock_setup(&t_desc) < 0)
        return 1;
    struct tlsbox_plugin *me = tlsbox_mock_self();
    test_err_null(h, me);
    test_api_routes(h, me);
    test_http_routes(h, me);
    test_timer_bounds(h, me);
    test_no_bundle(h);
    test_cert_install(h, me);
    test_other_settings(h, me);
    tlsbox_mock_teardown();
    test_loader_names();
    test_store_codes();
    return done_testing();
}
