/* Unit test of the dhparam plugin against the kit's mock host: the API's
 * refusals change nothing, an import is stored and served, a mode switch
 * goes back to RFC 7919, a generation (2048 bits, a real child process) is
 * recorded and served, the metrics follow; runs left "running" by an earlier
 * process are recorded interrupted at the start, and a run whose end the
 * store did not take is recorded failed at the next check.  Prints TAP. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <jansson.h>
#include <tlsbox/mock_host.h>

#include "core/dh_generate.h"
#include "plugins/dhparam/dhparam.h"
#include "tests/tap.h"

extern const struct tlsbox_plugin_desc tlsbox_plugin_descriptor;

/* One API call: its status, and its body parsed into *j (caller decrefs). */
static int api(const char *method, const char *path, const char *body, json_t **j)
{
    char *reply = NULL;
    int status = tlsbox_mock_api(method, path, body, &reply);
    *j = reply ? json_loads(reply, 0, NULL) : NULL;
    free(reply);
    return status;
}

static const char *str(json_t *j, const char *a, const char *b)
{
    json_t *v = json_object_get(j, a);
    return json_string_value(b ? json_object_get(v, b) : v);
}

/* ffdhe3072 as a PKCS#3 PEM (caller frees). */
static char *ffdhe3072_pem(void)
{
    gnutls_dh_params_t dh;
    gnutls_datum_t out = {NULL, 0};
    gnutls_dh_params_init(&dh);
    gnutls_dh_params_import_raw(dh, &gnutls_ffdhe_3072_group_prime,
                                &gnutls_ffdhe_3072_group_generator);
    gnutls_dh_params_export2_pkcs3(dh, GNUTLS_X509_FMT_PEM, &out);
    char *s = calloc(1, out.size + 1);
    memcpy(s, out.data, out.size);
    gnutls_free(out.data);
    gnutls_dh_params_deinit(dh);
    return s;
}

static void refusals(void)
{
    json_t *j = NULL;
    is_int(api("PUT", "dh/mode", "{\"mode\":\"weekly\"}", &j), 400, "mode weekly: 400");
    json_decref(j);
    is_int(api("POST", "dh/generate", "{\"bits\":1024}", &j), 400, "generate 1024 bits: 400");
    like(str(j, "error", NULL), "bits must be 2048, 3072 or 4096, not 1024", "and says why");
    json_decref(j);
    is_int(api("POST", "dh/generate", "{\"bits\":\"big\"}", &j), 400, "bits not a number: 400");
    json_decref(j);
    /* 2^32 + 2048: a 32-bit long (armhf) wrapped it to 2048 before the check. */
    is_int(api("POST", "dh/generate", "{\"bits\":4294969344}", &j), 400,
           "generate 4294969344 bits: 400");
    like(str(j, "error", NULL), "bits must be 2048, 3072 or 4096, not 4294969344",
         "and names the value as sent");
    json_decref(j);
    is_int(api("POST", "dh/import", "{\"pem\":\"garbage\"}", &j), 400, "import garbage: 400");
    like(str(j, "error", NULL), "dh/import refused: mock host: not PKCS#3", "with the reason");
    json_decref(j);
    is_int(api("POST", "dh/import", "[1]", &j), 400, "import without a pem: 400");
    json_decref(j);
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM dhparam_params"), 0, "nothing stored");
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM dhparam_runs"), 0, "no run started");
    is_int(tlsbox_mock_published("dh.changed"), 0, "nothing published");
}

static void import_then_rfc7919(void)
{
    json_t *j = NULL;
    char *pem = ffdhe3072_pem();
    json_t *body = json_pack("{s:s}", "pem", pem);
    char *text = json_dumps(body, JSON_COMPACT);
    is_int(api("POST", "dh/import", text, &j), 200, "import ffdhe3072: 200");
    is_int(json_integer_value(json_object_get(j, "bits")), 3072, "3072 bits");
    json_decref(j);
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM dhparam_params WHERE source = 'import' "
                                 "AND bits = 3072"),
           1, "stored in dhparam_params");
    is_int(tlsbox_mock_published("dh.changed"), 1, "handed to the core: dh.changed");
    tlsbox_mock_events_run();
    is_int(api("GET", "dh/status", NULL, &j), 200, "status: 200");
    is_str(str(j, "mode", NULL), "import", "mode import");
    is_str(str(j, "served", "source"), "import", "the imported parameters are served");
    ok(json_is_null(json_object_get(j, "note")), "no note");
    json_decref(j);
    is_int(tlsbox_mock_metric("tlsbox_dh_served_bits"), 3072, "metric: 3072 bits served");
    is_int(tlsbox_mock_metric("tlsbox_dh_served_rfc7919"), 0, "metric: not an RFC 7919 group");

    is_int(api("PUT", "dh/mode", "{\"mode\":\"rfc7919\"}", &j), 200, "mode rfc7919: 200");
    json_decref(j);
    tlsbox_mock_events_run(); /* settings.changed: the check job, then dh.changed */
    tlsbox_mock_events_run();
    is_int(api("GET", "dh/status", NULL, &j), 200, "status");
    is_str(str(j, "served", "source"), "rfc7919", "the RFC 7919 group is served again");
    json_decref(j);
    is_int(tlsbox_mock_metric("tlsbox_dh_served_rfc7919"), 1, "metric: an RFC 7919 group");
    json_decref(body);
    free(text);
    free(pem);
}

static void generation(void)
{
    json_t *j = NULL;
    tlsbox_mock_set("dhparam.priority", "normal");
    /* The mock runs a job inside job_submit: the reply comes after it. */
    is_int(api("POST", "dh/generate", "{\"bits\":2048}", &j), 202, "generate 2048: 202");
    json_decref(j);
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM dhparam_runs WHERE state = 'done' AND "
                                 "stage = 'done' AND bits = 2048 AND reason = 'request'"),
           1, "the run is recorded as done");
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM dhparam_params WHERE source = "
                                 "'generated' AND bits = 2048 AND gen_seconds > 0"),
           1, "the parameters are stored with their generation time");
    is_int(tlsbox_mock_metric("tlsbox_dh_generations_total{result=\"ok\"}"), 1,
           "metric: one generation");
    is_int(tlsbox_mock_metric("tlsbox_dh_generation_running"), 0, "metric: none running");
    is_int(api("GET", "dh/status", NULL, &j), 200, "status");
    ok(json_is_null(json_object_get(j, "generation")), "no generation running");
    is_str(str(j, "served", "source"), "rfc7919", "mode rfc7919: the group is still served");
    json_decref(j);
    is_int(api("PUT", "dh/mode", "{\"mode\":\"generated\"}", &j), 200, "mode generated");
    json_decref(j);
    tlsbox_mock_events_run();
    tlsbox_mock_events_run();
    is_int(api("GET", "dh/status", NULL, &j), 200, "status");
    is_str(str(j, "served", "source"), "generated", "the generated parameters are served");
    ok(json_is_integer(json_object_get(j, "next_rotation")), "with a next rotation time");
    json_decref(j);
    is_int(tlsbox_mock_metric("tlsbox_dh_served_bits"), 2048, "metric: 2048 bits served");
}

/* A mode switch that lands while another apply is under way: the apply
 * that reads the mode first must not serve it after the later one. */
static struct dhparam *race_d;
static atomic_bool race_fired, race_b_done;

static void *race_apply_b(void *unused)
{
    (void)unused;
    dhparam_apply(race_d);
    atomic_store(&race_b_done, true);
    return NULL;
}

/* setting_get: the first read of "mode" is answered with the value of that
 * moment, but before the answer arrives the mode becomes rfc7919 and a
 * second apply (the one the switch starts) runs as far as it can. */
static pthread_t race_b;
static char *racing_get(struct tlsbox_plugin *self, const char *key)
{
    char *v = tlsbox_mock_host.setting_get(self, key);
    if (strcmp(key, "mode") != 0 || atomic_exchange(&race_fired, true))
        return v;
    tlsbox_mock_set("dhparam.mode", "rfc7919");
    pthread_create(&race_b, NULL, race_apply_b, NULL);
    /* Bounded: with the fix the second apply waits for this one. */
    for (int i = 0; i < 100 && !atomic_load(&race_b_done); i++)
        usleep(10 * 1000);
    return v;
}

static void mode_switch_race(void *state)
{
    struct dhparam *d = state;
    struct tlsbox_host racing = tlsbox_mock_host;
    racing.setting_get = racing_get;
    const struct tlsbox_host *orig = d->host;
    race_d = d;
    d->host = &racing;
    dhparam_apply(d); /* mode generated, as generation() left it */
    pthread_join(race_b, NULL);
    d->host = orig;
    /* The second apply stands for the check job that the switch's
     * settings.changed starts: its event is not delivered here, so no
     * third apply puts things right afterwards. */
    json_t *j = NULL;
    is_int(api("GET", "dh/status", NULL, &j), 200, "status after two applies at once");
    is_str(str(j, "mode", NULL), "rfc7919", "the mode is rfc7919");
    is_str(str(j, "served", "source"), "rfc7919",
           "and the RFC 7919 group is served, not the parameters of the earlier mode");
    json_decref(j);
    tlsbox_mock_events_run();
}

/* dhparam.bits changed: generated mode makes the new size at once; other
 * modes make nothing.  (The mock runs a job inside job_submit: stopping a
 * generation mid-way is for 67_dh_cancel.) */
static void resize(void)
{
    json_t *j = NULL;
    const char *runs = "SELECT count(*) FROM dhparam_runs";
    int64_t n0 = tlsbox_mock_query_int(runs);
    is_int(tlsbox_mock_set("dhparam.bits", "4096"), 0, "mode rfc7919: bits set to 4096");
    tlsbox_mock_events_run();
    is_int(tlsbox_mock_query_int(runs), n0, "and no generation starts: the mode uses none");
    tlsbox_mock_set("dhparam.bits", "2048");
    tlsbox_mock_set("dhparam.mode", "generated");
    tlsbox_mock_events_run();
    tlsbox_mock_events_run();
    is_int(tlsbox_mock_metric("tlsbox_dh_served_bits"), 2048, "mode generated: 2048 bits served");
    is_int(tlsbox_mock_query_int(runs), n0, "the size served: nothing to generate");
    is_int(tlsbox_mock_set("dhparam.bits", "3072"), 0, "bits set to 3072");
    tlsbox_mock_events_run(); /* settings.changed: the resize job runs the generation */
    tlsbox_mock_events_run(); /* dh.changed */
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM dhparam_runs WHERE state = 'done' AND "
                                 "bits = 3072 AND reason = 'bits'"),
           1, "a 3072-bit generation ran at once, recorded as a size change");
    is_int(api("GET", "dh/status", NULL, &j), 200, "status");
    is_str(str(j, "served", "source"), "generated", "generated parameters are served");
    json_decref(j);
    is_int(tlsbox_mock_metric("tlsbox_dh_served_bits"), 3072, "now of 3072 bits");
    n0 = tlsbox_mock_query_int(runs);
    tlsbox_mock_set("dhparam.bits", "3072");
    tlsbox_mock_events_run();
    is_int(tlsbox_mock_query_int(runs), n0, "bits set again to the size served: no generation");

    /* The size changed while the mode was another: the switch into
     * generated mode makes that size at once, not at the next rotation. */
    tlsbox_mock_set("dhparam.mode", "rfc7919");
    tlsbox_mock_events_run();
    tlsbox_mock_events_run();
    tlsbox_mock_set("dhparam.bits", "2048");
    tlsbox_mock_events_run();
    is_int(tlsbox_mock_query_int(runs), n0, "mode rfc7919, bits 2048: no generation yet");
    tlsbox_mock_set("dhparam.mode", "generated");
    tlsbox_mock_events_run(); /* settings.changed: the check, then the size */
    tlsbox_mock_events_run(); /* dh.changed */
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM dhparam_runs WHERE id > (SELECT max(id) - "
                                 "1 FROM dhparam_runs) AND state = 'done' AND bits = 2048 AND "
                                 "reason = 'bits'"),
           1, "mode generated again: a 2048-bit generation ran at once, for the size change");
    is_int(tlsbox_mock_metric("tlsbox_dh_served_bits"), 2048, "and 2048 bits are served");
}

/* Two runs an earlier tlsboxd left "running" (it ended before it wrote
 * their end), put in the store before the start: both are recorded
 * "interrupted" at the start, and the first check takes up the newest (here
 * of another size than dhparam.bits: cancelled).  Before, the older one
 * stayed "running" for good. */
static void orphans_before_start(void)
{
    sqlite3_exec(tlsbox_mock_db(),
                 "INSERT INTO dhparam_runs (id, bits, reason, state, stage, attempts, "
                 "requested_at, started_at) VALUES (901, 4096, 'schedule', 'running', "
                 "'generating', 1, 1, 1), (902, 4096, 'schedule', 'running', 'generating', 1, "
                 "2, 2)",
                 NULL, NULL, NULL);
}

static void orphans_after_start(void)
{
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM dhparam_runs WHERE id = 901 AND state = "
                                 "'interrupted' AND stage = 'interrupted'"),
           1, "start: an older run left running by an earlier tlsboxd is recorded interrupted");
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM dhparam_runs WHERE id = 902 AND state = "
                                 "'cancelled'"),
           1, "the newest, of another size, is taken up by the first check: cancelled");
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM dhparam_runs WHERE state = 'running'"), 0,
           "none is left running");
    is_int(tlsbox_mock_log_count("2 generation run(s) left running by an earlier tlsboxd "
                                 "recorded as interrupted"),
           1, "the start says so");
    sqlite3_exec(tlsbox_mock_db(), "DELETE FROM dhparam_runs", NULL, NULL, NULL);
}

/* store_open: the call numbered lost_at (from 1) gives no connection, or
 * with lost_readonly a read-only one (the store taking no write). */
static int lost_calls, lost_at;
static bool lost_readonly;
static sqlite3 *losing_open(struct tlsbox_plugin *self)
{
    if (++lost_calls != lost_at)
        return tlsbox_mock_host.store_open(self);
    sqlite3 *db = NULL;
    if (lost_readonly &&
        sqlite3_open_v2(tlsbox_mock_store_path(), &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK)
        return db;
    sqlite3_close(db);
    return NULL;
}

/* A run whose job cannot open the store (or write its end there) is not
 * left "running" while nothing runs: it is recorded failed, with the
 * reason, at the next store open (here the check).  Before, it stayed
 * "running" and the next start took it up again. */
static void store_lost(void *state, bool readonly, const char *why)
{
    struct dhparam *d = state;
    struct tlsbox_host losing = tlsbox_mock_host;
    losing.store_open = losing_open;
    const struct tlsbox_host *orig = d->host;
    const char *failed = "tlsbox_dh_generations_total{result=\"failed\"}";
    int64_t failed0 = tlsbox_mock_metric(failed);
    lost_calls = 0;
    lost_at = 2; /* 1: the run's row begun; 2: the job's own connection */
    lost_readonly = readonly;
    d->host = &losing;
    int64_t id = dhparam_run_start(d, 2048, "request", 0); /* the mock runs the job here */
    d->host = orig;
    ok(id > 0, "%s: a run started", why);
    is_int(tlsbox_mock_metric(failed), failed0 + 1, "%s: metric: one more failed generation", why);
    is_int(tlsbox_mock_metric("tlsbox_dh_generation_running"), 0, "%s: metric: none running", why);
    dhparam_run_check(d, NULL);
    char *sql = NULL;
    if (asprintf(&sql,
                 "SELECT count(*) FROM dhparam_runs WHERE id = %lld AND state = 'failed' AND "
                 "stage = 'failed' AND error = '%s'",
                 (long long)id, why) < 0)
        sql = NULL;
    is_int(sql ? tlsbox_mock_query_int(sql) : -1, 1,
           "%s: at the next check the run is recorded failed, with the reason", why);
    free(sql);
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM dhparam_runs WHERE state = 'running'"), 0,
           "none is left running");
    json_t *j = NULL;
    is_int(api("GET", "dh/status", NULL, &j), 200, "status");
    ok(json_is_null(json_object_get(j, "generation")), "no generation running");
    is_str(str(j, "last_run", "state"), "failed", "the last run: failed");
    is_str(str(j, "last_run", "error"), why, "with the reason");
    json_decref(j);
}

/* Months of rotations, then a failure at every hourly check: a new run
 * keeps the newest 20 finished runs and generated parameters (the served
 * ones and their run always), and every import.  Before, nothing went. */
static void old_runs_pruned(void)
{
    sqlite3 *db = tlsbox_mock_db();
    sqlite3_exec(db,
                 "DELETE FROM dhparam_runs; DELETE FROM dhparam_params; "
                 "INSERT INTO dhparam_params (bits, pem, source, created_at) VALUES "
                 "(2048, 'imported', 'import', 1);"
                 "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40) "
                 "INSERT INTO dhparam_params (bits, pem, source, created_at) SELECT 2048, "
                 "'rotation ' || i, 'generated', i * 86400 FROM n;"
                 "INSERT INTO dhparam_runs (bits, reason, state, stage, attempts, requested_at, "
                 "started_at, finished_at, params_id) SELECT 2048, 'schedule', 'done', 'done', 1, "
                 "created_at, created_at, created_at, id FROM dhparam_params WHERE source = "
                 "'generated' ORDER BY id;"
                 "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) "
                 "INSERT INTO dhparam_runs (bits, reason, state, stage, attempts, requested_at, "
                 "started_at, finished_at, error) SELECT 2048, 'schedule', 'failed', 'failed', 1, "
                 "4000000 + i * 3600, 4000000 + i * 3600, 4000000 + i * 3600, 'test' FROM n",
                 NULL, NULL, NULL);
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM dhparam_runs"), 140,
           "140 finished runs stored");
    int64_t newest =
        tlsbox_mock_query_int("SELECT max(id) FROM dhparam_params WHERE source = 'generated'");
    int attempts = 0;
    int64_t id = dhparam_store_run_begin(db, 2048, "schedule", 0, &attempts);
    ok(id > 0, "one more run begins");
    is_int(dhparam_store_run_end(db, id, "failed", "test"), 0, "and fails");
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM dhparam_runs WHERE state = 'failed'"), 21,
           "the newest 20 failed runs are kept, and the new one");
    is_int(tlsbox_mock_query_int("SELECT min(finished_at) FROM dhparam_runs WHERE error = 'test' "
                                 "AND finished_at < 5000000"),
           4000000 + 81 * 3600, "the oldest are the ones dropped");
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM dhparam_params WHERE source = 'generated'"),
           20, "of 40 generated parameters the newest 20 are kept");
    is_int(tlsbox_mock_query_int("SELECT max(id) FROM dhparam_params WHERE source = 'generated'"),
           newest, "the served ones among them");
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM dhparam_runs WHERE params_id = (SELECT "
                                 "max(id) FROM dhparam_params WHERE source = 'generated')"),
           1, "with the run that made them");
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM dhparam_params WHERE source = 'import'"), 1,
           "an import is kept");
}

int main(int argc, char **argv)
{
    /* The plugin's generator runs /proc/self/exe --generate-dh BITS: here
     * that is this test, which answers as tlsboxd does. */
    if (argc == 3 && strcmp(argv[1], TLSBOX_DH_GENERATE_OPTION) == 0)
        return dh_generate_main(argv[2]);
    const struct tlsbox_plugin_desc *d = &tlsbox_plugin_descriptor;
    void *state = NULL;
    if (tlsbox_mock_setup(d) < 0) {
        printf("Bail out! the mock host could not apply the migrations\n");
        return 1;
    }
    is_int(d->init(tlsbox_mock_self(), &tlsbox_mock_host, &state), 0, "init");
    orphans_before_start();
    is_int(d->start(state), 0, "start");
    tlsbox_mock_advance(1); /* the first check */
    orphans_after_start();
    refusals();
    import_then_rfc7919();
    generation();
    mode_switch_race(state);
    resize();
    store_lost(state, false, "the store could not be opened");
    store_lost(state, true, "cannot store the new parameters");
    old_runs_pruned();
    d->stop(state);
    d->fini(state);
    tlsbox_mock_teardown();
    return done_testing();
}
