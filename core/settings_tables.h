/* The core's own settings tables (core/settings_tables.c). */
#ifndef TLSBOX_CORE_SETTINGS_TABLES_H
#define TLSBOX_CORE_SETTINGS_TABLES_H

#include <tlsbox/plugin.h>

/* The core's own settings (owner "core"): hostname, plugins_disabled, log_level, ... */
extern const struct tlsbox_setting_def core_settings[];
/* The "admin" settings (port, bind, session and lockout limits, ...). */
extern const struct tlsbox_setting_def admin_settings[];

#endif
