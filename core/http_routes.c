/* Routes on the site's plain HTTP port.  Site workers read the table on every
 * plain-HTTP request, so it is an immutable array behind an atomic pointer;
 * the main thread replaces it (routes change only when plugins start/stop)
 * and keeps retired arrays until no reader can hold them, which makes
 * readers lock-free.  Removing a plugin's routes waits for that anyway, so
 * it frees them then: each plugin disable/enable used to leave two arrays
 * behind until exit. */
#include "core/http_routes.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/xalloc.h"

struct http_route {
    struct tlsbox_plugin *owner;
    char *prefix;
    size_t prefix_len;
    tlsbox_http_fn fn;
    void *arg;
};

struct http_table {
    size_t n;
    struct http_table *retired_next;
    struct http_route routes[];
};

static _Atomic(struct http_table *) current;
static struct http_table *retired;

/* Site workers inside http_route_dispatch, counted in the half that
 * `phase` pointed to when they entered.  A plugin stopped while serving
 * (core.plugins_disabled) frees what its route's arg points to: the main
 * thread, having removed the route, waits until no worker can still be
 * calling it (wait_for_dispatchers).  Two counters, so that workers coming
 * in meanwhile count in the other half and a busy port cannot keep it
 * waiting. */
static atomic_uint dispatching[2];
static atomic_uint phase;

static void publish(struct http_table *t)
{
    struct http_table *old = atomic_exchange(&current, t);
    if (old) {
        old->retired_next = retired;
        retired = old;
    }
}

static struct http_table *table_copy(const struct http_table *old, size_t extra)
{
    size_t n = old ? old->n : 0;
    struct http_table *t = xcalloc(1, sizeof *t + (n + extra) * sizeof t->routes[0]);
    if (old)
        memcpy(t->routes, old->routes, n * sizeof t->routes[0]);
    t->n = n;
    return t;
}

int http_route_add(struct tlsbox_plugin *owner, const char *prefix, tlsbox_http_fn fn, void *arg)
{
    if (!prefix || prefix[0] != '/' || !fn)
        return -EINVAL;
    struct http_table *old = atomic_load(&current);
    for (size_t i = 0; old && i < old->n; i++)
        if (strcmp(old->routes[i].prefix, prefix) == 0)
            return -EEXIST;
    struct http_table *t = table_copy(old, 1);
    t->routes[t->n++] = (struct http_route){.owner = owner,
                                            .prefix = xstrdup(prefix),
                                            .prefix_len = strlen(prefix),
                                            .fn = fn,
                                            .arg = arg};
    publish(t);
    return 0;
}

/* Return once every dispatch that may have read a table published before
 * this call has returned.  Such a dispatch entered (counted itself) before
 * it read `current`, so before the publish; both halves are found empty
 * after the publish, each at some point, so it is done.  One that counts
 * itself later reads the new table.  Main thread. */
static void wait_for_dispatchers(void)
{
    for (int round = 0; round < 2; round++) {
        unsigned old = atomic_fetch_add(&phase, 1) & 1;
        while (atomic_load(&dispatching[old]) != 0)
            nanosleep(&(struct timespec){.tv_nsec = 200 * 1000}, NULL);
    }
}

void http_routes_remove_owner(struct tlsbox_plugin *owner)
{
    struct http_table *old = atomic_load(&current);
    if (!old)
        return;
    struct http_table *t = table_copy(NULL, old->n);
    for (size_t i = 0; i < old->n; i++)
        if (old->routes[i].owner != owner)
            t->routes[t->n++] = old->routes[i];
    publish(t);
    wait_for_dispatchers();
    /* No dispatch can still read a table published before t: free them all,
     * and the prefixes of the routes removed (t holds every other one). */
    for (size_t i = 0; i < old->n; i++)
        if (old->routes[i].owner == owner)
            free(old->routes[i].prefix);
    while (retired) {
        struct http_table *next = retired->retired_next;
        free(retired);
        retired = next;
    }
}

int http_route_dispatch(const char *method, const char *path, struct tlsbox_http_reply *reply)
{
    /* Sequentially consistent: the count must be seen before the load of
     * `current` (wait_for_dispatchers). */
    unsigned half = atomic_load(&phase) & 1;
    atomic_fetch_add(&dispatching[half], 1);
    int rc = -ENOENT;
    struct http_table *t = atomic_load(&current);
    for (size_t i = 0; t && path && i < t->n; i++) {
        const struct http_route *r = &t->routes[i];
        if (strncmp(path, r->prefix, r->prefix_len) == 0) {
            memset(reply, 0, sizeof *reply);
            if (r->fn(r->arg, method, path, reply) == 0) {
                rc = 0;
                break;
            }
        }
    }
    atomic_fetch_sub(&dispatching[half], 1);
    return rc;
}

void http_routes_free(void)
{
    /* Each prefix string was allocated once and may appear in several
     * tables: free it from the newest table that holds it, once. */
    struct http_table *t = atomic_exchange(&current, NULL);
    if (t) {
        t->retired_next = retired;
        retired = t;
    }
    char **freed = NULL;
    size_t nfreed = 0;
    for (struct http_table *r = retired; r; r = r->retired_next)
        for (size_t i = 0; i < r->n; i++) {
            int seen = 0;
            for (size_t k = 0; k < nfreed; k++)
                if (freed[k] == r->routes[i].prefix)
                    seen = 1;
            if (!seen) {
                freed = xrealloc(freed, (nfreed + 1) * sizeof *freed);
                freed[nfreed++] = r->routes[i].prefix;
            }
        }
    for (size_t k = 0; k < nfreed; k++)
        free(freed[k]);
    free(freed);
    while (retired) {
        struct http_table *next = retired->retired_next;
        free(retired);
        retired = next;
    }
}
