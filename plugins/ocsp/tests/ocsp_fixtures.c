/* Fixtures for the ocsp plugin's unit tests (see ocsp_fixtures.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "plugins/ocsp/tests/ocsp_fixtures.h"
#include "tests/tap.h"

static char dir[] = "/tmp/tlsbox-ocsp-test-XXXXXX";

static void cleanup(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

int fx_sh(const char *script)
{
    char *cmd = NULL;
    if (asprintf(&cmd, "cd '%s' && { %s\n} >sh.log 2>&1", dir, script) < 0)
        return -1;
    int st = system(cmd);
    free(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int fx_make(const char *script)
{
    gnutls_global_init();
    if (!mkdtemp(dir))
        return -1;
    atexit(cleanup);
    if (fx_sh(script) == 0)
        return 0;
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "sed 's/^/# /' '%s/sh.log'", dir);
    if (system(cmd) != 0)
        diag("no log");
    return -1;
}

gnutls_datum_t fx_slurp(const char *name)
{
    gnutls_datum_t d = {NULL, 0};
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    gnutls_load_file(path, &d);
    return d;
}

gnutls_x509_crt_t fx_crt(const char *name)
{
    gnutls_datum_t d = fx_slurp(name);
    gnutls_x509_crt_t c = NULL;
    gnutls_x509_crt_init(&c);
    if (gnutls_x509_crt_import(c, &d, GNUTLS_X509_FMT_PEM) < 0)
        fprintf(stderr, "cannot import %s\n", name);
    gnutls_free(d.data);
    return c;
}
