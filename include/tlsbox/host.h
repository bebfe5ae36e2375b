/*
 * tlsbox plugin kit: the host table, the only way a plugin reaches the core.
 *
 * ABI changelog: see the top of <tlsbox/plugin.h>; both headers share one
 * version.  New functions are only ever appended; check host->size before
 * calling one that is newer than the oldest core you support:
 *
 *     if (TLSBOX_HOST_HAS(host, cert_install)) ...
 *
 * Conventions for every call below:
 *  - Return values, the one rule of the kit and of the core (a plugin's
 *    hooks and callbacks follow it too): a function returning a number
 *    returns 0, or a count or id (>= 0), on success and a negative errno on
 *    failure: -EINVAL bad input, -ENOENT no such thing, -EEXIST already
 *    there, -EIO the store or a library failed, -EPROTO a version that does
 *    not fit, -ENOMEM out of memory, or another errno that says what went
 *    wrong.  Never -1, never an HTTP status (those go in the reply).  Where
 *    a message is wanted it comes in a "char **err" (caller frees); pass
 *    NULL there to do without it.
 *  - Strings passed in are borrowed for the duration of the call; the core
 *    copies what it keeps.  Strings returned as "char *" are owned by the
 *    caller and freed with free().
 *  - "any thread" means the call is thread-safe and never blocks on I/O.
 *  - Callbacks never run while the core holds a lock that the same host call
 *    would take, so a callback may call back into the host.
 *  - Everything a plugin registers is owned by the core.  Subscriptions,
 *    timers and routes are removed after the plugin's stop hook returns;
 *    metrics stay (still exported, and the same series, counts kept, when
 *    the plugin registers them again after a start) until the plugin
 *    retires one (metric_retire, ABI 1.5).
 *  - Private key material passed to the core is copied into memory that is
 *    wiped when freed; the core never logs it or sends it over an API.
 */
#ifndef TLSBOX_HOST_H
#define TLSBOX_HOST_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gnutls/gnutls.h>
#include <sqlite3.h>

#include <tlsbox/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Log levels, in the order of syslog's (journald shows them as priorities). */
enum tlsbox_log_level {
    TLSBOX_LOG_ERR = 3,
    TLSBOX_LOG_WARN = 4,
    TLSBOX_LOG_INFO = 6,
    TLSBOX_LOG_DEBUG = 7,
};

/** Kinds of metric. */
enum tlsbox_metric_type {
    TLSBOX_METRIC_COUNTER,   /**< only goes up; metric_add */
    TLSBOX_METRIC_GAUGE,     /**< any value; metric_set / metric_add (may be negative) */
    TLSBOX_METRIC_HISTOGRAM, /**< distribution; metric_observe */
    TLSBOX_METRIC_TYPE_MAX
};

/** A registered metric series, owned by the core. */
struct tlsbox_metric;
/** A running job, as seen from inside its function. */
struct tlsbox_job;
/** An immutable TLS bundle (credentials + priority + ticket key + policy flags). */
struct tlsbox_bundle;

/** Event callback.  @p data is JSON text or NULL, borrowed for the call. */
typedef void (*tlsbox_event_fn)(void *arg, const char *event, const char *data);

/** Job (and timer) function, run on a maintenance thread. */
typedef void (*tlsbox_job_fn)(void *arg, struct tlsbox_job *job);

/** A request to the JSON API (admin HTTPS and the control socket). */
struct tlsbox_api_request {
    const char *method; /**< "GET", "PUT", "POST", "DELETE" */
    const char *path;   /**< after "/api/v1/", no query string, e.g. "acme/status" */
    const char *query;  /**< raw query string without '?', or NULL */
    const char *body;   /**< request body (NUL-terminated), or NULL */
    size_t body_len;    /**< length of body */
    const char *user;   /**< authenticated user name, "control" on the socket */
};

/** What an API handler fills in. */
struct tlsbox_api_reply {
    int status; /**< HTTP status; the core sets 200 before calling */
    char *body; /**< JSON text, malloc'd, owned by the core after return */
};

/**
 * API handler.  Runs on the admin thread: it must not block for long (submit
 * a job for anything that talks to the network and answer 202).
 */
typedef void (*tlsbox_api_fn)(void *arg, const struct tlsbox_api_request *req,
                              struct tlsbox_api_reply *reply);

/** What a site HTTP route handler fills in. */
struct tlsbox_http_reply {
    int status;               /**< HTTP status */
    const char *content_type; /**< static string, e.g. "text/plain" */
    char *body;               /**< malloc'd, owned by the caller of dispatch after return */
    size_t body_len;          /**< bytes in body */
};

/**
 * Site HTTP route handler (e.g. ACME's /.well-known/acme-challenge/).  Runs
 * on a site worker thread: it must never block (no I/O, no SQLite, no long
 * locks).  Return 0 when it answered, -ENOENT to let the site go on as if no
 * route matched.
 */
typedef int (*tlsbox_http_fn)(void *arg, const char *method, const char *path,
                              struct tlsbox_http_reply *reply);

/** Sources of a certificate in the store. */
enum tlsbox_cert_source {
    TLSBOX_CERT_INTERNAL, /**< issued by the box's internal CA */
    TLSBOX_CERT_IMPORT,   /**< imported by a person */
    TLSBOX_CERT_ACME,     /**< issued through ACME */
    TLSBOX_CERT_SOURCE_MAX
};

/** A certificate to validate and store (see cert_install). */
struct tlsbox_cert_install {
    const char *name;      /**< store name, e.g. "example.org" or "example.org-rsa"
                                (1-128 of A-Z a-z 0-9 . - _ *; "internal" only for
                                TLSBOX_CERT_INTERNAL); NULL or "": the leaf's first
                                DNS name, with "-rsa" for an RSA key */
    const char *chain_pem; /**< leaf first, then intermediates, PEM */
    const char *key_pem;   /**< the leaf's private key, PEM (PKCS#8 or traditional) */
    enum tlsbox_cert_source source;
    const char *ari_id;    /**< ACME renewal-info id, or NULL */
    const char *meta_json; /**< free JSON object kept with the certificate, or NULL */
};

/**
 * The host table.  Its address and contents are constant for the daemon's
 * life; call through it from any thread unless a function says otherwise.
 */
struct tlsbox_host {
    uint32_t size;      /**< sizeof(struct tlsbox_host) of the core */
    uint16_t abi_major; /**< the core's TLSBOX_ABI_MAJOR */
    uint16_t abi_minor; /**< the core's TLSBOX_ABI_MINOR */

    /* ---- logging ------------------------------------------------------ */

    /** Log one line, prefixed with the plugin's name.  Any thread.  The last
     *  TLSBOX_LOG_ERR line logged while the plugin's init or start hook runs
     *  (by any of its threads) is the reason its status gives if that hook
     *  fails. */
    void (*log)(struct tlsbox_plugin *self, enum tlsbox_log_level level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
    /** va_list form of log. */
    void (*vlog)(struct tlsbox_plugin *self, enum tlsbox_log_level level, const char *fmt,
                 va_list ap);

    /* ---- settings ------------------------------------------------------- */
    /*
     * Keys are the plugin's own ("port") or fully qualified ("site.port",
     * "core.hostname") to read another plugin's.  Values come from the store
     * or, when unset there, the declared default.  Any thread; reads are
     * served from memory.  The core publishes "settings.changed" with data
     * {"key":"<plugin>.<key>"} after every successful change.
     */

    /** Current value as text (caller frees), or NULL for an unknown key. */
    char *(*setting_get)(struct tlsbox_plugin *self, const char *key);
    /** Current INT value, or @p dflt when unknown or not an INT. */
    long long (*setting_get_int)(struct tlsbox_plugin *self, const char *key, long long dflt);
    /** Current BOOL value, or @p dflt when unknown or not a BOOL. */
    bool (*setting_get_bool)(struct tlsbox_plugin *self, const char *key, bool dflt);
    /**
     * Validate and store a value.  On refusal returns -EINVAL and sets *err to
     * a message naming key, value and rule (caller frees); -EIO (*err set)
     * when the store fails; since ABI 1.2 the owner's refusal (its negative
     * errno and message) when its .apply_settings cannot apply the value.
     * Only the plugin's own keys: another owner's ("core.user") is -EPERM
     * with *err set (since 1.4; qualified keys were always for reading).
     * Nothing is written on failure.  A value its owner stores for the next
     * start (TLSBOX_APPLY_AT_RESTART) returns 0, its note logged.  Not from a
     * site worker (it writes SQLite), nor from an .apply_settings hook: it
     * would wait for itself, so there it returns -EDEADLK with *err set.
     */
    int (*setting_set)(struct tlsbox_plugin *self, const char *key, const char *value, char **err);

    /* ---- store ---------------------------------------------------------- */

    /**
     * Open a new connection to the store (WAL, busy timeout, foreign keys on,
     * extended result codes: a duplicate key is SQLITE_CONSTRAINT_PRIMARYKEY
     * or SQLITE_CONSTRAINT_UNIQUE, compare (rc & 0xff) with SQLITE_CONSTRAINT).
     * One connection per thread; close it with store_close on the same thread.
     * Write in "BEGIN IMMEDIATE" transactions.  Never from a site worker.
     * Returns NULL on failure (logged).
     *
     * Since ABI 1.1 the connection may read every table but may write, or
     * change the schema of, only the plugin's own tables ("<plugin>_...",
     * see struct tlsbox_migration): any other write fails to prepare with
     * SQLITE_AUTH ("not authorized") and the core logs one line naming the
     * plugin and the table.  ATTACH and pragmas that set a value are refused
     * too, and reading the core's secret columns (private keys, ticket keys,
     * password hashes, session tokens), and writing sqlite_sequence (the
     * AUTOINCREMENT counters of every table: SQLite keeps the plugin's own;
     * drop or rename an AUTOINCREMENT table in a migration step).  CREATE
     * TABLE and ALTER TABLE are refused here too: a plugin's tables are
     * created and altered by its migration steps, after which the core
     * checks their names and foreign keys.  The plugin's triggers fire on
     * this connection, and what they do is checked like the statement
     * that fires them.  Core data (certificates,
     * settings) is read and changed through host calls; its tables are not part of the ABI.
     */
    sqlite3 *(*store_open)(struct tlsbox_plugin *self);
    /** Close a connection from store_open. */
    void (*store_close)(struct tlsbox_plugin *self, sqlite3 *db);

    /* ---- events --------------------------------------------------------- */

    /**
     * Call @p fn for every event named @p event ("cert.changed"), or every
     * event starting with a prefix when @p event ends in '*' ("cert.*").
     * Callbacks run on the core's event thread, in publish order, never on
     * the publishing thread.  Returns a subscription id > 0 or a negative errno.
     */
    int64_t (*event_subscribe)(struct tlsbox_plugin *self, const char *event, tlsbox_event_fn fn,
                               void *arg);
    /**
     * Remove one of the plugin's own subscriptions; after return its callback
     * is not running and never runs again.  Another plugin's (or the core's)
     * id is -ENOENT, as is an unknown one.
     */
    int (*event_unsubscribe)(struct tlsbox_plugin *self, int64_t id);
    /** Queue an event (name and JSON data copied).  Any thread, never blocks. */
    int (*event_publish)(struct tlsbox_plugin *self, const char *event, const char *data);

    /* ---- jobs and timers ----------------------------------------------- */

    /**
     * Run @p fn(arg) on a maintenance thread.  @p free_arg (may be NULL) is
     * called with @p arg after the job ran or was cancelled before running.
     * Returns a job id > 0, or a negative errno (e.g. -ESHUTDOWN while the
     * daemon stops): then free_arg is never called and the caller still owns
     * @p arg.  Any thread.
     */
    int64_t (*job_submit)(struct tlsbox_plugin *self, const char *name, tlsbox_job_fn fn, void *arg,
                          void (*free_arg)(void *));
    /**
     * Cancel one of the plugin's own jobs: a queued job never runs; a
     * running one sees job_cancelled() turn true and should return soon.
     * Does not wait.  0, or -ENOENT (unknown, finished, or not this plugin's).
     */
    int (*job_cancel)(struct tlsbox_plugin *self, int64_t id);
    /** From inside a job: true once it was cancelled or the daemon is stopping. */
    bool (*job_cancelled)(struct tlsbox_job *job);
    /**
     * From inside a job: sleep up to @p ms, returning early (true) when the job
     * is cancelled.  Use instead of sleep() so a stop is never held up.
     */
    bool (*job_sleep)(struct tlsbox_job *job, uint64_t ms);
    /**
     * Run @p fn as a job after @p first_ms, then every @p period_ms (0 = once),
     * each time delayed by a random 0..@p jitter_ms.  A timer never runs twice at
     * once: a firing is skipped while the previous one still runs.
     * Returns a timer id > 0 or a negative errno (-EINVAL when one of the
     * three times is over 366 days).  Any thread.
     */
    int64_t (*timer_add)(struct tlsbox_plugin *self, const char *name, uint64_t first_ms,
                         uint64_t period_ms, uint64_t jitter_ms, tlsbox_job_fn fn, void *arg);
    /**
     * Cancel one of the plugin's own timers; a running firing finishes, none
     * starts after return.  0, or -ENOENT (unknown, or not this plugin's).
     */
    int (*timer_cancel)(struct tlsbox_plugin *self, int64_t id);

    /* ---- metrics -------------------------------------------------------- */

    /**
     * Register (or find, when the same name was registered before) a metric.
     * @p name is a Prometheus series name with optional labels, e.g.
     * "tlsbox_site_handshakes_total{kind=\"full\",version=\"TLS1.3\"}".
     * @p buckets (histograms only; upper bounds, ascending, copied) may be NULL
     * for the default latency buckets in seconds.  Returns NULL on a bad name
     * or a type clash.  Any thread; takes a lock: register ahead of hot paths.
     */
    struct tlsbox_metric *(*metric_register)(struct tlsbox_plugin *self, const char *name,
                                             enum tlsbox_metric_type type, const char *help,
                                             const double *buckets, size_t nbuckets);
    /** Add to a counter or gauge.  Any thread, lock-free, no syscalls. */
    void (*metric_add)(struct tlsbox_metric *m, int64_t delta);
    /** Set a gauge.  Any thread, lock-free. */
    void (*metric_set)(struct tlsbox_metric *m, int64_t value);
    /** Record one observation in a histogram.  Any thread, lock-free. */
    void (*metric_observe)(struct tlsbox_metric *m, double value);

    /* ---- admin API routes ---------------------------------------------- */

    /**
     * Serve @p method on @p pattern under /api/v1/ (on the admin HTTPS server
     * and the control socket).  A pattern is literal ("acme/status") or ends in
     * a slash then an asterisk, matching the rest of the path ("cert/" + "*").  Main thread
     * (in practice: not from an API handler, where it returns -EDEADLK: the
     * handler runs under the route table's lock this call takes).
     */
    int (*api_route_add)(struct tlsbox_plugin *self, const char *method, const char *pattern,
                         tlsbox_api_fn fn, void *arg);
    /**
     * Fill @p reply with a JSON error {"error": message} and @p status.
     * For handlers.
     */
    void (*api_reply_error)(struct tlsbox_api_reply *reply, int status, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

    /* ---- site HTTP routes (plain HTTP port) ---------------------------- */

    /** Answer paths starting with @p prefix on the site's plain HTTP port.  Main thread. */
    int (*http_route_add)(struct tlsbox_plugin *self, const char *prefix, tlsbox_http_fn fn,
                          void *arg);
    /**
     * For the site plugin: run the route matching @p path.  Returns 0 when a
     * route answered (reply filled; caller frees reply->body), -ENOENT when
     * none did.  Any thread; lock-free read.
     */
    int (*http_route_dispatch)(const char *method, const char *path,
                               struct tlsbox_http_reply *reply);

    /* ---- TLS bundle ----------------------------------------------------- */

    /**
     * Take a reference on the current bundle, or NULL when none is built.
     * Any thread, lock-free.  Hold it for a connection's whole life.
     */
    struct tlsbox_bundle *(*bundle_acquire)(void);
    /** Drop a reference; the last one frees the bundle.  Any thread. */
    void (*bundle_release)(struct tlsbox_bundle *b);
    /**
     * Configure a new server session from the bundle: priority, credentials
     * (every certificate; GnuTLS picks per client), session ticket key, TLS 1.2
     * session cache, ALPN "h2" then "http/1.1".  The session must be
     * deinitialised before the reference is released.  Any thread.  It sets
     * the session's ClientHello handshake hook (tickets under the previous
     * master key, the client's curves for the certificate choice): do not
     * replace it with gnutls_handshake_set_hook_function.
     */
    int (*bundle_session_setup)(const struct tlsbox_bundle *b, gnutls_session_t session);
    /** The Strict-Transport-Security value of the policy, or NULL for none. */
    const char *(*bundle_hsts)(const struct tlsbox_bundle *b);
    /** A number that grows with every bundle built (for logs and tests). */
    uint64_t (*bundle_generation)(const struct tlsbox_bundle *b);

    /* ---- certificates --------------------------------------------------- */

    /**
     * Validate a chain and key (key matches leaf, chain in order and chaining,
     * within validity, supported key type) and store them in one transaction,
     * replacing a certificate of the same name; then publish "cert.changed"
     * {"name", "source"}.  On refusal returns -EINVAL and sets *err (caller
     * frees) to a message that never contains key material; nothing is
     * written.  Not from a site worker.
     */
    int (*cert_install)(struct tlsbox_plugin *self, const struct tlsbox_cert_install *in,
                        char **err);

    /* ---- ABI 1.1: reading certificates ---------------------------------- */
    /*
     * The certificates table belongs to the core: plugins read it through
     * these calls (their store connections may not write it, and its layout
     * is not part of the ABI).  Neither call ever returns key material.
     */

    /**
     * Every stored certificate as a JSON array (caller frees), each element
     * {"name", "sans": [..], "key_type", "issuer", "serial", "not_before",
     * "not_after", "days_left", "source", "status", "ari_id"} (times in Unix
     * seconds; ari_id may be null), or NULL on a store error (logged).  Not
     * from a site worker (it reads SQLite).
     */
    char *(*cert_list)(struct tlsbox_plugin *self);
    /**
     * One certificate by store name: its chain (leaf first, PEM) in
     * *chain_pem and, when @p info_json is not NULL, its list element (as in
     * cert_list) in *info_json; both caller-freed.  Returns 0, -ENOENT when no
     * certificate has that name, or -EIO.  Not from a site worker.
     */
    int (*cert_get)(struct tlsbox_plugin *self, const char *name, char **chain_pem,
                    char **info_json);

    /* ---- ABI 1.1: Diffie-Hellman parameters ----------------------------- */
    /*
     * The DH parameters the TLS bundle serves to TLS 1.2 DHE clients belong
     * to the core (table tls_dh): a plugin hands them over here.  TLS 1.3
     * always uses the policy's FFDHE groups; and when the policy lists any,
     * GnuTLS uses the first of them for TLS 1.2 DHE too, so stored
     * parameters serve clients only under a policy without FFDHE groups
     * (dh_served says which: "stored_used").
     */

    /**
     * Serve the PKCS#3 parameters in @p pem ("-----BEGIN DH PARAMETERS-----",
     * as written by `openssl dhparam` or GnuTLS), labelled @p source
     * ([a-z0-9_-]{1,32}, e.g. "generated", "import"), or with @p pem NULL go
     * back to the RFC 7919 groups.  The parameters are checked first: a
     * prime of 2048 to 8192 bits that passes a primality test, a generator
     * in 2..p-2, a PEM GnuTLS imports, no private key in the text.  On refusal returns -EINVAL and
     * sets *err (caller frees) to a message saying what is wrong; nothing is written.  Otherwise
     * stores them in one transaction (replacing the previous ones), publishes "dh.changed" and
     * returns the prime's size in bits (0 for pem NULL); when the core holds these already (same
     * fingerprint and source) nothing is written and no event published.
     * With TLSBOX_DH_CHECK_ONLY in @p flags only checks (returns the bits;
     * nothing stored, no event).  The bundle serves the parameters when the
     * policy's dh_mode is "auto" (the default) and its groups list no FFDHE
     * group (see above).  Not from a site worker (it writes SQLite).
     */
    int (*dh_set)(struct tlsbox_plugin *self, const char *pem, const char *source, unsigned flags,
                  char **err);
    /**
     * What the current bundle serves, as a JSON object (caller frees), or
     * NULL before the first bundle: {"source": "rfc7919"|"off"|<dh_set
     * source>, "group": "ffdhe3072" or null, "bits", "fingerprint",
     * "policy_min_bits", "policy_groups" (the policy lists FFDHE groups),
     * "dhe_tls12" (the policy enables TLS 1.2 DHE suites), "ffdhe_tls13"
     * (TLS 1.3 with FFDHE groups), "tls13_groups": [..], "stored": the
     * parameters given to dh_set {"source", "bits", "fingerprint", "set_at"}
     * or null, "stored_used" (they are what TLS 1.2 DHE gets), "bundle":
     * generation}; "source" .. "fingerprint" describe what TLS 1.2 DHE
     * clients get.  Any thread, lock-free, no I/O.
     */
    char *(*dh_served)(struct tlsbox_plugin *self);

    /* ---- ABI 1.1: OCSP staples ------------------------------------------ */
    /*
     * The staple the TLS bundle serves lives in a core table; a plugin (the
     * ocsp plugin) fetches and verifies responses and hands them over here.
     */

    /**
     * Set the OCSP staple of certificate @p cert_name to @p der (a DER
     * OCSPResponse, @p der_len bytes, copied), served until @p serve_until
     * (Unix seconds; clipped to the response's nextUpdate, after which GnuTLS
     * would refuse it anyway, and to the leaf's expiry: a nextUpdate after it
     * is allowed, a staple outliving its certificate is not); or clear it
     * when @p der is NULL.  The core
     * checks the response is successful, answers for the stored leaf with
     * status good and is not past nextUpdate (it does not check the
     * signature: that is the caller's job), stores it, publishes
     * "ocsp.changed" {"name", "stapled"} and so rebuilds the bundle; it takes
     * the staple out of the bundle by itself at serve_until.  A replaced
     * certificate loses its staple.  Returns 0; -ENOENT (no such certificate,
     * or nothing to clear); -EINVAL (refused, logged, nothing written); -EIO.
     * Not from a site worker.
     */
    int (*staple_set)(struct tlsbox_plugin *self, const char *cert_name, const void *der,
                      size_t der_len, int64_t serve_until);
    /**
     * The internal CA's OCSP responder, without network: a response with
     * status good for certificate @p cert_name, signed by the internal root
     * (responder by key hash), thisUpdate a few minutes ago, nextUpdate four
     * days on (never after the leaf's expiry).  *der (free()) and *der_len;
     * when @p issuer_pem is not NULL, *issuer_pem (free()) the root's PEM to
     * verify it with.  Returns 0; -ENOENT (no such certificate or no internal
     * CA); -EINVAL when the internal CA did not issue that certificate; -EIO.
     * Not from a site worker.
     */
    int (*internal_ocsp)(struct tlsbox_plugin *self, const char *cert_name, void **der,
                         size_t *der_len, char **issuer_pem);

    /* ---- ABI 1.1: calling the JSON API in-process ----------------------- */

    /**
     * Run one request through the JSON API's route table (the same handlers
     * that serve /api/v1/ on the control socket and the admin server), in
     * this thread, as user "plugin:<name>".  @p path is after "/api/v1/"
     * without a query string ("metrics", "policy/preset"); @p body is JSON
     * text or NULL.  On return *status is the HTTP status and *reply the
     * JSON reply (caller frees; never NULL on success).  Returns 0 when a
     * handler (or the 404/405 fallback) answered, -EINVAL on bad arguments.
     * Use it for what the kit has no dedicated call for yet, e.g. the bench
     * plugin reads "metrics" and applies/rolls back "policy/...".  From a
     * job or timer thread, or from inside an API handler (the call then
     * runs under the route table's read lock the handler already holds,
     * e.g. bench asks the site's "site/limits" while it checks a run);
     * never from a site worker (handlers may write SQLite).  The core
     * serialises nothing: the handler's own rules apply (e.g. policy changes
     * publish their usual events).
     */
    int (*api_call)(struct tlsbox_plugin *self, const char *method, const char *path,
                    const char *body, int *status, char **reply);

    /* ---- ABI 1.3: ACME tls-alpn-01 answers (RFC 8737) -------------------- */
    /*
     * The TLS handshake is the core's, so a plugin that answers tls-alpn-01
     * challenges hands the core what to answer.  Guard with
     * TLSBOX_HOST_HAS(host, tls_alpn_challenge_put): a 1.2 core has neither.
     */

    /**
     * Answer the tls-alpn-01 challenge for @p identifier (a lowercase host
     * name, or an IPv4/IPv6 address for an "ip" identifier, RFC 8738) with
     * @p digest, the SHA-256 of the key authorization (32 bytes, copied).
     * The core makes a validation certificate (a fresh key that never
     * leaves memory: P-256, or RSA-2048 when the TLS policy's signature
     * algorithms have no ECDSA one, so that the handshake can sign with
     * it; self-signed; its one SAN the identifier; the critical
     * id-pe-acmeIdentifier extension holding the digest) and serves it, on
     * every TLS port the bundle serves (the site's HTTPS port, which a CA
     * reaches as port 443), to a client that offers only ALPN "acme-tls/1"
     * and sends the identifier as SNI (an address: its in-addr.arpa or
     * ip6.arpa name).  Such a connection carries no HTTP: it is closed after
     * the handshake.  Other clients see nothing of it.  An answer for the
     * same identifier is replaced.  The bundle is rebuilt before the call
     * returns, so the CA may be told to validate at once.  Returns 0;
     * -EINVAL (not a host name or address: logged); -ENOTSUP (the policy's
     * signature algorithms have neither ECDSA nor RSA: logged); -ENOSPC (100 answers
     * waiting); -EIO (also when the bundle could not be rebuilt: the
     * answer is then not kept).  Answers live in memory only: withdraw each with
     * tls_alpn_challenge_del once its authorization is done.  Not from a
     * site worker (the rebuild reads SQLite).
     */
    int (*tls_alpn_challenge_put)(struct tlsbox_plugin *self, const char *identifier,
                                  const unsigned char digest[32]);
    /**
     * Withdraw the answer for @p identifier (the bundle is rebuilt; a
     * handshake already using it finishes).  Returns 0, or -ENOENT when
     * there is none.  Not from a site worker.
     */
    int (*tls_alpn_challenge_del)(struct tlsbox_plugin *self, const char *identifier);

    /* ---- ABI 1.4: certificates by the address a client connected to ------ */

    /**
     * After bundle_session_setup, with the connection's socket @p fd: a
     * client that sends no server name (one that connects by IP address:
     * RFC 6066 allows no address in SNI) gets a certificate that has the
     * local address of @p fd among its names, when one does, instead of the
     * bundle's first.  A client that sends a name still gets its own.
     * Costs one getsockname, and nothing while the bundle's first
     * certificate names every address the others name.  Returns 0 (also
     * when nothing changes, or @p fd is not an IP socket), -EINVAL (no
     * bundle), or a negative errno of getsockname.  Any thread; before the
     * session's handshake starts.  Guard with TLSBOX_HOST_HAS(host,
     * bundle_session_address): a 1.3 core has none.
     */
    int (*bundle_session_address)(const struct tlsbox_bundle *b, gnutls_session_t session, int fd);

    /* ---- ABI 1.5: retiring a metric series ------------------------------- */

    /**
     * Take series @p m, which @p self registered, off /metrics and the
     * metrics API: for a series that stands for something gone (a
     * certificate removed, say), which would otherwise be exported for the
     * daemon's life.  @p m stays valid (an update through it shows
     * nowhere); registering the name again makes a new series.  Another
     * owner's series, or NULL: nothing happens.  Any thread; takes a lock.
     * Guard with TLSBOX_HOST_HAS(host, metric_retire): a 1.4 core has none.
     */
    void (*metric_retire)(struct tlsbox_plugin *self, struct tlsbox_metric *m);
};

/** dh_set flag: check the parameters only (nothing stored, no event). */
#define TLSBOX_DH_CHECK_ONLY 1u

/** True when the core's host table has member @p field (a newer core may have more). */
#define TLSBOX_HOST_HAS(host, field)                                                               \
    ((host)->size >= offsetof(struct tlsbox_host, field) + sizeof((host)->field) &&                \
     (host)->field != NULL)

#ifdef __cplusplus
}
#endif

#endif /* TLSBOX_HOST_H */
