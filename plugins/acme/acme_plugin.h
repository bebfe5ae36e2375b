/* The ACME plugin's glue to the host: state, settings, jobs, API. */
#ifndef TLSBOX_PLUGINS_ACME_PLUGIN_H
#define TLSBOX_PLUGINS_ACME_PLUGIN_H

#include <pthread.h>
#include <stdatomic.h>

#include <tlsbox/host.h>

#include "plugins/acme/acme.h"

#define ACME_LE_PRODUCTION "https://acme-v02.api.letsencrypt.org/directory"
#define ACME_LE_STAGING "https://acme-staging-v02.api.letsencrypt.org/directory"

/* One http-01 key authorization being answered. */
struct acme_chal {
    char *token;
    char *key_auth;
};

struct acme {
    struct tlsbox_plugin *self;
    const struct tlsbox_host *host;

    /* http-01 answers: written by jobs, read by site workers (short lock, no I/O). */
    pthread_mutex_t chal_lock;
    struct acme_chal *chal;
    size_t nchal;
    /* dns-01 records put and not yet deleted (chal_lock): where each went. */
    struct acme_dns_put *dns_puts;

    /* One check/issuance at a time; a request that finds it busy sets again. */
    pthread_mutex_t run_lock;
    atomic_bool again;
    atomic_bool force;     /* renew even when not due */
    atomic_bool retry_now; /* a person acted: skip the failure backoff once */
    atomic_bool stopping;

    int64_t timer;      /* periodic check */
    int64_t wake_timer; /* one-shot: next backoff retry or renewal time */
    pthread_mutex_t wake_lock;
    int64_t sub;         /* settings.changed */
    int64_t sub_revoked; /* ocsp.revoked */

    /* The status reply, rebuilt by each check (the API thread never touches SQLite). */
    pthread_mutex_t status_lock;
    char *status_json;

    struct tlsbox_metric *m_ok, *m_err, *m_bad_nonce, *m_next;
    long check_minutes;
};

/* Settings resolved for one run. */
struct acme_conf {
    char *directory;
    char **domains;
    size_t ndomains;
    char *email;
    bool agree_tos;
    char *key_type;
    char *profile;
    char *eab_kid;
    char *eab_hmac; /* wiped */
    char *ca_file;
    char *preferred_chain;
    char *challenge;         /* "http-01" or "tls-alpn-01" ("auto" resolved) */
    bool challenge_fallback; /* auto: the other when the CA does not offer it */
};

/* acme.c */
void acme_conf_load(struct acme *a, struct acme_conf *conf);
void acme_conf_free(struct acme_conf *conf);
void acme_chal_put(void *arg, const char *token, const char *key_auth);
void acme_chal_del(void *arg, const char *token);

/* acme_answer.c: tls-alpn-01 (the core serves it, host ABI 1.3) and dns-01
 * (RFC 2136 updates to acme.dns_server) answers, for acme_order_req; arg is
 * the struct acme.  Job threads only (they block). */
unsigned acme_answer_types(struct acme *a);
int acme_answer_put(void *arg, const char *type, const char *identifier, const char *key_auth,
                    char **why);
void acme_answer_del(void *arg, const char *type, const char *identifier, const char *key_auth);
/* What to check when the CA found no dns-01 record: with acme.dns_alias,
 * the CNAME the user sets up (a string to free), else NULL. */
char *acme_answer_dns_hint(struct acme *a);
/* Forget the dns-01 records put (acme_fini: tlsboxd stops); those not
 * withdrawn stay in acme_dns_records for acme_answer_leftovers. */
void acme_answer_forget_all(struct acme *a);
/* Withdraw the dns-01 records acme_dns_records still lists (a tlsboxd
 * killed, a server that did not answer the withdrawal), each from the
 * server and zone it went to; at most 10 s, the rest at the next call.
 * A job thread holding run_lock, before it puts any record. */
void acme_answer_leftovers(struct acme *a);

/* acme_run.c: jobs */
void acme_run_check(void *arg, struct tlsbox_job *job);
/* Queue a check; @p force renews even when not due; @p retry_now skips the backoff. */
void acme_run_submit(struct acme *a, bool force, bool retry_now);
/* Queue a revocation of certificate @p name (then a replacement). */
int acme_run_revoke(struct acme *a, const char *name);
void acme_status_set(struct acme *a, char *json);

/* acme_schema.c: the plugin's tables (descriptor .migrations) */
extern const struct tlsbox_migration acme_migrations[];

/* acme_certs.c: the installed certificate @p name (through host->cert_get),
 * or -ENOENT; free with acme_cert_row_free. */
int acme_cert_get(struct acme *a, const char *name, struct acme_cert_row *out);

/* acme_api.c */
int acme_api_register(struct acme *a);

#endif
