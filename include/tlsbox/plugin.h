/*
 * tlsbox plugin kit: the plugin descriptor.
 *
 * ABI changelog (bump TLSBOX_ABI_MINOR for additions at the end of a struct,
 * TLSBOX_ABI_MAJOR for anything that moves or changes an existing field):
 *
 *   1.0  2026-11  First release: descriptor with settings table and the hooks
 *                 init/start/stop/fini; host table with log, settings, store,
 *                 events, jobs, timers, metrics, admin API routes, site HTTP
 *                 routes, TLS bundle access and certificate install.
 *   1.1  2026-12  Descriptor: .migrations (the plugin's own tables, applied by
 *                 the core at load in one transaction, version per plugin in
 *                 the core table plugin_schema; a failing step fails only
 *                 that plugin; a downgrade is refused) and .demo_settings
 *                 (defaults for tlsboxd --demo, "${state_dir}"/"${datadir}"
 *                 expanded); TLSBOX_DESC_HAS() guards reads of both.
 *                 Host: cert_list and cert_get (the certificates table is
 *                 the core's: read it through these, never with SQL);
 *                 api_call (one JSON API request in-process, through the
 *                 same handlers as the control socket: metrics, policy).
 *                 Rule now enforced: a connection from store_open (and a
 *                 migration) writes only tables named "<plugin>_..."; any
 *                 other write fails with SQLITE_AUTH and one log line.
 *                 One return convention for every call and hook (0 or a
 *                 count, else a negative errno; see <tlsbox/host.h>);
 *                 setting_set may now return -EIO (store failure).
 *                 New headers: <tlsbox/xalloc.h> (inline checked allocation
 *                 and wiping frees) and <tlsbox/mock_host.h> with the static
 *                 library libtlsbox-mockhost.a (pkg-config variable
 *                 mockhost_libs) for plugins' unit tests.
 *                 Host: dh_set and dh_served (the DH parameters the TLS
 *                 bundle serves; the core table tls_dh replaces the old
 *                 schema's placeholder dh_params).
 *                 A 1.0 plugin loads and runs unchanged.
 *                 Host: staple_set (the OCSP staple the bundle serves) and
 *                 internal_ocsp (the internal CA's responder, no network).
 *                 Start hooks run as the service user, with only
 *                 CAP_NET_BIND_SERVICE, which every thread then drops on
 *                 TLSBOX_SIGNAL_CAPDROP (threads must not block it).
 *   1.2  2026-12  Descriptor: .apply_settings (a running plugin applies a
 *                 live change of its settings before the core stores it, and
 *                 may refuse it with a message: the caller gets the message
 *                 and the store keeps the old values).  Optional; a 1.0 or
 *                 1.1 plugin loads and runs unchanged, its changes stored
 *                 and announced by "settings.changed" as before.
 *                 Settings: .max of a STRING or LIST bounds the length of
 *                 the value or of each item (an older core ignores it;
 *                 the pattern still applies there).
 *   1.3  2026-12  Host: tls_alpn_challenge_put and tls_alpn_challenge_del
 *                 (the core serves ACME tls-alpn-01 validation certificates
 *                 to clients that offer only ALPN "acme-tls/1").  A 1.0 to
 *                 1.2 plugin loads and runs unchanged.
 *   1.4  2026-12  Host: bundle_session_address (a client without SNI gets
 *                 the certificate naming the address it connected to).
 *                 Rule tightened for plugins of every version (security; no
 *                 call added or changed): a connection from store_open
 *                 refuses CREATE TABLE, as it refused ALTER TABLE, and a
 *                 plugin's tables may have foreign keys only to its own
 *                 tables (checked after each migration step; existing
 *                 tables that break it stop the plugin at load, with a line
 *                 naming both tables).  A core table's cascade could
 *                 otherwise run a plugin's trigger on the core's connection.
 *                 The guide always said to create tables only in
 *                 .migrations; a plugin that made them at run time moves
 *                 that SQL into a step.  Otherwise a 1.0 to 1.3 plugin loads
 *                 and runs unchanged.
 *                 Tightened later in 1.4, again with no call changed:
 *                 setting_set takes only the plugin's own keys (another
 *                 owner's is -EPERM; qualified keys were always for
 *                 reading); store_open connections refuse CREATE VIRTUAL
 *                 TABLE, ANALYZE and writes to sqlite_stat*; and every
 *                 plugin is loaded before any migrates, so a step never
 *                 takes a later-loaded neighbour's tables for its own.
 *                 Also later in 1.4, no call added: two calls that hung
 *                 the calling thread for good return -EDEADLK instead
 *                 (setting_set from .apply_settings, api_route_add from
 *                 an API handler), and cert_install and dh_set take a
 *                 NULL err, as setting_set always did.
 *   1.5  2026-12  Host: metric_retire (a series that stands for something
 *                 gone, a certificate removed, leaves /metrics instead of
 *                 being exported for the daemon's life).  A 1.0 to 1.4
 *                 plugin loads and runs unchanged.
 *
 * A plugin is one shared object exporting exactly one symbol, the constant
 * descriptor made by TLSBOX_PLUGIN().  Everything else in the plugin is static.
 * The core loads it with dlopen(), checks the ABI numbers and the struct size
 * before touching any other field, and refuses (with one log line naming the
 * file, the version it expected and the one it found) a plugin whose major
 * differs from the core's or whose minor is newer than the core's.
 *
 * Threading: every hook is called on the daemon's main thread, one plugin at a
 * time, in load order for init/start and in reverse order for stop/fini.
 *
 * Example (doc/plugin-guide.md walks through a whole plugin, with a table,
 * a timer and a unit test):
 *
 *     static const struct tlsbox_setting_def settings[] = {
 *         {.key = "greeting", .type = TLSBOX_SETTING_STRING,
 *          .default_value = "hello", .pattern = "^[a-z ]{1,32}$",
 *          .help = "What the example says"},
 *         TLSBOX_SETTINGS_END};
 *
 *     TLSBOX_PLUGIN(.name = "example", .version = "1.0",
 *                   .description = "An example", .settings = settings,
 *                   .init = ex_init, .start = ex_start, .stop = ex_stop,
 *                   .fini = ex_fini);
 */
#ifndef TLSBOX_PLUGIN_H
#define TLSBOX_PLUGIN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** ABI major: a plugin built with another major is refused. */
#define TLSBOX_ABI_MAJOR 1
/** ABI minor: a plugin built with a newer minor than the core's is refused. */
#define TLSBOX_ABI_MINOR 5

/** Name of the one symbol every plugin exports. */
#define TLSBOX_PLUGIN_SYMBOL "tlsbox_plugin_descriptor"

/**
 * The signal the core sends, once, right after every plugin has started, to
 * each thread that still holds a capability (CAP_NET_BIND_SERVICE, kept so
 * start hooks can bind ports below 1024); its handler empties that thread's
 * capability sets.  A thread a plugin starts may block any other signal, but
 * must leave this one unblocked (sigdelset() it after sigfillset()): a
 * thread that keeps a capability stops the daemon, with a log line naming it.
 * The core's handler stays installed; plugins never install their own.
 */
#define TLSBOX_SIGNAL_CAPDROP (SIGRTMIN + 4)

struct tlsbox_host;
/** Opaque handle the core gives each plugin; first argument of most host calls. */
struct tlsbox_plugin;

/** Types of a declared setting.  Values are always carried as text. */
enum tlsbox_setting_type {
    TLSBOX_SETTING_BOOL,   /**< "true" or "false" (also accepts 1/0, yes/no, on/off) */
    TLSBOX_SETTING_INT,    /**< decimal integer within [min, max] */
    TLSBOX_SETTING_STRING, /**< text matching .pattern (POSIX ERE) when set */
    TLSBOX_SETTING_ENUM,   /**< one of .choices, written "a|b|c" */
    TLSBOX_SETTING_LIST,   /**< comma-separated items, each matching .pattern */
    TLSBOX_SETTING_TYPE_MAX
};

/** Flags of a declared setting. */
enum tlsbox_setting_flag {
    /** Never shown by the API or CLI (shown as "********"): passwords, HMAC keys. */
    TLSBOX_SETTING_SECRET = 1u << 0,
    /** Takes effect at the next daemon start only; the API says so. */
    TLSBOX_SETTING_RESTART = 1u << 1,
};

/**
 * One setting a plugin declares.  The core validates every value against it,
 * stores it as "<plugin>.<key>", and the admin UI draws a form field from it.
 * The table is borrowed for the plugin's whole life (it is static const data).
 * For a STRING, .max (when above 0) bounds the value's length in bytes, for
 * a LIST each item's; .min is unused there.  A pattern bounds each part of a
 * value but not the whole: a DNS name's 253 characters need .max.
 */
struct tlsbox_setting_def {
    const char *key;               /**< [a-z0-9_]+, unique within the plugin */
    enum tlsbox_setting_type type; /**< value type */
    const char *default_value;     /**< text form; must itself be valid */
    long long min, max;            /**< INT: inclusive range (both 0 = any); see above */
    const char *pattern;           /**< STRING/LIST item: POSIX ERE, NULL = any */
    const char *choices;           /**< ENUM: "a|b|c" */
    const char *help;              /**< one sentence for humans */
    unsigned flags;                /**< enum tlsbox_setting_flag bits */
};

/** Ends a settings table. */
#define TLSBOX_SETTINGS_END                                                                        \
    {                                                                                              \
        .key = 0                                                                                   \
    }

/**
 * One step of a plugin's schema (ABI 1.1).  A plugin lists its steps in order,
 * oldest first, and never edits or removes a step that has shipped: the
 * schema version of a plugin is the number of its steps the store has applied.
 *
 * At load the core applies the steps the store has not seen yet, all in one
 * transaction together with the new version number: either every pending step
 * lands or none does (so a step holds no BEGIN, COMMIT or ROLLBACK: they are
 * refused, and the step fails).  A failing step leaves the store exactly as it was, and
 * the plugin is marked failed (one log line names the plugin, the step and
 * SQLite's message); the daemon goes on without it.  A store that records a
 * newer version for the plugin than the plugin has steps (a downgrade) is
 * refused for that plugin only.
 *
 * Tables, indexes, views and triggers a plugin creates must be named
 * "<plugin name>_..." (e.g. "acme_orders"): the core refuses, on the
 * connections it hands the plugin, any write to a table the plugin does not
 * own.  The core's own tables are no plugin's whatever its name (a plugin
 * "admin" does not own admin_users), nor are those named for a loaded
 * plugin with a longer name (with "site_stats" loaded, plugin "site" does
 * not own "site_stats_hits").  After each step the core checks what
 * SQLite does not show it while the step runs: a table renamed to a name
 * that is not the plugin's, a changed AUTOINCREMENT counter of a table
 * that is not the plugin's, a foreign key of the plugin's tables to a
 * table that is not its own, or a temporary object left behind, fails
 * the step.  A table of the plugin's that the store already holds with
 * such a foreign key (from before this check) keeps the plugin from
 * starting, the store unchanged, until a step rebuilds the table.  The
 * plugin's triggers fire in its steps and on its connections, under the
 * same rule; the core's own connections fire no trigger.  The SQL is
 * borrowed for the plugin's whole life (static const data).
 */
struct tlsbox_migration {
    const char *name; /**< short name for logs, e.g. "0001_init" */
    const char *sql;  /**< one or more SQL statements */
};

/** Ends a migrations table. */
#define TLSBOX_MIGRATIONS_END                                                                      \
    {                                                                                              \
        .name = 0                                                                                  \
    }

/**
 * A setting value (ABI 1.1): in .demo_settings, what the daemon uses instead
 * of the declared default when it runs in demo mode (tlsboxd --demo: no root,
 * unprivileged ports, a throwaway state directory).  @c key is the plugin's
 * own key ("https_port").  In @c value, "${state_dir}" is replaced by the
 * daemon's state directory and "${datadir}" by the installed data directory
 * (e.g. /usr/share/tlsbox).  Values stored by a person still win.
 * Since ABI 1.2 also what .apply_settings receives: the changes to apply.
 */
struct tlsbox_setting_value {
    const char *key;   /**< the plugin's own setting key */
    const char *value; /**< text form; must be valid for the setting */
};

/** Ends a list of setting values. */
#define TLSBOX_VALUES_END                                                                          \
    {                                                                                              \
        .key = 0                                                                                   \
    }

/**
 * The descriptor.  Build it with TLSBOX_PLUGIN(); never write the ABI fields
 * by hand.
 */
struct tlsbox_plugin_desc {
    uint16_t abi_major; /**< TLSBOX_ABI_MAJOR the plugin was built with */
    uint16_t abi_minor; /**< TLSBOX_ABI_MINOR the plugin was built with */
    uint32_t size;      /**< sizeof(struct tlsbox_plugin_desc) at build time */

    const char *name;                          /**< [a-z][a-z0-9_]*, unique; settings prefix */
    const char *version;                       /**< the plugin's own version, free text */
    const char *description;                   /**< one line */
    const struct tlsbox_setting_def *settings; /**< NULL or ended by TLSBOX_SETTINGS_END */

    /**
     * Parse settings, allocate state.  Must not start threads or register
     * anything.  @p self and @p host stay valid until after fini returns.
     * Store the state in *state (owned by the plugin).  Return 0, or a
     * negative errno: the plugin is then not started (its fini is called).
     * After a failed init or start (and fini), the core may call init (then
     * start) again in the same process, on the main thread: when tlsboxd
     * --set values the plugin could not start with are undone, when a change
     * of its settings is stored while it is not running, and on SIGUSR2;
     * privileges are dropped by then (no port below 1024).  Likewise after
     * a stop and fini while tlsboxd serves: core.plugins_disabled came to
     * name the plugin, then no longer does.  Keep nothing between the calls
     * outside *state.
     */
    int (*init)(struct tlsbox_plugin *self, const struct tlsbox_host *host, void **state);
    /**
     * Register routes, timers, subscriptions; start threads; bind ports (the
     * daemon already runs as its service user, holding CAP_NET_BIND_SERVICE
     * until every start hook has returned; threads must leave
     * TLSBOX_SIGNAL_CAPDROP unblocked).  Return 0 or a negative errno (the
     * plugin is then stopped and unloaded, the daemon goes on; its status
     * gives the last TLSBOX_LOG_ERR line it logged meanwhile as the reason).
     */
    int (*start)(void *state);
    /**
     * Stop threads and in-flight work.  After it returns the core removes every
     * route, timer and subscription the plugin registered and waits for its
     * running jobs.  May be NULL.
     */
    void (*stop)(void *state);
    /** Free the state.  May be NULL. */
    void (*fini)(void *state);

    /* ---- ABI 1.1 -------------------------------------------------------- */

    /**
     * The plugin's schema steps, oldest first, ended by TLSBOX_MIGRATIONS_END;
     * NULL for a plugin without tables.  See struct tlsbox_migration.
     */
    const struct tlsbox_migration *migrations;
    /**
     * Values used instead of the defaults in demo mode, ended by
     * TLSBOX_VALUES_END; NULL for none.  See struct tlsbox_setting_value.
     */
    const struct tlsbox_setting_value *demo_settings;

    /* ---- ABI 1.2 -------------------------------------------------------- */

    /**
     * Apply a live change of this plugin's settings, or refuse it.  May be
     * NULL: the change is then stored and announced as before.
     *
     * When: whenever a person or a plugin changes settings of this plugin
     * (tlsboxctl set, the admin API and web UI, host->setting_set), while
     * the plugin is started (after its start hook returned 0, never after
     * its stop hook was called).  Not for values read at start (tlsboxd
     * --set, the store as found).  The core has validated every value
     * against the settings table and holds the write transaction that
     * stores them, so no other change to any setting runs meanwhile.
     *
     * Also on a SIGHUP reload, on the main thread, with the settings whose
     * stored value differs from the one in effect (the store changed behind
     * the daemon's back: a restored backup): the values are stored already,
     * so a refusal cannot undo them; the core logs it (the message, then
     * "the old ones stay in effect") and the plugin keeps what it runs.
     * When it refuses several together the core then offers them one at a
     * time, so that those it can apply are, and logs which it applied, which
     * wait for the next start and which it refused.
     * "settings.changed" with {"reload":true} follows either way.
     *
     * @p changes lists the plugin's changed settings, ended by
     * TLSBOX_VALUES_END: own key ("https_port") and the canonical value that
     * takes effect (the default, for a setting reset); both borrowed for the
     * call.  setting_get still returns the old values during the call.
     *
     * Return 0 once the change is applied (or needs nothing now): the core
     * stores it and publishes "settings.changed" as for any change.  Refuse
     * with a negative errno, having left the plugin as it was and set *err to
     * a malloc'd message (the core frees it; it goes to the caller and may be
     * logged, so never put a SECRET value in it) that names the setting and why,
     * e.g. "site.https_port: cannot listen on 127.0.0.1 port 8443: Address
     * already in use": nothing is stored and the caller gets the message
     * (tlsboxctl exits 1; the API answers 409, or 400 for -EINVAL).  The core
     * calls the hook again with the old values when it cannot store an
     * accepted change (a store failure, or another plugin in the same request
     * refused).
     *
     * Or return TLSBOX_APPLY_AT_RESTART when the value is sound but can only
     * take effect when tlsboxd starts again (a port below 1024, opened only
     * before privileges are dropped), having left the plugin serving as it
     * was and set *err to a malloc'd note saying so: the core stores the
     * change and the caller gets the note (tlsboxctl prints it, the API
     * answers 200 with restart_needed and "note").  The plugin keeps serving
     * its old values until then, so a later call must take the settings it
     * was not given from what it serves, not from setting_get.
     *
     * Threading: runs on the thread that made the change (the control socket
     * or admin thread, a maintenance or event thread, the main thread), at
     * most one call at a time for the whole daemon.  It must not change
     * settings (host->setting_set would wait for itself: it returns
     * -EDEADLK) nor write the store, and should be quick (it holds up every
     * other settings write): bind a socket, open a file, not a network round
     * trip.
     */
    int (*apply_settings)(void *state, const struct tlsbox_setting_value *changes, char **err);
};

/** .apply_settings: stored, takes effect at the next start (see there). */
#define TLSBOX_APPLY_AT_RESTART 1

/**
 * True when descriptor @p d (built against any 1.x kit) has member @p field:
 * the core reads a field added in a later minor only through this.
 */
#define TLSBOX_DESC_HAS(d, field)                                                                  \
    ((d)->size >= offsetof(struct tlsbox_plugin_desc, field) + sizeof((d)->field))

#if defined(__GNUC__)
#define TLSBOX_EXPORT __attribute__((visibility("default")))
#else
#define TLSBOX_EXPORT
#endif

/**
 * Define the plugin's one exported descriptor.  Arguments are designated
 * initialisers for the fields after .size.
 */
#define TLSBOX_PLUGIN(...)                                                                         \
    TLSBOX_EXPORT extern const struct tlsbox_plugin_desc tlsbox_plugin_descriptor;                 \
    const struct tlsbox_plugin_desc tlsbox_plugin_descriptor = {                                   \
        .abi_major = TLSBOX_ABI_MAJOR,                                                             \
        .abi_minor = TLSBOX_ABI_MINOR,                                                             \
        .size = sizeof(struct tlsbox_plugin_desc),                                                 \
        __VA_ARGS__}

#ifdef __cplusplus
}
#endif

#endif /* TLSBOX_PLUGIN_H */
