/* libFuzzer target: the TLS policy validator and compiler.  Policies arrive
 * as JSON over the control API, so every field is untrusted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/tls_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static json_t *base;
    if (!base)
        base = tls_policy_default();
    json_t *in = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!in)
        return 0;
    char *err = NULL;
    json_t *n = tls_policy_normalize(in, &err);
    free(err);
    err = NULL;
    if (n) {
        char *prio = tls_policy_compile(n, NULL, &err);
        free(err);
        err = NULL;
        if (prio) {
            json_t *pv = tls_policy_preview(prio, &err);
            json_decref(pv);
            free(err);
            err = NULL;
        }
        free(prio);
        free(tls_policy_hsts(n));
        json_decref(n);
    }
    /* The same object as a set of fields, as "policy set" sends them. */
    json_t *p = tls_policy_apply_fields(base, in, &err);
    free(err);
    err = NULL;
    json_decref(p);
    /* Its "preset" as policy/preset's name, on the object as the current
     * policy (whose fields other than the TLS ones carry over). */
    p = tls_policy_with_preset(in, json_string_value(json_object_get(in, "preset")), &err);
    if (!p && !err)
        abort(); /* a refusal always says why */
    free(err);
    json_decref(p);
    json_decref(in);
    return 0;
}
