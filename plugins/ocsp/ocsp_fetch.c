/* POSTing an OCSP request, or GETting a CRL, with libcurl: timeouts, a size
 * cap, http or https as the URL says, no redirects. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap */
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int ocsp_fetch(const struct ocsp_conf *conf, const char *url, const gnutls_datum_t *req,
               struct ocsp_body *out, char *err, size_t errlen)
{
    struct sink s = {
        .body = out, .max = req ? conf->max_bytes : conf->crl_max_bytes, .mapped = !req};
    struct curl_slist *hdr = NULL;
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
    if (code != 200) {
        snprintf(err, errlen, "%s: HTTP status %ld", url, code);
        goto out;
    }
    rc = 0;
out:
    if (rc < 0)
        ocsp_body_free(out);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(c);
    return rc;
}
