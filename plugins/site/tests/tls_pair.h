/*
 * A GnuTLS server and client session connected over a socketpair, past
 * their handshake, with a self-signed ECDSA P-256 certificate made in memory
 * (the client does not verify it: the tests that use this look at the record
 * layer).  Shared by site_record_test.c and site_pack_test.c; include it once,
 * after tests/tap.h and site.h.
 */
#ifndef SITE_TESTS_TLS_PAIR_H
#define SITE_TESTS_TLS_PAIR_H

#include <fcntl.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

static gnutls_certificate_credentials_t scred, ccred;

struct pair {
    int sfd, cfd;
    gnutls_session_t srv, cli;
    struct site_rec rec;
    uint8_t wbuf[SITE_REC_PLAIN_MAX + SITE_REC_OVERHEAD];
};

/* A self-signed ECDSA P-256 certificate for the server, made in memory. */
static bool creds_make(void)
{
    gnutls_x509_privkey_t key;
    gnutls_x509_crt_t crt;
    time_t now = time(NULL);
    bool good = false;

    if (gnutls_x509_privkey_init(&key) < 0)
        return false;
    if (gnutls_x509_crt_init(&crt) < 0) {
        gnutls_x509_privkey_deinit(key);
        return false;
    }
    if (gnutls_x509_privkey_generate(key, GNUTLS_PK_ECDSA,
                                     GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0) == 0 &&
        gnutls_x509_crt_set_version(crt, 3) == 0 &&
        gnutls_x509_crt_set_serial(crt, "\x01", 1) == 0 &&
        gnutls_x509_crt_set_activation_time(crt, now - 60) == 0 &&
        gnutls_x509_crt_set_expiration_time(crt, now + 3600) == 0 &&
        gnutls_x509_crt_set_dn(crt, "CN=site-test", NULL) == 0 &&
        gnutls_x509_crt_set_key(crt, key) == 0 &&
        gnutls_x509_crt_sign2(crt, crt, key, GNUTLS_DIG_SHA256, 0) == 0 &&
        gnutls_certificate_allocate_credentials(&scred) == 0 &&
        gnutls_certificate_set_x509_key(scred, &crt, 1, key) == 0 &&
        gnutls_certificate_allocate_credentials(&ccred) == 0)
        good = true;
    gnutls_x509_crt_deinit(crt);
    gnutls_x509_privkey_deinit(key);
    return good;
}

/* A connected pair after the handshake; false (and a diagnostic) on failure.
 * @p cli_max_recv: the client's record_size_limit (0: none). */
static bool pair_open(struct pair *p, const char *prio, size_t cli_max_recv)
{
    int fds[2];

    memset(p, 0, sizeof(*p));
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) < 0)
        return false;
    p->sfd = fds[0];
    p->cfd = fds[1];
    fcntl(p->sfd, F_SETFL, O_NONBLOCK);
    fcntl(p->cfd, F_SETFL, O_NONBLOCK);
    gnutls_init(&p->srv, GNUTLS_SERVER | GNUTLS_NONBLOCK);
    gnutls_init(&p->cli, GNUTLS_CLIENT | GNUTLS_NONBLOCK);
    if (gnutls_priority_set_direct(p->srv, prio, NULL) < 0 ||
        gnutls_priority_set_direct(p->cli, prio, NULL) < 0) {
        diag("priority %s refused", prio);
        return false;
    }
    gnutls_credentials_set(p->srv, GNUTLS_CRD_CERTIFICATE, scred);
    gnutls_credentials_set(p->cli, GNUTLS_CRD_CERTIFICATE, ccred);
    gnutls_transport_set_int(p->srv, p->sfd);
    gnutls_transport_set_int(p->cli, p->cfd);
    if (cli_max_recv && gnutls_record_set_max_recv_size(p->cli, cli_max_recv) < 0) {
        diag("record_set_max_recv_size refused");
        return false;
    }
    int rs = GNUTLS_E_AGAIN, rc = GNUTLS_E_AGAIN;
    for (int i = 0; i < 100 && (rs != 0 || rc != 0); i++) {
        if (rc != 0)
            rc = gnutls_handshake(p->cli);
        if (rs != 0)
            rs = gnutls_handshake(p->srv);
        if ((rc < 0 && gnutls_error_is_fatal(rc)) || (rs < 0 && gnutls_error_is_fatal(rs))) {
            diag("handshake: client %s, server %s", gnutls_strerror(rc), gnutls_strerror(rs));
            return false;
        }
    }
    if (rs != 0 || rc != 0) {
        diag("handshake did not finish");
        return false;
    }
    site_rec_start(&p->rec, p->srv);
    return true;
}

static void pair_close(struct pair *p)
{
    site_rec_free(&p->rec);
    gnutls_deinit(p->srv);
    gnutls_deinit(p->cli);
    close(p->sfd);
    close(p->cfd);
}

static void fill(uint8_t *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        b[i] = (uint8_t)(seed >> 16);
    }
}

#endif
