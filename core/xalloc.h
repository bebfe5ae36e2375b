/* Allocation that aborts on failure (one place decides what OOM means), and
 * wiping frees for anything that held key material. */
#ifndef TLSBOX_CORE_XALLOC_H
#define TLSBOX_CORE_XALLOC_H

#include <stdarg.h>
#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *xvasprintf(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Replace *err (freed first) with a formatted message; no-op when err is NULL.
 * For the "char **err" out-parameters of core functions. */
void xset_err(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Overwrite @p n bytes at @p p so the compiler cannot drop it. */
void wipe(void *p, size_t n);
/* wipe() a NUL-terminated string, then free it.  NULL is fine. */
void wipe_free_str(char *s);
/* wipe() @p n bytes, then free.  NULL is fine. */
void wipe_free(void *p, size_t n);

/* free() that first wipes the whole block (malloc_usable_size): given to
 * jansson with json_set_alloc_funcs, so JSON that carried a private key (an
 * import request) leaves no copy behind in freed memory. */
void wipe_free_usable(void *p);
/* Install xmalloc/wipe_free_usable as jansson's allocator.  Once, before threads. */
void xalloc_json_wiping(void);

#endif
