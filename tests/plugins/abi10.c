/* A plugin exactly as the 1.0 kit built it: its descriptor ends after fini
 * (no .migrations, no .demo_settings).  A 1.1 core must load and run it. */
#include <stdint.h>

#include <tlsbox/host.h>
#include <tlsbox/plugin.h>

/* struct tlsbox_plugin_desc of plugin.h 1.0, field for field. */
struct desc_1_0 {
    uint16_t abi_major, abi_minor;
    uint32_t size;
    const char *name, *version, *description;
    const struct tlsbox_setting_def *settings;
    int (*init)(struct tlsbox_plugin *self, const struct tlsbox_host *host, void **state);
    int (*start)(void *state);
    void (*stop)(void *state);
    void (*fini)(void *state);
};

static const struct tlsbox_setting_def abi10_settings[] = {
    {.key = "word", .type = TLSBOX_SETTING_STRING, .default_value = "old", .help = "A word"},
    TLSBOX_SETTINGS_END};

TLSBOX_EXPORT extern const struct desc_1_0 tlsbox_plugin_descriptor;
const struct desc_1_0 tlsbox_plugin_descriptor = {
    .abi_major = 1,
    .abi_minor = 0,
    .size = sizeof(struct desc_1_0),
    .name = "abi10",
    .version = "1",
    .description = "built against the 1.0 kit",
    .settings = abi10_settings,
};
