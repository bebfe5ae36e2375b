/*
 * The refresh job: for every active certificate, decide whether OCSP
 * applies, fetch and verify when due, hand good answers to the core as the
 * staple, drop a staple before its nextUpdate when no fresh answer came, and
 * shout when a certificate is revoked.  A leaf that names no OCSP responder
 * but a CRL distribution point is checked against that CRL instead: nothing
 * to staple, but a revocation is found and shouted about the same way.
 * One run at a time; the next wake-up is the earliest refresh or drop time
 * over all certificates.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>

#include "plugins/ocsp/ocsp_plugin.h"

/* One certificate being looked at. */
struct run_cert {
    const char *name, *serial, *source;
    gnutls_x509_crt_t *crts;
    unsigned ncrts;
    char *url;     /* OCSP responder */
    char *crl_url; /* only when there is no responder */
    bool internal;
};

static void run_wake_at(struct ocsp *o, time_t when)
{
    time_t now = time(NULL);
    uint64_t ms = when > now ? (uint64_t)(when - now) * 1000 + 500 : 500;
    if (ms > (uint64_t)o->check_minutes * 60000)
        return; /* the periodic check comes first */
    pthread_mutex_lock(&o->wake_lock);
    if (o->wake_timer > 0)
        o->host->timer_cancel(o->self, o->wake_timer);
    o->wake_timer = atomic_load(&o->stopping)
                        ? 0
                        : o->host->timer_add(o->self, "ocsp-wake", ms, 0, 0, ocsp_run_job, o);
    pthread_mutex_unlock(&o->wake_lock);
}

static void set_str(char **dst, const char *v)
{
    free(*dst);
    *dst = v ? tlsbox_xstrdup(v) : NULL;
}

static void run_names_free(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* Take the names queued for a forced refresh; true when @p name is one. */
static bool run_forced(char **names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], "*") == 0 || strcmp(names[i], name) == 0)
            return true;
    return false;
}

static void run_fail(struct ocsp *o, const struct ocsp_conf *conf, struct ocsp_row *row,
                     const char *err, time_t now)
{
    row->failures++;
    set_str(&row->last_error, err);
    row->fetched_at = now;
    row->next_refresh =
        now + ocsp_backoff((unsigned)row->failures, conf->retry_min, conf->retry_max);
    o->host->metric_add(o->m_failures, 1);
    o->host->log(o->self, TLSBOX_LOG_WARN, "%s: OCSP failed (%d in a row; %s), retry in %llds: %s",
                 row->cert_name, row->failures,
                 row->stapled ? "the last good staple stays until its end" : "no staple",
                 (long long)(row->next_refresh - now), err);
}

/* Get the DER answer: from the core for internal leaves, else over HTTP. */
static int run_fetch(struct ocsp *o, const struct ocsp_conf *conf, struct run_cert *c,
                     struct ocsp_crl_validators *v, struct ocsp_body *body,
                     gnutls_x509_crt_t *issuer, char *err, size_t errlen)
{
    if (c->internal) {
        void *der = NULL;
        size_t len = 0;
        char *pem = NULL;
        int r = o->host->internal_ocsp(o->self, c->name, &der, &len, &pem);
        if (r < 0) {
            snprintf(err, errlen, "internal CA: %s", strerror(-r));
            return r;
        }
        gnutls_datum_t d = {(unsigned char *)pem, (unsigned)strlen(pem)};
        gnutls_x509_crt_init(issuer);
        r = gnutls_x509_crt_import(*issuer, &d, GNUTLS_X509_FMT_PEM);
        free(pem);
        body->data = der;
        body->len = len;
        return r < 0 ? -EIO : 0;
    }
    if (c->ncrts < 2) {
        snprintf(err, errlen, "the stored chain has no issuer certificate to %s",
                 c->crl_url ? "check the CRL's signature with" : "ask about");
        return -EINVAL;
    }
    gnutls_x509_crt_init(issuer);
    gnutls_datum_t raw = {NULL, 0};
    gnutls_x509_crt_export2(c->crts[1], GNUTLS_X509_FMT_DER, &raw);
    int r = gnutls_x509_crt_import(*issuer, &raw, GNUTLS_X509_FMT_DER);
    gnutls_free(raw.data);
    if (c->crl_url) {
        if (r < 0) {
            snprintf(err, errlen, "cannot read the issuer certificate");
            return -EINVAL;
        }
        return ocsp_fetch_crl(conf, c->crl_url, v, body, err, errlen);
    }
    gnutls_datum_t req = {NULL, 0};
    if (r < 0 || ocsp_request_build(c->crts[0], *issuer, &req) < 0) {
        snprintf(err, errlen, "cannot build the OCSP request");
        return -EINVAL;
    }
    r = ocsp_fetch(conf, c->url, &req, body, err, errlen);
    gnutls_free(req.data);
    return r;
}

/* A good answer: stapled until its nextUpdate (less the margin) or the
 * leaf's expiry @p not_after, whichever comes first, and refreshed at its
 * half-life but never after that end. */
static void run_good(struct ocsp *o, const struct ocsp_conf *conf, struct ocsp_row *row,
                     const struct ocsp_body *body, const struct ocsp_answer *a, time_t not_after,
                     time_t now)
{
    if (not_after != (time_t)-1 && not_after <= now) {
        run_fail(o, conf, row, "the certificate has expired: nothing to staple", now);
        return;
    }
    time_t until = ocsp_staple_until(a->this_update, a->next_update, not_after, conf->margin);
    int r = o->host->staple_set(o->self, row->cert_name, body->data, body->len, until);
    if (r < 0) {
        run_fail(o, conf, row, "the core refused the staple (see its log)", now);
        return;
    }
    free(row->response);
    row->response = tlsbox_xmalloc(body->len);
    memcpy(row->response, body->data, body->len);
    row->response_len = body->len;
    set_str(&row->state, "good");
    set_str(&row->last_error, NULL);
    row->failures = 0;
    row->stapled = true;
    row->produced_at = a->produced_at;
    row->this_update = a->this_update;
    row->next_update = a->next_update;
    row->serve_until = until;
    row->revoked_at = 0;
    row->fetched_at = now;
    uint16_t rnd = 0;
    gnutls_rnd(GNUTLS_RND_NONCE, &rnd, sizeof(rnd));
    row->next_refresh =
        ocsp_refresh_at(a->this_update, a->next_update, until, now, conf->retry_min, rnd % 1001);
    o->host->log(o->self, TLSBOX_LOG_INFO,
                 "%s: OCSP good, stapled until %lld (nextUpdate %lld%s), refresh at %lld",
                 row->cert_name, (long long)until, (long long)a->next_update,
                 not_after != (time_t)-1 && a->next_update > not_after
                     ? ", after the certificate expires"
                     : "",
                 (long long)row->next_refresh);
}

/* When a CRL that does not list the leaf is checked again: at half its
 * life or after crl_every, whichever comes first, a little early at random
 * so that boxes do not ask in step. */
static time_t crl_next_check(const struct ocsp_conf *conf, const struct ocsp_row *row, time_t now)
{
    uint16_t rnd = 0;
    gnutls_rnd(GNUTLS_RND_NONCE, &rnd, sizeof(rnd));
    time_t at = ocsp_refresh_at(row->this_update, row->next_update, row->next_update, now,
                                conf->retry_min, rnd % 1001);
    time_t every = now + conf->crl_every - (time_t)(rnd % 1001) * conf->crl_every / 10000;
    return at < every ? at : every;
}

/* The CRL server says the CRL did not change (304) since the one that did
 * not list the leaf: still good, and nothing was downloaded or parsed. */
static void run_crl_unchanged(struct ocsp *o, const struct ocsp_conf *conf, struct ocsp_row *row,
                              time_t now)
{
    set_str(&row->last_error, NULL);
    row->failures = 0;
    row->fetched_at = now;
    row->next_refresh = crl_next_check(conf, row, now);
    o->host->metric_add(o->m_crl_unchanged, 1);
    o->host->log(o->self, TLSBOX_LOG_INFO,
                 "%s: the CRL is unchanged (%s answered 304): still not in it, CRL nextUpdate "
                 "%lld, checked again at %lld",
                 row->cert_name, row->responder ? row->responder : "?", (long long)row->next_update,
                 (long long)row->next_refresh);
}

/* Whether the CRL may be asked for conditionally: the leaf was not in the
 * last one accepted, which is not yet past its nextUpdate (else a new one is
 * due, and an old one that came again is to be refused as stale). */
static bool crl_conditional(const struct ocsp_row *row, time_t now)
{
    return (row->crl_etag || row->crl_last_modified) && row->method &&
           strcmp(row->method, "crl") == 0 && row->state && strcmp(row->state, "good") == 0 &&
           row->next_update > now;
}

/* Not listed in a valid CRL: nothing to staple; checked again at half the
 * CRL's life or after crl_every, whichever comes first. */
static void run_crl_good(struct ocsp *o, const struct ocsp_conf *conf, struct ocsp_row *row,
                         const struct ocsp_answer *a, time_t now)
{
    bool news = row->state && strcmp(row->state, "revoked") == 0;
    free(row->response); /* a CRL can be megabytes: only the facts are kept */
    row->response = NULL;
    row->response_len = 0;
    set_str(&row->state, "good");
    set_str(&row->last_error, NULL);
    row->failures = 0;
    row->stapled = false;
    row->produced_at = a->produced_at;
    row->this_update = a->this_update;
    row->next_update = a->next_update;
    row->serve_until = 0;
    row->revoked_at = 0;
    row->fetched_at = now;
    row->next_refresh = crl_next_check(conf, row, now);
    o->host->log(o->self, TLSBOX_LOG_INFO,
                 "%s: not in the CRL (%s%s), CRL nextUpdate %lld, checked again at %lld",
                 row->cert_name, row->responder ? row->responder : "?",
                 news ? "; it no longer lists it" : "", (long long)a->next_update,
                 (long long)row->next_refresh);
}

static void run_revoked(struct ocsp *o, const struct ocsp_conf *conf, struct run_cert *c,
                        struct ocsp_row *row, const struct ocsp_answer *a, time_t now)
{
    bool news = !row->state || strcmp(row->state, "revoked") != 0;
    /* Whatever the row says: a row that was lost (or is stale) must not
     * leave a good staple in the core's bundle.  -ENOENT: none to drop. */
    o->host->staple_set(o->self, row->cert_name, NULL, 0, 0);
    row->stapled = false;
    set_str(&row->state, "revoked");
    set_str(&row->last_error, NULL);
    row->failures = 0;
    row->revoked_at = a->revoked_at > 0 ? a->revoked_at : now;
    row->this_update = a->this_update;
    /* A REVOKED answer may have no nextUpdate: stored as none (NULL), not
     * as -1, which the status and tlsboxctl would show as a 1969 date. */
    row->next_update = a->next_update > 0 ? a->next_update : 0;
    row->produced_at = a->produced_at;
    row->fetched_at = now;
    row->next_refresh = now + conf->retry_max;
    if (!news)
        return;
    o->host->metric_add(o->m_revoked, 1);
    char why[32] = "";
    if (a->revocation_reason >= 0)
        snprintf(why, sizeof(why), ", reason %d", a->revocation_reason);
    o->host->log(o->self, TLSBOX_LOG_ERR,
                 "%s: certificate REVOKED (serial %s, at %lld%s) says %s%s; it %s and must be "
                 "replaced",
                 row->cert_name, row->serial, (long long)row->revoked_at, why,
                 c->crl_url ? "the CRL at " : "", row->responder ? row->responder : "the responder",
                 c->crl_url ? "is listed there" : "is no longer stapled");
    json_t *ev = json_pack("{s:s, s:s, s:s, s:I, s:s}", "name", c->name, "serial", c->serial,
                           "source", c->source, "revoked_at", (json_int_t)row->revoked_at, "method",
                           c->crl_url ? "crl" : "ocsp");
    char *evs = json_dumps(ev, JSON_COMPACT);
    o->host->event_publish(o->self, "ocsp.revoked", evs);
    free(evs);
    json_decref(ev);
}

/* True when @p url timed out earlier in this run (@p hung: its URLs). */
static bool run_hung(json_t *hung, const char *url)
{
    size_t i;
    json_t *u;
    json_array_foreach(hung, i, u)
    {
        if (strcmp(json_string_value(u), url) == 0)
            return true;
    }
    return false;
}

static void run_refresh(struct ocsp *o, const struct ocsp_conf *conf, struct run_cert *c,
                        struct ocsp_row *row, json_t *hung, time_t now)
{
    struct ocsp_body body = {NULL, 0, 0};
    gnutls_x509_crt_t issuer = NULL;
    struct ocsp_answer a;
    char err[512] = "";
    /* Certificates are refreshed one after another: a responder that
     * accepts and never answers would hold the run for timeout_seconds per
     * certificate it serves, and every other responder's certificate would
     * wait behind them (their staples may leave the bundle meanwhile).
     * After one timeout, the rest of that URL's certificates count as
     * failed without asking and are retried with the usual backoff. */
    const char *url = c->crl_url ? c->crl_url : c->url;
    now = time(NULL); /* earlier certificates of this run may have waited */
    if (!c->internal && run_hung(hung, url)) {
        snprintf(err, sizeof(err),
                 "%s: the %s did not answer within %ld s (for another certificate in "
                 "this run; not asked again until the retry)",
                 url, c->crl_url ? "CRL server" : "responder", conf->timeout_s);
        run_fail(o, conf, row, err, now);
        return;
    }
    o->host->metric_add(o->m_fetches, 1);
    struct ocsp_crl_validators v = {NULL, NULL, NULL, NULL, false};
    if (c->crl_url && crl_conditional(row, now)) {
        v.etag = row->crl_etag;
        v.last_modified = row->crl_last_modified;
    }
    int r = run_fetch(o, conf, c, &v, &body, &issuer, err, sizeof(err));
    if (r == -ECANCELED) {
        /* Stopping: not the responder's failure.  The row stays as it was,
         * and the next start asks again. */
        o->host->log(o->self, TLSBOX_LOG_INFO, "%s: %s", c->name, err);
        goto out;
    }
    /* The fetch may have waited timeout_seconds: the retry's backoff and
     * fetched_at count from its end, not from the start of the run. */
    now = time(NULL);
    if (r == -ETIMEDOUT && !c->internal)
        json_array_append_new(hung, json_string(url));
    if (r == 0 && v.not_modified) {
        run_crl_unchanged(o, conf, row, now);
        goto out;
    }
    /* Never a GOOD answer older than the one held: a replay or a stale
     * cache would re-staple it over a newer one, or turn a certificate seen
     * revoked good again.  A REVOKED one is taken whatever its age, as
     * whatever its nextUpdate (see ocsp_verify).  The core's own CA signs a
     * fresh one each time: only our clock going back could make it older. */
    if (r < 0 ||
        (c->crl_url ? ocsp_crl_check(body.data, body.len, c->crl_url, c->crts[0], issuer, now, &a,
                                     err, sizeof(err))
                    : ocsp_verify(body.data, body.len, c->crts[0], issuer, now, &a, err,
                                  sizeof(err))) < 0 ||
        (a.status == OCSP_STATUS_GOOD && !c->internal &&
         ocsp_check_not_older(c->crl_url ? "CRL" : "answer", a.this_update,
                              (time_t)row->this_update, err, sizeof(err)) < 0)) {
        if (c->crl_url && r == 0) {
            /* Say which check refused it, and where it came from. */
            char msg[640];
            snprintf(msg, sizeof(msg), "%s: CRL refused: %s", url, err);
            run_fail(o, conf, row, msg, now);
        } else {
            run_fail(o, conf, row, err, now);
        }
    } else if (a.status == OCSP_STATUS_GOOD && c->crl_url) {
        run_crl_good(o, conf, row, &a, now);
        set_str(&row->crl_etag, v.new_etag);
        set_str(&row->crl_last_modified, v.new_last_modified);
    } else if (a.status == OCSP_STATUS_GOOD) {
        run_good(o, conf, row, &body, &a, gnutls_x509_crt_get_expiration_time(c->crts[0]), now);
    } else if (a.status == OCSP_STATUS_REVOKED) {
        run_revoked(o, conf, c, row, &a, now);
    } else {
        run_fail(o, conf, row, "the responder does not know this certificate (status unknown)",
                 now);
    }
out:
    ocsp_crl_validators_free(&v);
    if (issuer)
        gnutls_x509_crt_deinit(issuer);
    ocsp_body_free(&body);
}

/* Not applicable: why, or NULL when OCSP applies. */
static const char *run_not_applicable(struct run_cert *c)
{
    if (ocsp_short_lived(c->crts[0]))
        return "short-lived certificate (7 days or less): no OCSP needed";
    if (!c->url && !c->internal && !c->crl_url)
        return "no OCSP responder URL in the certificate, and no CRL distribution point";
    return NULL;
}

static int run_load_chain(struct ocsp *o, struct run_cert *c)
{
    char *chain = NULL;
    int r = o->host->cert_get(o->self, c->name, &chain, NULL);
    if (r < 0)
        return r;
    gnutls_datum_t d = {(unsigned char *)chain, (unsigned)strlen(chain)};
    r = gnutls_x509_crt_list_import2(&c->crts, &c->ncrts, &d, GNUTLS_X509_FMT_PEM, 0);
    free(chain);
    if (r < 0 || c->ncrts == 0)
        return -EIO;
    c->url = ocsp_responder_url(c->crts[0]);
    c->internal = strcmp(c->source, "internal") == 0 && TLSBOX_HOST_HAS(o->host, internal_ocsp);
    if (!c->url && !c->internal)
        c->crl_url = ocsp_crl_url(c->crts[0]);
    return 0;
}

static void run_cert_free(struct run_cert *c)
{
    for (unsigned i = 0; i < c->ncrts; i++)
        gnutls_x509_crt_deinit(c->crts[i]);
    gnutls_free(c->crts);
    free(c->url);
    free(c->crl_url);
}

/* The row of @p c, reset when it was about another leaf of that name. */
static void run_row(sqlite3 *db, struct run_cert *c, struct ocsp_row *row)
{
    if (ocsp_row_load(db, c->name, row) == 0 && row->serial && strcmp(row->serial, c->serial) == 0)
        return;
    ocsp_row_clear(row);
    row->cert_name = tlsbox_xstrdup(c->name);
    row->serial = tlsbox_xstrdup(c->serial);
    row->state = tlsbox_xstrdup("pending");
}

static void run_cert(struct ocsp *o, sqlite3 *db, const struct ocsp_conf *conf, json_t *e,
                     bool forced, bool installed, json_t *hung, time_t now, time_t *wake)
{
    struct run_cert c = {.name = json_string_value(json_object_get(e, "name")),
                         .serial = json_string_value(json_object_get(e, "serial")),
                         .source = json_string_value(json_object_get(e, "source"))};
    struct ocsp_row row;
    if (!c.name || !c.serial || !c.source)
        return;
    run_row(db, &c, &row);
    if (installed && row.stapled) {
        /* The core dropped the staple with the install: not stapled, due. */
        row.stapled = false;
        row.next_refresh = 0;
    }
    if (run_load_chain(o, &c) < 0) {
        set_str(&row.last_error, "cannot read the stored chain");
        goto save;
    }
    row.must_staple = ocsp_must_staple(c.crts[0]);
    set_str(&row.responder, c.internal ? "internal" : c.url ? c.url : c.crl_url);
    const char *na = run_not_applicable(&c);
    set_str(&row.reason, na);
    set_str(&row.method, na ? NULL : c.crl_url ? "crl" : "ocsp");
    if (na) {
        set_str(&row.state, "not_applicable");
        row.next_refresh = 0;
        goto save;
    }
    if (row.stapled && now >= row.serve_until) {
        o->host->staple_set(o->self, c.name, NULL, 0, 0);
        row.stapled = false;
        o->host->log(o->self, TLSBOX_LOG_WARN,
                     "%s: OCSP staple dropped: its nextUpdate is near and no fresh answer came",
                     c.name);
    }
    if (forced || !row.next_refresh || now >= row.next_refresh)
        run_refresh(o, conf, &c, &row, hung, now);
    /* Also after a restart, when the stored staple is still fresh. */
    if (c.internal)
        ocsp_serve_set(o, row.stapled ? row.response : NULL, row.response_len, row.serve_until);
    if (row.next_refresh && (!*wake || row.next_refresh < *wake))
        *wake = row.next_refresh;
    if (row.stapled && (!*wake || row.serve_until < *wake))
        *wake = row.serve_until;
save:
    if (ocsp_row_save(db, &row) < 0)
        o->host->log(o->self, TLSBOX_LOG_ERR, "%s: cannot save the OCSP state: %s", c.name,
                     sqlite3_errmsg(db));
    ocsp_row_clear(&row);
    run_cert_free(&c);
}

/* @p cert's entry in o->gauges, added when missing.  gauge_lock held. */
static struct ocsp_gauge *gauge_entry(struct ocsp *o, const char *cert)
{
    for (size_t i = 0; i < o->ngauges; i++)
        if (strcmp(o->gauges[i].cert, cert) == 0)
            return &o->gauges[i];
    o->gauges = tlsbox_xrealloc(o->gauges, (o->ngauges + 1) * sizeof *o->gauges);
    struct ocsp_gauge *g = &o->gauges[o->ngauges++];
    *g = (struct ocsp_gauge){.cert = tlsbox_xstrdup(cert)};
    return g;
}

/* The per-certificate gauges on /metrics, from status rows judged at one
 * moment, so they say what GET ocsp/status says then.  A certificate no
 * longer among them (removed from the store) has its gauges retired: they
 * used to stay on /metrics, frozen, until the daemon stopped. */
static void gauges_set(struct ocsp *o, json_t *rows)
{
    size_t i;
    json_t *r;
    pthread_mutex_lock(&o->gauge_lock);
    for (i = 0; i < o->ngauges; i++)
        o->gauges[i].seen = false;
    json_array_foreach(rows, i, r)
    {
        const char *cert = json_string_value(json_object_get(r, "name"));
        if (!cert)
            continue;
        struct ocsp_gauge *e = gauge_entry(o, cert);
        e->seen = true;
        json_t *age = json_object_get(r, "staple_age");
        char *m = tlsbox_xasprintf("tlsbox_ocsp_staple_age_seconds{cert=\"%s\"}", cert);
        e->age = o->host->metric_register(o->self, m, TLSBOX_METRIC_GAUGE,
                                          "Age of the served OCSP staple (-1: none)", NULL, 0);
        free(m);
        if (e->age)
            o->host->metric_set(e->age, json_is_integer(age) ? json_integer_value(age) : -1);
        /* Until when the revocation facts hold (the OCSP answer's or the
         * CRL's nextUpdate): alert on it minus time() to learn that checks
         * have stalled, whatever the method. */
        json_t *next = json_object_get(r, "next_update");
        m = tlsbox_xasprintf("tlsbox_ocsp_next_update_timestamp_seconds{cert=\"%s\"}", cert);
        e->next = o->host->metric_register(
            o->self, m, TLSBOX_METRIC_GAUGE,
            "nextUpdate of the last OCSP answer or CRL accepted (-1: none)", NULL, 0);
        free(m);
        if (e->next)
            o->host->metric_set(e->next, json_is_integer(next) ? json_integer_value(next) : -1);
    }
    for (i = 0; i < o->ngauges;) {
        struct ocsp_gauge *e = &o->gauges[i];
        if (e->seen) {
            i++;
            continue;
        }
        if (TLSBOX_HOST_HAS(o->host, metric_retire)) {
            o->host->metric_retire(o->self, e->age);
            o->host->metric_retire(o->self, e->next);
        }
        free(e->cert);
        *e = o->gauges[--o->ngauges];
    }
    pthread_mutex_unlock(&o->gauge_lock);
}

json_t *ocsp_status_now(struct ocsp *o)
{
    pthread_mutex_lock(&o->status_lock);
    json_t *st = json_loads(o->status_json, 0, NULL);
    pthread_mutex_unlock(&o->status_lock);
    time_t now = time(NULL);
    size_t i;
    json_t *r;
    const char *unsent =
        atomic_load(&o->policy_off) ? "the TLS policy has ocsp_stapling off" : NULL;
    json_array_foreach(json_object_get(st, "certificates"), i, r)
    {
        ocsp_status_judge(r, now, unsent);
    }
    return st;
}

void ocsp_policy_refresh(struct ocsp *o)
{
    if (!atomic_exchange(&o->policy_dirty, false) || !TLSBOX_HOST_HAS(o->host, api_call))
        return;
    int status = 0;
    char *reply = NULL;
    json_t *j = NULL;
    if (o->host->api_call(o->self, "GET", "policy", NULL, &status, &reply) == 0 && status == 200)
        j = json_loads(reply, 0, NULL);
    json_t *on = json_object_get(json_object_get(j, "policy"), "ocsp_stapling");
    if (json_is_boolean(on)) {
        atomic_store(&o->policy_off, !json_is_true(on));
    } else {
        /* Not asked again each second (a log line each time): the next
         * policy.changed does. */
        o->host->log(o->self, TLSBOX_LOG_WARN,
                     "cannot read the TLS policy's ocsp_stapling (HTTP %d): the status "
                     "keeps the last known value",
                     status);
    }
    json_decref(j);
    free(reply);
}

void ocsp_gauges_job(void *arg, struct tlsbox_job *job)
{
    struct ocsp *o = arg;
    (void)job;
    ocsp_policy_refresh(o);
    /* Judged as GET ocsp/status is (the policy too), not as stored. */
    json_t *st = ocsp_status_now(o);
    gauges_set(o, json_object_get(st, "certificates"));
    json_decref(st);
}

static void run_status(struct ocsp *o, sqlite3 *db, time_t now, time_t wake, uint64_t run)
{
    json_t *rows = ocsp_rows_json(db, now);
    json_t *st = json_pack("{s:o, s:I, s:I}", "certificates", rows, "runs", (json_int_t)run,
                           "updated_at", (json_int_t)now);
    json_object_set_new(st, "next_wake", wake ? json_integer(wake) : json_null());
    char *txt = json_dumps(st, JSON_COMPACT);
    json_decref(st);
    pthread_mutex_lock(&o->status_lock);
    free(o->status_json);
    o->status_json = txt;
    pthread_mutex_unlock(&o->status_lock);
    ocsp_gauges_job(o, NULL);
}

static void run_once(struct ocsp *o, uint64_t run)
{
    struct ocsp_conf conf;
    char **forced = NULL, **installed = NULL;
    size_t nforced = 0, ninstalled = 0;
    time_t now = time(NULL), wake = 0;
    pthread_mutex_lock(&o->force_lock);
    forced = o->force;
    nforced = o->nforce;
    o->force = NULL;
    o->nforce = 0;
    installed = o->installed;
    ninstalled = o->ninstalled;
    o->installed = NULL;
    o->ninstalled = 0;
    pthread_mutex_unlock(&o->force_lock);

    ocsp_conf_load(o, &conf);
    ocsp_policy_refresh(o);
    char *list = o->host->cert_list(o->self);
    json_t *certs = list ? json_loads(list, 0, NULL) : NULL;
    free(list);
    sqlite3 *db = o->host->store_open(o->self);
    if (!db || !json_is_array(certs)) {
        o->host->log(o->self, TLSBOX_LOG_ERR, "cannot read the certificates or the store");
        goto out;
    }
    /* Responder URLs that timed out in this run. */
    json_t *names = json_array(), *hung = json_array(), *e;
    size_t i;
    json_array_foreach(certs, i, e)
    {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *status = json_string_value(json_object_get(e, "status"));
        if (!name || !status || strcmp(status, "active") != 0)
            continue;
        /* Named before the stop is looked at: the rows of certificates a
         * stop keeps this run from reaching must stay (stapled, revoked,
         * backoff), only those of certificates that are gone are pruned. */
        json_array_append_new(names, json_string(name));
        if (atomic_load(&o->stopping))
            continue;
        run_cert(o, db, &conf, e, run_forced(forced, nforced, name),
                 run_forced(installed, ninstalled, name), hung, time(NULL), &wake);
    }
    ocsp_rows_prune(db, names);
    json_decref(names);
    json_decref(hung);
    run_status(o, db, now, wake, run);
    if (wake)
        run_wake_at(o, wake);
out:
    if (db)
        o->host->store_close(o->self, db);
    json_decref(certs);
    ocsp_conf_free(&conf);
    run_names_free(forced, nforced);
    run_names_free(installed, ninstalled);
}

void ocsp_run_job(void *arg, struct tlsbox_job *job)
{
    struct ocsp *o = arg;
    (void)job;
    /* Flagged before the lock is tried: a run that holds it looks at
     * `again` after it unlocks, so no request is lost. */
    atomic_store(&o->again, true);
    do {
        if (pthread_mutex_trylock(&o->run_lock) != 0)
            return;
        /* Every request queued before this point is served by this run. */
        while (atomic_exchange(&o->again, false) && !atomic_load(&o->stopping))
            run_once(o, (uint64_t)atomic_load(&o->runs_queued));
        pthread_mutex_unlock(&o->run_lock);
    } while (atomic_load(&o->again) && !atomic_load(&o->stopping));
}

static void run_queue(struct ocsp *o, char ***names, size_t *n, const char *name)
{
    pthread_mutex_lock(&o->force_lock);
    *names = tlsbox_xrealloc(*names, (*n + 1) * sizeof(**names));
    (*names)[(*n)++] = tlsbox_xstrdup(name);
    pthread_mutex_unlock(&o->force_lock);
}

void ocsp_run_installed(struct ocsp *o, const char *name)
{
    run_queue(o, &o->installed, &o->ninstalled, name);
    ocsp_run_submit(o, NULL);
}

void ocsp_run_submit(struct ocsp *o, const char *name)
{
    if (name)
        run_queue(o, &o->force, &o->nforce, name);
    atomic_fetch_add(&o->runs_queued, 1);
    if (o->host->job_submit(o->self, "ocsp-refresh", ocsp_run_job, o, NULL) < 0)
        atomic_store(&o->again, true);
}
