/*
 * tlsbox plugin kit: a mock host for a plugin's unit tests (ABI 1.1; 1.2: the
 * .apply_settings hook, see tlsbox_mock_started; 1.3: tls-alpn-01 answers,
 * see tlsbox_mock_alpn_answer).
 *
 * Link a test program with the plugin's sources and the static library
 * libtlsbox-mockhost.a:
 *
 *     cc $(pkg-config --cflags tlsbox-plugin) -o my_test my_test.c my.c \
 *        $(pkg-config --variable=mockhost_libs tlsbox-plugin)
 *
 * then hand tlsbox_mock_host and tlsbox_mock_self() to the plugin's hooks:
 *
 *     tlsbox_mock_setup(&tlsbox_plugin_descriptor);
 *     d->init(tlsbox_mock_self(), &tlsbox_mock_host, &state);
 *     d->start(state);
 *     char *body;
 *     int status = tlsbox_mock_api("GET", "my/hello", NULL, &body);
 *     ...
 *     d->stop(state); d->fini(state);
 *     tlsbox_mock_teardown();
 *
 * What it does, call by call of struct tlsbox_host:
 *  - settings: the descriptor's table, checked at setup as the daemon checks
 *    it when it loads the plugin; values set by tlsbox_mock_set() or by the
 *    plugin (setting_set) validated by the daemon's own code (compiled into
 *    this library): same rules, same messages, and the canonical text the
 *    daemon stores ("yes" is stored as "true", "007" as "7", " a , b " as
 *    "a,b"); "settings.changed" is queued like the core's; once the test
 *    says the plugin started (tlsbox_mock_started), a change of the
 *    plugin's own setting goes first to its .apply_settings as in the core
 *    (see there); setting_get of another owner's key answers as the daemon:
 *    the value tlsbox_mock_set() stored, else the default of a core or
 *    admin key ("core.hostname", "admin.port": the daemon's own tables,
 *    compiled in) or of a plugin declared by tlsbox_mock_neighbour(), else
 *    NULL (as a daemon answers for a plugin it has not loaded);
 *  - store: a temporary SQLite file (WAL, foreign keys on) with the
 *    descriptor's migrations applied at setup, in one transaction, under the
 *    same rule as the daemon (a plugin writes only tables named
 *    "<plugin>_..."); store_open connections are guarded the same way;
 *  - events: names the daemon refuses are refused (-EINVAL); published
 *    events are recorded and queued; subscribers get them when the test
 *    calls tlsbox_mock_events_run() (never on the publishing thread, as in
 *    the core), and a subscription removed meanwhile, even by another
 *    callback of the same delivery, is not called again; as in the core, a
 *    subscription gets only the events published after it was made (not
 *    those still queued when it subscribed);
 *  - jobs: run at once, on the submitting thread, then free_arg; job_sleep
 *    does not sleep (it returns whether the job was cancelled);
 *  - timers: on a virtual clock that only tlsbox_mock_advance() moves;
 *  - admin API and site HTTP routes: captured, called by tlsbox_mock_api()
 *    and tlsbox_mock_http() (http_route_dispatch works too, for a server);
 *  - log: every line is kept for tlsbox_mock_log_count() and also written to
 *    stderr as a TAP comment ("# plugin: ...");
 *  - metrics: a registration is checked by the daemon's own code (series
 *    name, histogram buckets, one type per family): what the daemon
 *    refuses is NULL here too, with its message logged; values kept for
 *    tlsbox_mock_metric(); a retired series (metric_retire) is gone from
 *    them, as from the daemon's /metrics;
 *  - TLS bundle: built from PEM files by tlsbox_mock_bundle_load();
 *  - certificates: cert_install checks the name as the core does (and
 *    names a certificate given none as the core does), keeps the chain
 *    (never the key; the chain and key are not validated) and queues
 *    "cert.changed" with the core's data; cert_get/cert_list answer from
 *    those and from tlsbox_mock_cert_add();
 *  - DH parameters: dh_set checks only that GnuTLS imports the PKCS#3 text
 *    and that the prime has 2048 bits or more (no primality test), serves
 *    them at once and queues "dh.changed"; dh_served describes a policy
 *    with TLS 1.2 DHE and no FFDHE group;
 *  - staple_set, internal_ocsp and api_call: not mocked, NULL in the
 *    table (TLSBOX_HOST_HAS() says false for them, where the daemon's
 *    says true).
 *
 * There is one mock per process (some host calls take no context).
 * Threading: the host table's calls are as thread-safe as the real host's;
 * the tlsbox_mock_* test calls are for the test's main thread.
 * Ownership: strings returned by tlsbox_mock_* are owned by the mock unless
 * said otherwise, valid until the next call that changes them.
 */
#ifndef TLSBOX_MOCK_HOST_H
#define TLSBOX_MOCK_HOST_H

#include <stdint.h>
#include <stdio.h>

#include <tlsbox/host.h>
#include <tlsbox/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The host table to give the plugin's init hook. */
extern const struct tlsbox_host tlsbox_mock_host;

/**
 * Start the mock for the plugin @p desc (borrowed until teardown): its
 * settings, and a new temporary store with its migrations applied.  Returns
 * 0, or a negative errno with the reason on stderr, where the daemon would
 * refuse to load it (-EPROTO: an ABI version it does not take; -EINVAL: a
 * name not [a-z][a-z0-9_]* of at most 32, or a bad settings table; -EEXIST:
 * "core", or "admin" with settings, names the core takes) or a migration
 * failed or broke the naming rule (-EIO).
 */
int tlsbox_mock_setup(const struct tlsbox_plugin_desc *desc);
/** Forget everything and delete the temporary store. */
void tlsbox_mock_teardown(void);
/**
 * Another plugin the daemon of the test has loaded beside yours (borrowed
 * until teardown; only its settings table is used): setting_get of its
 * keys ("site.https_port") answers its defaults, as the daemon answers
 * while that plugin is loaded.  Checked as the daemon's loader checks it:
 * -EPROTO, -EINVAL or -EEXIST (the name of the core, of your plugin or of
 * a neighbour added before), a message on stderr.  After tlsbox_mock_setup.
 */
int tlsbox_mock_neighbour(const struct tlsbox_plugin_desc *desc);
/** The plugin handle to give the init hook. */
struct tlsbox_plugin *tlsbox_mock_self(void);

/* ---- settings ---------------------------------------------------------- */

/**
 * Set a value: the plugin's own key ("port", or "<plugin>.port") is checked
 * against its declaration (-EINVAL and the daemon's message on stderr when
 * refused) and stored as the daemon stores it (canonical);
 * another plugin's or the core's key ("core.hostname") is taken as given.
 * Between tlsbox_mock_started() and tlsbox_mock_stopped() the plugin's
 * .apply_settings (ABI 1.2, when it has one) then gets the change of its own
 * key, as the core calls it for tlsboxctl set: a refusal returns its
 * negative errno, its message on stderr, and leaves the value as it was;
 * TLSBOX_APPLY_AT_RESTART stores the value, logs the note and returns
 * TLSBOX_APPLY_AT_RESTART; 0 stores it.  setting_set from the plugin goes
 * the same way (returning 0 for TLSBOX_APPLY_AT_RESTART, as the host call
 * does, and -EDEADLK when called from .apply_settings, which the core
 * forbids).  Queues "settings.changed" {"key":"<plugin>.<key>"} when stored.
 */
int tlsbox_mock_set(const char *key, const char *value);
/**
 * The plugin's start hook returned 0 with @p state (what its init hook
 * stored; borrowed): from now on a change goes to its .apply_settings with
 * it, as in the core.  Not called: changes are only stored (as the core does
 * for values read at start).
 */
void tlsbox_mock_started(void *state);
/** Call before the plugin's stop hook: changes are only stored again. */
void tlsbox_mock_stopped(void);

/* ---- store ------------------------------------------------------------- */

/** Path of the temporary store file. */
const char *tlsbox_mock_store_path(void);
/** A connection of the test's own (not guarded), for checking what the plugin wrote. */
sqlite3 *tlsbox_mock_db(void);
/** The first column of the first row of @p sql, or INT64_MIN on an error or no row. */
int64_t tlsbox_mock_query_int(const char *sql);

/* ---- events, jobs, timers ---------------------------------------------- */

/** Queue an event for the plugin's subscribers, as if the core published it. */
int tlsbox_mock_publish(const char *event, const char *data);
/** Deliver every queued event to matching subscribers; returns how many deliveries. */
int tlsbox_mock_events_run(void);
/** How many events named @p event the plugin has published. */
int tlsbox_mock_published(const char *event);
/** Data of the last event named @p event the plugin published, or NULL. */
const char *tlsbox_mock_event_data(const char *event);
/** How many jobs have run (job_submit and timer firings). */
int tlsbox_mock_jobs_run(void);
/** Timers registered and not cancelled. */
int tlsbox_mock_timers(void);
/**
 * Move the virtual clock @p ms forward, firing every timer that falls due on
 * the way, in time order (a periodic timer as often as it falls due).
 * Returns the number of firings.
 */
int tlsbox_mock_advance(uint64_t ms);
/** Milliseconds on the virtual clock since setup. */
uint64_t tlsbox_mock_now(void);

/* ---- routes ------------------------------------------------------------ */

/**
 * Call the admin API route matching @p method and @p path (as after
 * "/api/v1/", optionally with "?query") with @p body (may be NULL), chosen
 * as the core chooses (a literal pattern before prefix patterns, the
 * longest prefix first).  Returns the HTTP status (404 when no route
 * matches, 405 when routes match the path for other methods only, as the
 * core answers) and, when @p reply_body is not NULL, the reply body in
 * *reply_body (caller frees; "{}" when the handler set none, as the core).
 */
int tlsbox_mock_api(const char *method, const char *path, const char *body, char **reply_body);
/** Call the site HTTP route for @p path: 0 answered (caller frees reply->body), -ENOENT none. */
int tlsbox_mock_http(const char *method, const char *path, struct tlsbox_http_reply *reply);

/* ---- log --------------------------------------------------------------- */

/** Lines logged so far that contain @p needle (NULL: all lines). */
int tlsbox_mock_log_count(const char *needle);
/** The last line logged, or NULL. */
const char *tlsbox_mock_log_last(void);
/** Forget the lines logged so far. */
void tlsbox_mock_log_clear(void);

/* ---- metrics ----------------------------------------------------------- */

/** A counter's or gauge's value, a histogram's count; -1 when not registered
 * (or retired). */
long long tlsbox_mock_metric(const char *name);
/** Print every metric, one "name value" per line. */
void tlsbox_mock_metrics_dump(FILE *f);

/* ---- TLS bundle and certificates ---------------------------------------- */

/**
 * Make a bundle of one or two certificate/key PEM files (@p cert2 may be
 * NULL), a GnuTLS @p priority string and an HSTS value (may be NULL) the
 * current one.  Returns 0 or a negative GnuTLS error (printed).
 */
int tlsbox_mock_bundle_load(const char *cert, const char *key, const char *cert2, const char *key2,
                            const char *priority, const char *hsts);
/** Drop the current bundle. */
void tlsbox_mock_bundle_clear(void);
/** Bundles alive: the current one plus those still held by the plugin. */
int tlsbox_mock_bundles_alive(void);
/**
 * Add (or replace) certificate @p name for cert_get/cert_list: @p chain_pem
 * and @p info_json (one element as cert_list gives it) are copied.
 */
int tlsbox_mock_cert_add(const char *name, const char *chain_pem, const char *info_json);
/** How many times the plugin called cert_install successfully. */
int tlsbox_mock_cert_installs(void);

/* ---- ACME tls-alpn-01 answers (ABI 1.3) ---------------------------------- */
/*
 * tls_alpn_challenge_put / _del keep the answers (nothing is served; the
 * identifier is checked for a host name's or an address's characters only,
 * at most 100 answers as in the core).
 */

/**
 * Whether an answer for @p identifier is up (1) or not (0); when it is and
 * @p digest is not NULL, its 32-byte digest is copied there.
 */
int tlsbox_mock_alpn_answer(const char *identifier, unsigned char digest[32]);
/** How many answers are up. */
int tlsbox_mock_alpn_answers(void);

#ifdef __cplusplus
}
#endif

#endif /* TLSBOX_MOCK_HOST_H */
