/* libFuzzer target: settings_check() against a fixed set of declarations.
 * Values come from the control API and --set, so they are untrusted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/settings_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct tlsbox_setting_def defs[] = {
    {.key = "flag", .type = TLSBOX_SETTING_BOOL, .default_value = "false"},
    {.key = "workers", .type = TLSBOX_SETTING_INT, .default_value = "2", .min = 1, .max = 64},
    {.key = "any", .type = TLSBOX_SETTING_INT, .default_value = "0"},
    {.key = "name",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "a",
     .pattern = "^[a-z0-9.-]+$"},
    {.key = "free", .type = TLSBOX_SETTING_STRING, .default_value = ""},
    {.key = "token",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .flags = TLSBOX_SETTING_SECRET},
    {.key = "mode", .type = TLSBOX_SETTING_ENUM, .default_value = "auto", .choices = "auto|on|off"},
    {.key = "names", .type = TLSBOX_SETTING_LIST, .default_value = "", .pattern = "^[a-z0-9*.-]+$"},
    {.key = "items", .type = TLSBOX_SETTING_LIST, .default_value = ""},
};
#define NDEFS (sizeof(defs) / sizeof(defs[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static regex_t *re[NDEFS];
    static int compiled;
    if (!compiled) {
        for (size_t i = 0; i < NDEFS; i++) {
            char *err = NULL;
            if (settings_check_compile(defs[i].key, &defs[i], &re[i], &err) < 0)
                abort(); /* the fixed declarations are valid */
        }
        compiled = 1;
    }
    /* The first byte picks the declaration; the rest is the value (a C string). */
    if (size < 1)
        return 0;
    const struct tlsbox_setting_def *def = &defs[data[0] % NDEFS];
    const regex_t *r = re[data[0] % NDEFS];
    char *value = malloc(size);
    if (!value)
        return 0;
    memcpy(value, data + 1, size - 1);
    value[size - 1] = '\0';

    char *canon = NULL, *err = NULL;
    int rc = settings_check(def->key, def, (data[0] & 0x80) ? NULL : r, value, &canon, &err);
    if (rc == 0) {
        /* The canonical form must itself be valid and canonical. */
        char *canon2 = NULL, *err2 = NULL;
        if (settings_check(def->key, def, r, canon, &canon2, &err2) != 0 ||
            strcmp(canon, canon2) != 0)
            abort();
        free(canon2);
        free(err2);
    } else if (!err) {
        abort(); /* a refusal always says why */
    }
    free(canon);
    free(err);

    long long v;
    (void)settings_check_parse_int(value, &v);
    err = NULL;
    (void)settings_check_owner(value, &err);
    free(err);
    free(value);
    return 0;
}
