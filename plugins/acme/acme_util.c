/* The error record of an ACME attempt. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/acme/acme.h"

void acme_err_clear(struct acme_err *e)
{
    if (!e)
        return;
    free(e->type);
    free(e->detail);
    memset(e, 0, sizeof(*e));
}

void acme_err_set(struct acme_err *e, const char *step, const char *type, const char *fmt, ...)
{
    if (!e)
        return;
    free(e->type);
    free(e->detail);
    e->type = NULL;
    e->detail = NULL;
    /* A new error replaces the whole record: an HTTP status, a Retry-After
     * (a CA's wait imposed on the next order) or a failed challenge type left
     * from an earlier error that was got past would be told as this one's.
     * Whoever has them sets them after this call. */
    e->http_status = 0;
    e->retry_after = 0;
    e->challenge[0] = '\0';
    if (step)
        snprintf(e->step, sizeof(e->step), "%s", step);
    e->type = type ? tlsbox_xstrdup(type) : NULL;
    va_list ap;
    va_start(ap, fmt);
    e->detail = tlsbox_xvasprintf(fmt, ap);
    va_end(ap);
}

bool acme_ip(const char *s, unsigned char bin[16], size_t *len, char canon[46])
{
    unsigned char b[16];
    int af = strchr(s, ':') ? AF_INET6 : AF_INET;
    if (inet_pton(af, s, b) != 1)
        return false;
    if (bin)
        memcpy(bin, b, af == AF_INET ? 4 : 16);
    if (len)
        *len = af == AF_INET ? 4 : 16;
    if (canon && !inet_ntop(af, b, canon, 46))
        return false;
    return true;
}

char *acme_cert_name(const char *first)
{
    char *name = tlsbox_xstrdup(first);
    for (char *p = name; *p; p++)
        if (*p == ':')
            *p = '-';
    return name;
}
