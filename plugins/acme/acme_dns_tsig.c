/*
 * TSIG (RFC 8945) for the dns-01 client (acme_dns.h): the key from the
 * configuration, signing a request, verifying an answer, naming a TSIG error.
 *
 * The decoded secret lives only in struct tsig_key, which its owner wipes
 * (acme_dns_tsig_key_wipe); no error message quotes the secret.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include <tlsbox/xalloc.h>

#include "plugins/acme/acme_dns.h"
#include "plugins/acme/acme_dns_int.h"

#define DNS_CLASS_ANY 255
#define TSIG_ERROR_BADTIME 18
/* RFC 8945 section 10 recommends 300 s, and bind uses it. */
#define TSIG_FUDGE 300

struct tsig_alg {
    const char *name;
    gnutls_mac_algorithm_t mac;
    size_t mac_len;
};

static const struct tsig_alg tsig_algs[] = {
    {"hmac-sha256", GNUTLS_MAC_SHA256, 32},
    {"hmac-sha512", GNUTLS_MAC_SHA512, 64},
};

static int b64_value(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    return ch == '+' ? 62 : ch == '/' ? 63 : -1;
}

/* Standard base64 (RFC 4648 section 4), padding optional.  Length or -EINVAL. */
static int b64_decode(const char *s, unsigned char *out, size_t cap)
{
    size_t total = strlen(s), n = total;
    while (n > 0 && s[n - 1] == '=')
        n--;
    if (n == 0 || n % 4 == 1 || total - n > 2 || (total != n && total % 4 != 0))
        return -EINVAL;
    uint32_t acc = 0;
    unsigned bits = 0;
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_value((unsigned char)s[i]);
        if (v < 0)
            return -EINVAL;
        acc = (acc << 6 | (uint32_t)v) & 0xffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (len == cap)
                return -EINVAL;
            out[len++] = (unsigned char)(acc >> bits);
        }
    }
    return (int)len;
}

static const struct tsig_alg *tsig_alg_find(const char *name)
{
    if (!name || !*name)
        return &tsig_algs[0];
    size_t n = strlen(name);
    if (name[n - 1] == '.')
        n--;
    for (size_t i = 0; i < sizeof(tsig_algs) / sizeof(tsig_algs[0]); i++)
        if (strlen(tsig_algs[i].name) == n && strncasecmp(tsig_algs[i].name, name, n) == 0)
            return &tsig_algs[i];
    return NULL;
}

/* Decode the key of @p c into @p k; the caller wipes it (acme_dns_tsig_key_wipe). */
int acme_dns_tsig_key_load(const struct acme_dns_conf *c, struct tsig_key *k, char **why)
{
    k->alg = tsig_alg_find(c->key_alg);
    if (!k->alg) {
        *why = tlsbox_xasprintf("unknown TSIG algorithm \"%s\" (hmac-sha256 or hmac-sha512)",
                                c->key_alg);
        return -EINVAL;
    }
    int n = acme_dns_name_wire(k->alg->name, k->alg_name, sizeof(k->alg_name));
    k->alg_name_len = (size_t)n;
    n = c->key_name ? acme_dns_name_wire(c->key_name, k->name, sizeof(k->name)) : -EINVAL;
    if (n < 0) {
        *why = tlsbox_xasprintf("the TSIG key name \"%s\" is not a domain name",
                                c->key_name ? c->key_name : "");
        return -EINVAL;
    }
    k->name_len = (size_t)n;
    acme_dns_name_lower(k->name, k->name_len);
    n = c->key_secret ? b64_decode(c->key_secret, k->secret, sizeof(k->secret)) : -EINVAL;
    if (n < 0) {
        /* Say nothing about the secret's text: it may be a near miss of the real one. */
        *why = tlsbox_xasprintf("the secret of TSIG key %s is not base64 (of at most %d bytes)",
                                c->key_name, TSIG_SECRET_MAX);
        return -EINVAL;
    }
    k->secret_len = (size_t)n;
    return 0;
}

void acme_dns_tsig_key_wipe(struct tsig_key *k)
{
    tlsbox_wipe(k->secret, sizeof(k->secret));
    k->secret_len = 0;
}

/* The TSIG variables (RFC 8945 4.3.3) that follow the message in the MAC input. */
static void tsig_put_vars(struct dns_w *w, const struct tsig_rr *t)
{
    acme_dns_w_name_lower(w, t->name, t->name_len);
    acme_dns_w_u16(w, DNS_CLASS_ANY);
    acme_dns_w_u32(w, 0);
    acme_dns_w_name_lower(w, t->alg, t->alg_len);
    acme_dns_w_u48(w, t->time_signed);
    acme_dns_w_u16(w, t->fudge);
    acme_dns_w_u16(w, t->error);
    acme_dns_w_u16(w, t->other_len);
    acme_dns_w_put(w, t->other, t->other_len);
}

static int tsig_hmac(const struct tsig_key *k, const struct dns_w *in, unsigned char *mac,
                     char **why)
{
    int rc = gnutls_hmac_fast(k->alg->mac, k->secret, k->secret_len, in->p, in->len, mac);
    if (rc < 0) {
        *why = tlsbox_xasprintf("cannot compute the TSIG MAC: %s", gnutls_strerror(rc));
        return -EIO;
    }
    return 0;
}

/*
 * Sign the message in @p msg (RFC 8945 4.3.3): MAC the message as it stands
 * and the TSIG variables, then append the TSIG RR and count it in ARCOUNT.
 * The MAC goes to @p mac (k->alg->mac_len bytes), for checking the answer.
 */
int acme_dns_tsig_sign(const struct tsig_key *k, struct dns_w *msg, unsigned char *mac, char **why)
{
    struct tsig_rr t = {.time_signed = (uint64_t)time(NULL), .fudge = TSIG_FUDGE};
    memcpy(t.name, k->name, k->name_len);
    t.name_len = k->name_len;
    memcpy(t.alg, k->alg_name, k->alg_name_len);
    t.alg_len = k->alg_name_len;
    struct dns_w in = {0};
    acme_dns_w_put(&in, msg->p, msg->len);
    tsig_put_vars(&in, &t);
    int rc = tsig_hmac(k, &in, mac, why);
    free(in.p);
    if (rc < 0)
        return rc;

    size_t mac_len = k->alg->mac_len;
    acme_dns_w_put(msg, k->name, k->name_len);
    acme_dns_w_u16(msg, DNS_TYPE_TSIG);
    acme_dns_w_u16(msg, DNS_CLASS_ANY);
    acme_dns_w_u32(msg, 0);
    acme_dns_w_u16(msg, (unsigned)(k->alg_name_len + 6 + 2 + 2 + mac_len + 2 + 2 + 2));
    acme_dns_w_put(msg, k->alg_name, k->alg_name_len);
    acme_dns_w_u48(msg, t.time_signed);
    acme_dns_w_u16(msg, t.fudge);
    acme_dns_w_u16(msg, (unsigned)mac_len);
    acme_dns_w_put(msg, mac, mac_len);
    acme_dns_w_u16(msg, acme_dns_get_u16(msg->p)); /* original ID */
    acme_dns_w_u16(msg, 0);                        /* error */
    acme_dns_w_u16(msg, 0);                        /* other len */
    acme_dns_set_u16(msg->p + 10, acme_dns_get_u16(msg->p + 10) + 1u);
    return 0;
}

static bool mac_equal(const unsigned char *a, const unsigned char *b, size_t n)
{
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++)
        d |= a[i] ^ b[i];
    return d == 0;
}

/* A TSIG error in the answer: the server did not accept our signature. */
int acme_dns_tsig_error(const struct dns_answer *a, char **why)
{
    const struct tsig_rr *t = &a->tsig;
    char *rcode = acme_dns_rcode_text(acme_dns_answer_rcode(a)),
         *error = acme_dns_rcode_text(t->error);
    char detail[64] = "";
    if (t->error == TSIG_ERROR_BADTIME && t->other_len == 6) {
        struct dns_r r = {t->other, 6, 0};
        uint64_t server_time = 0;
        acme_dns_r_u48(&r, &server_time);
        snprintf(detail, sizeof(detail), "; the server's clock is %+lld s from ours",
                 (long long)server_time - (long long)time(NULL));
    }
    *why = tlsbox_xasprintf("%s (TSIG error %s%s)", rcode, error, detail);
    free(rcode);
    free(error);
    return -EACCES;
}

/*
 * Verify the TSIG of an answer (RFC 8945 5.3.1 from the client's side): the
 * MAC covers the request's MAC, the answer up to its TSIG RR with the
 * original ID and ARCOUNT not counting the TSIG, and the TSIG variables.
 */
int acme_dns_tsig_verify(const struct tsig_key *k, const unsigned char *req_mac,
                         const struct dns_answer *a, char **why)
{
    const struct tsig_rr *t = &a->tsig;
    if (!acme_dns_name_eq(t->name, t->name_len, k->name, k->name_len) ||
        !acme_dns_name_eq(t->alg, t->alg_len, k->alg_name, k->alg_name_len) ||
        t->rclass != DNS_CLASS_ANY) {
        *why = tlsbox_xstrdup("the answer is signed with another key or algorithm");
        return -EPROTO;
    }
    size_t mac_len = k->alg->mac_len;
    if (t->mac_len != mac_len) {
        *why = tlsbox_xasprintf("the answer's TSIG MAC has %u bytes, not %zu", t->mac_len, mac_len);
        return -EPROTO;
    }
    struct dns_w in = {0};
    acme_dns_w_u16(&in, (unsigned)mac_len);
    acme_dns_w_put(&in, req_mac, mac_len);
    size_t msg_at = in.len;
    acme_dns_w_put(&in, a->m, a->tsig_at);
    acme_dns_set_u16(in.p + msg_at, t->orig_id);
    acme_dns_set_u16(in.p + msg_at + 10, a->counts[3] - 1u);
    tsig_put_vars(&in, t);
    unsigned char mac[TSIG_MAC_MAX];
    int rc = tsig_hmac(k, &in, mac, why);
    free(in.p);
    if (rc < 0)
        return rc;
    if (!mac_equal(mac, t->mac, mac_len)) {
        *why = tlsbox_xstrdup("the answer's TSIG MAC does not verify");
        return -EPROTO;
    }
    long long skew = (long long)t->time_signed - (long long)time(NULL);
    if (skew > t->fudge || -skew > t->fudge) {
        *why = tlsbox_xasprintf("the answer was signed %+lld s from this host's clock", skew);
        return -EPROTO;
    }
    return 0;
}
