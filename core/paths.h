/* Installed paths, relocatable: a tlsboxd installed with "make install
 * prefix=P" (or moved with its prefix) finds its plugins and data under P. */
#ifndef TLSBOX_CORE_PATHS_H
#define TLSBOX_CORE_PATHS_H

/* Work out the runtime prefix from /proc/self/exe.  Main thread, first. */
void paths_init(void);
/* Plugin directory: <runtime prefix>/<libdir part>/tlsbox/plugins when it
 * exists, else the configured one.  Static storage. */
const char *paths_plugindir(void);
/* Data directory (…/share), same rule. */
const char *paths_datadir(void);
/* tlsbox's own data ("${datadir}" of the kit: the sample site in www/):
 * the directory set by paths_set_pkgdatadir (tlsboxd --data-dir; the demo
 * script and tests point it into the build tree), else paths_datadir()
 * + "/tlsbox".  Static storage. */
const char *paths_pkgdatadir(void);
void paths_set_pkgdatadir(const char *dir);

#endif
