/* Allocation that aborts on failure, key wiping, and the error record. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/acme/acme.h"

static void acme_oom(void)
{
    fputs("acme: out of memory\n", stderr);
    abort();
}

void *acme_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        acme_oom();
    return p;
}

void *acme_xcalloc(size_t nmemb, size_t size)
{
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
    if (!p)
        acme_oom();
    return p;
}

void *acme_xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        acme_oom();
    return p;
}

char *acme_xstrdup(const char *s)
{
    char *p = strdup(s);
    if (!p)
        acme_oom();
    return p;
}

char *acme_xstrndup(const char *s, size_t n)
{
    char *p = strndup(s, n);
    if (!p)
        acme_oom();
    return p;
}

char *acme_xvasprintf(const char *fmt, va_list ap)
{
    char *p;
    if (vasprintf(&p, fmt, ap) < 0)
        acme_oom();
    return p;
}

char *acme_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = acme_xvasprintf(fmt, ap);
    va_end(ap);
    return p;
}

void acme_wipe(void *p, size_t n)
{
    if (!p)
        return;
    volatile unsigned char *v = p;
    while (n--)
        *v++ = 0;
}

void acme_wipe_free_str(char *s)
{
    if (!s)
        return;
    acme_wipe(s, strlen(s));
    free(s);
}

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
    if (step)
        snprintf(e->step, sizeof(e->step), "%s", step);
    e->type = type ? acme_xstrdup(type) : NULL;
    va_list ap;
    va_start(ap, fmt);
    e->detail = acme_xvasprintf(fmt, ap);
    va_end(ap);
}
