/* libFuzzer target: the site plugin's HTTP/1.1 request parser and the
 * helpers that read its untrusted fields (path, Range, ETag, dates).
 * Invariants, not only "no crash": a parsed request consumed at most the
 * input and its fields lie inside what it consumed; a refused one carries
 * one of the parser's statuses (400, 414, 431; 505 for an HTTP version). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/site/site.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Small limits so the 414/431 paths are reachable with short inputs. */
    static struct site_config cfg = {.max_header_size = 1024, .max_request_line = 256};
    /* An exact-size copy: a read past the end is an ASan error. */
    char *buf = malloc(size ? size : 1);
    if (!buf)
        return 0;
    if (size)
        memcpy(buf, data, size);

    struct site_req rq;
    long r = site_h1_parse(buf, size, &cfg, &rq);
    if (r < 0 && r != -400 && r != -414 && r != -431 && r != -505)
        abort(); /* a refusal without a documented status */
    if (r > 0) {
        const struct site_str *f[] = {&rq.method_s, &rq.target,   &rq.host,     &rq.ims,
                                      &rq.range,    &rq.if_range, &rq.if_match, &rq.ius};
        if ((size_t)r > size || rq.method_s.n == 0 || rq.target.n == 0 || rq.ninm > SITE_INM_LINES)
            abort();
        for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
            if (f[i]->p && (f[i]->p < buf || f[i]->p + f[i]->n > buf + r))
                abort(); /* a field outside the request it came from */
        for (size_t i = 0; i < rq.ninm; i++)
            if (rq.inm[i].p < buf || rq.inm[i].p + rq.inm[i].n > buf + r)
                abort();
    }
    /* The same input told that a first part came before with no answer
     * (as the site does for a head arriving in pieces) must parse alike. */
    for (size_t cut = 1; cut < size && cut <= 64; cut += 7) {
        struct site_req rq2;
        if (site_h1_parse(buf, cut, &cfg, &rq2) == 0 &&
            site_h1_parse_from(buf, size, cut, &cfg, &rq2) != r)
            abort();
    }
    if (r > 0) {
        char path[256];
        uint64_t start, len;
        time_t t;
        (void)site_path_normalize(rq.target.p, rq.target.n, path, sizeof(path));
        if (rq.range.p) {
            (void)site_range_parse(rq.range.p, rq.range.n, 1000, &start, &len);
            (void)site_range_parse(rq.range.p, rq.range.n, 0, &start, &len);
        }
        (void)site_inm_match(&rq, "\"5f-1234abcd\"");
        if (rq.ims.p)
            (void)site_http_date_parse(rq.ims.p, rq.ims.n, &t);
        if (rq.if_range.p)
            (void)site_http_date_parse(rq.if_range.p, rq.if_range.n, &t);
    }
    /* The helpers on the raw input too: each is reachable with any bytes. */
    {
        char path[64];
        uint64_t start, len;
        time_t t;
        (void)site_path_normalize(buf, size, path, sizeof(path));
        (void)site_range_parse(buf, size, 12345, &start, &len);
        (void)site_etag_match(buf, size, "\"abc\"");
        (void)site_etag_match_strong(buf, size, "\"abc\"");
        (void)site_http_date_parse(buf, size, &t);
        uint16_t q[SITE_ENC_N];
        site_accept_encoding(buf, size, q);
        for (int e = 0; e < SITE_ENC_N; e++)
            if (q[e] > 1000)
                abort(); /* a weight is 0-1000 */
    }
    free(buf);
    return 0;
}
