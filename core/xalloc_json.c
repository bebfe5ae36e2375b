/* The wiping allocator for jansson, apart from core/xalloc.c so that code
 * built without jansson (the plugin kit's mock host compiles xalloc.c for
 * core/settings_check.c) can have xset_err. */
#include "core/xalloc.h"

#include <stdlib.h>

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
