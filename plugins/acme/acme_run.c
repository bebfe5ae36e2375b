/*
 * The renewal job: decide per certificate whether it is due (missing, names
 * changed, revoked, forced, an unfinished order, ARI window or 1/3 of the
 * lifetime left), respect the failure backoff and Retry-After, run the flow,
 * install the result, record every attempt, and schedule the next wake-up.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/acme/acme_plugin.h"

/* How many attempts the status shows. */
#define RUN_STATUS_EVENTS 10

struct run_ctx {
    struct acme *a;
    struct tlsbox_job *job;
};

/* One certificate to keep valid. */
struct run_cert {
    char *name;
    const char *key_type;
    /* what the check found, for the status */
    bool have;
    time_t not_after, renew_at, ari_start, ari_end, next_attempt;
    unsigned failures;
    const char *reason; /* why it is due, or NULL */
    char *ari_id;
};

static bool run_sleep(void *arg, uint64_t ms)
{
    struct run_ctx *r = arg;
    if (atomic_load(&r->a->stopping))
        return true;
    if (ms == 0)
        return r->a->host->job_cancelled(r->job);
    return r->a->host->job_sleep(r->job, ms);
}

void acme_status_set(struct acme *a, char *json)
{
    pthread_mutex_lock(&a->status_lock);
    free(a->status_json);
    a->status_json = json;
    pthread_mutex_unlock(&a->status_lock);
}

void acme_run_submit(struct acme *a, bool force, bool retry_now)
{
    if (force)
        atomic_store(&a->force, true);
    if (retry_now)
        atomic_store(&a->retry_now, true);
    if (atomic_load(&a->stopping))
        return;
    int64_t id = a->host->job_submit(a->self, "acme-check", acme_run_check, a, NULL);
    if (id < 0)
        a->host->log(a->self, TLSBOX_LOG_WARN, "could not queue a check: %s", strerror((int)-id));
}

/* Schedule a one-shot check at @p when (replacing an earlier one). */
static void run_wake_at(struct acme *a, time_t when)
{
    time_t now = time(NULL);
    /* Whole seconds, rounded up: never wake just before the time and find nothing due. */
    uint64_t ms = when > now ? (uint64_t)(when - now + 1) * 1000 : 1000;
    /* The periodic check covers anything further out. */
    if (ms > (uint64_t)a->check_minutes * 60000)
        return;
    pthread_mutex_lock(&a->wake_lock);
    if (a->wake_timer > 0)
        a->host->timer_cancel(a->self, a->wake_timer);
    a->wake_timer = atomic_load(&a->stopping)
                        ? 0
                        : a->host->timer_add(a->self, "acme-retry", ms, 0, 0, acme_run_check, a);
    pthread_mutex_unlock(&a->wake_lock);
}

/* True when the stored SANs are exactly @p conf's domains. */
static bool run_sans_match(const char *sans_json, const struct acme_conf *conf)
{
    json_t *s = json_loads(sans_json ? sans_json : "[]", 0, NULL);
    bool match = json_is_array(s) && json_array_size(s) == conf->ndomains;
    for (size_t i = 0; match && i < conf->ndomains; i++) {
        bool found = false;
        size_t k;
        json_t *v;
        json_array_foreach(s, k, v)
        {
            const char *n = json_string_value(v);
            if (!n)
                n = json_string_value(json_object_get(v, "value"));
            if (n && strcasecmp(n, conf->domains[i]) == 0)
                found = true;
        }
        match = found;
    }
    json_decref(s);
    return match;
}

/*
 * ARI: the cached window for the certificate, refreshed from the CA when the
 * cache says so (kv "ari:<name>" = {"id","start","end","next"}).
 */
static void run_ari(struct acme_client *c, sqlite3 *db, struct run_cert *rc, time_t now)
{
    char key[300], *val = NULL;
    snprintf(key, sizeof(key), "ari:%s", rc->name);
    json_t *j = NULL;
    if (acme_store_kv_get(db, key, &val) == 0)
        j = json_loads(val, 0, NULL);
    free(val);
    const char *id = json_string_value(json_object_get(j, "id"));
    time_t next = (time_t)json_integer_value(json_object_get(j, "next"));
    if (j && id && strcmp(id, rc->ari_id) == 0 && next > now) {
        rc->ari_start = (time_t)json_integer_value(json_object_get(j, "start"));
        rc->ari_end = (time_t)json_integer_value(json_object_get(j, "end"));
        json_decref(j);
        return;
    }
    json_decref(j);
    struct acme_err e = {0};
    time_t ws = 0, we = 0, retry = 0;
    int ret = acme_flow_renewal_info(c, rc->ari_id, &ws, &we, &retry, &e);
    if (ret == -ENOTSUP || ret == 0 || ret == -EPROTO) {
        /* No ARI at this CA, or a bad answer: ask again in a day / when told. */
        if (ret != 0) {
            ws = we = 0;
            retry = e.retry_after ? e.retry_after : now + 86400;
        }
        j = json_pack("{s:s,s:I,s:I,s:I}", "id", rc->ari_id, "start", (json_int_t)ws, "end",
                      (json_int_t)we, "next", (json_int_t)retry);
        char *text = json_dumps(j, JSON_COMPACT);
        acme_store_kv_put(db, key, text);
        free(text);
        json_decref(j);
        rc->ari_start = ws;
        rc->ari_end = we;
    }
    acme_err_clear(&e);
}

/* Decide whether @p rc is due now; fills the status fields. */
static bool run_due(struct acme *a, struct acme_client *c, sqlite3 *db,
                    const struct acme_conf *conf, struct run_cert *rc, bool force, time_t now)
{
    struct acme_cert_row row = {0};
    struct acme_order_row o = {0};
    bool due = false;
    char key[300], *revoked = NULL;
    (void)a;

    if (acme_cert_get(a, rc->name, &row) < 0) {
        rc->reason = acme_store_order_open(db, rc->name, &o) == 0 ? "resuming an unfinished order"
                                                                  : "no certificate yet";
        due = true;
        goto out;
    }
    rc->have = true;
    rc->not_after = row.not_after;
    free(rc->ari_id);
    rc->ari_id = row.ari_id ? tlsbox_xstrdup(row.ari_id) : NULL;
    if (!rc->ari_id && row.chain_pem)
        acme_ari_cert_id_pem(row.chain_pem, &rc->ari_id);
    snprintf(key, sizeof(key), "revoked:%s", rc->name);
    if (strcmp(row.status ? row.status : "", "revoked") == 0 ||
        (acme_store_kv_get(db, key, &revoked) == 0 && row.serial &&
         strcmp(revoked, row.serial) == 0)) {
        rc->reason = "certificate revoked";
        due = true;
    } else if (!run_sans_match(row.sans, conf)) {
        rc->reason = "acme.domains changed";
        due = true;
    } else if (force) {
        rc->reason = "renewal forced";
        due = true;
    } else if (acme_store_order_open(db, rc->name, &o) == 0) {
        rc->reason = "resuming an unfinished order";
        due = true;
    }
    if (rc->ari_id && acme_client_dir_url(c, "renewalInfo"))
        run_ari(c, db, rc, now);
    rc->renew_at = acme_renew_time(row.not_before, row.not_after, rc->ari_start, rc->ari_end,
                                   rc->ari_id ? rc->ari_id : rc->name, now);
    if (!due && now >= rc->renew_at) {
        rc->reason = rc->ari_end > rc->ari_start ? "inside the CA's renewal window (ARI)"
                                                 : "one third of the lifetime left";
        due = true;
    }
out:
    free(revoked);
    acme_order_row_free(&o);
    acme_cert_row_free(&row);
    return due;
}

/*
 * The CA's Retry-After, kept apart from the local backoff in kv
 * "ca_retry_after:<name>" = {"until","directory","held"}: a person's retry, a
 * forced renewal or a settings change skips the backoff but never the CA's
 * wait, and no later event (a failed revoke records next_attempt 0) can erase
 * it.  "held" keeps what a person asked for while the wait ran (HELD_*), for
 * the first check after it.  until 0 forgets it (after a success).
 */
enum { HELD_RETRY = 1, HELD_FORCE = 2 };

static void run_ca_wait_put(sqlite3 *db, const char *name, const char *directory, time_t until,
                            unsigned held)
{
    char key[300];
    snprintf(key, sizeof(key), "ca_retry_after:%s", name);
    if (!until) {
        acme_store_kv_put(db, key, NULL);
        return;
    }
    json_t *j = json_pack("{s:I,s:s,s:i}", "until", (json_int_t)until, "directory", directory,
                          "held", (int)held);
    char *text = json_dumps(j, JSON_COMPACT);
    acme_store_kv_put(db, key, text);
    free(text);
    json_decref(j);
}

/*
 * When the CA at @p directory allows the next order for @p name; 0: no wait
 * ahead.  With @p held: what a person asked for during the wait; once the
 * wait is over that is handed out once (the row is forgotten).
 */
static time_t run_ca_wait(sqlite3 *db, const char *name, const char *directory, time_t now,
                          unsigned *held)
{
    char key[300], *val = NULL;
    snprintf(key, sizeof(key), "ca_retry_after:%s", name);
    if (held)
        *held = 0;
    if (acme_store_kv_get(db, key, &val) < 0)
        return 0;
    json_t *j = json_loads(val, 0, NULL);
    free(val);
    time_t until = (time_t)json_integer_value(json_object_get(j, "until"));
    unsigned h = (unsigned)json_integer_value(json_object_get(j, "held"));
    /* Another CA's wait is not this one's (kept for a switch back). */
    const char *dir = json_string_value(json_object_get(j, "directory"));
    if (!dir || strcmp(dir, directory) != 0) {
        until = 0;
        h = 0;
    } else if (until <= now) {
        until = 0;
        if (held && h)
            run_ca_wait_put(db, name, NULL, 0, 0);
    }
    json_decref(j);
    if (held)
        *held = h;
    return until;
}

static void run_record_failure(struct acme *a, sqlite3 *db, const char *directory,
                               struct run_cert *rc, struct acme_err *e, time_t now)
{
    unsigned n;
    time_t first, next;
    acme_store_failures(db, rc->name, &n, &first, &next);
    n++;
    if (!first)
        first = now;
    long delay = acme_backoff_delay(n);
    /* Past the reference's 30 days of retries: keep trying, but only daily. */
    if (now - first > ACME_BACKOFF_SPAN && delay < 86400)
        delay = 86400;
    time_t at = now + delay;
    /* Retry-After (rate limits, overload) wins when it asks for longer. */
    if (e->retry_after > at)
        at = e->retry_after;
    if (e->retry_after > now)
        run_ca_wait_put(db, rc->name, directory, e->retry_after, 0);
    rc->failures = n;
    rc->next_attempt = at;
    acme_store_event(db, rc->name, e->step[0] ? e->step : "attempt", false, e->type, e->detail, at);
    a->host->log(a->self, TLSBOX_LOG_WARN, "%s: %s failed (%s): %s; attempt %u, next in %lld s",
                 rc->name, e->step[0] ? e->step : "attempt", e->type ? e->type : "error",
                 e->detail ? e->detail : "?", n, (long long)(at - now));
    if (a->m_err)
        a->host->metric_add(a->m_err, 1);
    /* For whoever wants to be told (the notify plugin's webhook). */
    json_t *ev = json_pack("{s:s,s:s,s:s?,s:s?,s:i,s:I}", "name", rc->name, "step",
                           e->step[0] ? e->step : "attempt", "type", e->type, "detail", e->detail,
                           "attempt", (int)n, "next_attempt", (json_int_t)at);
    char *evs = ev ? json_dumps(ev, JSON_COMPACT) : NULL;
    if (evs)
        a->host->event_publish(a->self, "acme.failed", evs);
    free(evs);
    json_decref(ev);
}

static int run_install(struct acme *a, const struct acme_conf *conf, struct acme_client *c,
                       struct run_cert *rc, struct acme_issued *is, struct acme_err *e)
{
    char *ari = NULL, *err = NULL;
    /* Refused like a certificate that does not verify: the order is
     * abandoned, the failure backs off, the serving certificate stays. */
    if (acme_cert_names_check(is->chain_pem, (const char *const *)conf->domains, conf->ndomains,
                              &err) < 0) {
        acme_err_set(e, "install", "tlsbox:names",
                     "the certificate of order %s was refused: %s; the certificate serving "
                     "stays, and the order is abandoned: the next attempt places a new one",
                     is->order_url ? is->order_url : "?", err ? err : "out of memory");
        free(err);
        return -EINVAL;
    }
    acme_ari_cert_id_pem(is->chain_pem, &ari);
    json_t *meta = json_pack("{s:s,s:s?}", "directory", conf->directory, "account", c->kid);
    char *meta_text = json_dumps(meta, JSON_COMPACT);
    json_decref(meta);
    struct tlsbox_cert_install in = {.name = rc->name,
                                     .chain_pem = is->chain_pem,
                                     .key_pem = is->key_pem,
                                     .source = TLSBOX_CERT_ACME,
                                     .ari_id = ari,
                                     .meta_json = meta_text};
    int ret = a->host->cert_install(a->self, &in, &err);
    if (ret == -EINVAL)
        acme_err_set(e, "install", "tlsbox:install",
                     "the certificate of order %s was refused: %s; the order is abandoned: the "
                     "next attempt places a new one",
                     is->order_url ? is->order_url : "?", err ? err : strerror(-ret));
    else if (ret < 0)
        acme_err_set(e, "install", "tlsbox:install", "%s", err ? err : strerror(-ret));
    free(err);
    free(ari);
    free(meta_text);
    return ret;
}

struct run_note_ctx {
    struct acme *a;
    const char *name;
};

static void run_note(void *arg, const char *msg)
{
    struct run_note_ctx *n = arg;
    n->a->host->log(n->a->self, TLSBOX_LOG_WARN, "%s: %s", n->name, msg);
}

/* One attempt for one certificate.  Returns 0 when it was issued and installed. */
static int run_attempt(struct acme *a, struct acme_client *c, sqlite3 *db,
                       const struct acme_conf *conf, struct run_cert *rc, struct acme_err *e)
{
    struct acme_issued is = {0};
    struct acme_account_req ar = {.email = conf->email,
                                  .agree_tos = conf->agree_tos,
                                  .eab_kid = conf->eab_kid,
                                  .eab_hmac = conf->eab_hmac};
    int ret = 0;
    if (!c->kid && (ret = acme_flow_account(c, db, &ar, e)) < 0)
        return ret;
    struct run_note_ctx note = {a, rc->name};
    struct acme_order_req req = {.cert_name = rc->name,
                                 .domains = (const char *const *)conf->domains,
                                 .ndomains = conf->ndomains,
                                 .key_type = rc->key_type,
                                 .replaces = rc->have ? rc->ari_id : NULL,
                                 .profile = conf->profile,
                                 .preferred_chain = conf->preferred_chain,
                                 .challenge_put = acme_chal_put,
                                 .challenge_del = acme_chal_del,
                                 .challenge_arg = a,
                                 .challenge = conf->challenge,
                                 .challenge_fallback = conf->challenge_fallback,
                                 .answer_types = acme_answer_types(a),
                                 .answer_put = acme_answer_put,
                                 .answer_del = acme_answer_del,
                                 .note = run_note,
                                 .note_arg = &note};
    /* auto, when the last try's challenge of the preferred type failed:
     * the other one (port 80 may be blocked upstream, or 443 forwarded
     * elsewhere); when that fails too, the preferred one again. */
    char key[300], *failed = NULL;
    snprintf(key, sizeof(key), "challenge_failed:%s", rc->name);
    if (conf->challenge_fallback && acme_store_kv_get(db, key, &failed) == 0 &&
        strcmp(failed, conf->challenge) == 0) {
        req.challenge = strcmp(conf->challenge, "http-01") == 0 ? "tls-alpn-01" : "http-01";
        a->host->log(a->self, TLSBOX_LOG_INFO, "%s: answering %s this time (%s failed last time)",
                     rc->name, req.challenge, failed);
    }
    free(failed);
    unsigned bn = c->bad_nonce_retries;
    ret = acme_flow_issue(c, db, &req, &is, e);
    if (a->m_bad_nonce && c->bad_nonce_retries > bn)
        a->host->metric_add(a->m_bad_nonce, (int64_t)(c->bad_nonce_retries - bn));
    if (ret < 0) {
        if (e->challenge[0])
            acme_store_kv_put(db, key, e->challenge);
        /* The CA looked and found nothing: with an alias, most likely the
         * CNAME to it is missing. */
        char *hint = strcmp(e->challenge, "dns-01") == 0 && e->type && e->detail &&
                             strncmp(e->type, "tlsbox:", 7) != 0
                         ? acme_answer_dns_hint(a)
                         : NULL;
        if (hint) {
            char *d = tlsbox_xasprintf("%s %s", e->detail, hint);
            free(e->detail);
            e->detail = d;
            free(hint);
        }
        goto out;
    }
    acme_store_kv_put(db, key, NULL);
    if ((ret = run_install(a, conf, c, rc, &is, e)) < 0) {
        /*
         * Refused for what it is (expired while the box was off, a chain
         * that does not verify): the order is "valid" and would be resumed
         * by every attempt, downloading the same certificate for ever.  So
         * it is done with; that wipes its key, and the next attempt places a
         * new order.  A store failure (not -EINVAL) may pass: kept.
         */
        if (ret == -EINVAL)
            acme_store_order_set_status(db, is.order_id, "abandoned");
        goto out;
    }
    acme_store_order_set_status(db, is.order_id, "done");
    snprintf(key, sizeof(key), "revoked:%s", rc->name);
    acme_store_kv_put(db, key, NULL);
out:
    acme_issued_free(&is);
    return ret;
}

static json_t *run_events_json(sqlite3 *db)
{
    json_t *arr = json_array();
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT at, cert_name, step, ok, problem_type, detail, next_attempt "
                           "FROM acme_events ORDER BY id DESC LIMIT "
                           "10",
                           -1, &st, NULL) != SQLITE_OK)
        return arr;
    while (sqlite3_step(st) == SQLITE_ROW) {
        json_t *ev = json_pack("{s:I,s:s,s:s,s:b}", "at", (json_int_t)sqlite3_column_int64(st, 0),
                               "cert", (const char *)sqlite3_column_text(st, 1), "step",
                               (const char *)sqlite3_column_text(st, 2), "ok",
                               sqlite3_column_int(st, 3) != 0);
        if (sqlite3_column_type(st, 4) != SQLITE_NULL)
            json_object_set_new(ev, "problem_type",
                                json_string((const char *)sqlite3_column_text(st, 4)));
        if (sqlite3_column_type(st, 5) != SQLITE_NULL)
            json_object_set_new(ev, "detail",
                                json_string((const char *)sqlite3_column_text(st, 5)));
        if (sqlite3_column_type(st, 6) != SQLITE_NULL)
            json_object_set_new(ev, "next_attempt", json_integer(sqlite3_column_int64(st, 6)));
        json_array_append_new(arr, ev);
    }
    sqlite3_finalize(st);
    return arr;
}

/* Rebuild the status; returns the soonest renewal time of the installed certificates. */
static time_t run_status(struct acme *a, sqlite3 *db, const struct acme_conf *conf,
                         struct acme_client *c, struct run_cert *certs, size_t n, time_t now,
                         const char *state)
{
    json_t *st = json_object();
    json_object_set_new(st, "state", json_string(state));
    json_object_set_new(st, "directory", json_string(conf->directory));
    json_t *doms = json_array();
    for (size_t i = 0; i < conf->ndomains; i++)
        json_array_append_new(doms, json_string(conf->domains[i]));
    json_object_set_new(st, "domains", doms);
    json_object_set_new(st, "account", c && c->kid ? json_string(c->kid) : json_null());
    /* The challenge the next order answers ("auto" resolved; "or" the
     * other when the CA does not offer it). */
    json_object_set_new(
        st, "challenge",
        conf->challenge_fallback
            ? json_sprintf("%s (auto; else %s%s)", conf->challenge,
                           strcmp(conf->challenge, "http-01") == 0 ? "tls-alpn-01" : "http-01",
                           (acme_answer_types(a) & ACME_CH_DNS) ? ", dns-01" : "")
            : json_string(conf->challenge));
    char *alias = a->host->setting_get(a->self, "dns_alias");
    if (alias && *alias) /* the CNAME target each name's _acme-challenge needs */
        json_object_set_new(st, "dns_record", json_sprintf("_acme-challenge.%s", alias));
    free(alias);
    json_object_set_new(st, "checked_at", json_integer(now));
    json_object_set_new(st, "next_check", json_integer(now + a->check_minutes * 60));
    json_t *arr = json_array();
    time_t soonest = 0;
    for (size_t i = 0; i < n; i++) {
        struct run_cert *rc = &certs[i];
        /* Re-read: an attempt in this run may have replaced it. */
        struct acme_cert_row row = {0};
        json_t *cj = json_pack("{s:s,s:s}", "name", rc->name, "key_type", rc->key_type);
        if (acme_cert_get(a, rc->name, &row) == 0) {
            json_object_set_new(cj, "not_before", json_integer(row.not_before));
            json_object_set_new(cj, "not_after", json_integer(row.not_after));
            json_object_set_new(cj, "days_left",
                                json_real((double)(row.not_after - now) / 86400.0));
            json_object_set_new(cj, "serial", json_string(row.serial ? row.serial : ""));
            time_t renew = acme_renew_time(row.not_before, row.not_after, rc->ari_start,
                                           rc->ari_end, row.ari_id ? row.ari_id : rc->name, now);
            json_object_set_new(cj, "renew_at", json_integer(renew));
            if (!soonest || renew < soonest)
                soonest = renew;
        } else {
            json_object_set_new(cj, "not_after", json_null());
        }
        acme_cert_row_free(&row);
        if (rc->ari_end > rc->ari_start)
            json_object_set_new(cj, "ari_window",
                                json_pack("{s:I,s:I}", "start", (json_int_t)rc->ari_start, "end",
                                          (json_int_t)rc->ari_end));
        else
            json_object_set_new(cj, "ari_window", json_null());
        unsigned f;
        time_t first, next;
        acme_store_failures(db, rc->name, &f, &first, &next);
        time_t ca = run_ca_wait(db, rc->name, conf->directory, now, NULL);
        if (!f)
            next = 0;
        if (ca > next)
            next = ca;
        json_object_set_new(cj, "failures", json_integer(f));
        json_object_set_new(cj, "next_attempt", next ? json_integer(next) : json_null());
        /* Set: the CA asked (Retry-After) for no order before then; nothing here overrides it. */
        json_object_set_new(cj, "ca_retry_after", ca ? json_integer(ca) : json_null());
        json_array_append_new(arr, cj);
    }
    json_object_set_new(st, "certificates", arr);
    json_object_set_new(st, "events", run_events_json(db));
    if (a->m_next && soonest)
        a->host->metric_set(a->m_next, (int64_t)soonest);
    acme_status_set(a, json_dumps(st, JSON_COMPACT));
    json_decref(st);
    return soonest;
}

static void run_once(struct acme *a, struct tlsbox_job *job)
{
    struct acme_conf conf;
    struct acme_client c;
    struct run_ctx ctx = {a, job};
    struct run_cert certs[2] = {{0}};
    size_t n = 0;
    bool force = atomic_exchange(&a->force, false);
    bool retry_now = atomic_exchange(&a->retry_now, false) || force;
    time_t now = time(NULL);
    sqlite3 *db = NULL;

    /* First, even with ACME off now: no record of an earlier run stays in the zone. */
    acme_answer_leftovers(a);
    acme_conf_load(a, &conf);
    memset(&c, 0, sizeof(c));
    if (conf.ndomains == 0) {
        json_t *st =
            json_pack("{s:s,s:s}", "state", "idle", "reason", "no acme.domains set: ACME is off");
        acme_status_set(a, json_dumps(st, JSON_COMPACT));
        json_decref(st);
        goto out;
    }
    if (!(db = a->host->store_open(a->self)))
        goto out;
    acme_client_init(&c, conf.directory, conf.ca_file);
    c.sleep = run_sleep;
    c.sleep_arg = &ctx;

    char *base = acme_cert_name(conf.domains[0]);
    if (strcmp(conf.key_type, "ecdsa+rsa") == 0) {
        certs[n].name = tlsbox_xstrdup(base);
        certs[n++].key_type = "ecdsa-p256";
        certs[n].name = tlsbox_xasprintf("%s-rsa", base);
        certs[n++].key_type = "rsa-2048";
    } else {
        certs[n].name = tlsbox_xstrdup(base);
        certs[n++].key_type = conf.key_type;
    }
    free(base);

    /* ARI needs the directory; fetch it only when there is a certificate to ask about. */
    struct acme_err de = {0};
    for (size_t i = 0; i < n; i++) {
        struct acme_cert_row row = {0};
        if (acme_cert_get(a, certs[i].name, &row) == 0)
            acme_client_directory(&c, &de);
        acme_cert_row_free(&row);
    }
    acme_err_clear(&de);

    for (size_t i = 0; i < n && !run_sleep(&ctx, 0); i++) {
        struct run_cert *rc = &certs[i];
        unsigned held;
        time_t ca = run_ca_wait(db, rc->name, conf.directory, now, &held);
        if (ca) {
            /* A person's retry or forced renewal during the CA's wait is held
             * for the first check after it, not dropped. */
            unsigned want = held | (force ? HELD_FORCE : 0) | (retry_now ? HELD_RETRY : 0);
            if (want != held)
                run_ca_wait_put(db, rc->name, conf.directory, ca, want);
            held = want;
        }
        bool cert_force = force || (held & HELD_FORCE);
        bool cert_retry = retry_now || cert_force || (held & HELD_RETRY);
        if (!run_due(a, &c, db, &conf, rc, cert_force, now))
            continue;
        unsigned f;
        time_t first, next;
        acme_store_failures(db, rc->name, &f, &first, &next);
        rc->failures = f;
        if (ca) {
            /* The CA's Retry-After: not even a person's retry or a forced renewal goes first. */
            rc->next_attempt = f && next > ca && !cert_retry ? next : ca;
            run_wake_at(a, rc->next_attempt);
            if (retry_now) {
                char when[32];
                struct tm tm;
                gmtime_r(&ca, &tm);
                strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
                a->host->log(a->self, TLSBOX_LOG_INFO,
                             "%s: due (%s), but the CA asked to wait until %s (Retry-After): "
                             "held until then",
                             rc->name, rc->reason, when);
            }
            continue;
        }
        if (f && next > now && !cert_retry) {
            /* Backing off: the wake timer (or a later check) comes back at `next`. */
            rc->next_attempt = next;
            run_wake_at(a, next);
            continue;
        }
        a->host->log(a->self, TLSBOX_LOG_INFO, "%s: ordering (%s) from %s", rc->name, rc->reason,
                     conf.directory);
        struct acme_err e = {0};
        int ret = run_attempt(a, &c, db, &conf, rc, &e);
        if (ret == 0) {
            acme_store_event(db, rc->name, "done", true, NULL, rc->reason, 0);
            run_ca_wait_put(db, rc->name, NULL, 0, 0);
            a->host->log(a->self, TLSBOX_LOG_INFO, "%s: certificate issued and installed",
                         rc->name);
            if (a->m_ok)
                a->host->metric_add(a->m_ok, 1);
            rc->failures = 0;
        } else if (ret != -ECANCELED) {
            run_record_failure(a, db, conf.directory, rc, &e, time(NULL));
            run_wake_at(a, rc->next_attempt);
        }
        acme_err_clear(&e);
    }
    time_t soonest = run_status(a, db, &conf, &c, certs, n, time(NULL), "active");
    /* A renewal time within the next period gets its own wake-up (short-lived certificates). */
    bool failing = false;
    for (size_t i = 0; i < n; i++)
        failing |= certs[i].failures > 0;
    if (soonest > time(NULL) && !failing)
        run_wake_at(a, soonest);
out:
    for (size_t i = 0; i < n; i++) {
        free(certs[i].name);
        free(certs[i].ari_id);
    }
    if (c.curl)
        acme_client_free(&c);
    if (db)
        a->host->store_close(a->self, db);
    acme_conf_free(&conf);
}

void acme_run_check(void *arg, struct tlsbox_job *job)
{
    struct acme *a = arg;
    /*
     * The request is flagged before the lock is tried: a run that holds it
     * looks at `again` after it unlocks, so a request that finds the lock
     * taken is never lost (it would wait for the periodic check).
     */
    atomic_store(&a->again, true);
    do {
        if (pthread_mutex_trylock(&a->run_lock) != 0)
            return; /* busy: the running check goes round once more */
        while (atomic_exchange(&a->again, false) && !a->host->job_cancelled(job))
            run_once(a, job);
        pthread_mutex_unlock(&a->run_lock);
    } while (atomic_load(&a->again) && !a->host->job_cancelled(job));
}

/* ---- revocation -------------------------------------------------------------- */

struct run_revoke {
    struct acme *a;
    char *name;
};

static void run_revoke_free(void *arg)
{
    struct run_revoke *rv = arg;
    free(rv->name);
    free(rv);
}

static void run_revoke_job(void *arg, struct tlsbox_job *job)
{
    struct run_revoke *rv = arg;
    struct acme *a = rv->a;
    struct acme_conf conf;
    struct acme_client c = {0};
    struct acme_err e = {0};
    struct acme_cert_row row = {0};
    struct run_ctx ctx = {a, job};
    sqlite3 *db = NULL;
    pthread_mutex_lock(&a->run_lock);
    acme_conf_load(a, &conf);
    if (!(db = a->host->store_open(a->self)))
        goto out;
    if (acme_cert_get(a, rv->name, &row) < 0) {
        acme_err_set(&e, "revoke", "tlsbox:not-found", "no certificate named %s", rv->name);
        goto record;
    }
    acme_client_init(&c, conf.directory, conf.ca_file);
    c.sleep = run_sleep;
    c.sleep_arg = &ctx;
    struct acme_account_req ar = {.email = conf.email,
                                  .agree_tos = conf.agree_tos,
                                  .eab_kid = conf.eab_kid,
                                  .eab_hmac = conf.eab_hmac};
    int rr = -1;
    if (acme_flow_account(&c, db, &ar, &e) == 0 &&
        (rr = acme_flow_revoke(&c, row.chain_pem, 0, &e)) >= 0) {
        char key[300];
        snprintf(key, sizeof(key), "revoked:%s", rv->name);
        acme_store_kv_put(db, key, row.serial);
        /* A deliberate step that worked: the replacement is ordered without backoff. */
        acme_store_event(db, rv->name, "revoke", true, NULL,
                         rr ? "revoked on request (the CA had revoked it already: an earlier "
                              "revoke's answer was lost); a replacement is being ordered"
                            : "revoked on request; a replacement is being ordered",
                         0);
        if (rr)
            a->host->log(a->self, TLSBOX_LOG_INFO,
                         "%s: the CA answered alreadyRevoked: taken as done (an earlier revoke "
                         "reached it, its answer did not reach us)",
                         rv->name);
        a->host->log(a->self, TLSBOX_LOG_INFO, "%s: revoked; ordering a replacement", rv->name);
        goto out;
    }
record:;
    /*
     * The newest event's next_attempt is the order schedule: a failed revoke
     * keeps it (0 would let the check it triggers order at once), and a
     * Retry-After from the CA counts for the next order too.
     */
    unsigned f;
    time_t first, next;
    acme_store_failures(db, rv->name, &f, &first, &next);
    if (e.retry_after > time(NULL))
        run_ca_wait_put(db, rv->name, conf.directory, e.retry_after, 0);
    acme_store_event(db, rv->name, e.step[0] ? e.step : "revoke", false, e.type, e.detail, next);
    a->host->log(a->self, TLSBOX_LOG_WARN, "%s: revoke failed: %s", rv->name,
                 e.detail ? e.detail : "?");
out:
    acme_err_clear(&e);
    acme_cert_row_free(&row);
    if (c.curl)
        acme_client_free(&c);
    if (db)
        a->host->store_close(a->self, db);
    acme_conf_free(&conf);
    pthread_mutex_unlock(&a->run_lock);
    /* Replace it at once (the revoked marker makes it due without a force). */
    acme_run_submit(a, false, true);
}

int acme_run_revoke(struct acme *a, const char *name)
{
    struct run_revoke *rv = tlsbox_xcalloc(1, sizeof(*rv));
    rv->a = a;
    rv->name = tlsbox_xstrdup(name);
    int64_t id = a->host->job_submit(a->self, "acme-revoke", run_revoke_job, rv, run_revoke_free);
    if (id < 0) { /* refused (the daemon stops): free_arg never runs, rv is still ours */
        run_revoke_free(rv);
        return (int)id;
    }
    return 0;
}
