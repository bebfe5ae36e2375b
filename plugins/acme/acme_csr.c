/* The certificate signing request sent to finalize, and the check that the
 * certificate issued for it names what it asked for. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* @p list (n items) joined with ", ", appended to @p s (freed). */
static char *join_names(char *s, char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char *t = tlsbox_xasprintf("%s%s%s", s ? s : "", i ? ", " : "", list[i]);
        free(s);
        s = t;
    }
    return s ? s : tlsbox_xstrdup("no name");
}

static bool has_name(char *const *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(list[i], name) == 0)
            return true;
    return false;
}

int acme_cert_names_check(const char *chain_pem, const char *const *names, size_t n, char **why)
{
    gnutls_x509_crt_t crt;
    gnutls_datum_t d = {(unsigned char *)chain_pem, (unsigned)strlen(chain_pem)};
    *why = NULL;
    if (gnutls_x509_crt_init(&crt) < 0)
        return -ENOMEM;
    if (gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM) < 0) {
        gnutls_x509_crt_deinit(crt);
        *why = tlsbox_xstrdup("its first certificate cannot be read");
        return -EINVAL;
    }
    char **sans = NULL;
    size_t ns = 0;
    for (unsigned seq = 0; seq < 1000; seq++) {
        unsigned char buf[512];
        size_t size = sizeof(buf) - 1;
        unsigned type;
        int r = gnutls_x509_crt_get_subject_alt_name2(crt, seq, buf, &size, &type, NULL);
        if (r == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            break;
        char text[512];
        if (r < 0)
            continue;
        if (type == GNUTLS_SAN_DNSNAME) {
            buf[size] = 0;
            snprintf(text, sizeof(text), "%s", (char *)buf);
        } else if (type == GNUTLS_SAN_IPADDRESS && (size == 4 || size == 16)) {
            if (!inet_ntop(size == 4 ? AF_INET : AF_INET6, buf, text, sizeof(text)))
                continue;
        } else {
            continue; /* an e-mail or URI name: serves no host */
        }
        if (has_name(sans, ns, text))
            continue;
        sans = tlsbox_xrealloc(sans, (ns + 1) * sizeof(*sans));
        sans[ns++] = tlsbox_xstrdup(text);
    }
    gnutls_x509_crt_deinit(crt);
    bool same = true;
    for (size_t i = 0; same && i < n; i++)
        same = has_name(sans, ns, names[i]);
    for (size_t i = 0; same && i < ns; i++)
        same = has_name((char *const *)names, n, sans[i]);
    if (!same) {
        char *got = join_names(NULL, sans, ns);
        char *want = join_names(NULL, (char *const *)names, n);
        *why = tlsbox_xasprintf("it is for %s, not for the names ordered (%s)", got, want);
        free(got);
        free(want);
    }
    for (size_t i = 0; i < ns; i++)
        free(sans[i]);
    free(sans);
    return same ? 0 : -EINVAL;
}
