/* The admin server's certificate: the TLS bundle's first certificate chain
 * and key (the one the site prefers), copied out of the bundle's credentials.
 * A new bundle generation (certificate renewed, imported, policy changed)
 * reaches the next handshake without a restart.  Copies are kept until
 * admin_cert_free: a handshake in flight may still use an older one, and
 * bundles change rarely. */
#include <pthread.h>
#include <stdlib.h>

#include "core/admin.h"
#include "core/log.h"
#include "core/tls.h"
#include "core/tls_bundle.h"
#include "core/xalloc.h"

#define MAX_CHAIN 8

struct certset {
    uint64_t generation;
    gnutls_pcert_st pcerts[MAX_CHAIN];
    unsigned n;
    gnutls_privkey_t key;
    struct certset *older;
};

static pthread_mutex_t cert_lock = PTHREAD_MUTEX_INITIALIZER;
static struct certset *current;

static void certset_free(struct certset *c)
{
    for (unsigned i = 0; i < c->n; i++)
        gnutls_pcert_deinit(&c->pcerts[i]);
    if (c->key)
        gnutls_privkey_deinit(c->key);
    free(c);
}

/* Copy credential 0 of @p b.  NULL (logged) on failure. */
static struct certset *certset_from(struct tlsbox_bundle *b)
{
    gnutls_certificate_credentials_t cred = tls_bundle_credentials(b);
    struct certset *c = xcalloc(1, sizeof *c);
    c->generation = tls_bundle_generation(b);
    gnutls_datum_t der;
    while (c->n < MAX_CHAIN && gnutls_certificate_get_crt_raw(cred, 0, c->n, &der) == 0) {
        if (gnutls_pcert_import_x509_raw(&c->pcerts[c->n], &der, GNUTLS_X509_FMT_DER, 0) < 0)
            break;
        c->n++;
    }
    gnutls_x509_privkey_t xkey = NULL;
    if (c->n == 0 || gnutls_certificate_get_x509_key(cred, 0, &xkey) < 0)
        goto fail;
    if (gnutls_privkey_init(&c->key) < 0 ||
        gnutls_privkey_import_x509(c->key, xkey, GNUTLS_PRIVKEY_IMPORT_AUTO_RELEASE) < 0) {
        gnutls_x509_privkey_deinit(xkey);
        goto fail;
    }
    return c;
fail:
    log_err("admin: no certificate in TLS bundle generation %llu",
            (unsigned long long)c->generation);
    certset_free(c);
    return NULL;
}

int admin_cert_callback(gnutls_session_t session, const struct gnutls_cert_retr_st *info,
                        gnutls_pcert_st **certs, unsigned int *pcert_length,
                        gnutls_ocsp_data_st **ocsp, unsigned int *ocsp_length,
                        gnutls_privkey_t *privkey, unsigned int *flags)
{
    struct tlsbox_bundle *b = tls_bundle_acquire();
    if (!b)
        return -1;
    pthread_mutex_lock(&cert_lock);
    if (!current || current->generation != tls_bundle_generation(b)) {
        struct certset *c = certset_from(b);
        if (c) {
            c->older = current;
            current = c;
            log_info("admin: serving the certificate of TLS bundle generation %llu",
                     (unsigned long long)c->generation);
        }
    }
    struct certset *c = current;
    pthread_mutex_unlock(&cert_lock);
    tls_bundle_release(b);
    if (!c)
        return -1;
    *certs = c->pcerts;
    *pcert_length = c->n;
    *privkey = c->key;
    *ocsp = NULL;
    *ocsp_length = 0;
    *flags = 0;
    return 0;
}

void admin_cert_free(void)
{
    pthread_mutex_lock(&cert_lock);
    while (current) {
        struct certset *o = current->older;
        certset_free(current);
        current = o;
    }
    pthread_mutex_unlock(&cert_lock);
}
