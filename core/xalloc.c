#include "core/xalloc.h"

#include <stdlib.h>

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
