/* Certificates by the address a client connected to: address helpers (see tls_addr.h). */
#include "core/tls_addr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <jansson.h>

static bool parse(const char *s, struct tls_addr *a)
{
    if (inet_pton(AF_INET, s, a->ip) == 1) {
        a->len = 4;
        return true;
    }
    if (inet_pton(AF_INET6, s, a->ip) == 1) {
        a->len = 16;
        return true;
    }
    return false;
}

size_t tls_addr_from_sans(const char *sans_json, struct tls_addr *out, size_t cap)
{
    json_t *sans = sans_json ? json_loads(sans_json, 0, NULL) : NULL;
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(sans, i, e)
    {
        const char *s = json_string_value(e);
        struct tls_addr a = {{0}, 0};
        if (n < cap && s && parse(s, &a) && !tls_addr_in(&a, out, n))
            out[n++] = a;
    }
    json_decref(sans);
    return n;
}

int tls_addr_local(int fd, struct tls_addr *out)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
        return -errno;
    if (ss.ss_family == AF_INET) {
        memcpy(out->ip, &((struct sockaddr_in *)&ss)->sin_addr, 4);
        out->len = 4;
        return 0;
    }
    if (ss.ss_family != AF_INET6)
        return -EAFNOSUPPORT;
    const struct in6_addr *a6 = &((struct sockaddr_in6 *)&ss)->sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(a6)) { /* a dual-stack socket's IPv4 client */
        memcpy(out->ip, a6->s6_addr + 12, 4);
        out->len = 4;
    } else {
        memcpy(out->ip, a6->s6_addr, 16);
        out->len = 16;
    }
    return 0;
}

bool tls_addr_in(const struct tls_addr *a, const struct tls_addr *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (list[i].len == a->len && memcmp(list[i].ip, a->ip, a->len) == 0)
            return true;
    return false;
}

const char *tls_addr_text(const struct tls_addr *a, char *buf, size_t cap)
{
    if (!inet_ntop(a->len == 4 ? AF_INET : AF_INET6, a->ip, buf, (socklen_t)cap))
        snprintf(buf, cap, "?");
    return buf;
}
