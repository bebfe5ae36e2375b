/*
 * tlsbox plugin kit: checked allocation and wiping frees (ABI 1.1; header
 * only, nothing to link).
 *
 * Every plugin needs the same few helpers: allocation that aborts instead of
 * returning NULL (a plugin half-way through building its state has nothing
 * sensible to do on out-of-memory, and systemd restarts the daemon), and
 * frees that first overwrite memory that held key material.  They are
 * static inline so that a plugin exports nothing but its descriptor.
 *
 * Threading: every function is thread-safe (they only call malloc/free).
 * Ownership: everything returned is owned by the caller and freed with free()
 * (or tlsbox_wipe_free / tlsbox_wipe_free_str for secrets).
 */
#ifndef TLSBOX_XALLOC_H
#define TLSBOX_XALLOC_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Report an allocation of @p n bytes that failed, then abort(). */
static inline void tlsbox_oom(size_t n)
{
    fprintf(stderr, "<2>tlsbox: out of memory allocating %zu bytes\n", n);
    abort();
}

/** malloc() that never returns NULL (0 bytes allocates 1). */
static inline void *tlsbox_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        tlsbox_oom(n);
    return p;
}

/** calloc() that never returns NULL. */
static inline void *tlsbox_xcalloc(size_t nmemb, size_t size)
{
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
    if (!p)
        tlsbox_oom(nmemb * size);
    return p;
}

/** realloc() that never returns NULL. */
static inline void *tlsbox_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        tlsbox_oom(n);
    return q;
}

/** strdup() that never returns NULL; @p s must not be NULL. */
static inline char *tlsbox_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return (char *)memcpy(tlsbox_xmalloc(n), s, n);
}

/** At most @p n bytes of @p s, NUL-terminated; never NULL. */
static inline char *tlsbox_xstrndup(const char *s, size_t n)
{
    size_t len = 0;
    while (len < n && s[len])
        len++;
    char *p = (char *)tlsbox_xmalloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

/** vasprintf() that never returns NULL. */
__attribute__((format(printf, 1, 0))) static inline char *tlsbox_xvasprintf(const char *fmt,
                                                                            va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        tlsbox_oom(0);
    char *p = (char *)tlsbox_xmalloc((size_t)n + 1);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

/** asprintf() that never returns NULL. */
__attribute__((format(printf, 1, 2))) static inline char *tlsbox_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = tlsbox_xvasprintf(fmt, ap);
    va_end(ap);
    return p;
}

/** Overwrite @p n bytes at @p p with zeros; the compiler may not drop it. */
static inline void tlsbox_wipe(void *p, size_t n)
{
    if (!p || !n)
        return;
    memset(p, 0, n);
    /* The memory is about to be freed: tell the compiler it is read. */
    __asm__ __volatile__("" : : "r"(p) : "memory");
}

/** tlsbox_wipe() @p n bytes, then free().  NULL is fine. */
static inline void tlsbox_wipe_free(void *p, size_t n)
{
    if (!p)
        return;
    tlsbox_wipe(p, n);
    free(p);
}

/** tlsbox_wipe() a NUL-terminated string, then free().  NULL is fine. */
static inline void tlsbox_wipe_free_str(char *s)
{
    if (s)
        tlsbox_wipe_free(s, strlen(s));
}

#ifdef __cplusplus
}
#endif

#endif /* TLSBOX_XALLOC_H */
