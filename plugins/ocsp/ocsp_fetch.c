/* POSTing an OCSP request, or GETting a CRL, with libcurl: timeouts, a size
 * cap, http or https as the URL says, no redirects; a CRL conditionally,
 * with the validators of the last one accepted. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap */
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <sys/mman.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "plugins/ocsp/ocsp_plugin.h"

struct sink {
    struct ocsp_body *body;
    size_t max;
    bool mapped; /* a CRL: into a mapping of its own */
    bool too_big;
};

void ocsp_body_free(struct ocsp_body *b)
{
    if (b->cap)
        munmap(b->data, b->cap);
    else
        free(b->data);
    memset(b, 0, sizeof(*b));
}

/* Room for @p need bytes in a mapped body: doubled, in whole pages.  0 or -1. */
static int map_grow(struct ocsp_body *b, size_t need)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), cap = b->cap ? b->cap : 64 * 1024;
    while (cap < need)
        cap *= 2;
    cap = (cap + page - 1) / page * page;
    void *d = b->cap ? mremap(b->data, b->cap, cap, MREMAP_MAYMOVE)
                     : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (d == MAP_FAILED)
        return -1;
    b->data = d;
    b->cap = cap;
    return 0;
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    struct sink *s = arg;
    size_t len = size * n;
    if (s->body->len + len > s->max) {
        s->too_big = true;
        return 0; /* curl stops with CURLE_WRITE_ERROR */
    }
    if (s->mapped) {
        if (s->body->len + len > s->body->cap && map_grow(s->body, s->body->len + len) < 0)
            return 0;
    } else {
        unsigned char *d = realloc(s->body->data, s->body->len + len + 1);
        if (!d)
            return 0;
        s->body->data = d;
    }
    memcpy(s->body->data + s->body->len, p, len);
    s->body->len += len;
    return len;
}

void ocsp_crl_validators_free(struct ocsp_crl_validators *v)
{
    free(v->new_etag);
    free(v->new_last_modified);
    v->new_etag = v->new_last_modified = NULL;
}

/* The answer's validators, as the server wrote them (header lines). */
struct heads {
    char *etag, *last_modified, *date;
};

/* The value of header line @p p (@p n bytes) if it is @p name, trimmed;
 * NULL when it is another header, or not one printable ASCII line of at
 * most 200 bytes (nothing odd is sent back to a server). */
static char *head_value(const char *p, size_t n, const char *name)
{
    size_t k = strlen(name);
    if (n <= k + 1 || strncasecmp(p, name, k) != 0 || p[k] != ':')
        return NULL;
    p += k + 1;
    n -= k + 1;
    while (n && (*p == ' ' || *p == '\t'))
        p++, n--;
    while (n && (p[n - 1] == '\r' || p[n - 1] == '\n' || p[n - 1] == ' '))
        n--;
    if (!n || n > 200)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] > 0x7e)
            return NULL;
    return strndup(p, n);
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
    struct heads *h = arg;
    size_t len = size * n;
    char *v;
    if (len > 5 && strncmp(p, "HTTP/", 5) == 0) { /* a new answer (after a 1xx) */
        free(h->etag);
        free(h->last_modified);
        free(h->date);
        memset(h, 0, sizeof(*h));
    } else if ((v = head_value(p, len, "ETag"))) {
        free(h->etag);
        h->etag = v;
    } else if ((v = head_value(p, len, "Last-Modified"))) {
        free(h->last_modified);
        h->last_modified = v;
    } else if ((v = head_value(p, len, "Date"))) {
        free(h->date);
        h->date = v;
    }
    return len;
}

/*
 * Keep the validators of a CRL just accepted, when they can be trusted to
 * change with it.  Last-Modified has whole seconds: a CRL published again
 * within the second it was fetched would keep it, and a 304 would hide the
 * new one; nginx's ETag is the modification time and size, as blind.  So,
 * as RFC 9110 8.8.2.2 says of a strong Last-Modified, they are kept only
 * when Last-Modified is at least 60 s before the answer's Date; a strong
 * ETag alone (a digest, as object stores make) is kept as it is.
 */
static void validators_keep(struct ocsp_crl_validators *v, struct heads *h)
{
    if (h->last_modified) {
        time_t lm = curl_getdate(h->last_modified, NULL);
        time_t date = h->date ? curl_getdate(h->date, NULL) : time(NULL);
        if (lm < 0 || date < 0 || date - lm < 60)
            return;
        v->new_last_modified = h->last_modified;
        h->last_modified = NULL;
    }
    if (h->etag && strncmp(h->etag, "W/", 2) != 0) { /* weak: may not change with the CRL */
        v->new_etag = h->etag;
        h->etag = NULL;
    }
}

/* curl calls this about once a second while it waits, and more often while
 * bytes move: a stop never waits for a responder that does not answer. */
static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    const atomic_bool *cancel = arg;
    (void)dt;
    (void)dn;
    (void)ut;
    (void)un;
    return cancel && atomic_load(cancel) ? 1 : 0;
}

static int fetch(const struct ocsp_conf *conf, const char *url, const gnutls_datum_t *req,
                 struct ocsp_crl_validators *v, struct ocsp_body *out, char *err, size_t errlen)
{
    struct sink s = {
        .body = out, .max = req ? conf->max_bytes : conf->crl_max_bytes, .mapped = !req};
    struct curl_slist *hdr = NULL;
    struct heads h = {NULL, NULL, NULL};
    long code = 0;
    int rc = -EIO;
    memset(out, 0, sizeof(*out));
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(err, errlen, "libcurl: no handle");
        return -ENOMEM;
    }
    if (req) {
        hdr = curl_slist_append(hdr, "Content-Type: application/ocsp-request");
        hdr = curl_slist_append(hdr, "Accept: application/ocsp-response");
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, req->data);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)req->size);
    } else {
        hdr = curl_slist_append(hdr, "Accept: application/pkix-crl");
    }
    if (v) {
        char line[256];
        v->not_modified = false;
        v->new_etag = v->new_last_modified = NULL;
        if (v->etag && snprintf(line, sizeof line, "If-None-Match: %s", v->etag) < (int)sizeof line)
            hdr = curl_slist_append(hdr, line);
        if (v->last_modified && snprintf(line, sizeof line, "If-Modified-Since: %s",
                                         v->last_modified) < (int)sizeof line)
            hdr = curl_slist_append(hdr, line);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &h);
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, conf->timeout_s * 1000 / 2 + 1);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, conf->timeout_s * 1000);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 16L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, conf->timeout_s);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "tlsbox-ocsp/" PACKAGE_VERSION);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, (void *)conf->cancel);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    if (conf->ca_file && *conf->ca_file)
        curl_easy_setopt(c, CURLOPT_CAINFO, conf->ca_file);
    CURLcode cr = curl_easy_perform(c);
    if (s.too_big) {
        snprintf(err, errlen, "%s: %s larger than %zu bytes (ocsp.%s)", url,
                 req ? "response" : "CRL", s.max, req ? "max_response_kib" : "max_crl_kib");
        goto out;
    }
    if (cr == CURLE_ABORTED_BY_CALLBACK) {
        snprintf(err, errlen, "%s: cancelled (stopping)", url);
        rc = -ECANCELED;
        goto out;
    }
    if (cr == CURLE_OPERATION_TIMEDOUT) {
        /* Its own errno: the run skips the other certificates of this URL. */
        snprintf(err, errlen, "%s: the responder did not answer within %ld s", url,
                 conf->timeout_s);
        rc = -ETIMEDOUT;
        goto out;
    }
    if (cr != CURLE_OK) {
        snprintf(err, errlen, "%s: %s", url, curl_easy_strerror(cr));
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    if (code == 304 && v && (v->etag || v->last_modified)) {
        v->not_modified = true;
        rc = 0;
        goto out;
    }
    if (code != 200) {
        snprintf(err, errlen, "%s: HTTP status %ld", url, code);
        goto out;
    }
    if (v)
        validators_keep(v, &h);
    rc = 0;
out:
    free(h.etag);
    free(h.last_modified);
    free(h.date);
    if (rc < 0)
        ocsp_body_free(out);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    return rc;
}

int ocsp_fetch(const struct ocsp_conf *conf, const char *url, const gnutls_datum_t *req,
               struct ocsp_body *out, char *err, size_t errlen)
{
    return fetch(conf, url, req, NULL, out, err, errlen);
}

int ocsp_fetch_crl(const struct ocsp_conf *conf, const char *url, struct ocsp_crl_validators *v,
                   struct ocsp_body *out, char *err, size_t errlen)
{
    return fetch(conf, url, NULL, v, out, err, errlen);
}
