/* The installed certificates, read through the host (cert_get): the
 * certificates table is the core's, and its layout is not part of the kit. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "plugins/acme/acme_plugin.h"

static char *json_text(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? tlsbox_xstrdup(s) : NULL;
}

int acme_cert_get(struct acme *a, const char *name, struct acme_cert_row *out)
{
    char *chain = NULL, *info = NULL;
    memset(out, 0, sizeof(*out));
    if (!TLSBOX_HOST_HAS(a->host, cert_get))
        return -ENOTSUP;
    int rc = a->host->cert_get(a->self, name, &chain, &info);
    if (rc < 0)
        return rc;
    json_t *j = json_loads(info, 0, NULL);
    free(info);
    if (!json_is_object(j)) {
        free(chain);
        json_decref(j);
        return -EIO;
    }
    out->chain_pem = chain;
    out->sans = json_dumps(json_object_get(j, "sans"), JSON_COMPACT);
    out->status = json_text(j, "status");
    out->serial = json_text(j, "serial");
    out->ari_id = json_text(j, "ari_id");
    out->not_before = (time_t)json_integer_value(json_object_get(j, "not_before"));
    out->not_after = (time_t)json_integer_value(json_object_get(j, "not_after"));
    json_decref(j);
    return 0;
}
