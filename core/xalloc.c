#include "core/xalloc.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <malloc.h>

void wipe_free_usable(void *p)
{
    if (!p)
        return;
    wipe(p, malloc_usable_size(p));
    free(p);
}

static void *json_xmalloc(size_t n)
{
    return xmalloc(n);
}

void xalloc_json_wiping(void)
{
    json_set_alloc_funcs(json_xmalloc, wipe_free_usable);
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
