/* The dhparam plugin: which Diffie-Hellman parameters the TLS bundle serves.
 *
 * Modes: rfc7919 (default; the RFC 7919 group the policy's minimum asks
 * for), generated (fresh parameters made by a job at idle priority, rotated
 * every rotate_days), import (a PEM from `openssl dhparam`).  The plugin
 * keeps what it made or was given in its own tables and hands the core the
 * parameters to serve through host->dh_set, which checks them, stores them
 * and publishes "dh.changed"; the bundle is rebuilt and new handshakes use
 * them while running connections finish on the old bundle. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/dhparam/dhparam.h"

#define CHECK_PERIOD_MS (3600 * 1000ULL)

static const struct tlsbox_setting_def dhparam_settings[] = {
    {.key = "mode",
     .type = TLSBOX_SETTING_ENUM,
     .default_value = "rfc7919",
     .choices = "rfc7919|generated|import",
     .help = "Parameters for TLS 1.2 DHE: the RFC 7919 groups, generated ones, or imported ones"},
    {.key = "bits",
     .type = TLSBOX_SETTING_ENUM,
     .default_value = "3072",
     .choices = "2048|3072|4096",
     .help = "Size of generated parameters in bits; a change generates new ones now (4096 takes "
             "hours on a Raspberry Pi)"},
    {.key = "rotate_days",
     .type = TLSBOX_SETTING_INT,
     .default_value = "30",
     .min = 1,
     .max = 365,
     .help = "Generate new parameters when the current ones are this many days old"},
    {.key = "priority",
     .type = TLSBOX_SETTING_ENUM,
     .default_value = "idle",
     .choices = "idle|normal",
     .help = "CPU priority of generation: idle (SCHED_IDLE, nice 19: spare CPU only) or normal"},
    TLSBOX_SETTINGS_END};

/* The columns of dhparam_runs, the state CHECK allowing @p states.  Step
 * 0001 creates the table with them and 0002 copies it into a new one, so
 * both say them once here; the text 0001 shipped with is unchanged. */
#define DHPARAM_RUNS_COLUMNS(states)                                                               \
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"                                                       \
    " bits INTEGER NOT NULL,"                                                                      \
    " reason TEXT NOT NULL,"                                                                       \
    " state TEXT NOT NULL CHECK (state IN (" states ")),"                                          \
    " stage TEXT NOT NULL,"                                                                        \
    " attempts INTEGER NOT NULL,"                                                                  \
    " requested_at INTEGER NOT NULL,"                                                              \
    " started_at INTEGER NOT NULL,"                                                                \
    " finished_at INTEGER,"                                                                        \
    " params_id INTEGER REFERENCES dhparam_params(id),"                                            \
    " error TEXT)"
#define DHPARAM_RUNS_STATES_0002 "'running', 'interrupted', 'done', 'failed', 'cancelled'"

static const struct tlsbox_migration dhparam_migrations[] = {
    {.name = "0001_params_runs",
     .sql = "CREATE TABLE dhparam_params ("
            " id INTEGER PRIMARY KEY AUTOINCREMENT,"
            " bits INTEGER NOT NULL CHECK (bits >= 2048),"
            " pem TEXT NOT NULL,"
            " source TEXT NOT NULL CHECK (source IN ('generated', 'import')),"
            " created_at INTEGER NOT NULL,"
            " gen_seconds REAL);"
            "CREATE TABLE dhparam_runs (" DHPARAM_RUNS_COLUMNS(
                "'running', 'interrupted', 'done', 'failed'")},
    /* A run stopped by a dhparam.bits change was stored as 'failed' (its
     * error starting "cancelled: "), the only final state 0001 allows that
     * no start resumes: the history could not tell it from a failure.
     * SQLite cannot change a CHECK in place, so the table is copied into
     * one that allows 'cancelled', with those runs (state and stage, which
     * a finished run sets to its state) moved to it; ids are kept.  The
     * prefix is spelt out, not DHPARAM_CANCELLED_PREFIX: it is what 0001's
     * code wrote, whatever that macro says later. */
    {.name = "0002_runs_cancelled",
     .sql = "CREATE TABLE dhparam_runs_new (" DHPARAM_RUNS_COLUMNS(DHPARAM_RUNS_STATES_0002)
     /* clang-format would wrap the rest of the string after the macro call */
     /* clang-format off */
            ";"
            "INSERT INTO dhparam_runs_new (id, bits, reason, state, stage, attempts,"
            " requested_at, started_at, finished_at, params_id, error)"
            " SELECT id, bits, reason,"
            " CASE WHEN was_cancelled THEN 'cancelled' ELSE state END,"
            " CASE WHEN was_cancelled AND stage = 'failed' THEN 'cancelled' ELSE stage END,"
            " attempts, requested_at, started_at, finished_at, params_id, error"
            " FROM (SELECT *, state = 'failed' AND substr(error, 1, 11) = 'cancelled: '"
            " AS was_cancelled FROM dhparam_runs) ORDER BY id;"
            "DROP TABLE dhparam_runs;"
            "ALTER TABLE dhparam_runs_new RENAME TO dhparam_runs"},
    /* clang-format on */
    TLSBOX_MIGRATIONS_END};

bool dhparam_bits_ok(long long bits)
{
    return bits == 2048 || bits == 3072 || bits == 4096;
}

char *dhparam_mode(struct dhparam *d)
{
    char *m = d->host->setting_get(d->self, "mode");
    return m ? m : strdup("rfc7919");
}

void dhparam_metrics_refresh(struct dhparam *d)
{
    char *s = d->host->dh_served(d->self);
    json_t *j = s ? json_loads(s, 0, NULL) : NULL;
    free(s);
    if (!j)
        return;
    const char *src = json_string_value(json_object_get(j, "source"));
    d->host->metric_set(d->m_bits, json_integer_value(json_object_get(j, "bits")));
    d->host->metric_set(d->m_rfc7919, src && strcmp(src, "rfc7919") == 0);
    d->host->metric_set(d->m_dhe, json_is_true(json_object_get(j, "dhe_tls12")) ||
                                      json_is_true(json_object_get(j, "ffdhe_tls13")));
    json_decref(j);
}

void dhparam_apply(struct dhparam *d)
{
    char *mode, *err = NULL;
    struct dhparam_row r = {0};
    int rc = 0;
    pthread_mutex_lock(&d->apply_lock);
    /* The mode is read under the lock: read before it, a switch's apply
     * could run in between and this one would then serve the old mode's
     * parameters last. */
    mode = dhparam_mode(d);
    if (strcmp(mode, "rfc7919") == 0) {
        rc = d->host->dh_set(d->self, NULL, NULL, 0, &err);
    } else {
        sqlite3 *db = d->host->store_open(d->self);
        int have = db ? dhparam_store_newest(db, mode, &r) : -EIO;
        if (db)
            d->host->store_close(d->self, db);
        /* None yet (generated: the first run is on its way): the previous
         * parameters stay until there are new ones. */
        if (have == 0)
            rc = d->host->dh_set(d->self, r.pem, mode, 0, &err);
    }
    pthread_mutex_unlock(&d->apply_lock);
    if (rc < 0)
        d->host->log(d->self, TLSBOX_LOG_ERR, "mode %s: the core refused the parameters: %s", mode,
                     err ? err : "unknown error");
    dhparam_row_clear(&r);
    free(err);
    free(mode);
    dhparam_metrics_refresh(d);
}

/* Remember the current mode and size; tell which of them changed since the
 * last call. */
static void note_settings(struct dhparam *d, bool *mode_changed, bool *bits_changed)
{
    char *mode = dhparam_mode(d);
    long long bits = d->host->setting_get_int(d->self, "bits", 3072);
    pthread_mutex_lock(&d->lock);
    *mode_changed = strcmp(mode, d->seen_mode) != 0;
    *bits_changed = bits != d->seen_bits;
    snprintf(d->seen_mode, sizeof(d->seen_mode), "%s", mode);
    d->seen_bits = bits;
    pthread_mutex_unlock(&d->lock);
    free(mode);
}

static void on_event(void *arg, const char *event, const char *data)
{
    struct dhparam *d = arg;
    if (strcmp(event, "settings.changed") == 0) {
        /* A reload (SIGHUP) may have changed any setting (sqlite3, a
         * restored backup) without naming it: act as on a live change of
         * the mode or size that differs from the last seen.  The mode
         * first: a switch into generated matches the size as well. */
        bool mode_changed, bits_changed;
        bool reload = data && strstr(data, "\"reload\"");
        note_settings(d, &mode_changed, &bits_changed);
        /* A new mode may need a switch or a first generation (and, into
         * generated, parameters of dhparam.bits if the size changed in
         * another mode), a new size new parameters now rather than at the
         * next rotation: SQLite work, so not on the event thread. */
        if (reload && mode_changed)
            d->host->job_submit(d->self, "dhparam.mode", dhparam_run_mode, d, NULL);
        else if ((reload && bits_changed) || (data && strstr(data, "\"dhparam.bits\"")))
            d->host->job_submit(d->self, "dhparam.resize", dhparam_run_resize, d, NULL);
        else if (data && strstr(data, "\"dhparam.mode\""))
            d->host->job_submit(d->self, "dhparam.mode", dhparam_run_mode, d, NULL);
        else if (reload || (data && strstr(data, "\"dhparam.")))
            d->host->job_submit(d->self, "dhparam.check", dhparam_run_check, d, NULL);
        return;
    }
    dhparam_metrics_refresh(d); /* dh.changed, policy.changed: the bundle was rebuilt */
}

static struct tlsbox_metric *gauge(struct dhparam *d, const char *name, const char *help)
{
    return d->host->metric_register(d->self, name, TLSBOX_METRIC_GAUGE, help, NULL, 0);
}

static int dhparam_metrics(struct dhparam *d)
{
    d->m_bits = gauge(d, "tlsbox_dh_served_bits",
                      "Size in bits of the DH parameters served to TLS 1.2 DHE (0: none)");
    d->m_rfc7919 = gauge(d, "tlsbox_dh_served_rfc7919",
                         "1 when the DH parameters served are an RFC 7919 group");
    d->m_dhe = gauge(d, "tlsbox_dh_dhe_enabled", "1 when the TLS policy allows DHE or FFDHE");
    d->m_running = gauge(d, "tlsbox_dh_generation_running", "1 while parameters are generated");
    d->m_seconds = gauge(d, "tlsbox_dh_generation_seconds", "Duration of the last generation");
    d->m_ok = d->host->metric_register(d->self, "tlsbox_dh_generations_total{result=\"ok\"}",
                                       TLSBOX_METRIC_COUNTER, "DH parameter generations", NULL, 0);
    d->m_failed =
        d->host->metric_register(d->self, "tlsbox_dh_generations_total{result=\"failed\"}",
                                 TLSBOX_METRIC_COUNTER, "DH parameter generations", NULL, 0);
    return d->m_bits && d->m_rfc7919 && d->m_dhe && d->m_running && d->m_seconds && d->m_ok &&
                   d->m_failed
               ? 0
               : -EINVAL;
}

static int dhparam_init(struct tlsbox_plugin *self, const struct tlsbox_host *host, void **state)
{
    if (!TLSBOX_HOST_HAS(host, dh_set) || !TLSBOX_HOST_HAS(host, dh_served)) {
        host->log(self, TLSBOX_LOG_ERR, "this tlsboxd has no dh_set/dh_served host calls");
        return -ENOTSUP;
    }
    struct dhparam *d = calloc(1, sizeof(*d));
    if (!d)
        return -ENOMEM;
    d->self = self;
    d->host = host;
    pthread_mutex_init(&d->lock, NULL);
    pthread_mutex_init(&d->apply_lock, NULL);
    *state = d;
    return 0;
}

static int dhparam_start(void *state)
{
    struct dhparam *d = state;
    static const char *const events[] = {"settings.changed", "dh.changed", "policy.changed"};
    int rc;
    bool unused_mode, unused_bits;
    /* Before anything of this start can begin a run: a run still "running"
     * is one an earlier tlsboxd never wrote the end of (killed, or its store
     * would not open or take the write then).  Recorded "interrupted", as a
     * stop mid-way is; the first check resumes the newest such run. */
    sqlite3 *db = d->host->store_open(d->self);
    int orphans = db ? dhparam_store_run_orphans(db) : 0;
    if (db)
        d->host->store_close(d->self, db);
    if (orphans > 0)
        d->host->log(d->self, TLSBOX_LOG_INFO,
                     "%d generation run(s) left running by an earlier tlsboxd recorded as "
                     "interrupted",
                     orphans);
    if ((rc = dhparam_metrics(d)) < 0 || (rc = dhparam_api_register(d)) < 0)
        return rc;
    note_settings(d, &unused_mode, &unused_bits); /* what a reload compares with */
    for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
        if ((d->subs[i] = d->host->event_subscribe(d->self, events[i], on_event, d)) < 0)
            return (int)d->subs[i];
    /* First firing at once: resume an interrupted run, serve what the mode
     * says; then hourly for the rotation. */
    d->timer =
        d->host->timer_add(d->self, "dhparam.check", 0, CHECK_PERIOD_MS, 0, dhparam_run_check, d);
    return d->timer < 0 ? (int)d->timer : 0;
}

static void dhparam_stop(void *state)
{
    dhparam_run_cancel(state);
}

static void dhparam_fini(void *state)
{
    struct dhparam *d = state;
    pthread_mutex_destroy(&d->lock);
    pthread_mutex_destroy(&d->apply_lock);
    free(d->unwritten_error);
    free(d);
}

TLSBOX_PLUGIN(.name = "dhparam", .version = "1.0",
              .description = "Diffie-Hellman parameters: RFC 7919 groups, generated or imported",
              .settings = dhparam_settings, .init = dhparam_init, .start = dhparam_start,
              .stop = dhparam_stop, .fini = dhparam_fini, .migrations = dhparam_migrations);
