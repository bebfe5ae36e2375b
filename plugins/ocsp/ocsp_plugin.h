/* The ocsp plugin's glue to the host: state, fetching, the ocsp_* tables,
 * the refresh job and the API. */
#ifndef TLSBOX_PLUGINS_OCSP_PLUGIN_H
#define TLSBOX_PLUGINS_OCSP_PLUGIN_H

#include <pthread.h>
#include <stdatomic.h>

#include <jansson.h>
#include <sqlite3.h>
#include <tlsbox/host.h>
#include <tlsbox/xalloc.h>

#include "plugins/ocsp/ocsp.h"

struct ocsp {
    struct tlsbox_plugin *self;
    const struct tlsbox_host *host;

    /* One run at a time; a request that finds it busy sets `again`. */
    pthread_mutex_t run_lock;
    atomic_bool again;
    atomic_bool stopping;
    /* Names to refresh now ("*" = all), set by the API, taken by a run. */
    pthread_mutex_t force_lock;
    char **force;
    size_t nforce;
    /* Names (re)installed since the last run, from cert.changed: the core
     * dropped their staple with the old install, same serial or not. */
    char **installed;
    size_t ninstalled;
    atomic_uint_fast64_t runs_queued; /* refresh requests so far; status "runs" catches up */

    int64_t timer;       /* periodic full check */
    int64_t wake_timer;  /* one-shot: the next refresh or drop */
    int64_t gauge_timer; /* the /metrics gauges, re-judged every second */
    pthread_mutex_t wake_lock;
    int64_t sub_cert;     /* cert.changed */
    int64_t sub_settings; /* settings.changed */
    int64_t sub_policy;   /* policy.changed */
    /* The TLS policy's ocsp_stapling is off: the core's bundle sends no
     * staple at all, whatever the rows say.  Read through api_call, which
     * only a job or timer thread may use: policy.changed sets
     * policy_dirty and the next gauge timer firing (or run) reads it. */
    atomic_bool policy_off;
    atomic_bool policy_dirty;

    /* The status reply, rebuilt by each run (the API thread never touches SQLite). */
    pthread_mutex_t status_lock;
    char *status_json;

    /* The internal leaf's staple, served at its OCSP URL by site workers. */
    pthread_mutex_t serve_lock;
    unsigned char *serve_der;
    size_t serve_len;
    time_t serve_until;

    struct tlsbox_metric *m_fetches, *m_failures, *m_revoked, *m_crl_unchanged;
    long check_minutes;

    /* The per-certificate gauges exported now, so that those of a
     * certificate gone from the store are retired, not shown for good.
     * gauge_lock: a run and the gauge timer set them on two threads. */
    pthread_mutex_t gauge_lock;
    struct ocsp_gauge *gauges;
    size_t ngauges;
};

/* One certificate's gauges on /metrics. */
struct ocsp_gauge {
    char *cert;
    struct tlsbox_metric *age, *next;
    bool seen; /* in the status gauges_set was given */
};

/* Settings resolved for one run. */
struct ocsp_conf {
    time_t margin, retry_min, retry_max;
    long timeout_s;
    size_t max_bytes;     /* an OCSP response */
    size_t crl_max_bytes; /* a CRL */
    time_t crl_every;     /* a CRL is fetched again at least this often */
    char *ca_file;
    /* Set when the plugin stops: a fetch in flight gives up within about a
     * second (-ECANCELED) instead of holding the daemon's exit for up to
     * timeout_s.  NULL = never cancelled. */
    const atomic_bool *cancel;
};

/* A fetch result. */
struct ocsp_body {
    unsigned char *data;
    size_t len;
    /* A CRL is received into its own mapping (cap bytes), unmapped when
     * freed: megabytes that came through the heap would stay with the
     * process (glibc keeps a thread arena's top); an OCSP answer is
     * malloc()ed (cap 0). */
    size_t cap;
};
/* Free what @p b holds (either kind) and zero it. */
void ocsp_body_free(struct ocsp_body *b);

/* ocsp_fetch.c: POST @p req to @p url (an OCSP request, at most
 * conf->max_bytes back), or GET @p url when @p req is NULL (a CRL, at most
 * conf->crl_max_bytes).  0 with @p out (free data), or a
 * negative errno with a reason in err: -ETIMEDOUT when the responder did
 * not answer within conf->timeout_s, -ECANCELED when conf->cancel was set
 * meanwhile. */
int ocsp_fetch(const struct ocsp_conf *conf, const char *url, const gnutls_datum_t *req,
               struct ocsp_body *out, char *err, size_t errlen);

/* A CRL's validators: sent as If-None-Match / If-Modified-Since (etag,
 * last_modified; NULL: not sent), and read from the answer (new_*, owned,
 * NULL when the answer gave none usable). */
struct ocsp_crl_validators {
    const char *etag, *last_modified;
    char *new_etag, *new_last_modified;
    bool not_modified; /* the server answered 304: the CRL is as before */
};
void ocsp_crl_validators_free(struct ocsp_crl_validators *v);
/* GET the CRL at @p url as ocsp_fetch does, conditionally when @p v holds
 * validators: 0 with v->not_modified and an empty @p out when the server
 * says it did not change (304). */
int ocsp_fetch_crl(const struct ocsp_conf *conf, const char *url, struct ocsp_crl_validators *v,
                   struct ocsp_body *out, char *err, size_t errlen);

/* ocsp_store.c: the plugin's rows (ocsp_certs). */
struct ocsp_row {
    char *cert_name, *serial, *state, *responder, *reason, *last_error;
    char *method;                       /* "ocsp", "crl", or NULL (not applicable yet) */
    char *crl_etag, *crl_last_modified; /* of the last CRL accepted, or NULL */
    unsigned char *response;            /* last good response, DER */
    size_t response_len;
    int64_t produced_at, this_update, next_update, serve_until, fetched_at, next_refresh;
    int64_t revoked_at;
    int failures;
    bool stapled, must_staple;
};
extern const struct tlsbox_migration ocsp_migrations[];
/* 0 with *row filled, -ENOENT (row zeroed), -EIO. */
int ocsp_row_load(sqlite3 *db, const char *name, struct ocsp_row *row);
int ocsp_row_save(sqlite3 *db, const struct ocsp_row *row);
void ocsp_row_clear(struct ocsp_row *row);
/* Delete rows of certificates not in @p names (JSON array of strings). */
int ocsp_rows_prune(sqlite3 *db, json_t *names);
/* Every row as status JSON at @p now. */
json_t *ocsp_rows_json(sqlite3 *db, time_t now);
/* Set a status row's "stapled", "status", "staple_age" and "warning" from
 * its stored facts ("answer", "serve_until", ...) at @p now.  The API calls
 * it again at each request: a run can be late (a responder that does not
 * answer holds it up to timeout_seconds per responder URL) while the core
 * drops the staple at serve_until on time.  Idempotent as time goes on.
 * @p unsent_because (NULL: none) is why the core sends no staple for any
 * certificate now (the TLS policy); the row then says it in
 * "not_stapled_because".  The stored rows are judged with NULL, so that
 * turning stapling on again finds them as they were. */
void ocsp_status_judge(json_t *row, time_t now, const char *unsent_because);

/* ocsp_run.c */
void ocsp_run_job(void *arg, struct tlsbox_job *job);
/* The last run's status (NULL if unreadable) with each row judged now
 * (ocsp_status_judge); the caller owns it.  Any thread. */
json_t *ocsp_status_now(struct ocsp *o);
/* Set the /metrics gauges from the last status judged now: a run held up
 * by a responder that does not answer must not leave them saying a staple
 * is sent after the core dropped it at serve_until. */
void ocsp_gauges_job(void *arg, struct tlsbox_job *job);
/* Read the TLS policy's ocsp_stapling again if policy.changed said it may
 * have changed.  Job or timer thread only (api_call). */
void ocsp_policy_refresh(struct ocsp *o);
/* Queue a run; @p name (or NULL for none, "*" for all) is refreshed even when not due. */
void ocsp_run_submit(struct ocsp *o, const char *name);
/* Queue a run after certificate @p name was installed (cert.changed): its
 * staple is gone from the core, so it is fetched again at once. */
void ocsp_run_installed(struct ocsp *o, const char *name);
void ocsp_conf_load(struct ocsp *o, struct ocsp_conf *conf);
void ocsp_conf_free(struct ocsp_conf *conf);

/* ocsp_serve.c: the internal CA's OCSP URL on the site's HTTP port. */
void ocsp_serve_set(struct ocsp *o, const void *der, size_t len, time_t until);
int ocsp_serve_register(struct ocsp *o);

/* ocsp_api.c */
int ocsp_api_register(struct ocsp *o);

#endif
