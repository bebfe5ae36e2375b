/* The error record of an ACME attempt. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
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
    if (step)
        snprintf(e->step, sizeof(e->step), "%s", step);
    e->type = type ? tlsbox_xstrdup(type) : NULL;
    va_list ap;
    va_start(ap, fmt);
    e->detail = tlsbox_xvasprintf(fmt, ap);
    va_end(ap);
}
