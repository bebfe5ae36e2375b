/* The server side of the TLS unit tests' handshakes: a GnuTLS server session
 * set up from a bundle, in its own thread, on one end of a socketpair. */
#ifndef TLSBOX_TESTS_TLS_TEST_SERVER_H
#define TLSBOX_TESTS_TLS_TEST_SERVER_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gnutls/gnutls.h>

#include "core/tls.h"

struct tt_server {
    int fd;                        /* closed when the thread ends */
    const struct tlsbox_bundle *b; /* borrowed */
    bool echo;   /* after the handshake: read one record, answer "ok" (tickets leave too) */
    int rc;      /* setup or handshake result */
    int resumed; /* the session was resumed */
};

static void *tt_server_run(void *arg)
{
    struct tt_server *s = arg;
    gnutls_session_t ss;
    gnutls_init(&ss, GNUTLS_SERVER);
    s->rc = tls_bundle_session_setup(s->b, ss);
    if (s->rc == 0) {
        gnutls_transport_set_int(ss, s->fd);
        int r;
        do
            r = gnutls_handshake(ss);
        while (r < 0 && !gnutls_error_is_fatal(r));
        s->rc = r;
        if (r == 0) {
            s->resumed = gnutls_session_is_resumed(ss);
            if (s->echo) {
                char buf[16];
                gnutls_record_recv(ss, buf, sizeof(buf));
                gnutls_record_send(ss, "ok", 2);
            }
            gnutls_bye(ss, GNUTLS_SHUT_WR);
        }
    }
    gnutls_deinit(ss);
    close(s->fd);
    return NULL;
}

/* A server thread and the client's end of its socketpair. */
struct tt_pair {
    int fd; /* the client's end */
    pthread_t thread;
    struct tt_server server;
};

/* Serve @p b (borrowed) on a new socketpair in a thread; the client uses p->fd. */
static void tt_pair_start(struct tt_pair *p, const struct tlsbox_bundle *b, bool echo)
{
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    p->fd = sv[0];
    p->server = (struct tt_server){.fd = sv[1], .b = b, .echo = echo};
    pthread_create(&p->thread, NULL, tt_server_run, &p->server);
}

/* Close the client's end and wait for the server thread (p->server holds its results). */
static void tt_pair_end(struct tt_pair *p)
{
    close(p->fd);
    pthread_join(p->thread, NULL);
}

#endif
