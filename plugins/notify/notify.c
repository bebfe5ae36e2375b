/* The notify plugin's descriptor, settings and lifecycle (see notify.h). */
#include "plugins/notify/notify.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include <tlsbox/plugin.h>
#include <tlsbox/xalloc.h>

static const struct tlsbox_setting_def notify_settings[] = {
    {.key = "url",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .max = 2048,
     /* A webhook's path often is its secret (chat services): kept as one. */
     .pattern = "^$|^https?://[^[:space:]]+$",
     .flags = TLSBOX_SETTING_SECRET,
     .help = "Webhook URL told of each event below (http:// or https://); empty = off"},
    {.key = "secret",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .max = 256,
     .flags = TLSBOX_SETTING_SECRET,
     .help = "Key of the X-Tlsbox-Signature header (sha256=HMAC of the body); empty = unsigned"},
    {.key = "events",
     .type = TLSBOX_SETTING_LIST,
     .default_value = "cert.changed,cert.expiring,acme.failed,ocsp.revoked",
     .pattern = "^(" NOTIFY_EVENTS ")$",
     .help = "Events to send: cert.changed, cert.expiring (see core.cert_warn_days), "
             "acme.failed, ocsp.revoked, ocsp.changed, policy.changed, dh.changed"},
    {.key = "retry_seconds",
     .type = TLSBOX_SETTING_INT,
     .default_value = "30",
     .min = 1,
     .max = 3600,
     .help = "Wait before the first retry of a failed delivery, doubled for each next (3 retries)"},
    {.key = "mail_to",
     .type = TLSBOX_SETTING_LIST,
     .default_value = "",
     .max = 1024,
     .pattern = "^[^[:space:]@<>,\"]+@[^[:space:]@<>,\"]+$",
     .help = "E-mail addresses told of each event below, by the mail server in smtp_url; "
             "empty = no e-mail"},
    {.key = "mail_from",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .max = 254,
     .pattern = "^$|^[^[:space:]@<>,\"]+@[^[:space:]@<>,\"]+$",
     .help = "Sender address of the e-mails; empty = tlsbox@ the box's host name"},
    {.key = "smtp_url",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .max = 512,
     /* No user:password@ here: those have their own settings, one secret. */
     .pattern = "^$|^smtps?://[^[:space:]/@]+/?$",
     .help = "Mail server: smtp://HOST:587 (STARTTLS) or smtps://HOST:465 (TLS); empty = no "
             "e-mail"},
    {.key = "smtp_tls",
     .type = TLSBOX_SETTING_ENUM,
     .default_value = "required",
     .choices = "required|none",
     .help = "On smtp://, STARTTLS is required (the server's certificate checked), or none: "
             "plain text, for a relay on this box or a trusted LAN only"},
    {.key = "smtp_user",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .max = 256,
     .pattern = "^[^[:cntrl:]]*$",
     .help = "User name for the mail server (AUTH); empty = no login"},
    {.key = "smtp_password",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .max = 256,
     .flags = TLSBOX_SETTING_SECRET,
     .help = "Password for the mail server"},
    {.key = "ca_file",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .max = 1024,
     .pattern = "^$|^/[^[:cntrl:]]*$",
     .help = "PEM file of the CAs trusted for the webhook's and the mail server's certificates "
             "(absolute path); empty = the system's CAs"},
    {.key = "timeout_seconds",
     .type = TLSBOX_SETTING_INT,
     .default_value = "10",
     .min = 1,
     .max = 60,
     .help = "Longest wait for the webhook or the mail server to answer"},
    TLSBOX_SETTINGS_END};

static const struct tlsbox_migration notify_migrations[] = {
    {.name = "0001_deliveries",
     .sql = "CREATE TABLE notify_deliveries (id INTEGER PRIMARY KEY, at INTEGER NOT NULL, "
            "event TEXT NOT NULL, origin TEXT NOT NULL, status TEXT NOT NULL, "
            "tries INTEGER NOT NULL DEFAULT 0, http_status INTEGER, error TEXT, "
            "updated_at INTEGER NOT NULL)"},
    /* What a try sends, kept while the delivery is pending: a stop (the
     * plugin turned off, tlsboxd stopping) leaves it for the next start. */
    {.name = "0002_pending",
     .sql = "ALTER TABLE notify_deliveries ADD COLUMN body TEXT; "
            "ALTER TABLE notify_deliveries ADD COLUMN rcpt TEXT"},
    TLSBOX_MIGRATIONS_END};

/* On the event thread: queue a delivery when the webhook wants this event. */
static void on_event(void *arg, const char *event, const char *data)
{
    struct notify *n = arg;
    char *list = n->host->setting_get(n->self, "events");
    bool wanted = false;
    if (list) {
        char *save = NULL;
        for (char *t = strtok_r(list, ",", &save); t && !wanted; t = strtok_r(NULL, ",", &save))
            wanted = strcmp(t, event) == 0;
        free(list);
    }
    char *err = NULL;
    /* Neither webhook nor e-mail set up (-ENOENT) is a choice, not news:
     * only POST notify/test says so. */
    if (wanted && notify_queue(n, event, data, &err) == -ENOENT)
        n->host->log(n->self, TLSBOX_LOG_DEBUG, "%s not sent: %s", event, err);
    else if (err)
        n->host->log(n->self, TLSBOX_LOG_WARN, "%s not sent: %s", event, err);
    free(err);
}

static int notify_init(struct tlsbox_plugin *self, const struct tlsbox_host *host, void **state)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        host->log(self, TLSBOX_LOG_ERR, "libcurl could not be initialised");
        return -EIO;
    }
    struct notify *n = tlsbox_xcalloc(1, sizeof *n);
    n->self = self;
    n->host = host;
    pthread_mutex_init(&n->lock, NULL);
    atomic_init(&n->stopping, false);
    *state = n;
    return 0;
}

static int notify_start(void *state)
{
    struct notify *n = state;
    n->m_sent =
        n->host->metric_register(n->self, "tlsbox_notify_delivered_total", TLSBOX_METRIC_COUNTER,
                                 "Webhook deliveries the webhook answered with 2xx", NULL, 0);
    n->m_failed =
        n->host->metric_register(n->self, "tlsbox_notify_failed_total", TLSBOX_METRIC_COUNTER,
                                 "Webhook deliveries given up after every try", NULL, 0);
    /* What a stop left undelivered goes out again first: resumed after the
     * subscriptions, an event that came in between (another thread) was
     * both queued by on_event and resumed from its stored row, and sent
     * twice, with two retry timers. */
    notify_resume(n);
    const char *events = NOTIFY_EVENTS;
    while (*events && n->nsubs < sizeof n->subs / sizeof n->subs[0]) {
        size_t len = strcspn(events, "|");
        char *ev = tlsbox_xasprintf("%.*s", (int)len, events);
        int64_t id = n->host->event_subscribe(n->self, ev, on_event, n);
        free(ev);
        if (id < 0)
            return (int)id;
        n->subs[n->nsubs++] = id;
        events += len + (events[len] == '|');
    }
    return notify_api_register(n);
}

/*
 * No try starts and no retry timer is set from now on (stopping, under the
 * lock that retry_arm holds around its check and timer_add); the timers set
 * before are cancelled here; a try in flight is cut off by libcurl's
 * progress callback within about a second (it sees stopping), and the core
 * waits for its job after this returns.  What is not delivered keeps its
 * row and body: the next start sends it.
 */
static void notify_stop(void *state)
{
    struct notify *n = state;
    pthread_mutex_lock(&n->lock);
    atomic_store(&n->stopping, true);
    for (struct notify_delivery *d = n->live; d; d = d->next) {
        if (d->timer > 0)
            n->host->timer_cancel(n->self, d->timer);
        d->timer = 0;
    }
    pthread_mutex_unlock(&n->lock);
}

/* After stop, and after the core cancelled the plugin's jobs and timers and
 * waited for its jobs: the deliveries still listed (queued, or waiting for
 * a retry) are only freed here; their rows keep them for the next start. */
static void notify_fini(void *state)
{
    struct notify *n = state;
    while (n->live) {
        struct notify_delivery *d = n->live;
        n->live = d->next;
        notify_delivery_free(d);
    }
    pthread_mutex_destroy(&n->lock);
    free(n);
    curl_global_cleanup();
}

TLSBOX_PLUGIN(.name = "notify", .version = "1.2",
              .description =
                  "Webhook and e-mail told of certificate, ACME, OCSP and TLS policy events",
              .settings = notify_settings, .init = notify_init, .start = notify_start,
              .stop = notify_stop, .fini = notify_fini, .migrations = notify_migrations);
