/* Certificates by address: the addresses a certificate names (from the
 * store's sans column) and the local address of real loopback sockets
 * (IPv4, IPv6, an IPv4 client of a dual-stack socket, a socketpair). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/tls_addr.h"
#include "tests/tap.h"

static const char *text(const struct tls_addr *a)
{
    static char buf[64];
    return tls_addr_text(a, buf, sizeof(buf));
}

/* @p ss as address @p text of family @p af, port @p port; its length. */
static socklen_t sockaddr_of(struct sockaddr_storage *ss, int af, const char *text, in_port_t port)
{
    memset(ss, 0, sizeof(*ss));
    ss->ss_family = (sa_family_t)af;
    if (af == AF_INET) {
        struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
        s4->sin_port = port;
        inet_pton(AF_INET, text, &s4->sin_addr);
        return sizeof(*s4);
    }
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
    s6->sin6_port = port;
    inet_pton(AF_INET6, text, &s6->sin6_addr);
    return sizeof(*s6);
}

/* Connect to @p listen_addr (listening socket of family @p af on a free
 * port; loopback addresses only) from a client of family @p client_af at
 * @p connect_to; the accepted socket, or -1. */
static int accepted(int af, const char *listen_addr, int client_af, const char *connect_to,
                    int *cfd)
{
    struct sockaddr_storage ss, to;
    socklen_t len = sockaddr_of(&ss, af, listen_addr, 0);
    int l = socket(af, SOCK_STREAM, 0), zero = 0;
    if (af == AF_INET6) /* an IPv4 client of an IPv6 socket */
        setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    if (bind(l, (struct sockaddr *)&ss, len) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&ss, &len) < 0) {
        close(l);
        return -1;
    }
    in_port_t port = af == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
                                   : ((struct sockaddr_in6 *)&ss)->sin6_port;
    len = sockaddr_of(&to, client_af, connect_to, port);
    *cfd = socket(client_af, SOCK_STREAM, 0);
    int a = -1;
    if (connect(*cfd, (struct sockaddr *)&to, len) == 0)
        a = accept(l, NULL, NULL);
    close(l);
    return a;
}

int main(void)
{
    struct tls_addr a[TLS_ADDR_MAX];

    /* The sans column: names and addresses as inet_ntop writes them. */
    size_t n = tls_addr_from_sans(
        "[\"www.example\",\"192.0.2.1\",\"2001:db8::1\",\"192.0.2.1\",\"1.2.3\",\"::1\"]", a,
        TLS_ADDR_MAX);
    is_int(n, 3, "three addresses among names, a duplicate and a non-address");
    is_str(text(&a[0]), "192.0.2.1", "the first: 192.0.2.1");
    is_int(a[0].len, 4, "  4 bytes");
    is_str(text(&a[1]), "2001:db8::1", "the second: 2001:db8::1");
    is_int(a[1].len, 16, "  16 bytes");
    is_str(text(&a[2]), "::1", "the third: ::1");
    is_int(tls_addr_from_sans("[\"192.0.2.1\",\"192.0.2.2\",\"192.0.2.3\"]", a, 2), 2,
           "at most cap addresses");
    is_int(tls_addr_from_sans("[\"www.example\"]", a, TLS_ADDR_MAX), 0, "names only: none");
    is_int(tls_addr_from_sans("not json", a, TLS_ADDR_MAX), 0, "not JSON: none");
    is_int(tls_addr_from_sans(NULL, a, TLS_ADDR_MAX), 0, "NULL: none");

    struct tls_addr x = {{192, 0, 2, 1}, 4}, y = {{192, 0, 2, 9}, 4};
    tls_addr_from_sans("[\"192.0.2.1\",\"::ffff:192.0.2.9\"]", a, TLS_ADDR_MAX);
    ok(tls_addr_in(&x, a, 2), "192.0.2.1 is in the list");
    ok(!tls_addr_in(&y, a, 2), "192.0.2.9 is not (the list has it IPv4-mapped, 16 bytes)");

    /* Real sockets: the address the client connected to. */
    static const struct {
        int af;
        const char *listen;
        int client_af;
        const char *to, *want, *what;
        int len;
    } conns[] = {
        {AF_INET, "127.0.0.2", AF_INET, "127.0.0.2", "127.0.0.2", "an IPv4 client at 127.0.0.2", 4},
        {AF_INET6, "::ffff:127.0.0.3", AF_INET, "127.0.0.3", "127.0.0.3",
         "an IPv4 client of an IPv6 socket (bound to ::ffff:127.0.0.3): the mapped address as "
         "IPv4",
         4},
        {AF_INET6, "::1", AF_INET6, "::1", "::1", "an IPv6 client at ::1", 16},
    };
    struct tls_addr got = {{0}, 0};
    for (size_t i = 0; i < sizeof(conns) / sizeof(conns[0]); i++) {
        int c = -1, s = accepted(conns[i].af, conns[i].listen, conns[i].client_af, conns[i].to, &c);
        ok(s >= 0, "%s: connected", conns[i].what);
        is_int(tls_addr_local(s, &got), 0, "  tls_addr_local on the accepted socket");
        is_str(text(&got), conns[i].want, "  is %s", conns[i].want);
        is_int(got.len, conns[i].len, "  %d bytes", conns[i].len);
        close(s);
        close(c);
    }

    int sv[2];
    ok(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "a socketpair");
    is_int(tls_addr_local(sv[0], &got), -EAFNOSUPPORT, "  has no IP address: -EAFNOSUPPORT");
    close(sv[0]);
    close(sv[1]);
    is_int(tls_addr_local(sv[0], &got), -EBADF, "a closed descriptor: -EBADF");
    return done_testing();
}
