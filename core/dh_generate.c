/* tlsboxd --generate-dh BITS (see dh_generate.h). */
#include "core/dh_generate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include <gnutls/gnutls.h>

int dh_generate_main(const char *bits_arg)
{
    char *end = NULL;
    errno = 0;
    long bits = strtol(bits_arg, &end, 10);
    if (errno || end == bits_arg || *end || bits < 2048 || bits > 8192) {
        fprintf(stderr, "tlsboxd: %s: '%s' is not a size in bits (2048-8192)\n",
                TLSBOX_DH_GENERATE_OPTION, bits_arg);
        return 2;
    }
    gnutls_dh_params_t p = NULL;
    gnutls_datum_t pem = {NULL, 0};
    int r = gnutls_dh_params_init(&p);
    if (r >= 0)
        r = gnutls_dh_params_generate2(p, (unsigned)bits);
    if (r >= 0)
        r = gnutls_dh_params_export2_pkcs3(p, GNUTLS_X509_FMT_PEM, &pem);
    if (p)
        gnutls_dh_params_deinit(p);
    if (r < 0) {
        fprintf(stderr, "tlsboxd: %s %ld: %s\n", TLSBOX_DH_GENERATE_OPTION, bits,
                gnutls_strerror(r));
        return 2;
    }
    int rc = fwrite(pem.data, 1, pem.size, stdout) == pem.size && fflush(stdout) == 0 ? 0 : 1;
    gnutls_free(pem.data);
    return rc;
}
