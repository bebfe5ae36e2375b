/* Building, signing and POSTing one webhook delivery; queueing a delivery
 * per channel (webhook, e-mail) and retrying each. */
#include "plugins/notify/notify.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <gnutls/crypto.h>
#include <jansson.h>

#include <tlsbox/xalloc.h>

char *notify_signature(const char *secret, const char *body, size_t len)
{
    unsigned char mac[32];
    if (gnutls_hmac_fast(GNUTLS_MAC_SHA256, secret, strlen(secret), body, len, mac) < 0)
        return NULL;
    char *out = tlsbox_xmalloc(7 + 2 * sizeof mac + 1);
    memcpy(out, "sha256=", 7);
    for (size_t i = 0; i < sizeof mac; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", mac[i]);
    return out;
}

char *notify_url_origin(const char *url)
{
    const char *sep = strstr(url, "://");
    if (!sep)
        return tlsbox_xstrdup("?");
    const char *host = sep + 3;
    /* Up to the path, and never a user:password@ before the host. */
    size_t len = strcspn(host, "/?#");
    const char *at = memchr(host, '@', len);
    if (at) {
        len -= (size_t)(at + 1 - host);
        host = at + 1;
    }
    return tlsbox_xasprintf("%.*s://%.*s", (int)(sep - url), url, (int)len, host);
}

/* The webhook's answer body is not needed: read and dropped. */
static size_t on_data(char *p, size_t size, size_t nmemb, void *arg)
{
    (void)p, (void)arg;
    return size * nmemb;
}

struct cancel_ctx {
    struct notify *n;
    struct tlsbox_job *job;
};

static int on_cancel(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    struct cancel_ctx *c = arg;
    (void)dt, (void)dn, (void)ut, (void)un;
    return notify_stopping(c->n, c->job) ? 1 : 0;
}

bool notify_stopping(struct notify *n, struct tlsbox_job *job)
{
    return atomic_load(&n->stopping) || (job && n->host->job_cancelled(job));
}

int notify_post(struct notify *n, struct tlsbox_job *job, const char *url, const char *secret,
                const char *event, const char *body, long timeout_s, long *http_status, char **err)
{
    *http_status = 0;
    CURL *c = curl_easy_init();
    if (!c) {
        *err = tlsbox_xstrdup("libcurl: cannot make a handle");
        return -ENOMEM;
    }
    struct curl_slist *hdr = NULL;
    char *ev = tlsbox_xasprintf("X-Tlsbox-Event: %s", event);
    hdr = curl_slist_append(hdr, "Content-Type: application/json");
    hdr = curl_slist_append(hdr, ev);
    char *sig = NULL, *sig_hdr = NULL;
    if (secret && *secret) {
        sig = notify_signature(secret, body, strlen(body));
        if (sig) {
            sig_hdr = tlsbox_xasprintf("X-Tlsbox-Signature: %s", sig);
            hdr = curl_slist_append(hdr, sig_hdr);
        }
    }
    struct cancel_ctx cc = {n, job};
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_s * 1000);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_s * 1000);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "tlsbox-notify/" PACKAGE_VERSION);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_cancel);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &cc);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    char *ca = n->host->setting_get(n->self, "ca_file");
    if (ca && *ca)
        curl_easy_setopt(c, CURLOPT_CAINFO, ca);
    CURLcode cr = curl_easy_perform(c);
    int rc = 0;
    char *origin = notify_url_origin(url);
    if (cr != CURLE_OK) {
        /* Only the origin is named: the rest of the URL may be its key. */
        if (cr == CURLE_SSL_CACERT_BADFILE)
            *err = tlsbox_xasprintf("%s: notify.ca_file %s cannot be read as PEM certificates",
                                    origin, ca);
        else
            *err = tlsbox_xasprintf("%s: %s", origin,
                                    cr == CURLE_ABORTED_BY_CALLBACK ? "cut off: notify stops"
                                                                    : curl_easy_strerror(cr));
        rc = cr == CURLE_OPERATION_TIMEDOUT    ? -ETIMEDOUT
             : cr == CURLE_ABORTED_BY_CALLBACK ? -ECANCELED
                                               : -EIO;
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, http_status);
        if (*http_status < 200 || *http_status > 299) {
            *err = tlsbox_xasprintf("%s answered HTTP %ld", origin, *http_status);
            rc = -EPROTO;
        }
    }
    free(origin);
    free(ca);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    free(ev);
    free(sig); /* sent in the clear: nothing to wipe */
    free(sig_hdr);
    return rc;
}

/* Forget @p d: out of the plugin's list, freed. */
static void delivery_done(struct notify_delivery *d)
{
    struct notify *n = d->n;
    pthread_mutex_lock(&n->lock);
    struct notify_delivery **pp = &n->live;
    while (*pp && *pp != d)
        pp = &(*pp)->next;
    if (*pp)
        *pp = d->next;
    pthread_mutex_unlock(&n->lock);
    notify_delivery_free(d);
}

void notify_delivery_free(void *arg)
{
    struct notify_delivery *d = arg;
    if (!d)
        return;
    free(d->event);
    free(d->body);
    free(d->rcpt);
    free(d);
}

/* The wait before try @p try + 1: retry_seconds, then twice and four
 * times that. */
static long retry_wait(const struct notify *n, int try)
{
    return n->host->setting_get_int(n->self, "retry_seconds", 30) << (try - 1);
}

/* Forget @p d when notify stops before its next try: its row keeps its
 * body, and the next start sends it (notify_resume). */
static void delivery_keep(struct notify_delivery *d)
{
    d->n->host->log(d->n->self, TLSBOX_LOG_INFO,
                    "%s (delivery %lld): notify stops; its next try follows the next start",
                    d->event, (long long)d->row);
    delivery_done(d);
}

/*
 * Set the timer that runs the next try of @p d in @p wait_s; 0, or a
 * negative errno when notify or tlsboxd stops (the caller then keeps d for
 * the next start: delivery_keep).  On 0 the last use of @p d by this try:
 * the timer may fire on another thread at once and free it, so the store and
 * the log must be told before.  The stopping check and timer_add are one
 * step under n->lock, which the stop hook takes to set stopping and cancel
 * the timers: a timer set after the core cancelled the plugin's timers
 * would fire into freed state after fini.
 */
static int retry_arm(struct notify_delivery *d, long wait_s)
{
    struct notify *n = d->n;
    int64_t id = -ESHUTDOWN;
    pthread_mutex_lock(&n->lock);
    if (!atomic_load(&n->stopping))
        id = n->host->timer_add(n->self, "notify-retry", (uint64_t)wait_s * 1000, 0, 0,
                                notify_deliver_job, d);
    d->timer = id > 0 ? id : 0;
    pthread_mutex_unlock(&n->lock);
    return id > 0 ? 0 : (int)id;
}

/*
 * Mailed, but some recipients said "not now" (4xx: greylisting, a full
 * mailbox): those alone get the next try, so nobody gets the mail twice.
 * Returns whether a next try follows (set, or kept for the next start);
 * else the delivery is done.
 */
static bool mail_retry_later(struct notify_delivery *d, int try, long code, const char *refused,
                             char **later)
{
    struct notify *n = d->n;
    if (!*later || try >= NOTIFY_TRIES)
        return false;
    free(d->rcpt);
    d->rcpt = *later;
    *later = NULL; /* d owns it now */
    /* All of it before the timer (retry_arm); the store knows whom the next
     * try is for, should it follow a stop.  Whom first: a row that says
     * "retrying" already names only those left, so neither a reader nor a
     * start after a crash between the two writes mails the others again. */
    long wait_s = retry_wait(n, try);
    char *note = tlsbox_xasprintf("refused: %s; trying again for %s", refused, d->rcpt);
    notify_store_keep(n, d->row, d->body, d->rcpt);
    notify_store_update(n, d->row, "retrying", try, code, note);
    n->host->log(n->self, TLSBOX_LOG_WARN,
                 "%s mailed (try %d, SMTP %ld); refused: %s; next try for %s in %ld s", d->event,
                 try, code, refused, d->rcpt, wait_s);
    free(note);
    if (retry_arm(d, wait_s) < 0)
        delivery_keep(d);
    return true;
}

/*
 * One try of delivery @p arg, as a job.  A retry is a one-shot timer that
 * runs this again later: waiting in the job would hold one of the few
 * maintenance threads (ACME, OCSP, DH) for minutes while a webhook is down.
 */
void notify_deliver_job(void *arg, struct tlsbox_job *job)
{
    struct notify_delivery *d = arg;
    struct notify *n = d->n;
    if (notify_stopping(n, job)) {
        delivery_keep(d); /* not tried: its row stays as it was */
        return;
    }
    int try = ++d->tries;
    /* Read at each try: a URL or server mended meanwhile is used by the retry. */
    long timeout_s = n->host->setting_get_int(n->self, "timeout_seconds", 10);
    long code = 0;
    char *err = NULL, *refused = NULL, *later = NULL;
    int rc;
    if (d->mail) {
        rc = notify_mail_send(n, job, d->body, d->rcpt, timeout_s, &code, &refused, &later, &err);
    } else {
        char *url = n->host->setting_get(n->self, "url");
        char *secret = n->host->setting_get(n->self, "secret");
        rc = url && *url
                 ? notify_post(n, job, url, secret, d->event, d->body, timeout_s, &code, &err)
                 : (err = tlsbox_xstrdup("notify.url is empty: nothing to send to"), -ENOENT);
        if (url)
            tlsbox_wipe_free_str(url);
        if (secret)
            tlsbox_wipe_free_str(secret);
    }
    const char *how = d->mail ? "mailed" : "delivered", *proto = d->mail ? "SMTP" : "HTTP";
    if (rc == -ECANCELED) {
        /* Cut off by the stop, not refused: the try does not count. */
        notify_store_update(n, d->row, try > 1 ? "retrying" : "queued", try - 1, 0, err);
        delivery_keep(d);
        free(err);
        return;
    }
    if (rc == 0 && mail_retry_later(d, try, code, refused, &later)) {
        free(refused);
        return;
    }
    free(later);
    if (rc == 0) {
        /* Some recipients refused for good (5xx), or still after the last
         * try: told, not retried. */
        char *note = refused ? tlsbox_xasprintf("refused: %s", refused) : NULL;
        notify_store_update(n, d->row, "delivered", try, code, note);
        n->host->metric_add(n->m_sent, 1);
        n->host->log(n->self, note ? TLSBOX_LOG_WARN : TLSBOX_LOG_INFO,
                     "%s %s (try %d, %s %ld)%s%s", d->event, how, try, proto, code,
                     note ? "; " : "", note ? note : "");
        free(note);
        free(refused);
        delivery_done(d);
        return;
    }
    if (try < NOTIFY_TRIES && rc != -ENOENT) {
        /* Told before the timer is set (retry_arm): after it, d may be gone. */
        long wait_s = retry_wait(n, try);
        notify_store_update(n, d->row, "retrying", try, code, err);
        n->host->log(n->self, TLSBOX_LOG_WARN, "%s not %s: %s (try %d of %d); next in %ld s",
                     d->event, how, err, try, NOTIFY_TRIES, wait_s);
        if (retry_arm(d, wait_s) < 0)
            delivery_keep(d);
        free(err);
        return;
    }
    notify_store_update(n, d->row, "failed", try, code, err);
    n->host->metric_add(n->m_failed, 1);
    n->host->log(n->self, TLSBOX_LOG_WARN, "%s not %s: %s (try %d of %d); given up", d->event, how,
                 err, try, NOTIFY_TRIES);
    delivery_done(d);
    free(err);
}

/*
 * List @p d and submit its next try as a job; 0, or a negative errno when
 * notify or tlsboxd stops: d is then forgotten, its row kept for the next
 * start.  Listed until its last try: one whose job never runs (the plugin
 * stopped) is freed by fini.  Submitted outside n->lock: a job may run at
 * once on this thread (the unit tests' host), and the core waits for the
 * event callbacks, API handlers and start hook that call this before it
 * cancels the plugin's jobs.
 */
static int delivery_submit(struct notify_delivery *d)
{
    struct notify *n = d->n;
    pthread_mutex_lock(&n->lock);
    bool stopping = atomic_load(&n->stopping);
    if (!stopping) {
        d->next = n->live;
        n->live = d;
    }
    pthread_mutex_unlock(&n->lock);
    int64_t id = stopping
                     ? -ESHUTDOWN
                     : n->host->job_submit(n->self, "notify-deliver", notify_deliver_job, d, NULL);
    if (id < 0) {
        delivery_keep(d);
        return (int)id;
    }
    return 0;
}

/* Queue one delivery of @p event (its @p data, borrowed) to the webhook or
 * by @p mail, kept in the store under @p origin.  0 or a negative errno. */
static int queue_one(struct notify *n, const char *event, json_t *data, const char *host,
                     const char *at, bool mail, const char *origin, char **err)
{
    int64_t row = notify_store_add(n, event, origin);
    json_t *j = json_pack("{s:s,s:O,s:s,s:s,s:I}", "event", event, "data", data, "host", host, "at",
                          at, "id", (json_int_t)row);
    struct notify_delivery *dl = tlsbox_xcalloc(1, sizeof *dl);
    dl->n = n;
    dl->event = tlsbox_xstrdup(event);
    dl->body = json_dumps(j, JSON_COMPACT);
    dl->mail = mail;
    dl->row = row;
    json_decref(j);
    /* Kept before the first try: a stop before the last leaves it for the
     * next start. */
    notify_store_keep(n, row, dl->body, NULL);
    int rc = delivery_submit(dl);
    if (rc < 0 && err && !*err)
        *err = tlsbox_xasprintf("cannot queue the delivery now (%s): it is sent after the next "
                                "start",
                                strerror(-rc));
    return rc;
}

void notify_resume(struct notify *n)
{
    struct notify_delivery *d = notify_store_pending(n);
    while (d) {
        struct notify_delivery *next = d->next;
        d->n = n;
        n->host->log(n->self, TLSBOX_LOG_INFO, "%s (delivery %lld): sent again after a stop",
                     d->event, (long long)d->row);
        delivery_submit(d);
        d = next;
    }
}

int notify_queue_on(struct notify *n, const char *event, const char *data, unsigned channels,
                    char **err)
{
    char *url = channels & NOTIFY_WEBHOOK ? n->host->setting_get(n->self, "url") : NULL;
    char *origin = url && *url ? notify_url_origin(url) : NULL;
    if (url)
        tlsbox_wipe_free_str(url);
    char *mail_origin =
        channels & NOTIFY_MAIL && notify_mail_configured(n) ? notify_mail_origin(n) : NULL;
    if (!origin && !mail_origin) {
        if (err)
            *err = tlsbox_xstrdup(channels == NOTIFY_MAIL
                                      ? "no e-mail: notify.mail_to or notify.smtp_url is empty"
                                  : channels == NOTIFY_WEBHOOK
                                      ? "notify.url is empty: no webhook to tell"
                                      : "notify.url is empty: no webhook to tell (and no e-mail: "
                                        "notify.mail_to or notify.smtp_url is empty)");
        return -ENOENT;
    }
    json_error_t je;
    json_t *d = data && *data ? json_loads(data, 0, &je) : json_object();
    if (!d)
        d = json_null();
    char *host = notify_box_name(n);
    char at[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
    /* One delivery per channel: each has its own tries and row. */
    int rc = 0, r;
    if (origin && (r = queue_one(n, event, d, host, at, false, origin, err)) < 0)
        rc = r;
    if (mail_origin && (r = queue_one(n, event, d, host, at, true, mail_origin, err)) < 0)
        rc = r;
    json_decref(d);
    free(host);
    free(origin);
    free(mail_origin);
    return rc;
}

int notify_queue(struct notify *n, const char *event, const char *data, char **err)
{
    return notify_queue_on(n, event, data, NOTIFY_WEBHOOK | NOTIFY_MAIL, err);
}
