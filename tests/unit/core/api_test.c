/* API routing: literal beats prefix, longest prefix wins, 404 vs 405,
 * JSON bodies validated, routes removed with their owner. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/api.h"
#include "core/utf8.h"
#include "core/xalloc.h"
#include "tests/tap.h"

static void answer(void *arg, const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply)
{
    reply->body = xasprintf("{\"route\":\"%s\"}", (const char *)arg);
}

static char *call(const char *method, const char *path, int *status)
{
    struct tlsbox_api_request req = {.method = method, .path = path, .user = "test"};
    struct tlsbox_api_reply reply = {0};
    api_dispatch(&req, &reply);
    *status = reply.status;
    return reply.body;
}

/* A handler asking another route in-process, as bench asks site/limits
 * while it checks a run (host->api_call from a handler). */
static void nested(void *arg, const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply)
{
    int st;
    char *inner = call("GET", (const char *)arg, &st);
    reply->body = xasprintf("{\"inner_status\":%d,\"inner\":%s}", st, inner);
    free(inner);
    (void)req;
}

int main(void)
{
    struct tlsbox_plugin *a = (struct tlsbox_plugin *)0x1, *b = (struct tlsbox_plugin *)0x2;
    is_int(api_route_add(a, "GET", "cert/*", answer, "prefix"), 0, "prefix route added");
    is_int(api_route_add(a, "GET", "cert/root", answer, "literal"), 0, "literal route added");
    is_int(api_route_add(b, "GET", "cert/root/*", answer, "longer"), 0, "longer prefix added");
    ok(api_route_add(a, "GET", "cert/root", answer, "dup") < 0, "duplicate refused");
    ok(api_route_add(a, "GET", "/abs", answer, "x") < 0, "leading slash refused");

    int st;
    char *body = call("GET", "cert/root", &st);
    like(body, "literal", "literal route wins over prefix");
    free(body);
    body = call("GET", "cert/example.org", &st);
    like(body, "prefix", "prefix route answers the rest");
    free(body);
    body = call("GET", "cert/root/x", &st);
    like(body, "longer", "longest prefix wins");
    free(body);
    body = call("DELETE", "cert/root", &st);
    is_int(st, 405, "known path, other method: 405");
    like(body, "not allowed", "405 says why");
    free(body);
    body = call("GET", "nothing/here", &st);
    is_int(st, 404, "unknown path: 404");
    like(body, "no such API path: /api/v1/nothing/here", "404 names the path");
    free(body);
    body = call("GET", "cert/", &st);
    is_int(st, 404, "a prefix route needs a rest");
    free(body);

    is_int(api_route_add(b, "GET", "outer", nested, "cert/root"), 0, "nesting route added");
    body = call("GET", "outer", &st);
    is_str(body, "{\"inner_status\":200,\"inner\":{\"route\":\"literal\"}}",
           "a handler calls another route in-process and gets its answer");
    free(body);

    /* The nested call left the table unlocked: removing routes (the write
     * lock) does not wait forever. */
    api_routes_remove_owner(b);
    body = call("GET", "cert/root/x", &st);
    like(body, "prefix", "removed owner's route no longer answers");
    free(body);

    struct tlsbox_api_reply reply = {0};
    struct tlsbox_api_request req = {
        .method = "PUT", .path = "x", .body = "{\"a\":1,\"a\":2}", .body_len = 13};
    ok(api_body_object(&req, &reply) == NULL && reply.status == 400,
       "duplicate keys refused with 400");
    free(reply.body);
    reply.body = NULL;
    req.body = "[1]";
    req.body_len = 3;
    ok(api_body_object(&req, &reply) == NULL, "non-object refused");
    like(reply.body, "must be a JSON object", "and says so");
    free(reply.body);
    reply.body = NULL;
    req.body = "{\"a\":";
    req.body_len = 5;
    ok(api_body_object(&req, &reply) == NULL, "broken JSON refused");
    like(reply.body, "not valid JSON", "with the parser's reason");
    free(reply.body);
    reply.body = NULL;
    /* jansson's "near '...'" quotes the token read so far (up to 20
     * bytes): a key's text with a bad escape was echoed in the answer. */
    req.body = "{\"key\":\"MIGHAgEAMBMG\\x\"}";
    req.body_len = strlen(req.body);
    ok(api_body_object(&req, &reply) == NULL && reply.status == 400, "a bad escape refused");
    ok(reply.body && !strstr(reply.body, "MIGHAgEAMBMG"), "the answer quotes none of the body (%s)",
       reply.body ? reply.body : "(null)");
    like(reply.body, "not valid JSON: invalid escape at line 1 column", "but says what and where");
    free(reply.body);

    /* A path that is not UTF-8 (%FF decoded) quoted in the 404. */
    body = call("GET", "x\xff", &st);
    is_int(st, 404, "a path that is not UTF-8: 404");
    is_str(body, "{\"error\":\"no such API path: /api/v1/x\xef\xbf\xbd\"}",
           "the error quotes it with U+FFFD, not null");
    free(body);

    /* utf8_clip: "a" then U+00E9 (2 bytes) then U+20AC (3 bytes). */
    const char *t = "a\xc3\xa9\xe2\x82\xac";
    is_int(utf8_clip(t, 6, 10), 6, "clip: short text kept whole");
    is_int(utf8_clip(t, 6, 6), 6, "clip: text of exactly max kept whole");
    is_int(utf8_clip(t, 6, 2), 1, "clip: not inside a 2-byte character");
    is_int(utf8_clip(t, 6, 3), 3, "clip: after a whole character");
    is_int(utf8_clip(t, 6, 4), 3, "clip: not after the 1st byte of a 3-byte character");
    is_int(utf8_clip(t, 6, 5), 3, "clip: not after the 2nd byte of a 3-byte character");
    is_int(utf8_clip("\x80\x80\x80\x80\x80", 5, 4), 4,
           "clip: a run of continuation bytes is cut at max");

    /* utf8_sanitize: valid text unchanged, each bad byte one U+FFFD. */
    char *c = utf8_sanitize(t, 6);
    is_str(c, t, "sanitize: valid text unchanged");
    free(c);
    c = utf8_sanitize("a\xc3", 2);
    is_str(c, "a\xef\xbf\xbd", "sanitize: a cut character becomes U+FFFD");
    free(c);
    c = utf8_sanitize("\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xf0\x9f\x98\x80", 16);
    is_str(c,
           "\xef\xbf\xbd\xef\xbf\xbd|\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|"
           "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd|\xf0\x9f\x98\x80",
           "sanitize: overlong, surrogate and above U+10FFFF replaced; U+1F600 kept");
    free(c);

    /* The query string: one reader for every route (tls_api.c and
     * api_core.c had copies of their own). */
    char *q = api_query_get("a=1&preset=modern%2Bx&priority=NORMAL:-VERS-ALL+a", "preset");
    is_str(q, "modern+x", "api_query_get: percent-decoded");
    free(q);
    q = api_query_get("preset=x&priority=NORMAL:%2BVERS-TLS1.3+b", "priority");
    is_str(q, "NORMAL:+VERS-TLS1.3 b", "  plus as a space, %%2B as a plus");
    free(q);
    ok(api_query_get("presets=x", "preset") == NULL, "  another key that starts alike: absent");
    long long n = -7;
    struct tlsbox_api_reply r = {0};
    is_int(api_query_int("limit=5000", "limit", 100, 1, 1000, API_QUERY_CLAMP, &n, &r), 0,
           "api_query_int, clamping: 5000 taken");
    is_int(n, 1000, "  as 1000, the top of its range");
    is_int(api_query_int("x=1", "limit", 100, 1, 1000, API_QUERY_CLAMP, &n, &r), 0,
           "  absent: taken");
    is_int(n, 100, "  as the default");
    ok(r.body == NULL, "  no answer written for either");
    is_int(api_query_int("since=1d", "since", 3600, 60, 86400, API_QUERY_CLAMP, &n, &r), -EINVAL,
           "  since=1d refused");
    is_int(r.status, 400, "  with a 400");
    is_str(r.body, "{\"error\":\"since=1d: expected a whole number\"}",
           "  that names the parameter and its value");
    free(r.body);
    r = (struct tlsbox_api_reply){0};
    is_int(api_query_int("limit=0", "limit", 50, 1, 500, API_QUERY_REFUSE, &n, &r), -EINVAL,
           "api_query_int, refusing: limit=0 refused");
    is_str(r.body, "{\"error\":\"limit=0: expected a whole number from 1 to 500\"}",
           "  naming the parameter and the range");
    free(r.body);
    r = (struct tlsbox_api_reply){0};
    is_int(api_query_int("before=x", "before", 0, 0, LLONG_MAX, API_QUERY_REFUSE, &n, &r), -EINVAL,
           "  before=x refused");
    is_str(r.body,
           "{\"error\":\"before=x: expected a whole number from 0 to 9223372036854775807\"}",
           "  likewise");
    free(r.body);
    r = (struct tlsbox_api_reply){0};
    is_int(api_query_int("limit=500", "limit", 50, 1, 500, API_QUERY_REFUSE, &n, &r), 0,
           "  limit=500 taken");
    is_int(n, 500, "  as 500");
    ok(r.body == NULL, "  no answer written");

    api_routes_free();
    return done_testing();
}
