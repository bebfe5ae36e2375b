/*
 * Unit tests of the dns-01 DNS client: name encoding, what is refused before
 * sending, defensive parsing against a fake server that answers badly, and
 * the real thing against a named (bind9) the test starts on a free port.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tlsbox/xalloc.h>

#include "plugins/acme/acme_dns.h"
#include "plugins/acme/acme_dns_int.h"
#include "tests/tap.h"

#define NAMED "/usr/sbin/named"
/* Fixed test keys (tsig-keygen output): nothing secret about them. */
#define SECRET256 "jg6RF53hi673+kErk/VeneWlqkCOjy1ELR1alv2K8H4="
#define SECRET512                                                                                  \
    "/ZjH/fhvPtqi8VKf3bjYjIHsALwIMi3DRxur+r8UpItE4OiXn6ygUj7i4PcgrAbY4UuO4r7wgIdhVoqupygZbg=="
#define WRONG256 "AAAAF53hi673+kErk/VeneWlqkCOjy1ELR1alv2K8H4="
/* 43 characters, like a real key authorization digest. */
#define V1 "Yq8DkdLZBwbv4Sxhxr9Z0GwjnQ9Lg3o5ra1Wbw6tW0g"
#define V2 "zVjrOMFt0m6mExSsVNqE2LrY7vTplQyjSImSl2Ssvdw"

static uint64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A TCP socket on 127.0.0.1 with a port the kernel chose; *port says which. */
static int listen_any(int *port, bool do_listen)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t slen = sizeof(sa);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &slen) < 0 || (do_listen && listen(fd, 8) < 0)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

/* ---- names ------------------------------------------------------------------ */

static void test_name_wire(void)
{
    unsigned char w[300];
    static const unsigned char want[] = "\3www\7Example\3org";
    is_int(acme_dns_name_wire("www.Example.org", w, sizeof(w)), sizeof(want), "name length");
    ok(memcmp(w, want, sizeof(want)) == 0, "labels, case kept, root label");
    is_int(acme_dns_name_wire("www.Example.org.", w, sizeof(w)), sizeof(want), "trailing dot");
    ok(memcmp(w, want, sizeof(want)) == 0, "trailing dot: same bytes");
    is_int(acme_dns_name_wire(".", w, sizeof(w)), 1, "the root");
    is_int(w[0], 0, "the root is one zero byte");
    is_int(acme_dns_name_wire("", w, sizeof(w)), -EINVAL, "empty name refused");
    is_int(acme_dns_name_wire("a..b", w, sizeof(w)), -EINVAL, "empty label refused");
    is_int(acme_dns_name_wire(".a", w, sizeof(w)), -EINVAL, "leading dot refused");
    is_int(acme_dns_name_wire("a..", w, sizeof(w)), -EINVAL, "two trailing dots refused");
    is_int(acme_dns_name_wire("a\\.b", w, sizeof(w)), -EINVAL, "escape refused");
    is_int(acme_dns_name_wire(NULL, w, sizeof(w)), -EINVAL, "NULL refused");

    char l63[64], l64[65];
    memset(l63, 'a', 63);
    l63[63] = '\0';
    memset(l64, 'b', 64);
    l64[64] = '\0';
    char *name = tlsbox_xasprintf("%s.org", l63);
    is_int(acme_dns_name_wire(name, w, sizeof(w)), 1 + 63 + 4 + 1, "63-byte label accepted");
    free(name);
    name = tlsbox_xasprintf("%s.org", l64);
    is_int(acme_dns_name_wire(name, w, sizeof(w)), -EINVAL, "64-byte label refused");
    free(name);

    /* 3 * (1 + 63) + (1 + 61) + 1 = 255: the longest name; one more byte is too long. */
    char l61[62], l62[63];
    memset(l61, 'c', 61);
    l61[61] = '\0';
    memset(l62, 'c', 62);
    l62[62] = '\0';
    name = tlsbox_xasprintf("%s.%s.%s.%s", l63, l63, l63, l61);
    is_int(acme_dns_name_wire(name, w, sizeof(w)), 255, "255-byte name accepted");
    is_int(acme_dns_name_wire(name, w, 100), -ENOSPC, "short buffer: -ENOSPC");
    free(name);
    name = tlsbox_xasprintf("%s.%s.%s.%s", l63, l63, l63, l62);
    is_int(acme_dns_name_wire(name, w, sizeof(w)), -EINVAL, "256-byte name refused");
    free(name);
    is_int(acme_dns_name_wire("org", w, 4), -ENOSPC, "no room for the root label: -ENOSPC");
}

static void test_name_text(void)
{
    char out[DNS_NAME_MAX + 1];
    is_int(acme_dns_name_text((const unsigned char *)"\3www\7Example\3org", 17, out, sizeof(out)),
           0, "wire to text");
    is_str(out, "www.Example.org", "  labels joined by dots, case kept");
    is_int(acme_dns_name_text((const unsigned char *)"", 1, out, sizeof(out)), 0, "the root");
    is_str(out, ".", "  is a dot");
    is_int(acme_dns_name_text((const unsigned char *)"\3a.b\0", 5, out, sizeof(out)), -EINVAL,
           "a dot inside a label: -EINVAL");
    is_int(acme_dns_name_text((const unsigned char *)"\3a b\0", 5, out, sizeof(out)), -EINVAL,
           "a space inside a label: -EINVAL");
    is_int(acme_dns_name_text((const unsigned char *)"\3abc", 4, out, sizeof(out)), -EINVAL,
           "no root label: -EINVAL");
    is_int(acme_dns_name_text((const unsigned char *)"\5abc\0", 5, out, sizeof(out)), -EINVAL,
           "a label longer than the name: -EINVAL");
    is_int(acme_dns_name_text((const unsigned char *)"\3www\3org", 9, out, 7), -ENOSPC,
           "short buffer: -ENOSPC");
}

/* The system's resolver: the first nameserver line of a resolv.conf. */
static void test_system_resolver(void)
{
    char dir[] = "/tmp/acme_dns_test.XXXXXX";
    ok(mkdtemp(dir) != NULL, "a temporary directory");
    char *path = tlsbox_xasprintf("%s/resolv.conf", dir);
    FILE *f = fopen(path, "w");
    fputs("# written by hand\nsearch example.test\noptions ndots:2\n"
          "  nameserver   ::1\nnameserver 192.0.2.53\n",
          f);
    fclose(f);
    char *r = acme_dns_system_resolver(path);
    is_str(r, "::1", "the first nameserver, spaces around it ignored");
    free(r);
    f = fopen(path, "w");
    fputs("search example.test\n", f);
    fclose(f);
    ok(acme_dns_system_resolver(path) == NULL, "no nameserver line: NULL");
    unlink(path);
    ok(acme_dns_system_resolver(path) == NULL, "no file: NULL");
    free(path);
    rmdir(dir);
}

/* The check acme.dns_alias is refused by before anything is sent. */
static void test_in_zone(void)
{
    ok(acme_dns_in_zone("example.test", "example.test"), "the zone itself is in it");
    ok(acme_dns_in_zone("a.b.example.test", "example.test"), "two labels below");
    ok(acme_dns_in_zone("A.Example.TEST.", "example.test"), "case and trailing dot ignored");
    ok(!acme_dns_in_zone("badexample.test", "example.test"), "not mid-label");
    ok(!acme_dns_in_zone("example.test", "a.example.test"), "the parent is not in a child zone");
    ok(!acme_dns_in_zone("other.test", "example.test"), "a sibling is not in it");
    ok(!acme_dns_in_zone("a..example.test", "example.test"), "not a name: false");
    ok(!acme_dns_in_zone("a.example.test", ""), "no zone: false");
}

/* ---- refused before sending ---------------------------------------------------- */

static struct acme_dns_conf conf_for(const char *server)
{
    struct acme_dns_conf c = {.server = server,
                              .zone = "example.test",
                              .key_name = "tlsbox-acme",
                              .key_alg = "hmac-sha256",
                              .key_secret = SECRET256,
                              .timeout_ms = 2000};
    return c;
}

/* An update that must be refused with -EINVAL and a message containing @p needle. */
static void refused(const struct acme_dns_conf *c, const char *fqdn, const char *value,
                    const char *needle, const char *what)
{
    char *err = NULL;
    is_int(acme_dns_update(c, true, fqdn, value, 60, &err), -EINVAL, "%s: -EINVAL", what);
    like(err, needle, "%s: message", what);
    ok(!err || !strstr(err, "jg6RF53"), "%s: no secret in the message", what);
    free(err);
}

static void test_refusals(void)
{
    /* Port 1 on loopback: nothing is sent there, as every case is refused first. */
    struct acme_dns_conf c = conf_for("127.0.0.1:1");
    refused(&c, "_acme-challenge.example.com", V1,
            "DNS update of _acme-challenge.example.com at 127.0.0.1:1: the name is not in zone "
            "example.test",
            "name outside the zone");
    refused(&c, "_acme-challenge.badexample.test", V1, "not in zone", "suffix but not a label");
    refused(&c, "test", V1, "not in zone", "parent of the zone");

    char big[257];
    memset(big, 'v', 256);
    big[256] = '\0';
    refused(&c, "_acme-challenge.example.test", big, "255 bytes", "256-byte value");
    refused(&c, "_acme-challenge.example.test", NULL, "255 bytes", "no value");
    refused(&c, "a..example.test", V1, "not a domain name", "bad name");

    c.key_secret = "jg6RF53hi673*kErk";
    refused(&c, "_acme-challenge.example.test", V1, "is not base64", "secret not base64");
    c.key_secret = "jg6RF53hi673+kErk/Vene=";
    refused(&c, "_acme-challenge.example.test", V1, "is not base64", "bad padding");
    c.key_secret = "";
    refused(&c, "_acme-challenge.example.test", V1, "is not base64", "empty secret");
    c.key_secret = SECRET256;
    c.key_alg = "hmac-md4";
    refused(&c, "_acme-challenge.example.test", V1, "unknown TSIG algorithm \"hmac-md4\"",
            "unknown algorithm");
    c.key_alg = "hmac-sha256";

    c.server = "127.0.0.1:99999";
    refused(&c, "_acme-challenge.example.test", V1, "the server is not", "port out of range");
    c.server = "[::1";
    refused(&c, "_acme-challenge.example.test", V1, "the server is not", "unclosed bracket");
    c.server = "127.0.0.1:1";

    is_int(acme_dns_update(&c, true, "x.example.com", V1, 60, NULL), -EINVAL,
           "NULL err pointer: still refused");
    char *err = NULL;
    is_int(acme_dns_update(NULL, true, "x.example.test", V1, 60, &err), -EINVAL, "no conf");
    like(err, "no configuration", "no conf: message");
    free(err);
    err = NULL;
    is_int(acme_dns_txt_has(&c, "a..b", V1, &err), -EINVAL, "query: bad name refused");
    like(err, "DNS query for TXT a..b at 127.0.0.1:1: not a domain name", "query: message");
    free(err);
}

/* ---- a fake server that answers badly ------------------------------------------ */

enum fake_mode {
    FAKE_SILENT,      /* reads the request, never answers */
    FAKE_SHORT,       /* announces 100 bytes, sends 10, closes */
    FAKE_EMPTY,       /* a zero-length answer */
    FAKE_WRONG_ID,    /* a well-formed answer with another ID */
    FAKE_UNSIGNED,    /* NOERROR to an UPDATE, without TSIG */
    FAKE_REFUSED,     /* REFUSED, without TSIG */
    FAKE_ECHO,        /* the request itself with QR set: its MAC cannot verify */
    FAKE_BADTIME,     /* NOTAUTH, TSIG error BADTIME with the server's time */
    FAKE_TXT,         /* a TXT answer using compression pointers */
    FAKE_LOOP,        /* an owner name that points at itself */
    FAKE_BAD_RDLEN,   /* rdlength past the end */
    FAKE_TRAILING,    /* one byte after the last RR */
    FAKE_TSIG_NOT_END /* a TSIG RR in the answer section */
};

struct fake {
    pid_t pid;
    char server[32];
};

static void put16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

/* Offset just after the first question (or the zone) of a request we sent. */
static size_t question_end(const unsigned char *m, size_t len)
{
    size_t i = 12;
    while (i < len && m[i])
        i += (size_t)m[i] + 1;
    return i + 1 + 4;
}

static size_t fake_rr(unsigned char *p, const unsigned char *owner, size_t olen, unsigned type,
                      const unsigned char *rdata, size_t rdlen)
{
    memcpy(p, owner, olen);
    size_t n = olen;
    put16(p + n, type);
    put16(p + n + 2, 1);
    memcpy(p + n + 4, "\0\0\0\x3c", 4);
    put16(p + n + 8, (unsigned)rdlen);
    memcpy(p + n + 10, rdata, rdlen);
    return n + 10 + rdlen;
}

/* The answer for @p mode to the request @p q; returns its length. */
static size_t fake_answer(enum fake_mode mode, const unsigned char *q, size_t qlen,
                          unsigned char *a)
{
    size_t qe = question_end(q, qlen), n = qe;
    memcpy(a, q, qe);
    a[2] |= 0x80;
    put16(a + 6, 0);
    put16(a + 8, 0);
    put16(a + 10, 0);
    static const unsigned char ptr_q[] = {0xc0, 12}; /* the question's name */
    static const unsigned char other[] = {5, 'o', 't', 'h', 'e', 'r', 0xc0, 12};
    static const unsigned char txt[] = "\5first\53" V1;
    switch (mode) {
    case FAKE_WRONG_ID:
        a[0] ^= 0x5a;
        break;
    case FAKE_REFUSED:
        a[3] = (unsigned char)((a[3] & 0xf0) | 5);
        break;
    case FAKE_ECHO:
        memcpy(a, q, qlen);
        a[2] |= 0x80;
        n = qlen;
        break;
    case FAKE_BADTIME: {
        static const unsigned char key[] = "\13tlsbox-acme\0\0\xfa\0\xff\0\0\0\0";
        static const unsigned char alg[] = "\13hmac-sha256";
        a[3] = (unsigned char)((a[3] & 0xf0) | 9);
        put16(a + 10, 1);
        memcpy(a + n, key, sizeof(key) - 1);
        n += sizeof(key) - 1;
        unsigned char *rd = a + n + 2, *p = rd;
        memcpy(p, alg, sizeof(alg)); /* with its root label */
        p += sizeof(alg);
        uint64_t t = (uint64_t)time(NULL) + 1000;
        for (int i = 5; i >= 0; i--)
            *p++ = (unsigned char)(t >> (8 * i));
        put16(p, 300);
        put16(p + 2, 0);     /* no MAC */
        memcpy(p + 4, q, 2); /* original ID */
        put16(p + 6, 18);    /* BADTIME */
        put16(p + 8, 6);
        p += 10;
        for (int i = 5; i >= 0; i--)
            *p++ = (unsigned char)(t >> (8 * i));
        put16(a + n, (unsigned)(p - rd));
        n = (size_t)(p - a);
        break;
    }
    case FAKE_TXT:
        put16(a + 6, 2);
        n += fake_rr(a + n, ptr_q, 2, 16, txt, sizeof(txt) - 1);
        n += fake_rr(a + n, other, sizeof(other), 16, (const unsigned char *)"\4only", 5);
        break;
    case FAKE_LOOP:
        put16(a + 6, 1);
        put16(a + n, 0xc000 | (unsigned)n);
        n += 2 + fake_rr(a + n + 2, (const unsigned char *)"", 0, 16, txt, 2);
        break;
    case FAKE_BAD_RDLEN:
        put16(a + 6, 1);
        n += fake_rr(a + n, ptr_q, 2, 16, txt, 4);
        put16(a + n - 6, 200);
        break;
    case FAKE_TRAILING:
        a[n++] = 0;
        break;
    case FAKE_TSIG_NOT_END:
        put16(a + 6, 1);
        n += fake_rr(a + n, ptr_q, 2, 250, txt, 4);
        break;
    default:
        break;
    }
    return n;
}

static bool read_full(int fd, unsigned char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

static void fake_serve(int ls, enum fake_mode mode)
{
    for (;;) {
        int fd = accept(ls, NULL, NULL);
        if (fd < 0)
            _exit(1);
        unsigned char lenbuf[2], q[1024], a[2048 + 2];
        if (!read_full(fd, lenbuf, 2))
            _exit(1);
        size_t qlen = (size_t)(lenbuf[0] << 8 | lenbuf[1]);
        if (qlen > sizeof(q) || qlen < 12 || !read_full(fd, q, qlen))
            _exit(1);
        if (mode == FAKE_SILENT) {
            while (read(fd, a, sizeof(a)) > 0)
                ;
        } else if (mode == FAKE_SHORT) {
            memcpy(a, "\0\x64\1\2\3\4\5\6\7\10\11\12", 12);
            if (write(fd, a, 12) != 12)
                _exit(1);
        } else {
            size_t n = mode == FAKE_EMPTY ? 0 : fake_answer(mode, q, qlen, a + 2);
            put16(a, (unsigned)n);
            if (write(fd, a, n + 2) != (ssize_t)(n + 2))
                _exit(1);
        }
        close(fd);
    }
}

static bool fake_start(enum fake_mode mode, struct fake *f)
{
    int port;
    int ls = listen_any(&port, true);
    if (ls < 0)
        return false;
    snprintf(f->server, sizeof(f->server), "127.0.0.1:%d", port);
    f->pid = fork();
    if (f->pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        alarm(15);
        fake_serve(ls, mode);
        _exit(0);
    }
    close(ls);
    return f->pid > 0;
}

static void fake_stop(struct fake *f)
{
    kill(f->pid, SIGKILL);
    waitpid(f->pid, NULL, 0);
}

/* Start a fake in @p mode and a configuration for it with a 300 ms limit;
 * false (reported) when the fake does not start. */
static bool fake_begin(enum fake_mode mode, struct fake *f, struct acme_dns_conf *c,
                       const char *what)
{
    if (!ok(fake_start(mode, f), "%s: fake server started", what))
        return false;
    *c = conf_for(f->server);
    c->timeout_ms = 300;
    return true;
}

/* One update against a fake in @p mode: @p want and a message with @p needle. */
static void fake_update(enum fake_mode mode, int want, const char *needle, const char *what)
{
    struct fake f;
    struct acme_dns_conf c;
    if (!fake_begin(mode, &f, &c, what))
        return;
    char *err = NULL;
    uint64_t t0 = ms_now();
    is_int(acme_dns_update(&c, true, "_acme-challenge.example.test", V1, 60, &err), want,
           "%s: error code", what);
    like(err, needle, "%s: message", what);
    /* Not a timing test: the bound only tells the 300 ms limit given from
     * the 10 s default, with room for a loaded machine. */
    ok(ms_now() - t0 < 8000, "%s: the 300 ms limit applies, not the 10 s default", what);
    free(err);
    fake_stop(&f);
}

static void fake_query(enum fake_mode mode, const char *value, int want, const char *needle,
                       const char *what)
{
    struct fake f;
    struct acme_dns_conf c;
    if (!fake_begin(mode, &f, &c, what))
        return;
    char *err = NULL;
    is_int(acme_dns_txt_has(&c, "_acme-challenge.example.test", value, &err), want, "%s: result",
           what);
    if (needle)
        like(err, needle, "%s: message", what);
    else
        ok(err == NULL, "%s: no error (%s)", what, err ? err : "");
    free(err);
    fake_stop(&f);
}

static void test_fake_server(void)
{
    fake_update(FAKE_SILENT, -ETIMEDOUT,
                "DNS update of _acme-challenge.example.test at 127.0.0.1:", "silent server");
    fake_update(FAKE_SILENT, -ETIMEDOUT, ": no answer in 300 ms", "silent server, message");
    fake_update(FAKE_SHORT, -ECONNRESET, "the server closed the connection", "short answer");
    fake_update(FAKE_EMPTY, -EPROTO, "malformed answer of 0 bytes", "empty answer");
    fake_update(FAKE_WRONG_ID, -EPROTO, "is not the request's", "wrong ID");
    fake_update(FAKE_UNSIGNED, -EPROTO, "not signed", "unsigned NOERROR");
    fake_update(FAKE_REFUSED, -EACCES, "127.0.0.1", "unsigned REFUSED");
    fake_update(FAKE_REFUSED, -EACCES, ": REFUSED", "unsigned REFUSED, message");
    fake_update(FAKE_ECHO, -EPROTO, "TSIG MAC does not verify", "echoed request");
    fake_update(FAKE_BADTIME, -EACCES,
                "NOTAUTH (TSIG error BADTIME; the server's clock is +1000 s from ours)", "BADTIME");
    fake_update(FAKE_TRAILING, -EPROTO, "malformed answer", "trailing byte");

    fake_query(FAKE_TXT, V1, 1, NULL, "TXT behind a compression pointer");
    fake_query(FAKE_TXT, "first", 1, NULL, "first string of a TXT");
    fake_query(FAKE_TXT, "only", 0, NULL, "TXT of another owner");
    fake_query(FAKE_TXT, "firs", 0, NULL, "a prefix is no match");
    fake_query(FAKE_LOOP, V1, -EPROTO, "malformed answer", "pointer loop");
    fake_query(FAKE_BAD_RDLEN, V1, -EPROTO, "malformed answer", "rdlength past the end");
    fake_query(FAKE_TSIG_NOT_END, V1, -EPROTO, "at the TSIG record", "TSIG not last");
    fake_query(FAKE_REFUSED, V1, -EACCES, "DNS query for TXT _acme-challenge.example.test at",
               "query REFUSED");
    fake_query(FAKE_WRONG_ID, V1, -EPROTO, "ID", "query: wrong ID");

    int port;
    int fd = listen_any(&port, false);
    char server[32];
    snprintf(server, sizeof(server), "127.0.0.1:%d", port);
    close(fd);
    struct acme_dns_conf c = conf_for(server);
    char *err = NULL;
    is_int(acme_dns_update(&c, true, "_acme-challenge.example.test", V1, 60, &err), -ECONNREFUSED,
           "nothing listening: -ECONNREFUSED");
    like(err, "cannot connect: Connection refused", "nothing listening: message");
    free(err);
    err = NULL;
    c.server = "no-such-host.invalid";
    ok(acme_dns_txt_has(&c, "example.test", V1, &err) == -ENOENT, "unknown host: -ENOENT");
    like(err, "cannot resolve no-such-host.invalid", "unknown host: message");
    free(err);
}

/* ---- against named -------------------------------------------------------------------- */

struct named {
    pid_t pid;
    int port;
    char dir[64];
    char server[32];
};

static bool write_file(const char *dir, const char *name, const char *text)
{
    char *path = tlsbox_xasprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    free(path);
    if (!f)
        return false;
    bool good = fputs(text, f) >= 0;
    return fclose(f) == 0 && good;
}

static bool named_write_conf(const struct named *n)
{
    char *conf = tlsbox_xasprintf(
        "key \"tlsbox-acme\" { algorithm hmac-sha256; secret \"" SECRET256 "\"; };\n"
        "key \"tlsbox-acme-512\" { algorithm hmac-sha512; secret \"" SECRET512 "\"; };\n"
        "key \"not-allowed\" { algorithm hmac-sha256; secret \"" SECRET256 "\"; };\n"
        "options {\n"
        "  directory \"%s\";\n"
        "  pid-file \"%s/named.pid\";\n"
        /* Else /run/named/session.key and the rndc port 953, shared by every named. */
        "  session-keyfile \"%s/session.key\";\n"
        "  managed-keys-directory \"%s\";\n"
        "  listen-on port %d { 127.0.0.1; };\n"
        "  listen-on-v6 { none; };\n"
        "  recursion no;\n"
        "  dnssec-validation no;\n"
        "  notify no;\n"
        "};\n"
        "controls { };\n"
        "zone \"example.test\" {\n"
        "  type primary;\n"
        "  file \"example.test.zone\";\n"
        "  allow-update { key \"tlsbox-acme\"; key \"tlsbox-acme-512\"; };\n"
        "};\n",
        n->dir, n->dir, n->dir, n->dir, n->port);
    bool good = write_file(n->dir, "named.conf", conf) &&
                write_file(n->dir, "example.test.zone",
                           "$TTL 300\n"
                           "@ IN SOA ns.example.test. hostmaster.example.test. 1 3600 600 86400 "
                           "300\n"
                           "@ IN NS ns.example.test.\n"
                           "ns IN A 127.0.0.1\n"
                           "plain IN TXT \"x\"\n"
                           "a IN CNAME b.example.test.\n"
                           "b IN CNAME c.example.test.\n"
                           "loop1 IN CNAME loop2.example.test.\n"
                           "loop2 IN CNAME loop1.example.test.\n");
    free(conf);
    return good;
}

static void named_log_tail(const struct named *n)
{
    char *path = tlsbox_xasprintf("%s/named.log", n->dir);
    FILE *f = fopen(path, "r");
    free(path);
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof(line), f))
        if (strstr(line, "rror") || strstr(line, "fail") || strstr(line, "denied") ||
            strstr(line, "exiting"))
            diag("named: %s", strtok(line, "\n"));
    fclose(f);
}

static void named_exec(const struct named *n)
{
    char *log = tlsbox_xasprintf("%s/named.log", n->dir);
    char *conf = tlsbox_xasprintf("%s/named.conf", n->dir);
    FILE *f = freopen(log, "w", stdout);
    if (!f || dup2(STDOUT_FILENO, STDERR_FILENO) < 0)
        _exit(126);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    /* No -u: as root named keeps uid 0 (minus most capabilities), so it can
     * write its journal into our 0700 directory; -u bind could not. */
    execl(NAMED, "named", "-g", "-c", conf, (char *)NULL);
    _exit(127);
}

/* Wait until named answers from its zone (listening is not enough: the zone loads later). */
static bool named_wait(const struct named *n)
{
    struct acme_dns_conf c = conf_for(n->server);
    c.timeout_ms = 500;
    uint64_t deadline = ms_now() + 10000;
    while (ms_now() < deadline) {
        if (waitpid(n->pid, NULL, WNOHANG) == n->pid)
            return false;
        if (acme_dns_txt_has(&c, "ns.example.test", "x", NULL) == 0)
            return true;
        sleep_ms(100);
    }
    return false;
}

static bool named_start(struct named *n)
{
    snprintf(n->dir, sizeof(n->dir), "/tmp/acme_dns_test.XXXXXX");
    n->pid = -1;
    if (!mkdtemp(n->dir))
        return false;
    int fd = listen_any(&n->port, false);
    if (fd < 0)
        return false;
    close(fd);
    snprintf(n->server, sizeof(n->server), "127.0.0.1:%d", n->port);
    if (!named_write_conf(n))
        return false;
    fflush(stdout);
    n->pid = fork();
    if (n->pid == 0)
        named_exec(n);
    if (n->pid < 0)
        return false;
    return named_wait(n);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void named_stop(struct named *n)
{
    if (n->pid > 0) {
        kill(n->pid, SIGTERM);
        uint64_t deadline = ms_now() + 5000;
        while (waitpid(n->pid, NULL, WNOHANG) != n->pid) {
            if (ms_now() > deadline) {
                kill(n->pid, SIGKILL);
                waitpid(n->pid, NULL, 0);
                break;
            }
            sleep_ms(50);
        }
    }
    nftw(n->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Update, then expect @p want; a failure shows the message. */
static void upd(const struct acme_dns_conf *c, bool add, const char *fqdn, const char *value,
                int want, const char *what)
{
    char *err = NULL;
    int rc = acme_dns_update(c, add, fqdn, value, 60, &err);
    is_int(rc, want, "%s", what);
    if (err && rc != want)
        diag("  %s", err);
    free(err);
}

static void has(const struct acme_dns_conf *c, const char *fqdn, const char *value, int want,
                const char *what)
{
    char *err = NULL;
    int rc = acme_dns_txt_has(c, fqdn, value, &err);
    is_int(rc, want, "%s", what);
    if (err)
        diag("  %s", err);
    free(err);
}

/* An update refused by named: @p want and a message with @p needle, no secret. */
static void upd_refused(const struct acme_dns_conf *c, int want, const char *needle,
                        const char *what)
{
    char *err = NULL;
    is_int(acme_dns_update(c, true, "_acme-challenge.www.example.test", V1, 60, &err), want,
           "%s: error code", what);
    like(err, needle, "%s: message", what);
    ok(!err || (!strstr(err, "F53hi673") && !strstr(err, "AAAA")), "%s: no secret", what);
    free(err);
}

static void test_named_records(const struct named *n)
{
    struct acme_dns_conf c = conf_for(n->server);
    const char *name = "_acme-challenge.www.example.test";
    upd(&c, true, name, V1, 0, "add V1");
    has(&c, name, V1, 1, "V1 is served");
    upd(&c, true, name, V2, 0, "add V2 at the same name");
    has(&c, name, V2, 1, "V2 is served");
    has(&c, name, V1, 1, "V1 is still served");
    upd(&c, false, name, V1, 0, "delete V1");
    has(&c, name, V1, 0, "V1 is gone");
    has(&c, name, V2, 1, "V2 stays: only that record was deleted");
    upd(&c, false, name, V2, 0, "delete V2");
    has(&c, name, V2, 0, "V2 is gone (NXDOMAIN)");
    upd(&c, false, name, V2, 0, "deleting what is not there is a success");

    c.zone = "Example.TEST.";
    upd(&c, true, "_acme-challenge.WWW.Example.test.", V1, 0, "add with other case and dots");
    has(&c, "_acme-challenge.www.example.test", V1, 1, "served under the lowercase name");
    upd(&c, false, "_acme-challenge.www.EXAMPLE.test", V1, 0, "delete with other case");
    has(&c, name, V1, 0, "gone");
    c.zone = "example.test";

    char big[256];
    memset(big, 'x', 255);
    big[255] = '\0';
    upd(&c, true, "example.test", big, 0, "add a 255-byte value at the zone apex");
    has(&c, "example.test", big, 1, "the 255-byte value is served");
    upd(&c, false, "example.test", big, 0, "delete it");
    has(&c, "example.test", big, 0, "gone");

    c.key_name = "tlsbox-acme-512";
    c.key_alg = "hmac-sha512";
    c.key_secret = SECRET512;
    upd(&c, true, name, V2, 0, "hmac-sha512: add");
    has(&c, name, V2, 1, "hmac-sha512: served");
    upd(&c, false, name, V2, 0, "hmac-sha512: delete");
    has(&c, name, V2, 0, "hmac-sha512: gone");

    c = conf_for(tlsbox_xasprintf("localhost:%d", n->port));
    upd(&c, true, name, V1, 0, "server given by host name");
    upd(&c, false, name, V1, 0, "server given by host name: delete");
    free((char *)c.server);
}

static void test_named_refusals(const struct named *n)
{
    struct acme_dns_conf c = conf_for(n->server);
    c.key_secret = WRONG256;
    upd_refused(&c, -EACCES, ": NOTAUTH (TSIG error BADSIG)", "wrong secret");
    c = conf_for(n->server);
    c.key_name = "nobody";
    upd_refused(&c, -EACCES, ": NOTAUTH (TSIG error BADKEY)", "unknown key");
    c = conf_for(n->server);
    c.key_alg = "hmac-sha512";
    upd_refused(&c, -EACCES, "TSIG error BAD", "right key, wrong algorithm");
    c = conf_for(n->server);
    c.key_name = "not-allowed";
    upd_refused(&c, -EACCES,
                "DNS update of _acme-challenge.www.example.test at 127.0.0.1:", "key not allowed");
    upd_refused(&c, -EACCES, ": REFUSED", "key not allowed: REFUSED");

    c = conf_for(n->server);
    c.zone = "other.test";
    char *err = NULL;
    int rc = acme_dns_update(&c, true, "_acme-challenge.other.test", V1, 60, &err);
    ok(rc == -EACCES || rc == -EREMOTEIO, "zone not served: refused (%d)", rc);
    like(err, ": NOTAUTH", "zone not served: NOTAUTH");
    free(err);
    err = NULL;
    is_int(acme_dns_txt_has(&c, "_acme-challenge.other.test", V1, &err), -EACCES,
           "query outside the server's zones: -EACCES");
    like(err, ": REFUSED", "query outside the server's zones: REFUSED");
    free(err);

    c = conf_for(n->server);
    err = NULL;
    is_int(acme_dns_update(&c, true, "_acme-challenge.example.org", V1, 60, &err), -EINVAL,
           "name outside the zone: refused before sending");
    like(err, "the name is not in zone example.test", "name outside the zone: message");
    free(err);
}

/* Follow @p fqdn's CNAME chain: @p want, and @p target when it is 1. */
static void chain(const struct acme_dns_conf *c, const char *fqdn, int want, const char *target,
                  const char *what)
{
    char *got = NULL, *err = NULL;
    int rc = acme_dns_cname_follow(c, fqdn, &got, &err);
    is_int(rc, want, "%s", what);
    if (want == 1)
        is_str(got, target, "%s: ends at %s", what, target);
    if (err)
        diag("  %s", err);
    free(got);
    free(err);
}

static void test_named_cnames(const struct named *n)
{
    struct acme_dns_conf c = {.server = n->server, .timeout_ms = 2000};
    chain(&c, "a.example.test", 1, "c.example.test", "a CNAME to a CNAME: followed to its end");
    chain(&c, "B.Example.Test.", 1, "c.example.test", "case and trailing dot of the question");
    chain(&c, "plain.example.test", 0, NULL, "a name with a TXT and no CNAME: 0");
    chain(&c, "none.example.test", 0, NULL, "a name that does not exist: 0");
    char *err = NULL, *got = NULL;
    is_int(acme_dns_cname_follow(&c, "loop1.example.test", &got, &err), -ELOOP,
           "a CNAME loop: -ELOOP");
    like(err, "DNS query for CNAME loop1.example.test at 127.0.0.1:", "a CNAME loop: named");
    like(err, ": a chain of more than 8 CNAMEs (a loop?)", "  and says what is wrong");
    ok(got == NULL, "a CNAME loop: no target");
    free(err);
    err = NULL;
    is_int(acme_dns_cname_follow(&c, "x.other.test", &got, &err), -EACCES,
           "a name outside the server's zones (no recursion): -EACCES");
    like(err, ": REFUSED", "  REFUSED");
    free(err);
}

static void test_named(void)
{
    struct named n;
    if (access(NAMED, X_OK) != 0) {
        ok(0, "%s is installed (apt-get install bind9)", NAMED);
        return;
    }
    uint64_t t0 = ms_now();
    bool up = named_start(&n);
    if (!ok(up, "named started on %s (%llu ms)", n.server, (unsigned long long)(ms_now() - t0))) {
        named_log_tail(&n);
        named_stop(&n);
        return;
    }
    test_named_records(&n);
    test_named_refusals(&n);
    test_named_cnames(&n);
    named_stop(&n);
    ok(access(n.dir, F_OK) != 0, "temporary directory removed");
}

int main(void)
{
    /* A hung test is a failed test; named and the fakes die with us. */
    alarm(60);
    test_name_wire();
    test_in_zone();
    test_name_text();
    test_system_resolver();
    test_refusals();
    test_fake_server();
    test_named();
    return done_testing();
}
