/* Which event names the core's event bus takes (core/events.c); the plugin
 * kit's mock host (pdk/mockhost) includes this too, so a plugin's unit test
 * is refused the names the daemon refuses. */
#ifndef TLSBOX_CORE_EVENTS_NAME_H
#define TLSBOX_CORE_EVENTS_NAME_H

#include <stdbool.h>
#include <string.h>

#define EVENTS_NAME_MAX 128

/* 1..EVENTS_NAME_MAX printable ASCII bytes, no blank; with @p allow_star (a
 * subscription) a last '*' makes it a prefix. */
static inline bool events_name_ok(const char *name, bool allow_star)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > EVENTS_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == '*' && allow_star && i == n - 1)
            continue;
        if (c <= ' ' || c >= 0x7f || c == '*')
            return false;
    }
    return true;
}

#endif
