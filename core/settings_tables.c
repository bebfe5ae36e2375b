/* The core's own settings tables, owners "core" and "admin": the daemon
 * registers them (core/main.c), and the plugin kit's mock host compiles
 * them too, so a plugin's setting_get of a core or admin key meets the
 * daemon's defaults under its unit tests as well. */
#include "core/settings_tables.h"

#include "core/settings_check.h"

const struct tlsbox_setting_def core_settings[] = {
    {.key = "hostname",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     /* Empty (= the system host name) or a DNS name of LDH labels. */
     .pattern = "^$|^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                "(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$",
     /* The pattern bounds each label (63); .max bounds the name (RFC 1035:
      * 253 characters in text), else the internal CA issues for a name no
      * resolver can hold. */
     .max = 253,
     .help = "Host name the appliance answers to; empty means the system host name"},
    {.key = "plugins_disabled",
     .type = TLSBOX_SETTING_LIST,
     .default_value = "",
     .pattern = "^[a-z][a-z0-9_]*$",
     .help = "Plugins not to run, by name (comma-separated); a change stops or starts them "
             "at once"},
    {.key = "log_level",
     .type = TLSBOX_SETTING_ENUM,
     .default_value = "info",
     .choices = "err|warn|info|debug",
     .help = "Most detailed level written to the log"},
    {.key = "maintenance_threads",
     .type = TLSBOX_SETTING_INT,
     .default_value = "2",
     .min = 1,
     .max = 8,
     .help = "Threads running background jobs (ACME, OCSP, DH generation, history)",
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "metrics_history_period",
     .type = TLSBOX_SETTING_INT,
     .default_value = "60",
     .min = 60,
     .max = 86400,
     .help = "Seconds between writes of metrics history to the store (SD cards: keep it high)",
     /* sysstat_start takes it once. */
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "api_max_body",
     .type = TLSBOX_SETTING_INT,
     .default_value = "1048576",
     .min = 1024,
     .max = 64 * 1024 * 1024,
     .help = "Largest request body the admin API accepts, in bytes",
     /* The control socket and the admin server take it when they start. */
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "cert_warn_days",
     .type = TLSBOX_SETTING_LIST,
     .default_value = "14,7,3,1",
     .pattern = "^([1-9]|[1-9][0-9]|[12][0-9][0-9]|3[0-5][0-9]|36[0-5])$",
     .help = "Days before a certificate expires to announce it (cert.expiring: the notify "
             "plugin's webhook and e-mail), once per threshold; empty = never"},
    {.key = "user",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "tlsbox",
     .pattern = "^[a-z_][a-z0-9_-]{0,31}$",
     .help = "User the daemon runs as once its ports are bound, when started as root",
     .flags = TLSBOX_SETTING_RESTART | SETTINGS_FROM_BOX_ONLY},
    TLSBOX_SETTINGS_END};

const struct tlsbox_setting_def admin_settings[] = {
    {.key = "enabled",
     .type = TLSBOX_SETTING_BOOL,
     .default_value = "true",
     .help = "Serve the admin web UI over HTTPS",
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "port",
     .type = TLSBOX_SETTING_INT,
     .default_value = "9443",
     .min = 1,
     .max = 65535,
     .help = "TCP port of the admin web UI (HTTPS only)",
     .flags = TLSBOX_SETTING_RESTART},
    {.key = "bind",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .pattern = "^$|^[0-9A-Fa-f:.]+$",
     .help = "Address the admin web UI listens on; empty means every address (the LAN)",
     .flags = TLSBOX_SETTING_RESTART | SETTINGS_CORE_ADDRESS},
    {.key = "metrics_token",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .pattern = "^$|^[A-Za-z0-9._~+/=-]{16,256}$",
     .help = "Bearer token for /metrics on the admin port (16+ characters); empty turns "
             "/metrics off there",
     .flags = TLSBOX_SETTING_SECRET},
    {.key = "session_idle",
     .type = TLSBOX_SETTING_INT,
     .default_value = "1800",
     .min = 1,
     .max = 86400,
     .help = "Seconds without a request after which a login session ends"},
    {.key = "session_max",
     .type = TLSBOX_SETTING_INT,
     .default_value = "43200",
     .min = 60,
     .max = 604800,
     .help = "Seconds after login when a session ends whatever its use"},
    {.key = "lockout_after",
     .type = TLSBOX_SETTING_INT,
     .default_value = "10",
     .min = 4,
     .max = 100,
     .help = "Failed logins (per address and per user) that lock logins out; from the "
             "third, the next attempt must wait 2 s, then 4, 8, ... up to 60"},
    {.key = "lockout_seconds",
     .type = TLSBOX_SETTING_INT,
     .default_value = "900",
     .min = 10,
     .max = 86400,
     .help = "How long a lockout lasts, in seconds"},
    {.key = "pbkdf2_iterations",
     .type = TLSBOX_SETTING_INT,
     .default_value = "200000",
     .min = 10000,
     .max = 10000000,
     .help = "PBKDF2-SHA256 iterations of password hashes (200000: 0.09 s on a 2-core x86 "
             "VM, a few times longer on a Raspberry Pi); a stored hash made with another "
             "count is made again at its user's next login"},
    {.key = "setup_token_ttl",
     .type = TLSBOX_SETTING_INT,
     .default_value = "1800",
     .min = 60,
     .max = 86400,
     .help = "Seconds a first-run setup URL stays valid"},
    TLSBOX_SETTINGS_END};
