/*
 * GET site/limits: what the running site enforces, which is not always what
 * is stored (site.max_connections and a port below 1024 wait for a restart;
 * the open file limit may leave room for fewer connections).
 */
#ifndef TLSBOX_SITE_LIMITS_H
#define TLSBOX_SITE_LIMITS_H

struct site;

/* Register the route (main thread, from site_start).  Its handler runs on the
 * admin or control thread and reads @p s, which outlives the route: the core
 * removes a plugin's routes after its stop hook. */
int site_limits_register(struct site *s);

#endif
