/* libFuzzer target: what the ACME client parses from a CA's replies —
 * response header lines (Location, Replay-Nonce, Retry-After, Link), problem
 * documents, and RFC 3339 times.  The CA is a remote peer: untrusted. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Reach the static header callback and problem-document reader. */
#include "plugins/acme/acme_http.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';

    (void)acme_parse_retry_after(s, 1700000000);
    (void)acme_parse_rfc3339(s);

    /* curl hands the callback one header line at a time, not NUL-terminated:
     * feed each line of the input as its own exact-size buffer. */
    struct acme_resp r;
    memset(&r, 0, sizeof(r));
    for (size_t i = 0; i < size;) {
        const uint8_t *nl = memchr(data + i, '\n', size - i);
        size_t n = nl ? (size_t)(nl - (data + i)) + 1 : size - i;
        char *line = malloc(n ? n : 1);
        if (!line)
            break;
        memcpy(line, data + i, n);
        (void)http_on_header(line, 1, n, &r);
        free(line);
        i += n;
    }

    /* The input as a problem document. */
    r.json = json_loadb((const char *)data, size, 0, NULL);
    r.status = 400;
    struct acme_err e;
    memset(&e, 0, sizeof(e));
    (void)http_problem("fuzz", "https://ca.invalid/x", &r, &e);
    acme_err_clear(&e);
    acme_resp_free(&r);
    free(s);
    return 0;
}
