/* A plugin built against a newer minor than the core has: refused. */
#include <tlsbox/plugin.h>

TLSBOX_EXPORT extern const struct tlsbox_plugin_desc tlsbox_plugin_descriptor;
const struct tlsbox_plugin_desc tlsbox_plugin_descriptor = {
    .abi_major = TLSBOX_ABI_MAJOR,
    .abi_minor = TLSBOX_ABI_MINOR + 1,
    .size = sizeof(struct tlsbox_plugin_desc),
    .name = "newer_minor",
    .version = "1",
};
