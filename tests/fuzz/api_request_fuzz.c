/* libFuzzer target: how the API reads a request, for the control socket and
 * the admin server alike: the query string (api_dispatch's escape check,
 * api_query_get, api_query_int) and the JSON body (api_body_object).  Both
 * come from whoever reaches the API.
 *
 * Input: a byte that picks api_query_int's range and whether it clamps or
 * refuses a number outside it, then the query string, a NUL,
 * and the body (no NUL: all of the input after the byte is the body too).
 * Invariants: a number taken lies in its range, a refusal is a 400 with a
 * JSON error, a decoded value is no longer than the query, and a refused
 * body is never quoted: it may hold a private key (cert/import). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The route the query and body reach once api_dispatch lets them through. */
static void on_fuzz(void *arg, const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply)
{
    (void)arg;
    json_t *j = api_body_object(req, reply);
    if (!j) {
        json_t *e = json_loads(reply->body, 0, NULL);
        if (reply->status != 400 || !json_is_string(json_object_get(e, "error")))
            abort(); /* a refusal is a 400 with a JSON error */
        /* No run of base64 (a key's text) from the body in the message:
         * the messages' own words are shorter. */
        const char *msg = json_string_value(json_object_get(e, "error"));
        for (size_t i = 0; i < req->body_len;) {
            size_t n = 0;
            while (i + n < req->body_len && (isalnum((unsigned char)req->body[i + n]) ||
                                             req->body[i + n] == '+' || req->body[i + n] == '/'))
                n++;
            if (n >= 16) {
                char *run = strndup(req->body + i, n);
                if (strstr(msg, run))
                    abort();
                free(run);
            }
            i += n ? n : 1;
        }
        json_decref(e);
        return;
    }
    if (!json_is_object(j))
        abort();
    api_reply_json(reply, 200, j);
}

/* api_query_int's ranges in admin_api.c and api_core.c, and some that reach
 * the ends of long long. */
static const long long ranges[][3] = {
    {100, 1, 1000},         {0, 0, (long long)1 << 62},
    {3600, 60, 31 * 86400}, {0, LLONG_MIN, LLONG_MAX},
    {-5, -10, -1},          {7, 7, 7},
    {50, 1, 500},           {0, 0, LLONG_MAX},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int registered;
    if (!registered) {
        if (api_route_add(NULL, "POST", "fuzz", on_fuzz, NULL) < 0)
            abort();
        registered = 1;
    }
    if (size < 1)
        return 0;
    const long long *rg = ranges[(data[0] & 0x7f) % (sizeof(ranges) / sizeof(ranges[0]))];
    enum api_query_range mode = data[0] & 0x80 ? API_QUERY_REFUSE : API_QUERY_CLAMP;
    data++, size--;
    char *query = malloc(size + 1);
    if (!query)
        return 0;
    memcpy(query, data, size);
    query[size] = '\0';
    size_t ql = strlen(query);
    size_t bl = ql < size ? size - ql - 1 : size;
    char *body = malloc(bl + 1); /* NUL-terminated, as host.h promises */
    if (!body) {
        free(query);
        return 0;
    }
    memcpy(body, ql < size ? data + ql + 1 : data, bl);
    body[bl] = '\0';

    static const char *const keys[] = {"limit", "before", "since", "names", "", "a"};
    for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
        char *v = api_query_get(query, keys[k]);
        if (v && strlen(v) > ql)
            abort(); /* decoding never lengthens */
        struct tlsbox_api_reply reply = {0};
        long long out = 0;
        int r = api_query_int(query, keys[k], rg[0], rg[1], rg[2], mode, &out, &reply);
        if (r == 0 && (out < rg[1] || out > rg[2] || reply.body))
            abort(); /* a number outside its range, or an answer with it */
        if (r == 0 && !v && out != (rg[0] < rg[1] ? rg[1] : rg[0] > rg[2] ? rg[2] : rg[0]))
            abort(); /* absent: the default */
        if (r < 0 && (r != -EINVAL || reply.status != 400 || !reply.body))
            abort();
        if (r < 0 && (!strstr(reply.body, keys[k]) || !v))
            abort(); /* the refusal names the parameter it refuses */
        free(reply.body);
        free(v);
    }

    struct tlsbox_api_request req = {
        .method = "POST", .path = "fuzz", .query = query, .body = body, .body_len = bl};
    struct tlsbox_api_reply reply = {0};
    api_dispatch(&req, &reply);
    if (!reply.body || (reply.status != 200 && reply.status != 400))
        abort();
    free(reply.body);
    free(body);
    free(query);
    return 0;
}
