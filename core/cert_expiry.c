/* Certificate expiry: gauges and cert.expiring events (see cert_expiry.h). */
#include "core/cert_expiry.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <sqlite3.h>

#include "core/events.h"
#include "core/jobs.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/plugin_loader.h"
#include "core/settings.h"
#include "core/store.h"
#include "core/xalloc.h"

#define CHECK_MS (3600 * 1000) /* hourly: a threshold is a whole day */
#define DAY 86400

int cert_expiry_threshold(int64_t not_after, int64_t now, const char *list, int64_t below)
{
    if (not_after <= now)
        return 0;
    int64_t days_left = (not_after - now) / DAY;
    int best = -1;
    for (const char *p = list ? list : ""; *p;) {
        char *end;
        long t = strtol(p, &end, 10);
        if (end == p)
            break;
        if (t > 0 && days_left < t && (below <= 0 || t < below) && (best < 0 || t < best))
            best = (int)t;
        p = *end == ',' ? end + 1 : end;
    }
    return best;
}

/* One gauge per certificate seen at the last check. */
struct series {
    char *name;
    struct tlsbox_metric *m;
    bool seen;
};

static pthread_mutex_t check_lock = PTHREAD_MUTEX_INITIALIZER; /* one check at a time */
static struct series *series;                                  /* check_lock */
static size_t nseries;
static bool running; /* check_lock */
static int64_t timer_id, sub_cert, sub_settings;

/* @p name's gauge, made when new.  check_lock held. */
static struct series *series_for(const char *name)
{
    for (size_t i = 0; i < nseries; i++)
        if (strcmp(series[i].name, name) == 0)
            return &series[i];
    /* Label values escape \ and " (the registry checks the rest). */
    char esc[512];
    size_t n = 0;
    for (const char *p = name; *p && n + 3 < sizeof esc; p++) {
        if (*p == '\\' || *p == '"')
            esc[n++] = '\\';
        esc[n++] = *p == '\n' ? ' ' : *p;
    }
    esc[n] = '\0';
    char *full = xasprintf("tlsbox_cert_not_after_timestamp_seconds{name=\"%s\"}", esc);
    struct tlsbox_metric *m =
        metrics_register(NULL, full, TLSBOX_METRIC_GAUGE,
                         "When each active certificate expires (unix time): alert on it "
                         "minus time()",
                         NULL, 0);
    free(full);
    series = xrealloc(series, (nseries + 1) * sizeof *series);
    series[nseries] = (struct series){xstrdup(name), m, false};
    return &series[nseries++];
}

/* Announce @p name's threshold @p t and remember it; 0 or -1. */
static int announce(sqlite3 *db, const char *name, int64_t not_after, int64_t now, int t,
                    const char *source)
{
    sqlite3_stmt *st = NULL;
    int rc = -1;
    /* Remember first: a warning that could not be remembered would be said
     * again at each check; unsaid, it waits for the next check instead. */
    if (sqlite3_prepare_v2(db,
                           "UPDATE certificates SET expiry_warned_days = ?1, "
                           "expiry_warned_not_after = ?2 WHERE name = ?3",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, t);
        sqlite3_bind_int64(st, 2, not_after);
        sqlite3_bind_text(st, 3, name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_DONE)
            rc = 0;
    }
    sqlite3_finalize(st);
    if (rc < 0) {
        log_err("certificate %s: cannot record its expiry warning: %s", name, sqlite3_errmsg(db));
        return rc;
    }
    json_int_t days = not_after > now ? (json_int_t)((not_after - now) / DAY) : 0;
    json_t *j =
        json_pack("{s:s,s:I,s:I,s:i,s:s,s:b}", "name", name, "not_after", (json_int_t)not_after,
                  "days_left", days, "threshold", t, "source", source, "expired", t == 0);
    char *data = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    if (t == 0)
        log_err("certificate %s has EXPIRED (%s)", name, source);
    else
        log_warn("certificate %s expires in %lld days (under %d; %s)", name, (long long)days, t,
                 source);
    events_publish("cert.expiring", data);
    free(data);
    return 0;
}

/* One active certificate as read. */
struct row {
    char *name, *source;
    int64_t not_before, not_after;
    bool warned; /* for this not_after */
    int was;     /* the threshold then */
};

/* The active certificates (*n of them; caller frees), read in one go: the
 * read ends before anything is written, so a write never waits on it. */
static struct row *read_rows(sqlite3 *db, size_t *n)
{
    sqlite3_stmt *st = NULL;
    struct row *rows = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT name, not_after, source, expiry_warned_days, "
                           "expiry_warned_not_after, not_before FROM certificates "
                           "WHERE status = 'active' ORDER BY name",
                           -1, &st, NULL) != SQLITE_OK) {
        log_err("certificate expiry: cannot read the store: %s", sqlite3_errmsg(db));
        return NULL;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        rows = xrealloc(rows, (*n + 1) * sizeof *rows);
        struct row *r = &rows[(*n)++];
        r->name = xstrdup((const char *)sqlite3_column_text(st, 0));
        r->not_after = sqlite3_column_int64(st, 1);
        r->source = xstrdup((const char *)sqlite3_column_text(st, 2));
        r->warned = sqlite3_column_type(st, 3) != SQLITE_NULL &&
                    sqlite3_column_int64(st, 4) == r->not_after;
        r->was = sqlite3_column_int(st, 3);
        r->not_before = sqlite3_column_int64(st, 5);
    }
    sqlite3_finalize(st);
    return rows;
}

static void check(void *arg, struct tlsbox_job *job)
{
    (void)arg, (void)job;
    pthread_mutex_lock(&check_lock);
    if (!running) { /* a job queued before stop */
        pthread_mutex_unlock(&check_lock);
        return;
    }
    sqlite3 *db = store_connect();
    char *list = settings_get("core.cert_warn_days");
    int64_t now = (int64_t)time(NULL);
    size_t n = 0;
    struct row *rows = db ? read_rows(db, &n) : NULL;
    for (size_t i = 0; i < nseries; i++)
        series[i].seen = false;
    for (size_t i = 0; i < n; i++) {
        struct row *r = &rows[i];
        struct series *s = series_for(r->name);
        s->seen = true;
        metrics_set(s->m, r->not_after);
        /* The internal leaf is renewed by the core itself (tls.c).  Others
         * are renewed with a third of their lifetime left (the acme plugin,
         * certbot): a threshold above that is no news, and would announce a
         * short-lived certificate at each issuance. */
        int64_t third = (r->not_after - r->not_before) / 3 / DAY;
        int t = strcmp(r->source, "internal") == 0
                    ? -1
                    : cert_expiry_threshold(r->not_after, now, list, third > 0 ? third : 1);
        if (t >= 0 && (!r->warned || t < r->was))
            announce(db, r->name, r->not_after, now, t, r->source);
        free(r->name);
        free(r->source);
    }
    free(rows);
    store_disconnect(db);
    /* A certificate gone (deleted, disabled): its gauge goes too.  Not when
     * the store could not be read: nothing is known to be gone. */
    for (size_t i = 0; db && i < nseries;) {
        if (series[i].seen) {
            i++;
            continue;
        }
        metrics_retire(series[i].m);
        free(series[i].name);
        series[i] = series[--nseries];
    }
    free(list);
    pthread_mutex_unlock(&check_lock);
}

static void on_event(void *arg, const char *event, const char *data)
{
    (void)arg;
    if (strcmp(event, "settings.changed") == 0 &&
        !(data && strstr(data, "\"core.cert_warn_days\"")))
        return;
    jobs_submit(core_self(), "cert.expiry", check, NULL, NULL);
}

void cert_expiry_start(void)
{
    pthread_mutex_lock(&check_lock);
    running = true;
    pthread_mutex_unlock(&check_lock);
    sub_cert = events_subscribe(core_self(), "cert.changed", on_event, NULL);
    sub_settings = events_subscribe(core_self(), "settings.changed", on_event, NULL);
    timer_id = timers_add(core_self(), "cert.expiry", CHECK_MS, CHECK_MS, 60 * 1000, check, NULL);
    jobs_submit(core_self(), "cert.expiry", check, NULL, NULL);
}

void cert_expiry_stop(void)
{
    if (sub_cert > 0)
        events_unsubscribe(sub_cert);
    if (sub_settings > 0)
        events_unsubscribe(sub_settings);
    if (timer_id > 0)
        timers_cancel(timer_id);
    sub_cert = sub_settings = timer_id = 0;
    pthread_mutex_lock(&check_lock);
    running = false;
    for (size_t i = 0; i < nseries; i++) {
        metrics_retire(series[i].m);
        free(series[i].name);
    }
    free(series);
    series = NULL;
    nseries = 0;
    pthread_mutex_unlock(&check_lock);
}
