#include "core/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <malloc.h>

static void oom(size_t n)
{
    /* Nothing sensible can continue: a half-built bundle or settings cache is
     * worse than a restart by systemd. */
    fprintf(stderr, "<2>core: out of memory allocating %zu bytes\n", n);
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom(n);
    return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
    if (!p)
        oom(nmemb * size);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom(n);
    return q;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

char *xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = xmalloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *xvasprintf(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        oom(0);
    char *p = xmalloc((size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = xvasprintf(fmt, ap);
    va_end(ap);
    return p;
}

void wipe(void *p, size_t n)
{
    if (p && n)
        explicit_bzero(p, n);
}

void wipe_free_str(char *s)
{
    if (s)
        wipe_free(s, strlen(s));
}

void wipe_free(void *p, size_t n)
{
    if (!p)
        return;
    wipe(p, n);
    free(p);
}

void wipe_free_usable(void *p)
{
    if (!p)
        return;
    explicit_bzero(p, malloc_usable_size(p));
    free(p);
}

void xalloc_json_wiping(void)
{
    json_set_alloc_funcs(xmalloc, wipe_free_usable);
}

void xset_err(char **err, const char *fmt, ...)
{
    if (!err)
        return;
    va_list ap;
    va_start(ap, fmt);
    free(*err);
    *err = xvasprintf(fmt, ap);
    va_end(ap);
}
