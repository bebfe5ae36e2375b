/* Host calls for OCSP (ABI 1.1): staple_set and internal_ocsp, thin adapters
 * onto tls_staple.c and tls_ca_ocsp.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/events.h"
#include "core/log.h"
#include "core/plugin_loader.h"
#include "core/store.h"
#include "core/tls.h"
#include "core/tls_ca_ocsp.h"
#include "core/tls_cert.h"
#include "core/tls_staple.h"
#include "core/xalloc.h"

static const char *who(struct tlsbox_plugin *self)
{
    return self && self->name ? self->name : "core";
}

int tls_staple_set(struct tlsbox_plugin *self, const char *cert_name, const void *der,
                   size_t der_len, int64_t serve_until)
{
    char *err = NULL;
    if (!tls_cert_name_ok(cert_name) || (der && der_len == 0))
        return -EINVAL;
    sqlite3 *db = store_connect();
    if (!db)
        return -EIO;
    int rc = tls_staple_store(db, cert_name, der, der_len, (time_t)serve_until, time(NULL), &err);
    store_disconnect(db);
    if (rc == -EINVAL)
        log_warn("tls: OCSP staple for %s from %s refused: %s", cert_name, who(self), err);
    else if (rc == -EIO)
        log_err("tls: OCSP staple for %s: %s", cert_name, err ? err : "store error");
    free(err);
    if (rc < 0)
        return rc;
    json_t *ev = json_pack("{s:s, s:b}", "name", cert_name, "stapled", der != NULL);
    char *evs = json_dumps(ev, JSON_COMPACT);
    events_publish("ocsp.changed", evs);
    free(evs);
    json_decref(ev);
    return 0;
}

int tls_internal_ocsp(struct tlsbox_plugin *self, const char *cert_name, void **der,
                      size_t *der_len, char **issuer_pem)
{
    char *err = NULL;
    unsigned char *out = NULL;
    *der = NULL;
    *der_len = 0;
    if (issuer_pem)
        *issuer_pem = NULL;
    if (!tls_cert_name_ok(cert_name))
        return -ENOENT;
    sqlite3 *db = store_connect();
    if (!db)
        return -EIO;
    int rc = tls_ca_ocsp_response(db, cert_name, time(NULL), &out, der_len, issuer_pem, &err);
    store_disconnect(db);
    if (rc < 0 && err)
        log_info("tls: internal OCSP for %s (asked by %s): %s", cert_name, who(self), err);
    free(err);
    *der = out;
    return rc;
}
