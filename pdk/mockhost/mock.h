/* The mock host's parts (see <tlsbox/mock_host.h>): one file per group of
 * host calls, sharing the state of the one mock of the process. */
#ifndef TLSBOX_PDK_MOCK_H
#define TLSBOX_PDK_MOCK_H

#include <pthread.h>

#include <tlsbox/mock_host.h>
#include <tlsbox/xalloc.h>

/* The handle the mock gives the plugin. */
struct tlsbox_plugin {
    const char *name;
};

struct tlsbox_mockp {
    const struct tlsbox_plugin_desc *desc;
    struct tlsbox_plugin self;
    pthread_mutex_t lock; /* logs, settings, events, metrics */
};
extern struct tlsbox_mockp tlsbox_mockp;

/* mock_host.c */
__attribute__((format(printf, 3, 0))) void tlsbox_mockp_vlog(struct tlsbox_plugin *self,
                                                             enum tlsbox_log_level level,
                                                             const char *fmt, va_list ap);
__attribute__((format(printf, 3, 4))) void
tlsbox_mockp_log(struct tlsbox_plugin *self, enum tlsbox_log_level level, const char *fmt, ...);
/* @p s as a JSON string literal with its quotes (caller frees). */
char *tlsbox_mockp_json_string(const char *s);

/* mock_settings.c */
char *tlsbox_mockp_setting_get(struct tlsbox_plugin *self, const char *key);
long long tlsbox_mockp_setting_get_int(struct tlsbox_plugin *self, const char *key, long long dflt);
bool tlsbox_mockp_setting_get_bool(struct tlsbox_plugin *self, const char *key, bool dflt);
int tlsbox_mockp_setting_set(struct tlsbox_plugin *self, const char *key, const char *value,
                             char **err);
/* The plugin's settings table as the daemon checks it when it loads the
 * plugin: 0, or -EINVAL with the reason on stderr. */
int tlsbox_mockp_settings_check(const struct tlsbox_plugin_desc *desc);
void tlsbox_mockp_settings_reset(void);
/* A neighbour's table (tlsbox_mock_neighbour, checked): its keys' defaults
 * answer setting_get.  -EEXIST when that name is taken already. */
int tlsbox_mockp_settings_neighbour(const struct tlsbox_plugin_desc *desc);

/* mock_store.c */
int tlsbox_mockp_store_setup(const struct tlsbox_plugin_desc *d);
void tlsbox_mockp_store_teardown(void);
sqlite3 *tlsbox_mockp_store_open(struct tlsbox_plugin *self);
void tlsbox_mockp_store_close(struct tlsbox_plugin *self, sqlite3 *db);

/* mock_events.c */
int64_t tlsbox_mockp_event_subscribe(struct tlsbox_plugin *self, const char *event,
                                     tlsbox_event_fn fn, void *arg);
int tlsbox_mockp_event_unsubscribe(struct tlsbox_plugin *self, int64_t id);
int tlsbox_mockp_event_publish(struct tlsbox_plugin *self, const char *event, const char *data);
int64_t tlsbox_mockp_job_submit(struct tlsbox_plugin *self, const char *name, tlsbox_job_fn fn,
                                void *arg, void (*free_arg)(void *));
int tlsbox_mockp_job_cancel(struct tlsbox_plugin *self, int64_t id);
bool tlsbox_mockp_job_cancelled(struct tlsbox_job *job);
bool tlsbox_mockp_job_sleep(struct tlsbox_job *job, uint64_t ms);
int64_t tlsbox_mockp_timer_add(struct tlsbox_plugin *self, const char *name, uint64_t first_ms,
                               uint64_t period_ms, uint64_t jitter_ms, tlsbox_job_fn fn, void *arg);
int tlsbox_mockp_timer_cancel(struct tlsbox_plugin *self, int64_t id);
void tlsbox_mockp_events_reset(void);

/* mock_routes.c */
int tlsbox_mockp_api_route_add(struct tlsbox_plugin *self, const char *method, const char *pattern,
                               tlsbox_api_fn fn, void *arg);
__attribute__((format(printf, 3, 4))) void
tlsbox_mockp_api_reply_error(struct tlsbox_api_reply *reply, int status, const char *fmt, ...);
int tlsbox_mockp_http_route_add(struct tlsbox_plugin *self, const char *prefix, tlsbox_http_fn fn,
                                void *arg);
int tlsbox_mockp_http_route_dispatch(const char *method, const char *path,
                                     struct tlsbox_http_reply *reply);
void tlsbox_mockp_routes_reset(void);

/* mock_bundle.c */
struct tlsbox_bundle *tlsbox_mockp_bundle_acquire(void);
void tlsbox_mockp_bundle_release(struct tlsbox_bundle *b);
int tlsbox_mockp_bundle_session_setup(const struct tlsbox_bundle *b, gnutls_session_t session);
const char *tlsbox_mockp_bundle_hsts(const struct tlsbox_bundle *b);
int tlsbox_mockp_bundle_session_address(const struct tlsbox_bundle *b, gnutls_session_t s, int fd);
uint64_t tlsbox_mockp_bundle_generation(const struct tlsbox_bundle *b);
int tlsbox_mockp_cert_install(struct tlsbox_plugin *self, const struct tlsbox_cert_install *in,
                              char **err);
char *tlsbox_mockp_cert_list(struct tlsbox_plugin *self);
int tlsbox_mockp_cert_get(struct tlsbox_plugin *self, const char *name, char **chain_pem,
                          char **info_json);
void tlsbox_mockp_certs_reset(void);

/* mock_alpn.c */
int tlsbox_mockp_tls_alpn_put(struct tlsbox_plugin *self, const char *identifier,
                              const unsigned char digest[32]);
int tlsbox_mockp_tls_alpn_del(struct tlsbox_plugin *self, const char *identifier);
void tlsbox_mockp_alpn_reset(void);

/* mock_dh.c */
int tlsbox_mockp_dh_set(struct tlsbox_plugin *self, const char *pem, const char *source,
                        unsigned flags, char **err);
char *tlsbox_mockp_dh_served(struct tlsbox_plugin *self);
void tlsbox_mockp_dh_reset(void);

#endif
