/* tlsboxctl's HTTP client: libcurl over the control socket. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>

#include "cli/ctl.h"
#include "core/xalloc.h"

/* The longest request path tlsboxctl sends.  tlsboxd's HTTP server
 * (libmicrohttpd) keeps the request line and headers in 32 KiB per
 * connection and answers a longer one with a bare 414, which would read as
 * "request refused"; no real name or query needs more than a few hundred
 * bytes, so a longer one is a mistyped argument, refused here by name. */
#define CTL_PATH_MAX 8192

struct buf {
    char *data;
    size_t len;
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct buf *b = userdata;
    size_t n = size * nmemb;
    char *p = realloc(b->data, b->len + n + 1);
    if (!p)
        return 0;
    memcpy(p + b->len, ptr, n);
    b->data = p;
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

int ctl_request(struct ctl *c, const char *method, const char *path, const char *body, long *status,
                json_t **reply)
{
    *status = 0;
    if (reply)
        *reply = NULL;
    /* Every PUT and POST sends a JSON body: none means jansson would not
     * make one, because an argument (or a file, or stdin) is not UTF-8
     * text.  Sent without it, the daemon's answer would name no argument. */
    if (!body && (strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0)) {
        fprintf(stderr,
                "tlsboxctl: %s: a value given (argument, file or input) is not UTF-8 text, "
                "which the API takes\n",
                path);
        return CTL_EXIT_USAGE;
    }
    if (strlen(path) > CTL_PATH_MAX) {
        fprintf(stderr,
                "tlsboxctl: %s /api/v1/%.40s...: the request path is %zu bytes, more than the "
                "%d the control socket takes: an argument is too long; nothing was sent\n",
                method, path, strlen(path), CTL_PATH_MAX);
        return CTL_EXIT_USAGE;
    }
    struct stat st;
    /* connect() needs write permission on the socket: check it first, or a
     * refusal would read as "nothing answers". */
    if (stat(c->socket_path, &st) < 0 || access(c->socket_path, W_OK) < 0) {
        if (errno == EACCES) {
            fprintf(stderr,
                    "tlsboxctl: control socket %s: permission denied; it is for root and the "
                    "user tlsboxd runs as (tlsbox): run tlsboxctl as one of them (sudo)\n",
                    c->socket_path);
            return CTL_EXIT_IO;
        }
        fprintf(stderr, "tlsboxctl: tlsboxd is not running (no control socket at %s)\n",
                c->socket_path);
        return CTL_EXIT_NOT_RUNNING;
    }
    CURL *h = curl_easy_init();
    if (!h)
        return CTL_EXIT_IO;
    char *url = xasprintf("http://localhost/api/v1/%s", path);
    struct buf out = {0};
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, c->socket_path);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 120000L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &out);
    if (body) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    CURLcode rc = curl_easy_perform(h);
    int ret = CTL_EXIT_OK;
    if (rc == CURLE_COULDNT_CONNECT) {
        fprintf(stderr, "tlsboxctl: tlsboxd is not running (nothing answers on %s)\n",
                c->socket_path);
        ret = CTL_EXIT_NOT_RUNNING;
    } else if (rc != CURLE_OK) {
        fprintf(stderr, "tlsboxctl: control socket %s: %s\n", c->socket_path,
                curl_easy_strerror(rc));
        ret = CTL_EXIT_IO;
    } else {
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
        if (reply && out.data)
            *reply = json_loadb(out.data, out.len, 0, NULL);
    }
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    free(url);
    free(out.data);
    return ret;
}

int ctl_call(struct ctl *c, const char *method, const char *path, const char *body, json_t **reply)
{
    long status;
    json_t *j = NULL;
    int rc = ctl_request(c, method, path, body, &status, &j);
    if (rc != CTL_EXIT_OK)
        return rc;
    if (status >= 400) {
        const char *msg = json_string_value(json_object_get(j, "error"));
        fprintf(stderr, "tlsboxctl: %s\n", msg ? msg : "request refused");
        json_decref(j);
        if (reply)
            *reply = NULL;
        return CTL_EXIT_REFUSED;
    }
    if (reply)
        *reply = j;
    else
        json_decref(j);
    return CTL_EXIT_OK;
}

void ctl_print_json(struct ctl *c, json_t *j)
{
    if (!j)
        return;
    if (json_is_string(j) && !c->json) {
        fputs(json_string_value(j), stdout);
        size_t n = strlen(json_string_value(j));
        if (n == 0 || json_string_value(j)[n - 1] != '\n')
            putchar('\n');
        return;
    }
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (s) {
        puts(s);
        free(s);
    }
}

long long ctl_positive(const char *s)
{
    if (!s || *s < '0' || *s > '9')
        return 0; /* strtoll takes " 7", "+7" and "-7" */
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    /* ERANGE: strtoll's LLONG_MAX is not the number typed. */
    return *end || errno == ERANGE || v <= 0 ? 0 : v;
}

char *ctl_escape(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    char *out = malloc(strlen(s) * 3 + 1), *o = out;
    if (!out)
        abort();
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~') {
            *o++ = (char)*p;
        } else {
            *o++ = '%';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    *o = '\0';
    return out;
}

int ctl_show(struct ctl *c, const char *method, const char *path, const char *body,
             ctl_show_fn show)
{
    json_t *j;
    int rc = ctl_call(c, method, path, body, &j);
    if (rc)
        return rc;
    if (c->json || !show)
        ctl_print_json(c, j);
    else
        show(c, j);
    json_decref(j);
    return CTL_EXIT_OK;
}

char *ctl_path(const char *prefix, const char *segment, const char *suffix)
{
    char *seg = ctl_escape(segment);
    size_t n = strlen(prefix) + strlen(seg) + strlen(suffix) + 2;
    char *p = malloc(n);
    if (!p)
        abort();
    snprintf(p, n, "%s/%s%s", prefix, seg, suffix);
    free(seg);
    return p;
}
