/* Allocation that aborts on failure (one place decides what OOM means), and
 * wiping frees for anything that held key material.  The core uses the
 * plugin kit's helpers (<tlsbox/xalloc.h>) under its own short names. */
#ifndef TLSBOX_CORE_XALLOC_H
#define TLSBOX_CORE_XALLOC_H

#include <stdarg.h>
#include <stddef.h>

#include <tlsbox/xalloc.h>

static inline void *xmalloc(size_t n)
{
    return tlsbox_xmalloc(n);
}

static inline void *xcalloc(size_t nmemb, size_t size)
{
    return tlsbox_xcalloc(nmemb, size);
}

static inline void *xrealloc(void *p, size_t n)
{
    return tlsbox_xrealloc(p, n);
}

static inline char *xstrdup(const char *s)
{
    return tlsbox_xstrdup(s);
}

static inline char *xstrndup(const char *s, size_t n)
{
    return tlsbox_xstrndup(s, n);
}

#define xvasprintf tlsbox_xvasprintf
#define xasprintf tlsbox_xasprintf

/* Overwrite @p n bytes at @p p so the compiler cannot drop it. */
static inline void wipe(void *p, size_t n)
{
    tlsbox_wipe(p, n);
}

/* wipe() a NUL-terminated string, then free it.  NULL is fine. */
static inline void wipe_free_str(char *s)
{
    tlsbox_wipe_free_str(s);
}

/* wipe() @p n bytes, then free.  NULL is fine. */
static inline void wipe_free(void *p, size_t n)
{
    tlsbox_wipe_free(p, n);
}

/* Replace *err (freed first) with a formatted message; no-op when err is NULL.
 * For the "char **err" out-parameters of core functions. */
void xset_err(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* free() that first wipes the whole block (malloc_usable_size): given to
 * jansson with json_set_alloc_funcs, so JSON that carried a private key (an
 * import request) leaves no copy behind in freed memory.  This and
 * xalloc_json_wiping live in core/xalloc_json.c (links jansson). */
void wipe_free_usable(void *p);
/* Install xmalloc/wipe_free_usable as jansson's allocator.  Once, before threads. */
void xalloc_json_wiping(void);

#endif
