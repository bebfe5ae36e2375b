/* The notify plugin: a webhook and e-mail recipients told of what happened
 * to the box's certificates and TLS (cert.changed, acme.failed,
 * ocsp.revoked, ...): a signed JSON POST, and a plain-text mail through the
 * configured SMTP server; each retried with backoff and kept as its own
 * delivery in the plugin's table (notify_deliveries) for the API and the
 * web UI. */
#ifndef TLSBOX_NOTIFY_H
#define TLSBOX_NOTIFY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <tlsbox/host.h>

/* Events a webhook can be told of: each is a core or plugin event. */
#define NOTIFY_EVENTS                                                                              \
    "cert.changed|cert.expiring|acme.failed|ocsp.revoked|ocsp.changed|policy.changed|dh.changed"
/* Tries of one delivery: the first and NOTIFY_TRIES - 1 retries. */
#define NOTIFY_TRIES 4
/* Deliveries kept in the store (newest). */
#define NOTIFY_KEEP 200

struct notify {
    struct tlsbox_plugin *self;
    const struct tlsbox_host *host;
    int64_t subs[8];
    size_t nsubs;
    struct tlsbox_metric *m_sent, *m_failed;
    pthread_mutex_t lock;         /* live, the timers of its deliveries and stopping's turn */
    struct notify_delivery *live; /* queued or waiting to be retried */
    /* Set by the stop hook under lock: no try starts and no retry timer is
     * set after it; what is not delivered stays in the store (its body
     * kept) and is sent again by the next start (notify_resume). */
    atomic_bool stopping;
};

/* One delivery: what to send (owned), its row in notify_deliveries, the
 * tries made.  Run by one job or retry timer at a time. */
struct notify_delivery {
    struct notify *n;
    char *event;
    char *body; /* the JSON POSTed; a mail is made from it at each try */
    bool mail;  /* sent by e-mail (notify_mail.c), not to the webhook */
    char *rcpt; /* mail: the recipients still to try (NULL: all of notify.mail_to) */
    int64_t row;
    int tries;
    int64_t timer;                /* its retry timer, 0 when none (n->lock) */
    struct notify_delivery *next; /* in n->live */
};

/* notify_send.c: HMAC-SHA256 of @p body with @p secret as "sha256=<hex>"
 * (caller frees). */
char *notify_signature(const char *secret, const char *body, size_t len);
/* "scheme://host[:port]" of @p url, for logs and the API: the rest of a
 * webhook URL may be its secret (caller frees). */
char *notify_url_origin(const char *url);
/* POST @p body to @p url once; 0 and *http_status 2xx when delivered, else
 * a negative errno with *err saying why (caller frees); -ECANCELED when
 * cut off because @p job was cancelled or notify stops. */
int notify_post(struct notify *n, struct tlsbox_job *job, const char *url, const char *secret,
                const char *event, const char *body, long timeout_s, long *http_status, char **err);
/* One try of delivery @p arg (a struct notify_delivery), as a job; a
 * failed try sets a timer for the next. */
void notify_deliver_job(void *arg, struct tlsbox_job *job);
void notify_delivery_free(void *arg);
/* Whether tries must end now: notify stops, or @p job was cancelled. */
bool notify_stopping(struct notify *n, struct tlsbox_job *job);
/* At start: submit the deliveries a stop left undone (notify_store_pending). */
void notify_resume(struct notify *n);
/* Queue a delivery of @p event with @p data (JSON text, or NULL) on each
 * channel set up; 0 or a negative errno (*err says why when given; -ENOENT:
 * no channel set up).  Any thread. */
int notify_queue(struct notify *n, const char *event, const char *data, char **err);
/* The channels of notify_queue_on. */
enum { NOTIFY_WEBHOOK = 1, NOTIFY_MAIL = 2 };
/* notify_queue on those of @p channels (NOTIFY_WEBHOOK | NOTIFY_MAIL) set up. */
int notify_queue_on(struct notify *n, const char *event, const char *data, unsigned channels,
                    char **err);

/* notify_mail.c: the box's name (core.hostname, else the system's), for a
 * delivery's "host", the From address, EHLO and the Message-ID; never
 * empty (caller frees). */
char *notify_box_name(struct notify *n);
/* The mail for delivery body @p body (the webhook's JSON)
 * from @p from to @p to (comma-separated), dated @p now, with CRLF line
 * ends; *@p subject (may be NULL) gets its subject.  Caller frees both. */
char *notify_mail_message(const char *body, const char *from, const char *to, time_t now,
                          char **subject);
/* Whether notify.mail_to and notify.smtp_url are both set. */
bool notify_mail_configured(struct notify *n);
/* "smtp://host[:port]" of notify.smtp_url, or NULL when unset (caller frees). */
char *notify_mail_origin(struct notify *n);
/* Mail delivery @p body once with the settings as stored now, to the
 * addresses of @p only_to (comma-separated; NULL: all of notify.mail_to,
 * which the To: header always names); 0 when the server took it for at
 * least one recipient (*refused then lists those it refused, with its
 * replies, and *later those of them it refused with a 4xx, comma-separated;
 * else NULL), otherwise a negative errno with *err saying why and
 * *smtp_status the server's last reply code (0: none).  Caller frees
 * *refused, *later and *err.  -ECANCELED as notify_post. */
int notify_mail_send(struct notify *n, struct tlsbox_job *job, const char *body,
                     const char *only_to, long timeout_s, long *smtp_status, char **refused,
                     char **later, char **err);

/* notify_store.c.  A row is pending while it keeps a body: from queueing
 * until it is delivered or failed for good (notify_store_update clears it
 * then); those are sent again after a stop (notify_store_pending). */
int64_t notify_store_add(struct notify *n, const char *event, const char *origin);
void notify_store_update(struct notify *n, int64_t row, const char *status, int tries,
                         long http_status, const char *error);
/* Keep what the next try of row @p row sends: @p body, and @p rcpt (the
 * recipients still to try; NULL: all). */
void notify_store_keep(struct notify *n, int64_t row, const char *body, const char *rcpt);
/* The pending deliveries, oldest first, as a list through ->next (caller
 * frees each with notify_delivery_free). */
struct notify_delivery *notify_store_pending(struct notify *n);

/* notify_api.c */
int notify_api_register(struct notify *n);

#endif
