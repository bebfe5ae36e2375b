/* The ACME client's response headers as libcurl hands them over: a server
 * may send interim (1xx) responses before the final one, "100 Continue"
 * unasked or "103 Early Hints", whose Link headers are a 103's purpose.
 * libcurl passes their headers to the header callback too; what the
 * client keeps must be the final response's only.  A real libcurl
 * transfer against a one-shot loopback server (plain HTTP: http_do itself
 * takes only https, the callbacks are the same).  Prints TAP. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "plugins/acme/acme_http.c"
#include "tests/tap.h"

struct server {
    int fd;
    const char *answer;
};

/* Accept one connection (bounded wait), read the request head, answer, close. */
static void *serve_once(void *arg)
{
    struct server *s = arg;
    struct pollfd p = {.fd = s->fd, .events = POLLIN};
    if (poll(&p, 1, 10000) != 1)
        return NULL;
    int c = accept(s->fd, NULL, NULL);
    if (c < 0)
        return NULL;
    char req[4096];
    size_t len = 0;
    while (len < sizeof(req) - 1) {
        struct pollfd q = {.fd = c, .events = POLLIN};
        if (poll(&q, 1, 10000) != 1)
            break;
        ssize_t n = read(c, req + len, sizeof(req) - 1 - len);
        if (n <= 0)
            break;
        len += (size_t)n;
        req[len] = '\0';
        if (strstr(req, "\r\n\r\n"))
            break;
    }
    size_t off = 0, total = strlen(s->answer);
    while (off < total) {
        ssize_t n = write(c, s->answer + off, total - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    close(c);
    return NULL;
}

/* GET from a server that sends @p answer; the response as the client keeps it in @p r. */
static int fetch(const char *answer, struct acme_resp *r)
{
    memset(r, 0, sizeof(*r));
    struct server s = {.fd = socket(AF_INET, SOCK_STREAM, 0), .answer = answer};
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    if (s.fd < 0 || bind(s.fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s.fd, 1) < 0 ||
        getsockname(s.fd, (struct sockaddr *)&a, &alen) < 0)
        return -1;
    pthread_t t;
    if (pthread_create(&t, NULL, serve_once, &s) != 0)
        return -1;
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/cert", (unsigned)ntohs(a.sin_port));
    CURL *h = curl_easy_init();
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, http_on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, r);
    CURLcode cc = curl_easy_perform(h);
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_cleanup(h);
    pthread_join(t, NULL);
    close(s.fd);
    if (cc != CURLE_OK)
        diag("curl: %s", curl_easy_strerror(cc));
    return cc == CURLE_OK ? 0 : -1;
}

/* Four links fill every slot the client has: the final one's had no room. */
static const char early_hints[] = "HTTP/1.1 103 Early Hints\r\n"
                                  "Link: <https://ca.test/early1>;rel=\"alternate\"\r\n"
                                  "Link: <https://ca.test/early2>;rel=\"alternate\"\r\n"
                                  "Link: <https://ca.test/early3>;rel=\"alternate\"\r\n"
                                  "Link: <https://ca.test/early4>;rel=\"alternate\"\r\n"
                                  "Location: https://ca.test/early-location\r\n"
                                  "Replay-Nonce: early-nonce\r\n"
                                  "\r\n"
                                  "HTTP/1.1 200 OK\r\n"
                                  "Link: <https://ca.test/cert/alt1>;rel=\"alternate\"\r\n"
                                  "Replay-Nonce: final-nonce\r\n"
                                  "Content-Length: 4\r\n"
                                  "Connection: close\r\n"
                                  "\r\n"
                                  "PEM\n";

static const char continue_then_created[] = "HTTP/1.1 100 Continue\r\n"
                                            "Link: <https://ca.test/interim>;rel=\"alternate\"\r\n"
                                            "Retry-After: 120\r\n"
                                            "\r\n"
                                            "HTTP/1.1 201 Created\r\n"
                                            "Location: https://ca.test/order/1\r\n"
                                            "Content-Length: 4\r\n"
                                            "Connection: close\r\n"
                                            "\r\n"
                                            "PEM\n";

static void test_early_hints(void)
{
    struct acme_resp r;
    is_int(fetch(early_hints, &r), 0, "103 then 200: the transfer succeeds");
    is_int(r.status, 200, "the final status is kept");
    is_int((int)r.nalternates, 1, "one alternate: the final response's");
    is_str(r.nalternates ? r.alternates[0] : "(none)", "https://ca.test/cert/alt1",
           "the final response's Link, not the 103's");
    ok(r.location == NULL, "no Location from the 103");
    is_str(r.nonce ? r.nonce : "(none)", "final-nonce", "the final response's nonce");
    acme_resp_free(&r);
}

static void test_continue(void)
{
    struct acme_resp r;
    is_int(fetch(continue_then_created, &r), 0, "100 then 201: the transfer succeeds");
    is_int(r.status, 201, "the final status is kept");
    is_int((int)r.nalternates, 0, "no alternate from the 100 Continue");
    is_int((int)r.retry_after, 0, "no Retry-After from the 100 Continue");
    is_str(r.location ? r.location : "(none)", "https://ca.test/order/1",
           "the final response's Location");
    acme_resp_free(&r);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    test_early_hints();
    test_continue();
    curl_global_cleanup();
    return done_testing();
}
