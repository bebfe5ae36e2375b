/*
 * Throwaway host: runs the site plugin in this process with the mock host
 * table and a bundle made from PEM files, for manual tests and benchmarks
 * without the daemon.  SIGHUP rebuilds the bundle (a live swap), SIGUSR1
 * prints the metrics, SIGTERM/SIGINT stop gracefully.
 *
 *   site_testhost --cert C --key K [--cert2 C --key2 K] [--priority P]
 *                 [--hsts V] [--set key=value]...
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tlsbox/mock_host.h>

extern const struct tlsbox_plugin_desc tlsbox_plugin_descriptor;

int main(int argc, char **argv)
{
    const char *cert = NULL, *key = NULL, *cert2 = NULL, *key2 = NULL;
    const char *prio = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";
    const char *hsts = "max-age=63072000";
    const struct tlsbox_plugin_desc *d = &tlsbox_plugin_descriptor;
    void *state = NULL;
    sigset_t set;
    int sig;

    if (tlsbox_mock_setup(d) < 0)
        return 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--cert"))
            cert = argv[i + 1];
        else if (!strcmp(argv[i], "--key"))
            key = argv[i + 1];
        else if (!strcmp(argv[i], "--cert2"))
            cert2 = argv[i + 1];
        else if (!strcmp(argv[i], "--key2"))
            key2 = argv[i + 1];
        else if (!strcmp(argv[i], "--priority"))
            prio = argv[i + 1];
        else if (!strcmp(argv[i], "--hsts"))
            hsts = argv[i + 1];
        else if (!strcmp(argv[i], "--set")) {
            char *kv = strdup(argv[i + 1]), *eq = strchr(kv, '=');
            if (!eq) {
                fprintf(stderr, "--set wants key=value\n");
                return 2;
            }
            *eq = 0;
            tlsbox_mock_set(kv, eq + 1);
            free(kv);
        } else {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (!cert || !key) {
        fprintf(stderr, "usage: site_testhost --cert C --key K [...]\n");
        return 2;
    }
    if (tlsbox_mock_bundle_load(cert, key, cert2, key2, prio, hsts) < 0)
        return 1;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (d->init(tlsbox_mock_self(), &tlsbox_mock_host, &state) < 0 || d->start(state) < 0) {
        fprintf(stderr, "site did not start\n");
        return 1;
    }
    fprintf(stderr, "ready\n");
    for (;;) {
        if (sigwait(&set, &sig) != 0)
            continue;
        if (sig == SIGHUP) {
            tlsbox_mock_bundle_load(cert, key, cert2, key2, prio, hsts);
            fprintf(stderr, "bundle swapped\n");
        } else if (sig == SIGUSR1) {
            tlsbox_mock_metrics_dump(stderr);
        } else {
            break;
        }
    }
    d->stop(state);
    d->fini(state);
    tlsbox_mock_bundle_clear();
    fprintf(stderr, "stopped, bundles alive: %d\n", tlsbox_mock_bundles_alive());
    return tlsbox_mock_bundles_alive() == 0 ? 0 : 1;
}
