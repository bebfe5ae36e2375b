/* libFuzzer target: the site's path normalisation (request target -> path
 * under the root), with the invariants its callers rely on: an accepted
 * path never escapes the root (no ".." or "." segment, no leading '/'), has
 * no empty segment (so "/" + path, the redirect's Location, never starts
 * with "//"), holds no control byte, fits the buffer, and normalises to
 * itself again. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/site/site.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_segments(const char *out)
{
    const char *seg = out;
    if (out[0] == '/')
        abort(); /* absolute: "/" + out would start with "//" */
    for (const char *p = out;; p++) {
        if (*p == '/' || *p == 0) {
            size_t n = (size_t)(p - seg);
            if (n == 0 && *p == '/')
                abort(); /* empty segment */
            if ((n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
                abort(); /* "." or ".." left in the path */
            if (*p == 0)
                break;
            seg = p + 1;
        } else if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            abort(); /* a control byte reached the file name */
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = malloc(size ? size : 1); /* exact size: a read past it is an ASan error */
    char out[512], again[520], slash[520];
    if (!in)
        return 0;
    if (size)
        memcpy(in, data, size);
    if (site_path_normalize(in, size, out, sizeof(out)) == 0) {
        size_t n = strnlen(out, sizeof(out));
        if (n >= sizeof(out))
            abort(); /* not terminated inside the buffer */
        check_segments(out);
        /* Idempotent where re-reading cannot decode anew. */
        if (!strpbrk(out, "%?#")) {
            slash[0] = '/';
            memcpy(slash + 1, out, n + 1);
            if (site_path_normalize(slash, n + 1, again, sizeof(again)) != 0 ||
                strcmp(again, out) != 0)
                abort();
        }
    }
    free(in);
    return 0;
}
