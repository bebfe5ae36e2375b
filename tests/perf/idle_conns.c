/* idle_conns: open N TLS 1.3 connections to a loopback server, complete every
 * handshake, then hold them idle so the benchmark can read the server's RSS.
 *
 *   idle_conns HOST PORT N HOLD_SECONDS [ALPN]
 *
 * ALPN is "h2" (default: after the handshake the client sends the HTTP/2
 * preface and an empty SETTINGS frame, as a browser that keeps its
 * connection open would, so the server has set up its HTTP/2 session),
 * "h2-nopreface" (offers and checks h2 but sends nothing after the
 * handshake: a connection opened ahead of its first request),
 * "http/1.1", or "none".  Prints "ready OPENED" once every connection is up
 * (or the first one failed), sleeps HOLD_SECONDS, then prints "alive M": how
 * many are still open (a server closing idle connections early would make
 * the RSS figure meaningless).  Everything is bounded: 5 s per connect and
 * handshake, and an alarm ends the program after 60 s + N / 50 s + HOLD_SECONDS.
 *
 * Built by tests/perf/compare.sh with cc; not part of make check. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define IDLE_TIMEOUT_MS 5000
#define IDLE_MAX_CONNS 20000

struct idle_conn {
    int fd;
    gnutls_session_t session;
};

/* HTTP/2 client preface followed by an empty SETTINGS frame. */
static const unsigned char idle_h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                                               "\x00\x00\x00\x04\x00\x00\x00\x00\x00";
#define IDLE_H2_PREFACE_LEN (sizeof(idle_h2_preface) - 1)

static int idle_connect(const struct sockaddr_in *sa)
{
    struct timeval tv = {.tv_sec = IDLE_TIMEOUT_MS / 1000};
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    if (fd < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    return fd;
}

static int idle_open(struct idle_conn *c, const struct sockaddr_in *sa,
                     gnutls_certificate_credentials_t cred, const char *alpn)
{
    bool preface = strcmp(alpn, "h2") == 0;
    int ret;

    c->fd = idle_connect(sa);
    if (c->fd < 0) {
        fprintf(stderr, "idle_conns: connect: %s\n", strerror(-c->fd));
        return -1;
    }
    gnutls_init(&c->session, GNUTLS_CLIENT);
    ret = gnutls_priority_set_direct(c->session, "NORMAL:-VERS-ALL:+VERS-TLS1.3", NULL);
    if (ret == 0)
        ret = gnutls_credentials_set(c->session, GNUTLS_CRD_CERTIFICATE, cred);
    if (ret == 0)
        ret = gnutls_server_name_set(c->session, GNUTLS_NAME_DNS, "localhost", 9);
    if (strcmp(alpn, "h2-nopreface") == 0)
        alpn = "h2";
    if (ret == 0 && strcmp(alpn, "none") != 0) {
        gnutls_datum_t proto = {(unsigned char *)alpn, (unsigned)strlen(alpn)};
        ret = gnutls_alpn_set_protocols(c->session, &proto, 1, 0);
    }
    if (ret < 0) {
        fprintf(stderr, "idle_conns: session setup: %s\n", gnutls_strerror(ret));
        return -1;
    }
    gnutls_transport_set_int(c->session, c->fd);
    gnutls_handshake_set_timeout(c->session, IDLE_TIMEOUT_MS);
    do {
        ret = gnutls_handshake(c->session);
    } while (ret < 0 && !gnutls_error_is_fatal(ret));
    if (ret < 0) {
        fprintf(stderr, "idle_conns: handshake: %s\n", gnutls_strerror(ret));
        return -1;
    }
    if (strcmp(alpn, "h2") == 0) {
        gnutls_datum_t sel;
        if (gnutls_alpn_get_selected_protocol(c->session, &sel) < 0 || sel.size != 2 ||
            memcmp(sel.data, "h2", 2) != 0) {
            fprintf(stderr, "idle_conns: server did not select h2\n");
            return -1;
        }
    }
    if (preface) {
        ret = (int)gnutls_record_send(c->session, idle_h2_preface, IDLE_H2_PREFACE_LEN);
        if (ret != (int)IDLE_H2_PREFACE_LEN) {
            fprintf(stderr, "idle_conns: send preface: %s\n", gnutls_strerror(ret));
            return -1;
        }
    }
    /* From now on only non-blocking reads, in idle_alive(). */
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
    return 0;
}

/* Drain what the server sent (tickets, SETTINGS); 1 while the connection
 * is still open, 0 once the server closed it. */
static int idle_alive(struct idle_conn *c)
{
    char buf[4096];
    int i;

    for (i = 0; i < 64; i++) {
        ssize_t n = gnutls_record_recv(c->session, buf, sizeof(buf));
        if (n == GNUTLS_E_AGAIN)
            return 1;
        if (n == GNUTLS_E_INTERRUPTED || n == GNUTLS_E_REHANDSHAKE || n > 0)
            continue;
        return 0; /* 0 = close_notify, other negatives = reset or fatal error */
    }
    return 1;
}

int main(int argc, char **argv)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    gnutls_certificate_credentials_t cred;
    struct idle_conn *conns;
    struct rlimit rl;
    const char *alpn;
    long n, hold, opened = 0, alive = 0, i;

    if (argc < 5 || argc > 6) {
        fprintf(stderr,
                "usage: idle_conns HOST PORT N HOLD_SECONDS [h2|h2-nopreface|http/1.1|none]\n");
        return 2;
    }
    n = strtol(argv[3], NULL, 10);
    hold = strtol(argv[4], NULL, 10);
    alpn = argc == 6 ? argv[5] : "h2";
    sa.sin_port = htons((unsigned short)strtol(argv[2], NULL, 10));
    if (inet_pton(AF_INET, argv[1], &sa.sin_addr) != 1 ||
        (ntohl(sa.sin_addr.s_addr) >> 24) != 127) {
        fprintf(stderr, "idle_conns: %s: only 127.0.0.0/8 addresses\n", argv[1]);
        return 2;
    }
    if (n < 1 || n > IDLE_MAX_CONNS || hold < 0 || hold > 600) {
        fprintf(stderr, "idle_conns: N must be 1..%d and HOLD_SECONDS 0..600\n", IDLE_MAX_CONNS);
        return 2;
    }
    alarm((unsigned)(60 + n / 50 + hold));
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n + 64) {
        rl.rlim_cur = (rlim_t)n + 64;
        if (rl.rlim_max < rl.rlim_cur)
            rl.rlim_max = rl.rlim_cur;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
            perror("idle_conns: setrlimit");
            return 1;
        }
    }
    gnutls_global_init();
    gnutls_certificate_allocate_credentials(&cred);
    conns = calloc((size_t)n, sizeof(*conns));
    if (!conns)
        return 1;
    for (i = 0; i < n; i++) {
        if (idle_open(&conns[i], &sa, cred, alpn) < 0)
            break;
        opened++;
    }
    printf("ready %ld\n", opened);
    fflush(stdout);
    if (hold > 0)
        sleep((unsigned)hold);
    for (i = 0; i < opened; i++)
        alive += idle_alive(&conns[i]);
    printf("alive %ld\n", alive);
    fflush(stdout);
    /* Close without close_notify: the kernel tears the sockets down at exit. */
    return opened == n && alive == n ? 0 : 1;
}
