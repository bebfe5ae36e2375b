/* The site's plain-HTTP routes (core/http_routes.c): dispatch to the route
 * whose prefix matches, none once its plugin is removed, and no memory kept
 * per plugin disable/enable (each used to leave two retired tables and the
 * removed prefixes behind until exit). */
#include <errno.h>
#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
/* ASan replaces malloc: mallinfo2 would say nothing.  Declared here, as
 * GCC installs no sanitizer/allocator_interface.h. */
size_t __sanitizer_get_current_allocated_bytes(void);
static size_t heap_in_use(void)
{
    return __sanitizer_get_current_allocated_bytes();
}
#else
#include <malloc.h>
static size_t heap_in_use(void)
{
    return mallinfo2().uordblks;
}
#endif

#include "core/http_routes.h"
#include "tests/tap.h"

static int answer(void *arg, const char *method, const char *path, struct tlsbox_http_reply *reply)
{
    (void)method;
    (void)path;
    reply->status = *(int *)arg;
    return 0;
}

/* Stand-ins for two plugins: only their addresses are used. */
static int plugin_a, plugin_b;
#define A ((struct tlsbox_plugin *)&plugin_a)
#define B ((struct tlsbox_plugin *)&plugin_b)

/* One disable/enable of plugin A as the loader does it. */
static void toggle(int *status)
{
    http_routes_remove_owner(A);
    http_route_add(A, "/.well-known/acme-challenge/", answer, status);
}

int main(void)
{
    int sa = 200, sb = 204;
    struct tlsbox_http_reply r;

    is_int(http_route_add(A, "/.well-known/acme-challenge/", answer, &sa), 0, "A's route added");
    is_int(http_route_add(B, "/b/", answer, &sb), 0, "B's route added");
    is_int(http_route_add(B, "/b/", answer, &sb), -EEXIST, "the same prefix twice is refused");
    is_int(http_route_dispatch("GET", "/.well-known/acme-challenge/x", &r), 0,
           "A's path is answered");
    is_int(r.status, 200, "by A");
    is_int(http_route_dispatch("GET", "/b/x", &r), 0, "B's path is answered");
    is_int(r.status, 204, "by B");

    http_routes_remove_owner(A);
    is_int(http_route_dispatch("GET", "/.well-known/acme-challenge/x", &r), -ENOENT,
           "A removed: its path has no route");
    is_int(http_route_dispatch("GET", "/b/x", &r), 0, "B's route stays");

    /* Warm up (the allocator's own first-use costs), then count: the heap in
     * use must not grow with the number of toggles.  A table with two
     * routes and a prefix are about 150 bytes, so 2000 toggles kept would be
     * some 300 KB; 4 KB leaves room for the allocator, not for that. */
    http_route_add(A, "/.well-known/acme-challenge/", answer, &sa);
    for (int i = 0; i < 50; i++)
        toggle(&sa);
    size_t before = heap_in_use();
    for (int i = 0; i < 2000; i++)
        toggle(&sa);
    size_t after = heap_in_use();
    ok(after <= before + 4096, "2000 disable/enable cycles keep no memory (heap %zu -> %zu bytes)",
       before, after);
    is_int(http_route_dispatch("GET", "/.well-known/acme-challenge/x", &r), 0,
           "after them A's path is answered");
    is_int(r.status, 200, "by A");

    http_routes_free();
    return done_testing();
}
