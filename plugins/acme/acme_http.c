/*
 * The ACME HTTP client (libcurl, GnuTLS flavour): directory, nonces, signed
 * POSTs with badNonce retry, problem documents, Retry-After.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/acme/acme.h"

/* Nothing an ACME server legitimately sends comes near this. */
#define HTTP_MAX_BODY (1024 * 1024)
#define HTTP_MAX_BODY_TEXT "1 MiB"

/* Forget every header kept from an earlier response of the same transfer. */
static void http_forget_headers(struct acme_resp *r)
{
    free(r->location);
    free(r->nonce);
    free(r->content_type);
    r->location = r->nonce = r->content_type = NULL;
    r->retry_after = 0;
    for (size_t i = 0; i < r->nalternates; i++)
        free(r->alternates[i]);
    memset(r->alternates, 0, sizeof(r->alternates));
    r->nalternates = 0;
}

void acme_resp_free(struct acme_resp *r)
{
    free(r->body);
    json_decref(r->json);
    http_forget_headers(r);
    memset(r, 0, sizeof(*r));
}

static size_t http_on_body(char *ptr, size_t size, size_t nmemb, void *arg)
{
    struct acme_resp *r = arg;
    size_t n = size * nmemb;
    if (r->len + n > HTTP_MAX_BODY) {
        r->too_large = true; /* said so by http_do: libcurl only calls it a write error */
        return 0;
    }
    r->body = tlsbox_xrealloc(r->body, r->len + n + 1);
    memcpy(r->body + r->len, ptr, n);
    r->len += n;
    r->body[r->len] = '\0';
    return n;
}

/* Header value of line @p p (length @p n) when it is header @p name, as a new string. */
static char *http_header_value(const char *p, size_t n, const char *name)
{
    size_t nl = strlen(name);
    if (n <= nl || strncasecmp(p, name, nl) != 0 || p[nl] != ':')
        return NULL;
    p += nl + 1;
    n -= nl + 1;
    while (n && (*p == ' ' || *p == '\t')) {
        p++;
        n--;
    }
    while (n && (p[n - 1] == '\r' || p[n - 1] == '\n' || p[n - 1] == ' '))
        n--;
    return tlsbox_xstrndup(p, n);
}

static void http_add_link(struct acme_resp *r, const char *v)
{
    /* <url>;rel="alternate" (one per header line; pebble and Boulder do so). */
    if (v[0] != '<' || !strstr(v, "rel=\"alternate\"") ||
        r->nalternates >= sizeof(r->alternates) / sizeof(r->alternates[0]))
        return;
    const char *end = strchr(v, '>');
    if (end)
        r->alternates[r->nalternates++] = tlsbox_xstrndup(v + 1, (size_t)(end - v - 1));
}

static size_t http_on_header(char *p, size_t size, size_t nmemb, void *arg)
{
    struct acme_resp *r = arg;
    size_t n = size * nmemb;
    char *v;
    if (n >= 5 && strncmp(p, "HTTP/", 5) == 0) {
        /* A new response: the one before was interim (100 Continue, or a 103
         * Early Hints, whose Link headers would otherwise take the slots of
         * the final response's alternates). */
        http_forget_headers(r);
        return n;
    }
    if ((v = http_header_value(p, n, "Location"))) {
        free(r->location);
        r->location = v;
    } else if ((v = http_header_value(p, n, "Replay-Nonce"))) {
        free(r->nonce);
        r->nonce = v;
    } else if ((v = http_header_value(p, n, "Content-Type"))) {
        free(r->content_type);
        r->content_type = v;
    } else if ((v = http_header_value(p, n, "Retry-After"))) {
        r->retry_after = acme_parse_retry_after(v, time(NULL));
        free(v);
    } else if ((v = http_header_value(p, n, "Link"))) {
        http_add_link(r, v);
        free(v);
    }
    return n;
}

static int http_on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    struct acme_client *c = arg;
    (void)dt;
    (void)dn;
    (void)ut;
    (void)un;
    /* A zero-length sleep only asks "cancelled?": a stop never waits for a slow CA. */
    return c->sleep && c->sleep(c->sleep_arg, 0) ? 1 : 0;
}

bool acme_client_sleep(struct acme_client *c, uint64_t ms)
{
    if (c->sleep)
        return c->sleep(c->sleep_arg, ms);
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    return false;
}

int acme_client_init(struct acme_client *c, const char *directory_url, const char *ca_file)
{
    memset(c, 0, sizeof(*c));
    c->curl = curl_easy_init();
    if (!c->curl)
        return -ENOMEM;
    c->directory_url = tlsbox_xstrdup(directory_url);
    c->ca_file = ca_file && *ca_file ? tlsbox_xstrdup(ca_file) : NULL;
    c->max_bad_nonce = 30;
    return 0;
}

void acme_client_free(struct acme_client *c)
{
    if (c->curl)
        curl_easy_cleanup(c->curl);
    free(c->directory_url);
    free(c->ca_file);
    json_decref(c->dir);
    free(c->nonce);
    if (c->account_key)
        gnutls_privkey_deinit(c->account_key);
    json_decref(c->jwk);
    free(c->thumbprint);
    free(c->kid);
    memset(c, 0, sizeof(*c));
}

/* One HTTP exchange.  @p body NULL and @p head false = GET. */
static int http_do(struct acme_client *c, const char *step, const char *url, bool head,
                   const char *body, const char *accept, struct acme_resp *r, struct acme_err *e)
{
    CURL *h = c->curl;
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *hdrs = NULL;
    acme_resp_free(r);
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 60000L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 30L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "tlsbox-acme/" PACKAGE_VERSION);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, http_on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, http_on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    if (c->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    if (head) {
        curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
    } else if (body) {
        hdrs = curl_slist_append(hdrs, "Content-Type: application/jose+json");
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    if (accept) {
        char *a = tlsbox_xasprintf("Accept: %s", accept);
        hdrs = curl_slist_append(hdrs, a);
        free(a);
    }
    hdrs = curl_slist_append(hdrs, "Expect:");
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    c->requests++;
    CURLcode cc = curl_easy_perform(h);
    curl_slist_free_all(hdrs);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    if (cc != CURLE_OK) {
        if (cc == CURLE_ABORTED_BY_CALLBACK) {
            acme_err_set(e, step, "tlsbox:cancelled", "%s: cancelled (stopping)", url);
            return -ECANCELED;
        }
        if (cc == CURLE_WRITE_ERROR && r->too_large) {
            /* Still a transport error (-EIO): it says nothing about the order. */
            acme_err_set(e, step, "tlsbox:too-large",
                         "%s: the CA's answer is larger than " HTTP_MAX_BODY_TEXT
                         " (no ACME answer comes near that); it was not read further",
                         url);
            return -EIO;
        }
        acme_err_set(e, step, "tlsbox:connection", "%s: %s", url,
                     errbuf[0] ? errbuf : curl_easy_strerror(cc));
        return -EIO;
    }
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->body && r->content_type && strstr(r->content_type, "json"))
        r->json = json_loadb(r->body, r->len, 0, NULL);
    if (r->nonce) {
        free(c->nonce);
        c->nonce = tlsbox_xstrdup(r->nonce);
    }
    return 0;
}

/* Fill @p e from a non-2xx response. */
static int http_problem(const char *step, const char *url, struct acme_resp *r, struct acme_err *e)
{
    const char *type = json_string_value(json_object_get(r->json, "type"));
    const char *detail = json_string_value(json_object_get(r->json, "detail"));
    char *sub = NULL;
    /* Show the first subproblem too: it usually names the failing identifier. */
    json_t *subs = json_object_get(r->json, "subproblems");
    if (json_is_array(subs) && json_array_size(subs) > 0) {
        json_t *s0 = json_array_get(subs, 0);
        const char *sd = json_string_value(json_object_get(s0, "detail"));
        if (sd)
            sub = tlsbox_xasprintf(" (%s)", sd);
    }
    if (type || detail)
        acme_err_set(e, step, type ? type : "about:blank", "%s%s", detail ? detail : "",
                     sub ? sub : "");
    else
        acme_err_set(e, step, "tlsbox:http", "%s: HTTP %ld with no problem document", url,
                     r->status);
    free(sub);
    e->http_status = r->status;
    e->retry_after = r->retry_after;
    return -EPROTO;
}

int acme_get(struct acme_client *c, const char *url_in, struct acme_resp *r, struct acme_err *e)
{
    /* The URL may point into the previous response held by @p r, which is reset first. */
    char *url = tlsbox_xstrdup(url_in);
    int ret = http_do(c, e && e->step[0] ? e->step : "get", url, false, NULL, NULL, r, e);
    if (ret == 0 && (r->status < 200 || r->status > 299))
        ret = http_problem(e && e->step[0] ? e->step : "get", url, r, e);
    free(url);
    return ret;
}

int acme_client_directory(struct acme_client *c, struct acme_err *e)
{
    if (c->dir)
        return 0;
    struct acme_resp r = {0};
    int ret = http_do(c, "directory", c->directory_url, false, NULL, NULL, &r, e);
    if (ret < 0)
        goto out;
    if (r.status != 200) {
        ret = http_problem("directory", c->directory_url, &r, e);
        goto out;
    }
    if (!json_is_object(r.json) || !json_is_string(json_object_get(r.json, "newNonce")) ||
        !json_is_string(json_object_get(r.json, "newAccount")) ||
        !json_is_string(json_object_get(r.json, "newOrder"))) {
        acme_err_set(e, "directory", "tlsbox:directory",
                     "%s is not an ACME directory (no newNonce/newAccount/newOrder)",
                     c->directory_url);
        ret = -EPROTO;
        goto out;
    }
    c->dir = json_incref(r.json);
out:
    acme_resp_free(&r);
    return ret;
}

const char *acme_client_dir_url(struct acme_client *c, const char *name)
{
    return json_string_value(json_object_get(c->dir, name));
}

static int http_new_nonce(struct acme_client *c, const char *step, struct acme_err *e)
{
    struct acme_resp r = {0};
    const char *url = acme_client_dir_url(c, "newNonce");
    int ret = http_do(c, step, url, true, NULL, NULL, &r, e);
    if (ret == 0 && !r.nonce) {
        acme_err_set(e, step, "tlsbox:nonce", "%s gave no Replay-Nonce (HTTP %ld)", url, r.status);
        ret = -EPROTO;
    }
    acme_resp_free(&r);
    return ret;
}

static bool http_is_problem(const struct acme_resp *r, const char *suffix)
{
    const char *type = json_string_value(json_object_get(r->json, "type"));
    if (!type)
        return false;
    size_t tl = strlen(type), sl = strlen(suffix);
    return tl >= sl && strcmp(type + tl - sl, suffix) == 0;
}

static int http_post(struct acme_client *c, const char *step, const char *url, const char *payload,
                     const char *accept, struct acme_resp *r, struct acme_err *e)
{
    int ret = acme_client_directory(c, e);
    if (ret < 0)
        return ret;
    for (unsigned attempt = 0;; attempt++) {
        if (!c->nonce && (ret = http_new_nonce(c, step, e)) < 0)
            return ret;
        char *nonce = c->nonce;
        c->nonce = NULL; /* each nonce is used once */
        char *jws = acme_jws(c->account_key, c->kid, nonce, url, payload);
        free(nonce);
        if (!jws) {
            acme_err_set(e, step, "tlsbox:sign", "could not sign the request to %s", url);
            return -EIO;
        }
        ret = http_do(c, step, url, false, jws, accept, r, e);
        free(jws);
        if (ret < 0)
            return ret;
        if (r->status >= 200 && r->status <= 299)
            return 0;
        /* badNonce is retryable by design (RFC 8555 6.5): the error carries a fresh one. */
        if (r->status == 400 && http_is_problem(r, ":badNonce") && attempt < c->max_bad_nonce) {
            c->bad_nonce_retries++;
            continue;
        }
        return http_problem(step, url, r, e);
    }
}

int acme_post(struct acme_client *c, const char *step, const char *url, const char *payload,
              const char *accept, struct acme_resp *r, struct acme_err *e)
{
    /* The URL may point into the previous response held by @p r, which is reset first. */
    char *u = tlsbox_xstrdup(url);
    int ret = http_post(c, step, u, payload, accept, r, e);
    free(u);
    return ret;
}
