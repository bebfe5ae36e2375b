/* libFuzzer target: a DNS message as the dns-01 client reads it from the
 * network (plugins/acme/acme_dns.c): the structure walk with compression
 * pointers, the TXT check, the CNAME target of a resolver's answer, and an
 * UPDATE answer's checks up to its TSIG.  The DNS server or resolver is a
 * remote peer: untrusted.  The UPDATE check is given the message's own ID,
 * so that inputs get past the ID check to the rest. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Reach the static callbacks and the UPDATE answer check. */
#include "plugins/acme/acme_dns.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* _acme-challenge.example.org, the name every question asks. */
static const unsigned char qname[] = "\x0f_acme-challenge\x07"
                                     "example\x03"
                                     "org";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct dns_answer a;
    char *why = NULL;

    struct txt_match t = {qname, sizeof(qname), "token-value", 11, false};
    (void)acme_dns_answer_walk(&a, data, size, on_txt_rr, &t, &why);
    free(why);
    why = NULL;

    struct cname_find f = {.owner = qname, .owner_len = sizeof(qname)};
    if (acme_dns_answer_walk(&a, data, size, on_cname_rr, &f, &why) == 0 && f.found == 1) {
        char text[DNS_NAME_MAX * 4 + 1];
        (void)acme_dns_name_text(f.target, f.target_len, text, sizeof(text));
        (void)acme_dns_in_zone(text, "example.net");
    }
    free(why);
    why = NULL;

    if (size >= 2) {
        struct acme_dns_conf c = {.key_name = "tlsbox-acme",
                                  .key_alg = "hmac-sha256",
                                  .key_secret = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0IQ=="};
        struct tsig_key k;
        unsigned char req_mac[64] = {0};
        if (acme_dns_tsig_key_load(&c, &k, &why) == 0) {
            free(why);
            why = NULL;
            (void)update_check_answer(&k, req_mac, acme_dns_get_u16(data), data, size, &why);
        }
        acme_dns_tsig_key_wipe(&k);
        free(why);
    }
    return 0;
}
