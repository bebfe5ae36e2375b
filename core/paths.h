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

#endif
