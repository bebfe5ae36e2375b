/* The mock host's DH parameters (host calls dh_set, dh_served): it checks
 * only that GnuTLS imports the PKCS#3 text and that the prime has 2048 bits
 * or more (no primality test), serves what it is given at once (announcing
 * it with "dh.changed" unless it is served already), and describes a policy
 * with TLS 1.2 DHE and no FFDHE group. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/gnutls.h>

#include "pdk/mockhost/mock.h"

static char *dh_source, *dh_pem; /* NULL: the RFC 7919 group */
static int dh_bits, dh_sets;

/* Bits of the prime in @p pem, or a negative errno. */
static int prime_bits(const char *pem)
{
    gnutls_dh_params_t dh;
    gnutls_datum_t in = {(unsigned char *)pem, (unsigned)strlen(pem)}, p = {NULL, 0}, g = {NULL, 0};
    int bits = -EINVAL;
    gnutls_dh_params_init(&dh);
    if (gnutls_dh_params_import_pkcs3(dh, &in, GNUTLS_X509_FMT_PEM) == 0 &&
        gnutls_dh_params_export_raw(dh, &p, &g, NULL) == 0) {
        size_t i = 0;
        while (i < p.size && p.data[i] == 0)
            i++;
        bits = (int)(p.size - i) * 8;
        for (unsigned char top = i < p.size ? p.data[i] : 0xff; !(top & 0x80); top <<= 1)
            bits--;
    }
    gnutls_free(p.data);
    gnutls_free(g.data);
    gnutls_dh_params_deinit(dh);
    return bits;
}

int tlsbox_mockp_dh_set(struct tlsbox_plugin *self, const char *pem, const char *source,
                        unsigned flags, char **err)
{
    int bits = 0;
    if (err) /* may be NULL, as in the core */
        *err = NULL;
    if (pem) {
        bits = prime_bits(pem);
        if (bits < 2048 || !source) {
            if (err)
                *err = tlsbox_xstrdup(bits < 0 ? "mock host: not PKCS#3 DH parameters"
                                               : "mock host: DH parameters under 2048 bits");
            return -EINVAL;
        }
    }
    if (flags & TLSBOX_DH_CHECK_ONLY)
        return bits;
    pthread_mutex_lock(&tlsbox_mockp.lock);
    /* Like the core: what is served already is neither stored nor announced again. */
    if (pem ? dh_pem && strcmp(dh_pem, pem) == 0 && strcmp(dh_source, source) == 0 : !dh_pem) {
        pthread_mutex_unlock(&tlsbox_mockp.lock);
        return bits;
    }
    free(dh_source);
    free(dh_pem);
    dh_source = pem ? tlsbox_xstrdup(source) : NULL;
    dh_pem = pem ? tlsbox_xstrdup(pem) : NULL;
    dh_bits = bits;
    dh_sets++;
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    tlsbox_mockp_event_publish(self, "dh.changed", NULL);
    return bits;
}

char *tlsbox_mockp_dh_served(struct tlsbox_plugin *self)
{
    (void)self;
    pthread_mutex_lock(&tlsbox_mockp.lock);
    char *src = dh_source ? tlsbox_mockp_json_string(dh_source) : NULL;
    char *stored = src ? tlsbox_xasprintf("{\"source\":%s,\"bits\":%d}", src, dh_bits)
                       : tlsbox_xstrdup("null");
    char *out = tlsbox_xasprintf(
        "{\"source\":%s,\"group\":%s,\"bits\":%d,\"fingerprint\":\"\",\"policy_min_bits\":2048,"
        "\"policy_groups\":false,\"dhe_tls12\":true,\"ffdhe_tls13\":false,\"tls13_groups\":[],"
        "\"stored\":%s,\"stored_used\":%s,\"bundle\":%d}",
        src ? src : "\"rfc7919\"", src ? "null" : "\"ffdhe2048\"", src ? dh_bits : 2048, stored,
        src ? "true" : "false", dh_sets + 1);
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    free(src);
    free(stored);
    return out;
}

void tlsbox_mockp_dh_reset(void)
{
    free(dh_source);
    free(dh_pem);
    dh_source = dh_pem = NULL;
    dh_bits = dh_sets = 0;
}
