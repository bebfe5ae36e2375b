/* A minimal host table for the site plugin's unit tests and its throwaway
 * test host: settings from memory, metrics in a flat table, and a real TLS
 * bundle built from PEM files.  Not the core: just enough of the contract. */
#ifndef TLSBOX_SITE_MOCK_HOST_H
#define TLSBOX_SITE_MOCK_HOST_H

#include <tlsbox/host.h>

extern const struct tlsbox_host mock_host;

/* Override a setting of the plugin ("root", "/tmp/x"). */
void mock_set(const char *key, const char *value);
/* Build a bundle from one or two cert/key pairs and make it current.
 * Returns 0 or a negative GnuTLS error. */
int mock_bundle_load(const char *cert, const char *key, const char *cert2, const char *key2,
                     const char *priority, const char *hsts);
/* Drop the current bundle (at exit). */
void mock_bundle_clear(void);
/* Value of a counter/gauge, or count of a histogram; -1 when unknown. */
long long mock_metric(const char *name);
/* Print every metric to the stream. */
void mock_metrics_dump(void *stream);
/* Register a plain-HTTP route (like ACME would). */
void mock_route(const char *prefix, tlsbox_http_fn fn, void *arg);
/* Number of bundles alive (acquired and not yet released, plus the current one). */
int mock_bundles_alive(void);

#endif
