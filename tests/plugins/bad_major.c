/* A plugin built for a future ABI major: the loader must refuse it. */
#include <tlsbox/plugin.h>

TLSBOX_EXPORT extern const struct tlsbox_plugin_desc tlsbox_plugin_descriptor;
const struct tlsbox_plugin_desc tlsbox_plugin_descriptor = {
    .abi_major = TLSBOX_ABI_MAJOR + 1,
    .abi_minor = 0,
    .size = sizeof(struct tlsbox_plugin_desc),
    .name = "bad_major",
    .version = "1",
};
