/* The certificate signing request sent to finalize. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/acme/acme.h"

int acme_csr_make(gnutls_privkey_t key, const char *const *domains, size_t n, char **csr_b64,
                  char **err)
{
    gnutls_x509_crq_t crq = NULL;
    gnutls_pubkey_t pub = NULL;
    gnutls_datum_t der = {0};
    int ret = -EINVAL, r;
    const char *what = "init";

    if (n == 0) {
        *err = tlsbox_xstrdup("CSR: no domain names");
        return -EINVAL;
    }
    if ((r = gnutls_x509_crq_init(&crq)) < 0 || (r = gnutls_pubkey_init(&pub)) < 0)
        goto out;
    what = "version";
    if ((r = gnutls_x509_crq_set_version(crq, 1)) < 0)
        goto out;
    /* CAs take the names from the SANs; a CN is only added when it fits (64
     * chars) and is a host name (a CA leaves it out for an IP address). */
    if (strlen(domains[0]) <= 64 && !acme_ip(domains[0], NULL, NULL, NULL)) {
        what = "common name";
        r = gnutls_x509_crq_set_dn_by_oid(crq, GNUTLS_OID_X520_COMMON_NAME, 0, domains[0],
                                          (unsigned)strlen(domains[0]));
        if (r < 0)
            goto out;
    }
    for (size_t i = 0; i < n; i++) {
        what = "subject alternative name";
        unsigned char ip[16];
        size_t iplen = 0;
        if (acme_ip(domains[i], ip, &iplen, NULL))
            r = gnutls_x509_crq_set_subject_alt_name(crq, GNUTLS_SAN_IPADDRESS, ip, (unsigned)iplen,
                                                     GNUTLS_FSAN_APPEND);
        else
            r = gnutls_x509_crq_set_subject_alt_name(crq, GNUTLS_SAN_DNSNAME, domains[i],
                                                     (unsigned)strlen(domains[i]),
                                                     GNUTLS_FSAN_APPEND);
        if (r < 0)
            goto out;
    }
    what = "public key";
    if ((r = gnutls_pubkey_import_privkey(pub, key, 0, 0)) < 0 ||
        (r = gnutls_x509_crq_set_pubkey(crq, pub)) < 0)
        goto out;
    what = "signature";
    if ((r = gnutls_x509_crq_privkey_sign(crq, key, GNUTLS_DIG_SHA256, 0)) < 0)
        goto out;
    what = "export";
    if ((r = gnutls_x509_crq_export2(crq, GNUTLS_X509_FMT_DER, &der)) < 0)
        goto out;
    *csr_b64 = acme_b64url(der.data, der.size);
    ret = 0;
out:
    if (ret < 0)
        *err = tlsbox_xasprintf("CSR %s: %s", what, gnutls_strerror(r));
    gnutls_free(der.data);
    if (pub)
        gnutls_pubkey_deinit(pub);
    if (crq)
        gnutls_x509_crq_deinit(crq);
    return ret;
}
