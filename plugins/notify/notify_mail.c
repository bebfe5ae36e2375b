/* E-mail deliveries: a plain-text message made from a delivery's JSON body
 * (the same one a webhook gets), sent through the configured mail server
 * with libcurl's SMTP: STARTTLS required on smtp:// unless notify.smtp_tls
 * says none, implicit TLS on smtps://, AUTH when notify.smtp_user is set,
 * the server's certificate checked against the system's CAs or
 * notify.ca_file.  Header values are stripped of line breaks, so nothing an
 * event carries can add a header or a recipient. */
#include "plugins/notify/notify.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include <tlsbox/xalloc.h>

/* A line of at most @p max bytes of @p s: control characters (line breaks
 * above all) become spaces; longer is cut at a character boundary and
 * ends with "...".  Caller frees. */
static char *one_line(const char *s, size_t max)
{
    size_t n = strlen(s), cut = n;
    if (n > max) {
        cut = max - 3;
        while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
            cut--; /* not inside a UTF-8 sequence */
    }
    char *out = tlsbox_xmalloc(cut + 4);
    for (size_t i = 0; i < cut; i++)
        out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i];
    strcpy(out + cut, n > max ? "..." : "");
    return out;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* @p s as a header value: as is when ASCII, else one RFC 2047 encoded
 * word (=?UTF-8?B?...?=).  Caller frees. */
static char *header_text(const char *s)
{
    size_t n = strlen(s);
    bool ascii = true;
    for (size_t i = 0; i < n; i++)
        ascii &= (unsigned char)s[i] < 0x80;
    if (ascii)
        return tlsbox_xstrdup(s);
    char *out = tlsbox_xmalloc(12 + (n + 2) / 3 * 4 + 3), *o = out;
    o += sprintf(o, "=?UTF-8?B?");
    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned char)s[i] << 16;
        if (i + 1 < n)
            v |= (unsigned char)s[i + 1] << 8;
        if (i + 2 < n)
            v |= (unsigned char)s[i + 2];
        *o++ = b64[v >> 18 & 63];
        *o++ = b64[v >> 12 & 63];
        *o++ = i + 1 < n ? b64[v >> 6 & 63] : '=';
        *o++ = i + 2 < n ? b64[v & 63] : '=';
    }
    strcpy(o, "?=");
    return out;
}

/* What happened, in words, for the subject and the first line. */
static char *summary(const char *event, json_t *data)
{
    const char *name = json_string_value(json_object_get(data, "name"));
    const char *step = json_string_value(json_object_get(data, "step"));
    char *nm = one_line(name ? name : "", 120);
    char *s;
    if (strcmp(event, "cert.changed") == 0)
        s = tlsbox_xasprintf("Certificate %s changed", *nm ? nm : "(unnamed)");
    else if (strcmp(event, "cert.expiring") == 0 && json_is_true(json_object_get(data, "expired")))
        s = tlsbox_xasprintf("Certificate %s has EXPIRED", *nm ? nm : "(unnamed)");
    else if (strcmp(event, "cert.expiring") == 0) {
        long long d = (long long)json_integer_value(json_object_get(data, "days_left"));
        s = d < 1 ? tlsbox_xasprintf("Certificate %s expires within a day", *nm ? nm : "(unnamed)")
                  : tlsbox_xasprintf("Certificate %s expires in %lld day%s", *nm ? nm : "(unnamed)",
                                     d, d == 1 ? "" : "s");
    } else if (strcmp(event, "acme.failed") == 0)
        s = tlsbox_xasprintf("Certificate renewal failed%s%s%s%s", *nm ? " for " : "", nm,
                             step ? " at step " : "", step ? step : "");
    else if (strcmp(event, "ocsp.revoked") == 0)
        s = tlsbox_xasprintf("Certificate %s is REVOKED", *nm ? nm : "(unnamed)");
    else if (strcmp(event, "ocsp.changed") == 0)
        s = tlsbox_xasprintf("Revocation status changed%s%s", *nm ? " for " : "", nm);
    else if (strcmp(event, "policy.changed") == 0)
        s = tlsbox_xstrdup("TLS policy changed");
    else if (strcmp(event, "dh.changed") == 0)
        s = tlsbox_xstrdup("Diffie-Hellman parameters changed");
    else if (strcmp(event, "notify.test") == 0)
        s = tlsbox_xstrdup("Test message");
    else
        s = tlsbox_xstrdup(event);
    free(nm);
    /* A step from an event is shown, never trusted as a header. */
    char *clean = one_line(s, 200);
    free(s);
    return clean;
}

/* RFC 5322 date of @p t in UTC, whatever the locale. */
static void mail_date(time_t t, char *out, size_t n)
{
    static const char days[][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(out, n, "%s, %02d %s %04d %02d:%02d:%02d +0000", days[tm.tm_wday], tm.tm_mday,
             months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

char *notify_mail_message(const char *body, const char *from, const char *to, time_t now,
                          char **subject)
{
    json_error_t je;
    json_t *j = json_loads(body, 0, &je);
    const char *event = json_string_value(json_object_get(j, "event"));
    const char *host = json_string_value(json_object_get(j, "host"));
    const char *at = json_string_value(json_object_get(j, "at"));
    json_t *data = json_object_get(j, "data");
    json_int_t id = json_integer_value(json_object_get(j, "id"));
    char *ev = one_line(event ? event : "?", 64),
         *hs = one_line(host && *host ? host : "tlsbox", 253);
    char *what = summary(ev, data);
    char *subj = tlsbox_xasprintf("[tlsbox %s] %s", hs, what);
    char *subj_h = header_text(subj);
    char *from_h = one_line(from, 254), *to_h = one_line(to, 2000);
    char date[64];
    mail_date(now, date, sizeof date);

    /* The details: each member of the event's data on its own line. */
    size_t cap = 256, len = 0;
    char *details = tlsbox_xmalloc(cap);
    details[0] = '\0';
    const char *key;
    json_t *v;
    json_object_foreach(data, key, v)
    {
        char *val = json_is_string(v) ? tlsbox_xstrdup(json_string_value(v))
                                      : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        char *k1 = one_line(key, 64), *v1 = one_line(val ? val : "", 900);
        size_t need = strlen(k1) + strlen(v1) + 8;
        if (len + need >= cap) {
            cap = (len + need) * 2;
            details = tlsbox_xrealloc(details, cap);
        }
        len += (size_t)snprintf(details + len, cap - len, "  %s: %s\r\n", k1, v1);
        free(k1);
        free(v1);
        free(val);
    }
    char *at1 = one_line(at ? at : "", 32);
    /* The Message-ID's right side is the box; its left, unique per delivery. */
    char *msg =
        tlsbox_xasprintf("Date: %s\r\n"
                         "From: tlsbox <%s>\r\n"
                         "To: %s\r\n"
                         "Subject: %s\r\n"
                         "Message-ID: <tlsbox.%lld.%lld@%s>\r\n"
                         "MIME-Version: 1.0\r\n"
                         "Content-Type: text/plain; charset=utf-8\r\n"
                         "Content-Transfer-Encoding: 8bit\r\n"
                         "Auto-Submitted: auto-generated\r\n"
                         "X-Tlsbox-Event: %s\r\n"
                         "\r\n"
                         "%s.\r\n"
                         "\r\n"
                         "Event: %s\r\n"
                         "Box:   %s\r\n"
                         "At:    %s\r\n"
                         "%s%s"
                         "\r\n"
                         "-- \r\n"
                         "Sent by tlsbox's notify plugin (delivery %lld). The addresses and\r\n"
                         "events are set on the Plugins page of the box's web UI.\r\n",
                         date, from_h, to_h, subj_h, (long long)id, (long long)now, hs, ev, what,
                         ev, hs, at1, len ? "\r\nDetails:\r\n" : "", details, (long long)id);
    if (subject)
        *subject = subj;
    else
        free(subj);
    free(at1);
    free(details);
    free(from_h);
    free(to_h);
    free(subj_h);
    free(what);
    free(ev);
    free(hs);
    json_decref(j);
    return msg;
}

/* libcurl reads the message from here. */
struct reader {
    const char *p;
    size_t left;
};

static size_t on_read(char *buf, size_t size, size_t nitems, void *arg)
{
    struct reader *r = arg;
    size_t n = size * nitems < r->left ? size * nitems : r->left;
    memcpy(buf, r->p, n);
    r->p += n;
    r->left -= n;
    return n;
}

struct cancel {
    struct notify *n;
    struct tlsbox_job *job;
};

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    struct cancel *c = arg;
    (void)dt, (void)dn, (void)ut, (void)un;
    return notify_stopping(c->n, c->job) ? 1 : 0;
}

/*
 * Which recipients the server refused.  libcurl sends each RCPT TO and
 * waits for its reply before the next (no pipelining), so the reply read
 * after a "RCPT TO:<a>" line is a's.  libcurl's debug callback is the only
 * place that shows both; every other line (AUTH's above all) is passed by
 * unread and nothing is kept of it.
 */
struct rcpt_watch {
    char pending[256]; /* the address of the RCPT TO awaiting its reply */
    char *refused;     /* "a@x (SMTP 550 5.1.1 no such user), ..." */
    size_t nrefused;
    char *later; /* "a@x,b@y": those refused with a 4xx, which may be taken later */
};

/* Append @p item to the list *@p list, after @p sep. */
static void list_append(char **list, const char *sep, const char *item)
{
    char *more = tlsbox_xasprintf("%s%s%s", *list ? *list : "", *list ? sep : "", item);
    free(*list);
    *list = more;
}

static int on_debug(CURL *c, curl_infotype type, char *data, size_t size, void *arg)
{
    struct rcpt_watch *w = arg;
    (void)c;
    if (type == CURLINFO_HEADER_OUT && size > 9 && strncasecmp(data, "RCPT TO:<", 9) == 0) {
        const char *end = memchr(data + 9, '>', size - 9);
        size_t n = end ? (size_t)(end - data - 9) : 0;
        if (n >= sizeof w->pending)
            n = sizeof w->pending - 1;
        memcpy(w->pending, data + 9, n);
        w->pending[n] = 0;
        return 0;
    }
    /* A reply's last line is "NNN text"; "NNN-text" lines come before it. */
    if (type != CURLINFO_HEADER_IN || !w->pending[0] || size < 4 || data[3] != ' ')
        return 0;
    if (data[0] >= '4' && data[0] <= '5') {
        char *line = tlsbox_xmalloc(size + 1);
        memcpy(line, data, size);
        line[size] = 0;
        char *text = one_line(line, 120);
        for (size_t k = strlen(text); k > 0 && text[k - 1] == ' '; k--)
            text[k - 1] = 0; /* the CRLF, made spaces */
        char *item = tlsbox_xasprintf("%s (SMTP %s)", w->pending, text);
        list_append(&w->refused, ", ", item);
        free(item);
        w->nrefused++;
        /* 4xx: "not now" (greylisting, a full mailbox, a busy server). */
        if (data[0] == '4')
            list_append(&w->later, ",", w->pending);
        free(text);
        free(line);
    }
    w->pending[0] = 0;
    return 0;
}

bool notify_mail_configured(struct notify *n)
{
    char *to = n->host->setting_get(n->self, "mail_to");
    char *url = n->host->setting_get(n->self, "smtp_url");
    bool on = to && *to && url && *url;
    free(to);
    free(url);
    return on;
}

char *notify_mail_origin(struct notify *n)
{
    char *url = n->host->setting_get(n->self, "smtp_url");
    char *o = url && *url ? notify_url_origin(url) : NULL;
    free(url);
    return o;
}

char *notify_box_name(struct notify *n)
{
    char *host = n->host->setting_get(n->self, "core.hostname");
    char sys[256] = "";
    if ((!host || !*host) && gethostname(sys, sizeof sys - 1) == 0) {
        free(host);
        host = tlsbox_xstrdup(sys);
    }
    if (!host || !*host) {
        free(host);
        host = tlsbox_xstrdup("tlsbox");
    }
    return host;
}

int notify_mail_send(struct notify *n, struct tlsbox_job *job, const char *body,
                     const char *only_to, long timeout_s, long *smtp_status, char **refused,
                     char **later, char **err)
{
    char *url = n->host->setting_get(n->self, "smtp_url");
    char *tls = n->host->setting_get(n->self, "smtp_tls");
    char *user = n->host->setting_get(n->self, "smtp_user");
    char *pass = n->host->setting_get(n->self, "smtp_password");
    char *ca = n->host->setting_get(n->self, "ca_file");
    char *to = n->host->setting_get(n->self, "mail_to");
    char *from = n->host->setting_get(n->self, "mail_from");
    char *box = notify_box_name(n);
    char *sender = from && *from ? tlsbox_xstrdup(from) : tlsbox_xasprintf("tlsbox@%s", box);
    char *origin = url ? notify_url_origin(url) : tlsbox_xstrdup("?");
    *smtp_status = 0;
    *refused = NULL;
    *later = NULL;
    struct rcpt_watch watch = {.refused = NULL};
    int rc = 0;

    /* smtp://host[:port] names no EHLO domain: the box's own. */
    const char *sep = url ? strstr(url, "://") : NULL;
    bool has_path = sep && strchr(sep + 3, '/') && strchr(sep + 3, '/')[1];
    char *full = !url || !*url ? NULL
                 : has_path
                     ? tlsbox_xstrdup(url)
                     : tlsbox_xasprintf("%s%s%s", url, url[strlen(url) - 1] == '/' ? "" : "/", box);
    struct curl_slist *rcpt = NULL;
    size_t nrcpt = 0;
    char *list = tlsbox_xstrdup(only_to ? only_to : to ? to : ""), *save = NULL;
    for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char *a = tlsbox_xasprintf("<%s>", t);
        rcpt = curl_slist_append(rcpt, a);
        free(a);
        nrcpt++;
    }
    free(list);
    char *msg = notify_mail_message(body, sender, to ? to : "", time(NULL), NULL);
    char *from_env = tlsbox_xasprintf("<%s>", sender);
    CURL *c = curl_easy_init();
    if (!c || !full || !nrcpt) {
        *err =
            tlsbox_xstrdup(!c ? "libcurl: cannot make a handle"
                              : "notify.mail_to or notify.smtp_url is empty: nothing to send to");
        rc = !c ? -ENOMEM : -ENOENT;
        goto out;
    }
    struct reader r = {msg, strlen(msg)};
    struct cancel cc = {n, job};
    curl_easy_setopt(c, CURLOPT_URL, full);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "smtp,smtps");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    /* smtps:// is TLS from the start; on smtp:// STARTTLS is required (a
     * server that does not offer it gets nothing) unless smtp_tls = none. */
    curl_easy_setopt(c, CURLOPT_USE_SSL,
                     tls && strcmp(tls, "none") == 0 ? (long)CURLUSESSL_NONE
                                                     : (long)CURLUSESSL_ALL);
    if (ca && *ca)
        curl_easy_setopt(c, CURLOPT_CAINFO, ca);
    if (user && *user) {
        curl_easy_setopt(c, CURLOPT_USERNAME, user);
        curl_easy_setopt(c, CURLOPT_PASSWORD, pass ? pass : "");
    }
    curl_easy_setopt(c, CURLOPT_MAIL_FROM, from_env);
    curl_easy_setopt(c, CURLOPT_MAIL_RCPT, rcpt);
    /* One refused recipient does not keep the mail from the others; the
     * delivery says whom the server refused, and why. */
    curl_easy_setopt(c, CURLOPT_MAIL_RCPT_ALLLOWFAILS, 1L);
    curl_easy_setopt(c, CURLOPT_DEBUGFUNCTION, on_debug);
    curl_easy_setopt(c, CURLOPT_DEBUGDATA, &watch);
    curl_easy_setopt(c, CURLOPT_VERBOSE, 1L); /* else the debug callback is not called */
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(c, CURLOPT_READDATA, &r);
    curl_easy_setopt(c, CURLOPT_INFILESIZE, (long)r.left);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_s * 1000);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_s * 1000);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, &cc);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    CURLcode cr = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, smtp_status);
    if (cr != CURLE_OK) {
        /* A 4xx or 5xx reply is the server's refusal; an earlier good one
         * (220 greeting, 250 EHLO) is not why it failed: not shown. */
        char code[32] = "";
        if (*smtp_status >= 400)
            snprintf(code, sizeof code, " (SMTP %ld)", *smtp_status);
        else
            *smtp_status = 0;
        if (cr == CURLE_ABORTED_BY_CALLBACK)
            *err = tlsbox_xasprintf("%s: cut off: notify stops", origin);
        else if (cr == CURLE_SSL_CACERT_BADFILE)
            *err = tlsbox_xasprintf("%s: notify.ca_file %s cannot be read as PEM certificates",
                                    origin, ca);
        else if (watch.nrefused == nrcpt)
            *err = tlsbox_xasprintf("%s: no recipient accepted: %s", origin, watch.refused);
        else if (cr == CURLE_USE_SSL_FAILED)
            *err = tlsbox_xasprintf("%s: the server offers no STARTTLS (notify.smtp_tls "
                                    "= none sends in plain text)%s",
                                    origin, code);
        else
            *err = tlsbox_xasprintf("%s: %s%s", origin, curl_easy_strerror(cr), code);
        rc = cr == CURLE_OPERATION_TIMEDOUT    ? -ETIMEDOUT
             : cr == CURLE_ABORTED_BY_CALLBACK ? -ECANCELED
                                               : -EIO;
    } else if (watch.refused) {
        *refused = watch.refused;
        watch.refused = NULL;
        *later = watch.later;
        watch.later = NULL;
    }
out:
    free(watch.refused);
    free(watch.later);
    if (c)
        curl_easy_cleanup(c);
    curl_slist_free_all(rcpt);
    free(msg);
    free(from_env);
    free(full);
    free(origin);
    free(sender);
    free(box);
    free(from);
    free(to);
    free(ca);
    free(tls);
    free(url);
    free(user);
    if (pass)
        tlsbox_wipe_free_str(pass);
    return rc;
}
