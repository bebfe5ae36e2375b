/* Demo mode (tlsboxd --demo): each plugin's .demo_settings replace its
 * declared defaults for this run, and the state directory gets the installed
 * sample site.  The core knows neither the plugins nor their keys. */
#ifndef TLSBOX_CORE_DEMO_H
#define TLSBOX_CORE_DEMO_H

/*
 * For every loaded plugin with .demo_settings (ABI 1.1): expand "${state_dir}"
 * to @p state_dir and "${datadir}" to paths_pkgdatadir(), then use the value
 * as the setting's default for this run (stored values still win).  A value
 * the setting refuses is logged and skipped.  When "<state_dir>/www" does not
 * exist, it is created and the files of "<pkgdatadir>/www" copied into it.
 * Returns the number of defaults replaced.  Main thread, after the plugins
 * are loaded and before they start.
 */
int demo_apply(const char *state_dir);

/* @p value with "${state_dir}" and "${datadir}" replaced (caller frees). */
char *demo_expand(const char *value, const char *state_dir, const char *datadir);

#endif
