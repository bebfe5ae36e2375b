/* A plugin that calls the host the way its header forbids or allows, to
 * check the daemon answers as <tlsbox/host.h> and the kit's mock host say:
 * its .apply_settings calls setting_set (the core must refuse it with
 * -EDEADLK, as the mock does, not wait for itself); its API routes
 * host_rules/cert_install and host_rules/dh_set call those with err NULL
 * (refused input: the message dropped, the daemon not crashed);
 * host_rules/setting_get reads another owner's setting; and its
 * routes show how the core chooses one (tests/unit/pdk/mock_host_test
 * checks the mock the same way).  It logs the results of calls made in
 * its hooks as "host_rules: NAME rc=N ...". */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tlsbox/host.h>
#include <tlsbox/plugin.h>
#include <tlsbox/xalloc.h>

struct rules_state {
    struct tlsbox_plugin *self;
    const struct tlsbox_host *host;
};
static struct rules_state st;

static int rules_init(struct tlsbox_plugin *self, const struct tlsbox_host *host, void **state)
{
    st.self = self;
    st.host = host;
    *state = &st;
    return 0;
}

/* GET host_rules/cert_install: a chain that is no PEM, err NULL. */
static void on_cert_install(void *arg, const struct tlsbox_api_request *req,
                            struct tlsbox_api_reply *reply)
{
    struct rules_state *s = arg;
    struct tlsbox_cert_install in = {.name = "rules", .chain_pem = "no pem", .key_pem = "no pem"};
    (void)req;
    int rc = s->host->cert_install(s->self, &in, NULL);
    reply->body = tlsbox_xasprintf("{\"rc\":%d}", rc);
}

/* GET host_rules/dh_set: parameters that are no PEM, err NULL. */
static void on_dh_set(void *arg, const struct tlsbox_api_request *req,
                      struct tlsbox_api_reply *reply)
{
    struct rules_state *s = arg;
    (void)req;
    int rc = s->host->dh_set(s->self, "no pem", "test", TLSBOX_DH_CHECK_ONLY, NULL);
    reply->body = tlsbox_xasprintf("{\"rc\":%d}", rc);
}

/* GET host_rules/store_dup: the same key inserted twice on a store_open
 * connection; answers what sqlite3_step said the second time (the
 * extended code, as the core opens its connections). */
static void on_store_dup(void *arg, const struct tlsbox_api_request *req,
                         struct tlsbox_api_reply *reply)
{
    struct rules_state *s = arg;
    sqlite3 *db = s->host->store_open(s->self);
    sqlite3_stmt *ins = NULL;
    int first = -1, second = -1;
    (void)req;
    if (db && sqlite3_prepare_v2(db, "INSERT INTO host_rules_items (id) VALUES (1)", -1, &ins,
                                 NULL) == SQLITE_OK) {
        first = sqlite3_step(ins);
        sqlite3_reset(ins);
        second = sqlite3_step(ins);
    }
    sqlite3_finalize(ins);
    if (db)
        s->host->store_close(s->self, db);
    reply->body = tlsbox_xasprintf("{\"first\":%d,\"second\":%d}", first, second);
}

/* GET host_rules/setting_get?key=KEY: setting_get of any owner's KEY
 * (plain names: KEY and the value go into the reply as they are), null
 * for NULL. */
static void on_setting_get(void *arg, const struct tlsbox_api_request *req,
                           struct tlsbox_api_reply *reply)
{
    struct rules_state *s = arg;
    const char *q = req->query;
    char *v = q && strncmp(q, "key=", 4) == 0 ? s->host->setting_get(s->self, q + 4) : NULL;
    reply->body =
        v ? tlsbox_xasprintf("{\"value\":\"%s\"}", v) : tlsbox_xstrdup("{\"value\":null}");
    free(v);
}

/* POST host_rules/created: a status, no body. */
static void on_created(void *arg, const struct tlsbox_api_request *req,
                       struct tlsbox_api_reply *reply)
{
    (void)arg, (void)req;
    reply->status = 201;
}

/* POST host_rules/add_route: a route added from a handler (-EDEADLK). */
static void on_add_route(void *arg, const struct tlsbox_api_request *req,
                         struct tlsbox_api_reply *reply)
{
    struct rules_state *s = arg;
    (void)req;
    int rc = s->host->api_route_add(s->self, "GET", "host_rules_late", on_created, s);
    reply->body = tlsbox_xasprintf("{\"rc\":%d}", rc);
}

/* GET host_rules/ + "*" (registered first: the literal routes still win). */
static void on_prefix(void *arg, const struct tlsbox_api_request *req,
                      struct tlsbox_api_reply *reply)
{
    (void)arg, (void)req;
    reply->body = tlsbox_xstrdup("{\"route\":\"prefix\"}");
}

static int on_http(void *arg, const char *method, const char *path, struct tlsbox_http_reply *reply)
{
    (void)arg, (void)method, (void)path, (void)reply;
    return -ENOENT;
}

static void never(void *arg, struct tlsbox_job *job)
{
    (void)arg, (void)job;
}

static int rules_start(void *state)
{
    struct rules_state *s = state;
    const struct tlsbox_host *h = s->host;
    h->log(s->self, TLSBOX_LOG_INFO, "route_slash rc=%d",
           h->api_route_add(s->self, "GET", "/host_rules/slash", on_prefix, s));
    int rc = h->api_route_add(s->self, "GET", "host_rules/*", on_prefix, s);
    if (rc == 0)
        rc = h->api_route_add(s->self, "GET", "host_rules/cert_install", on_cert_install, s);
    if (rc == 0)
        rc = h->api_route_add(s->self, "GET", "host_rules/dh_set", on_dh_set, s);
    if (rc == 0)
        rc = h->api_route_add(s->self, "GET", "host_rules/setting_get", on_setting_get, s);
    if (rc == 0)
        rc = h->api_route_add(s->self, "POST", "host_rules/created", on_created, s);
    if (rc == 0)
        rc = h->api_route_add(s->self, "GET", "host_rules/store_dup", on_store_dup, s);
    if (rc == 0)
        rc = h->api_route_add(s->self, "POST", "host_rules/add_route", on_add_route, s);
    if (rc == 0)
        rc = h->http_route_add(s->self, "/.well-known/host_rules/", on_http, s);
    if (rc == 0)
        h->log(
            s->self, TLSBOX_LOG_INFO, "timer_far rc=%lld",
            (long long)h->timer_add(s->self, "far", 367ULL * 24 * 3600 * 1000, 0, 0, never, NULL));
    if (rc == 0)
        h->log(s->self, TLSBOX_LOG_INFO, "http_again rc=%d",
               h->http_route_add(s->self, "/.well-known/host_rules/", on_http, s));
    return rc;
}

/* A change of "trigger" makes the hook set "other": forbidden there. */
static int rules_apply(void *state, const struct tlsbox_setting_value *changes, char **err)
{
    struct rules_state *s = state;
    (void)err;
    for (size_t i = 0; changes[i].key; i++) {
        if (strcmp(changes[i].key, "trigger") != 0)
            continue;
        char *why = NULL;
        int rc = s->host->setting_set(s->self, "other", changes[i].value, &why);
        s->host->log(s->self, TLSBOX_LOG_INFO, "apply_set rc=%d err=%s", rc, why ? why : "-");
        free(why);
    }
    return 0;
}

static const struct tlsbox_migration rules_migrations[] = {
    {.name = "0001_items", .sql = "CREATE TABLE host_rules_items (id INTEGER PRIMARY KEY)"},
    TLSBOX_MIGRATIONS_END};

static const struct tlsbox_setting_def rules_settings[] = {
    {.key = "trigger", .type = TLSBOX_SETTING_STRING, .default_value = "a", .help = "set me"},
    {.key = "other", .type = TLSBOX_SETTING_STRING, .default_value = "a", .help = "set by it"},
    TLSBOX_SETTINGS_END};

TLSBOX_PLUGIN(.name = "host_rules", .version = "1",
              .description = "calls the host as its header forbids or allows",
              .settings = rules_settings, .migrations = rules_migrations, .init = rules_init,
              .start = rules_start, .apply_settings = rules_apply);
