/*
 * Metrics through the core's registry.  Fixed series are registered at
 * start; series labelled by what a handshake negotiated are registered on
 * first sight and remembered per worker, keyed by the address of GnuTLS's
 * static name string, so the hot path never takes the registry's lock twice.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <string.h>
#include <time.h>

#include "site.h"

static const double hs_buckets[] = {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02,
                                    0.05,   0.1,   0.25,  0.5,   1,    2.5};

void site_metrics_register(struct site *s)
{
    const struct tlsbox_host *h = s->host;
    struct site_metrics *m = &s->m;
    static const char *protos[SITE_PROTO_MAX] = {"h1", "h2", "http"};
    static const char *classes[6] = {"other", "1xx", "2xx", "3xx", "4xx", "5xx"};

#define C(name, help) h->metric_register(s->self, name, TLSBOX_METRIC_COUNTER, help, NULL, 0)
    m->hs_full = C("tlsbox_site_handshakes_total{kind=\"full\"}", "TLS handshakes completed");
    m->hs_resumed = C("tlsbox_site_handshakes_total{kind=\"resumed\"}", "TLS handshakes completed");
    m->conns_total = C("tlsbox_site_connections_total", "Connections accepted");
    m->conns_refused =
        C("tlsbox_site_connections_refused_total", "Connections closed at once: max_connections");
    m->bytes_in = C("tlsbox_site_bytes_received_total", "Bytes received (after TLS decryption)");
    m->bytes_out = C("tlsbox_site_bytes_sent_total", "Bytes sent (before TLS encryption)");
    m->cpu_us = C("tlsbox_site_cpu_microseconds_total", "CPU time of the site worker threads");
    m->h2_refused_streams =
        C("tlsbox_site_h2_refused_streams_total", "HTTP/2 streams refused or reset by the server");
    m->h2_glitch_goaways =
        C("tlsbox_site_h2_reset_floods_total",
          "HTTP/2 connections ended (GOAWAY ENHANCE_YOUR_CALM) for making the server reset "
          "streams faster than 33 a second after a burst of 1000 (MadeYouReset)");
    for (int p = 0; p < SITE_PROTO_MAX; p++)
        for (int k = 0; k < 6; k++) {
            char name[128];
            snprintf(name, sizeof(name), "tlsbox_site_requests_total{proto=\"%s\",code=\"%s\"}",
                     protos[p], classes[k]);
            m->requests[p][k] = C(name, "Requests answered, by protocol and status class");
        }
    m->batches_woken = C("tlsbox_site_event_batches_total{how=\"woken\"}",
                         "Batches of connection events a worker took after a connection woke it");
    m->batches_polled = C("tlsbox_site_event_batches_total{how=\"polled\"}",
                          "Batches of connection events a busy worker took by polling "
                          "(site.batch_wait_us), with no wake-up");
#undef C
    m->conns_open = h->metric_register(s->self, "tlsbox_site_connections_open", TLSBOX_METRIC_GAUGE,
                                       "Open client connections", NULL, 0);
    m->hs_duration =
        h->metric_register(s->self, "tlsbox_site_handshake_seconds", TLSBOX_METRIC_HISTOGRAM,
                           "TLS handshake duration from ClientHello to completion", hs_buckets,
                           sizeof(hs_buckets) / sizeof(hs_buckets[0]));
}

static void add(const struct site *s, struct tlsbox_metric *m, int64_t v)
{
    if (m)
        s->host->metric_add(m, v);
}

/* Label values: keep [A-Za-z0-9_.+-], map the rest to '_'. */
static void sanitize(char *dst, size_t cap, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < cap; i++) {
        char ch = src[i];
        bool okc = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                   (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-' || ch == '+';
        dst[i] = okc ? ch : '_';
    }
    dst[i] = 0;
}

static struct tlsbox_metric *labelled(struct site_worker *w, struct site_label_cache *lc,
                                      const char *family, const char *label, const char *value,
                                      const char *help)
{
    struct site *s = w->s;
    char v[64], name[192];
    struct tlsbox_metric *m;

    if (!value)
        value = "none";
    for (int i = 0; i < lc->n; i++)
        if (lc->key[i] == value)
            return lc->m[i];
    sanitize(v, sizeof(v), value);
    snprintf(name, sizeof(name), "%s{%s=\"%s\"}", family, label, v);
    m = s->host->metric_register(s->self, name, TLSBOX_METRIC_COUNTER, help, NULL, 0);
    if (lc->n < (int)(sizeof(lc->key) / sizeof(lc->key[0]))) {
        lc->key[lc->n] = value;
        lc->m[lc->n++] = m;
    }
    return m;
}

static const char *key_type_name(gnutls_sign_algorithm_t sign)
{
    switch (gnutls_sign_get_pk_algorithm(sign)) {
    case GNUTLS_PK_RSA:
    case GNUTLS_PK_RSA_PSS:
        return "RSA";
    case GNUTLS_PK_ECDSA:
        return "ECDSA";
    case GNUTLS_PK_EDDSA_ED25519:
        return "Ed25519";
    case GNUTLS_PK_EDDSA_ED448:
        return "Ed448";
    default:
        return "other";
    }
}

void site_metrics_handshake(struct site_worker *w, gnutls_session_t session, double seconds)
{
    struct site *s = w->s;
    struct site_wmetrics *wm = &w->wm;
    bool resumed = gnutls_session_is_resumed(session) != 0;

    add(s, resumed ? s->m.hs_resumed : s->m.hs_full, 1);
    if (seconds > 0 && s->m.hs_duration)
        s->host->metric_observe(s->m.hs_duration, seconds);
    add(s,
        labelled(w, &wm->version, "tlsbox_site_handshakes_by_version_total", "version",
                 gnutls_protocol_get_name(gnutls_protocol_get_version(session)),
                 "TLS handshakes by protocol version"),
        1);
    add(s,
        labelled(w, &wm->cipher, "tlsbox_site_handshakes_by_cipher_total", "cipher",
                 gnutls_cipher_get_name(gnutls_cipher_get(session)), "TLS handshakes by cipher"),
        1);
    add(s,
        labelled(w, &wm->group, "tlsbox_site_handshakes_by_group_total", "group",
                 gnutls_group_get_name(gnutls_group_get(session)),
                 "TLS handshakes by key exchange group"),
        1);
    if (!resumed) {
        gnutls_sign_algorithm_t sign = gnutls_sign_algorithm_get(session);
        add(s,
            labelled(w, &wm->sigalg, "tlsbox_site_handshakes_by_sigalg_total", "sigalg",
                     sign ? gnutls_sign_get_name(sign) : NULL,
                     "Full TLS handshakes by signature algorithm"),
            1);
        add(s,
            labelled(w, &wm->keytype, "tlsbox_site_handshakes_by_key_type_total", "key_type",
                     sign ? key_type_name(sign) : NULL,
                     "Full TLS handshakes by certificate key type"),
            1);
    }
}

void site_metrics_hs_fail(struct site_worker *w, const char *reason)
{
    add(w->s,
        labelled(w, &w->wm.alert, "tlsbox_site_handshake_failures_total", "reason", reason,
                 "Failed TLS handshakes by alert (sent or received) or cause"),
        1);
}

void site_metrics_request(struct site_worker *w, enum site_proto p, int status)
{
    int k = status / 100;
    if (k < 1 || k > 5)
        k = 0;
    add(w->s, w->s->m.requests[p][k], 1);
}

/* Add a worker's local count to its metric and start counting again. */
static void flush(const struct site *s, struct tlsbox_metric *m, uint64_t *count)
{
    if (*count) {
        add(s, m, (int64_t)*count);
        *count = 0;
    }
}

/* Once a second per worker: byte and batch counters and the thread's CPU time. */
void site_metrics_tick(struct site_worker *w)
{
    struct site *s = w->s;
    struct timespec ts;

    flush(s, s->m.bytes_in, &w->wm.bytes_in);
    flush(s, s->m.bytes_out, &w->wm.bytes_out);
    flush(s, s->m.batches_woken, &w->waiter.woken);
    flush(s, s->m.batches_polled, &w->waiter.polled);
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) {
        uint64_t ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        uint64_t us = (ns - w->wm.cpu_ns_flushed) / 1000;
        if (us) {
            add(s, s->m.cpu_us, (int64_t)us);
            w->wm.cpu_ns_flushed += us * 1000;
        }
    }
}

/* Copy @p n bytes for a log line: visible ASCII as is, anything else (control
 * bytes, a quote, a backslash, bytes above 0x7e) as \xHH, so a request cannot
 * forge log lines or send escape sequences to a terminal.  Truncated to cap. */
static const char *log_escape(const char *p, size_t n, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; p && i < n && o + 5 < cap; i++) {
        unsigned char ch = (unsigned char)p[i];
        if (ch > 0x20 && ch < 0x7f && ch != '\\' && ch != '"') {
            out[o++] = (char)ch;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        }
    }
    out[o] = 0;
    return out;
}

const char *site_peer_name(const struct site_conn *c, char *peer, size_t cap)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    snprintf(peer, cap, "-");
    if (getpeername(c->fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, peer, (socklen_t)cap);
        else if (ss.ss_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, peer, (socklen_t)cap);
    }
    return peer;
}

void site_access_log(struct site_conn *c, const struct site_req *rq, int status, uint64_t bytes,
                     const char *proto)
{
    struct site *s = c->w->s;
    char peer[INET6_ADDRSTRLEN];
    char method[64], target[2048], host[300];

    if (!atomic_load_explicit(&s->cfg.access_log, memory_order_relaxed))
        return;
    site_peer_name(c, peer, sizeof(peer));
    /* One fprintf: stdio locks the stream, so lines of workers never mix. */
    fprintf(stderr, "site access: %s %s %s %s %d %llu host=%s\n", peer,
            log_escape(rq->method_s.p, rq->method_s.n, method, sizeof(method)),
            log_escape(rq->target.p, rq->target.n, target, sizeof(target)), proto, status,
            (unsigned long long)bytes, log_escape(rq->host.p, rq->host.n, host, sizeof(host)));
}
