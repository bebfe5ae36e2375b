/*
 * ACME plugin internals (RFC 8555, RFC 9773 ARI, profiles).
 *
 * The pieces below the plugin glue (acme.c, acme_run.c, acme_api.c) never see
 * the host table: they take plain callbacks, so plugins/acme/tests can drive
 * the whole flow against a real pebble without a daemon.
 */
#ifndef TLSBOX_PLUGINS_ACME_H
#define TLSBOX_PLUGINS_ACME_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <curl/curl.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <jansson.h>
#include <sqlite3.h>

#include <tlsbox/xalloc.h>

/* ---- acme_util.c --------------------------------------------------------- */

/* Checked allocation and wiping frees: the kit's <tlsbox/xalloc.h>. */

/*
 * What went wrong in an ACME attempt: the step ("directory", "account",
 * "order", "authorization", "challenge", "finalize", "download", ...), the
 * RFC 8555 problem type when the CA sent one (or a local "tlsbox:" type), the
 * detail, and the Retry-After the CA asked for (0 = none).
 */
struct acme_err {
    char step[32];
    char *type;
    char *detail;
    long http_status;
    time_t retry_after; /* absolute time, 0 = none */
    char challenge[16]; /* the challenge type that failed ("http-01", ...), or "" */
};

/* Fill @p e anew: http_status, retry_after and challenge are reset too (the
 * step is kept when @p step is NULL). */
void acme_err_set(struct acme_err *e, const char *step, const char *type, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void acme_err_clear(struct acme_err *e);

/*
 * Whether @p s is an IP address (IPv4 dotted quad or IPv6 text), which is
 * ordered as an "ip" identifier (RFC 8738) and made an IP SAN: its bytes in
 * @p bin (*len 4 or 16) and its canonical text (RFC 5952, what the CA and
 * the certificate's SAN list say) in @p canon; any of them may be NULL.
 */
bool acme_ip(const char *s, unsigned char bin[16], size_t *len, char canon[46]);
/* The certificate name for a certificate whose first identifier is @p first:
 * itself, but an IPv6 address with '-' for each ':' (a name has no colon).
 * Caller frees. */
char *acme_cert_name(const char *first);

/* ---- acme_jws.c ---------------------------------------------------------- */

/* base64url without padding (RFC 7515 section 2).  Caller frees. */
char *acme_b64url(const void *data, size_t len);
/* Decode base64url (padding optional).  *out is malloc'd.  -EINVAL on bad input. */
int acme_b64url_decode(const char *s, unsigned char **out, size_t *out_len);
/*
 * Copy a big-endian integer into exactly @p width bytes: strip leading zero
 * bytes, left-pad with zeros.  -ERANGE when it does not fit.
 */
int acme_fixed_width(const unsigned char *in, size_t in_len, unsigned char *out, size_t width);
/* DER ECDSA signature -> JWS r||s, each @p half bytes.  Returns 0 or -errno. */
int acme_ecdsa_der_to_rs(const gnutls_datum_t *der, size_t half, unsigned char *out);

/* Generate a key: "ecdsa-p256", "ecdsa-p384", "rsa-2048", "rsa-3072". */
int acme_key_generate(const char *key_type, gnutls_privkey_t *out);
/* PKCS#8 PEM (unencrypted).  *pem is malloc'd; wipe it with tlsbox_wipe_free_str. */
int acme_key_export_pem(gnutls_privkey_t key, char **pem);
int acme_key_import_pem(const char *pem, gnutls_privkey_t *out);

/* The JWK of a P-256 / P-384 / RSA public key, members in RFC 7638 order. */
json_t *acme_jwk(gnutls_privkey_t key);
/* RFC 7638 thumbprint (SHA-256, base64url) of a JWK.  Caller frees. */
char *acme_jwk_thumbprint(const json_t *jwk);
/*
 * A flattened JWS (RFC 8555 6.2) as JSON text: protected {alg, nonce, url,
 * kid | jwk}, the payload (NULL = POST-as-GET, an empty payload), signature.
 * Caller frees.  NULL on a signing error.
 */
char *acme_jws(gnutls_privkey_t key, const char *kid, const char *nonce, const char *url,
               const char *payload);
/*
 * The externalAccountBinding member (RFC 8555 7.3.4): an HS256 JWS of the
 * account JWK, keyed with the base64url @p hmac_b64.  NULL + *err on bad key.
 */
json_t *acme_eab(const char *kid, const char *hmac_b64, const json_t *jwk, const char *url,
                 char **err);

/* ---- acme_csr.c ---------------------------------------------------------- */

/* A CSR for @p domains (first one also the CN), DER, base64url.  Caller frees. */
int acme_csr_make(gnutls_privkey_t key, const char *const *domains, size_t n, char **csr_b64,
                  char **err);
/*
 * Whether the leaf of @p chain_pem (PEM, leaf first) names exactly @p names
 * (n, IP addresses in inet_ntop's form): every one of them, and no other DNS
 * or IP name; case and order do not matter.  0, or -EINVAL with *why (caller
 * frees) saying what it is for instead; -ENOMEM.  A CA that adds or drops a
 * name would otherwise be installed, and the next check would find the names
 * differ from acme.domains and order again, every check, without backoff.
 */
int acme_cert_names_check(const char *chain_pem, const char *const *names, size_t n, char **why);

/* ---- acme_renew.c: policy, no I/O ------------------------------------------ */

/* Seconds to wait after the @p failures-th consecutive failure (1-based). */
long acme_backoff_delay(unsigned failures);
/* Failures are retried on the schedule for this long, then once a day. */
#define ACME_BACKOFF_SPAN (30L * 86400)
/*
 * RFC 9773 certificate id: base64url(AKI keyIdentifier) "." base64url(DER
 * serial, with its leading zero if any).  Caller frees.
 */
int acme_ari_cert_id(gnutls_x509_crt_t crt, char **id);
int acme_ari_cert_id_pem(const char *chain_pem, char **id);
/*
 * When to renew a certificate valid from @p not_before to @p not_after:
 * with one third of its lifetime left, or, when the CA gave an ARI window
 * (@p ws < @p we) and more than 1/20 of the lifetime is left, at a point in the
 * window chosen from @p seed (stable across checks and restarts, spread
 * across certificates).  A window that already ended means at once.
 */
time_t acme_renew_time(time_t not_before, time_t not_after, time_t ws, time_t we, const char *seed,
                       time_t now);
/*
 * Parse a Retry-After value: delay-seconds or an HTTP-date.  Returns the
 * absolute time, or 0 when missing or unparsable.  Capped at 1 day out.
 */
time_t acme_parse_retry_after(const char *value, time_t now);
/* Parse an RFC 3339 time ("2026-01-02T03:04:05Z", fractions, offsets). 0 = bad. */
time_t acme_parse_rfc3339(const char *s);

/* ---- acme_http.c --------------------------------------------------------- */

struct acme_resp {
    long status;
    char *body;
    size_t len;
    json_t *json; /* parsed body when it was JSON */
    char *location;
    char *nonce;
    char *content_type;
    time_t retry_after;  /* absolute, 0 = none */
    char *alternates[4]; /* Link: rel="alternate" */
    size_t nalternates;
    bool too_large; /* the body went past what is read (then the transfer stopped) */
};
void acme_resp_free(struct acme_resp *r);

struct acme_client {
    CURL *curl;
    char *directory_url;
    char *ca_file;
    json_t *dir;
    char *nonce; /* one spare nonce, from the last response */
    gnutls_privkey_t account_key;
    json_t *jwk;
    char *thumbprint;
    char *kid;
    int64_t account_id; /* acme_accounts row */
    /* Sleep up to ms; true when the work was cancelled (then stop). */
    bool (*sleep)(void *arg, uint64_t ms);
    void *sleep_arg;
    unsigned max_bad_nonce;     /* retries per request */
    unsigned bad_nonce_retries; /* total, for metrics and tests */
    unsigned requests;
};

int acme_client_init(struct acme_client *c, const char *directory_url, const char *ca_file);
void acme_client_free(struct acme_client *c);
/* Fetch the directory (once per client). */
int acme_client_directory(struct acme_client *c, struct acme_err *e);
/* A URL from the directory ("newOrder"), or NULL. */
const char *acme_client_dir_url(struct acme_client *c, const char *name);
/* Plain GET (directory, ARI). */
int acme_get(struct acme_client *c, const char *url, struct acme_resp *r, struct acme_err *e);
/*
 * Signed POST (kid when c->kid, else jwk).  @p payload NULL = POST-as-GET.
 * badNonce is retried with the fresh nonce up to c->max_bad_nonce times.
 * Returns 0 on 2xx; otherwise -EPROTO with @p e filled from the problem
 * document (step given by the caller), or another -errno for transport errors.
 */
int acme_post(struct acme_client *c, const char *step, const char *url, const char *payload,
              const char *accept, struct acme_resp *r, struct acme_err *e);
/* Sleep through the client's hook; true when cancelled. */
bool acme_client_sleep(struct acme_client *c, uint64_t ms);

/* ---- acme_store.c ---------------------------------------------------------- */

struct acme_order_row {
    int64_t id;
    int64_t account_id;
    char *cert_name;
    char *domains; /* JSON array text */
    char *key_type;
    char *order_url;
    char *status;
    char *finalize_url;
    char *cert_url;
    char *key_pem; /* wiped on free */
    char *replaces;
};
void acme_order_row_free(struct acme_order_row *o);

/* Account for @p directory: *id, *key_pem (wipe), *url (may be NULL). -ENOENT when none. */
int acme_store_account_get(sqlite3 *db, const char *directory, int64_t *id, char **key_pem,
                           char **url);
int acme_store_account_put(sqlite3 *db, const char *directory, const char *email,
                           const char *key_pem, int64_t *id);
int acme_store_account_set_url(sqlite3 *db, int64_t id, const char *url);
/* The newest unfinished order for @p cert_name, or -ENOENT. */
int acme_store_order_open(sqlite3 *db, const char *cert_name, struct acme_order_row *o);
int acme_store_order_insert(sqlite3 *db, struct acme_order_row *o);
int acme_store_order_update(sqlite3 *db, const struct acme_order_row *o);
int acme_store_order_set_status(sqlite3 *db, int64_t id, const char *status);
int acme_store_event(sqlite3 *db, const char *cert_name, const char *step, bool ok,
                     const char *problem_type, const char *detail, time_t next_attempt);
/*
 * Consecutive failures for @p cert_name since its last success, the time of
 * the first of them, and the next attempt recorded with the last one.
 */
int acme_store_failures(sqlite3 *db, const char *cert_name, unsigned *n, time_t *first,
                        time_t *next);
struct acme_cert_row {
    char *chain_pem;
    char *sans;   /* JSON array text */
    char *status; /* active, disabled, revoked */
    char *serial;
    char *ari_id;
    time_t not_before, not_after;
};
void acme_cert_row_free(struct acme_cert_row *c);
/* acme_kv: small values (cached ARI windows, revoked serials). */
int acme_store_kv_get(sqlite3 *db, const char *key, char **value);
int acme_store_kv_put(sqlite3 *db, const char *key, const char *value);
/*
 * acme_dns_records: each dns-01 TXT record put (or maybe put: its answer
 * lost) and not withdrawn yet, where it went.  Kept in the store, not only
 * in memory, so that a record a killed tlsboxd left in the DNS zone is
 * withdrawn by the next start.
 */
struct acme_dns_record {
    int64_t id;
    char *server, *zone, *fqdn, *value;
};
/* Add a row before the record is put: *id for acme_store_dns_record_del. */
int acme_store_dns_record_add(sqlite3 *db, const char *server, const char *zone, const char *fqdn,
                              const char *value, int64_t *id);
int acme_store_dns_record_del(sqlite3 *db, int64_t id);
/* At most @p max rows, oldest first, into *rows (free with acme_dns_records_free). */
int acme_store_dns_records(sqlite3 *db, size_t max, struct acme_dns_record **rows, size_t *n);
void acme_dns_records_free(struct acme_dns_record *rows, size_t n);

/* ---- acme_flow.c ----------------------------------------------------------- */

struct acme_account_req {
    const char *email;
    bool agree_tos;
    const char *eab_kid;
    const char *eab_hmac;
};

/* Challenge types, for acme_order_req.answer_types. */
#define ACME_CH_HTTP 1u
#define ACME_CH_ALPN 2u
#define ACME_CH_DNS 4u

struct acme_order_req {
    const char *cert_name;
    const char *const *domains;
    size_t ndomains;
    const char *key_type;        /* of the certificate */
    const char *replaces;        /* ARI id of the certificate it replaces, or NULL */
    const char *profile;         /* or NULL */
    const char *preferred_chain; /* issuer CN of the chain's top, or NULL */
    /* Publish / withdraw a http-01 key authorization (site worker answers it). */
    void (*challenge_put)(void *arg, const char *token, const char *key_auth);
    void (*challenge_del)(void *arg, const char *token);
    void *challenge_arg;
    /*
     * The challenge to answer: "http-01" (NULL too), "tls-alpn-01" or
     * "dns-01", and whether another may be answered when the CA does not
     * offer that one (in the order http-01, tls-alpn-01, dns-01).  The two
     * others go through answer_put / answer_del (same arg), which can answer
     * the types in answer_types (ACME_CH_*): put returns 0 or a negative
     * errno with *why (caller frees); it returns once the CA may look.
     */
    const char *challenge;
    bool challenge_fallback;
    unsigned answer_types;
    int (*answer_put)(void *arg, const char *type, const char *identifier, const char *key_auth,
                      char **why);
    void (*answer_del)(void *arg, const char *type, const char *identifier, const char *key_auth);
    /* Optional: called after each persisted step (tests kill here). */
    void (*on_step)(void *arg, const char *step);
    void *step_arg;
    /* Optional: told what the flow did about a CA's refusal that it got past
     * (for the log: the attempt itself goes on and may succeed). */
    void (*note)(void *arg, const char *msg);
    void *note_arg;
};

struct acme_issued {
    char *chain_pem;
    char *key_pem; /* wipe */
    int64_t order_id;
    char *order_url; /* for errors about the certificate */
};
void acme_issued_free(struct acme_issued *is);

/*
 * Load or create the account key for the client's directory and register it
 * (newAccount; an existing key finds its account again).  Sets c->kid.
 */
int acme_flow_account(struct acme_client *c, sqlite3 *db, const struct acme_account_req *a,
                      struct acme_err *e);
/*
 * Get a certificate: resume the open order for req->cert_name when it is for
 * the same names and key type, else place a new one; answer http-01, finalize
 * with a fresh key, download (preferred chain).  The order row is kept up to
 * date at every step, so a crash anywhere resumes or restarts cleanly.
 * On success the order row is left "valid": the caller marks it "done" after
 * installing the certificate, or "abandoned" when the install refuses it (a
 * "valid" order is resumed, and would hand out the same certificate again).
 */
int acme_flow_issue(struct acme_client *c, sqlite3 *db, const struct acme_order_req *req,
                    struct acme_issued *out, struct acme_err *e);
/*
 * Revoke the leaf of @p chain_pem (reason: RFC 5280 code, 0 unspecified).
 * Returns 0 when revoked now, 1 when the CA says it was revoked already
 * (alreadyRevoked: an earlier revoke whose answer was lost), or -errno.
 */
int acme_flow_revoke(struct acme_client *c, const char *chain_pem, int reason, struct acme_err *e);
/*
 * RFC 9773: fetch the suggested window for @p ari_id.  -ENOTSUP when the CA
 * has no renewalInfo.  *retry_after: when to ask again (absolute).
 */
int acme_flow_renewal_info(struct acme_client *c, const char *ari_id, time_t *ws, time_t *we,
                           time_t *retry_after, struct acme_err *e);

#endif
