/*
 * TLS per connection: a GnuTLS server session configured from the bundle the
 * connection holds for its whole life, the non-blocking handshake, and what
 * a finished or failed handshake tells the metrics.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include "site.h"

int site_tls_setup(struct site_conn *c)
{
    struct site *s = c->w->s;
    const char *hsts;
    int r;

    c->bundle = s->host->bundle_acquire();
    if (!c->bundle) {
        site_metrics_hs_fail(c->w, "no_bundle");
        return -1;
    }
    r = gnutls_init(&c->session, GNUTLS_SERVER | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL);
    if (r < 0) {
        c->session = NULL;
        return -1;
    }
    if (s->host->bundle_session_setup(c->bundle, c->session) < 0) {
        site_metrics_hs_fail(c->w, "setup");
        return -1;
    }
    /* A client by address sends no SNI: the address it reached names the
     * certificate (no system call unless the bundle chooses by address). */
    if (TLSBOX_HOST_HAS(s->host, bundle_session_address) &&
        s->host->bundle_session_address(c->bundle, c->session, c->fd) < 0) {
        site_metrics_hs_fail(c->w, "setup");
        return -1;
    }
    gnutls_session_set_ptr(c->session, c);
    /* Our own transport: one recv() per readable edge into the worker's
     * read-ahead, and records gathered so a response leaves in one send(). */
    gnutls_transport_set_ptr(c->session, c);
    gnutls_transport_set_pull_function(c->session, site_tls_pull);
    gnutls_transport_set_push_function(c->session, site_tls_push);
    gnutls_transport_set_pull_timeout_function(c->session, site_tls_pull_timeout);
    hsts = s->host->bundle_hsts(c->bundle);
    c->hsts = hsts;
    c->hsts_len = hsts ? strlen(hsts) : 0;
    return 0;
}

/* Rounds of one handshake step at most: the records of one 32 KB read. */
#define SITE_HS_ROUNDS 8192

/* Whether @p c has input GnuTLS has not seen: in its stash, in the worker's
 * read-ahead, or in the socket (no short read since the last edge). */
static bool hs_input_left(const struct site_conn *c)
{
    const struct site_worker *w = c->w;
    return c->stash_len > c->stash_off || (w->rb_owner == c && w->rb_off < w->rb_len) ||
           !c->drained;
}

int site_tls_handshake(struct site_conn *c)
{
    /* Timed from the first step with data, i.e. the ClientHello (the
     * listener defers accept until it is there); the ClientHello hook is the
     * bundle's (previous ticket keys). */
    if (!c->t_hello_ns)
        c->t_hello_ns = site_now_ns();
    for (int tries = 0, rounds = 0; tries < 16; tries++) {
        int r = gnutls_handshake(c->session);
        if (r == 0) {
            uint64_t now = site_now_ns();
            double secs = c->t_hello_ns ? (double)(now - c->t_hello_ns) / 1e9 : 0;
            site_metrics_handshake(c->w, c->session, secs);
            site_rec_start(&c->rec, c->session);
            /* The client's Finished came in the last flight and, in TLS 1.3,
             * nothing of ours answers it (our tickets went out with our
             * Finished): its ACK would wait for the delayed-ACK timer, and a
             * client without TCP_NODELAY (ab, many libraries) holds its
             * request back until that ACK -- 40 ms per new connection.
             * Acknowledge now. */
            int one = 1;
            setsockopt(c->fd, IPPROTO_TCP, TCP_QUICKACK, &one, sizeof(one));
            return 1;
        }
        if (r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED) {
            /* A handshake message split over several records: GnuTLS takes
             * one record per call and says AGAIN without asking for more.
             * The rest may be in our read-ahead (or in the socket past a
             * full read, or a FIN after it) already, and no new edge would
             * come for it: a ClientHello sent as 3 records in one segment
             * waited for the handshake timeout.  Go on while there is input
             * GnuTLS has not seen; each round takes a record or reads. */
            if (r == GNUTLS_E_AGAIN && hs_input_left(c) && ++rounds < SITE_HS_ROUNDS) {
                tries--;
                continue;
            }
            return 0;
        }
        if (!gnutls_error_is_fatal(r))
            continue; /* a warning alert: go on */
        if (r == GNUTLS_E_FATAL_ALERT_RECEIVED) {
            const char *a = gnutls_alert_get_strname(gnutls_alert_get(c->session));
            site_metrics_hs_fail(c->w, a ? a : "alert_received");
        } else if (r == GNUTLS_E_PREMATURE_TERMINATION || r == GNUTLS_E_PULL_ERROR ||
                   r == GNUTLS_E_PUSH_ERROR) {
            site_metrics_hs_fail(c->w, "eof");
        } else {
            int level;
            int alert = gnutls_error_to_alert(r, &level);
            const char *a = alert >= 0 ? gnutls_alert_get_strname(alert) : NULL;
            gnutls_alert_send_appropriate(c->session, r); /* once, best effort */
            site_metrics_hs_fail(c->w, a ? a : "error");
        }
        return -1;
    }
    return -1;
}

void site_tls_count_timeout(struct site_conn *c)
{
    site_metrics_hs_fail(c->w, "timeout");
}
