/* libFuzzer target: tls_cert_check(), behind `tlsboxctl cert import` and the
 * admin API's certificate upload.  The chain and key are a user's upload:
 * untrusted, and a hang there hangs the API thread.
 *
 * Input: a first byte of flags, then DER certificates (leaf first) separated
 * by "CHN!".  To get past the key match, each certificate is re-keyed and
 * re-signed with keys made at start-up (the leaf with the leaf key, signed
 * by the next certificate's key; the others with the CA key), so every field
 * but the key and signature is the fuzzer's: names, validity, extensions.
 * Flag 1: leave them as they are instead.  Flag 2: the input after the flags
 * is text, the chain PEM then a NUL then the key PEM (the PEM readers).
 * Invariants: a refusal says why and never quotes the key; an accepted
 * chain is a web server's (names, times) and its re-export checks again. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "core/store.h"
#include "core/tls_cert.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* tls_cert_store() is linked but never called here: no store. */
int store_begin(sqlite3 *db, char **err)
{
    (void)db, (void)err;
    abort();
}
int store_commit(sqlite3 *db, char **err)
{
    (void)db, (void)err;
    abort();
}
void store_rollback(sqlite3 *db)
{
    (void)db;
    abort();
}
int store_step_row(sqlite3_stmt *st)
{
    (void)st;
    abort();
}
void store_audit(sqlite3 *db, const char *actor, const char *action, const char *target,
                 const char *detail)
{
    (void)db, (void)actor, (void)action, (void)target, (void)detail;
    abort();
}

/* 2027-01-15: the seeds are valid from 2020 to 2040. */
#define NOW ((time_t)1800000000)
#define MAX_PARTS 8

static gnutls_x509_privkey_t leaf_key, ca_key;
static char *leaf_key_pem;

static gnutls_x509_privkey_t new_key(void)
{
    gnutls_x509_privkey_t k;
    if (gnutls_x509_privkey_init(&k) < 0 ||
        gnutls_x509_privkey_generate(k, GNUTLS_PK_ECDSA,
                                     GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1), 0) < 0)
        abort();
    return k;
}

static void setup(void)
{
    leaf_key = new_key();
    ca_key = new_key();
    gnutls_datum_t d;
    if (gnutls_x509_privkey_export2(leaf_key, GNUTLS_X509_FMT_PEM, &d) < 0)
        abort();
    leaf_key_pem = strndup((const char *)d.data, d.size);
    gnutls_free(d.data);
}

/* Append @p der as a PEM block to *pem (realloc'd). */
static void pem_append(char **pem, const gnutls_datum_t *der)
{
    gnutls_datum_t b64;
    if (gnutls_pem_base64_encode2("CERTIFICATE", der, &b64) < 0)
        return;
    size_t have = *pem ? strlen(*pem) : 0;
    char *n = realloc(*pem, have + b64.size + 1);
    if (n) {
        memcpy(n + have, b64.data, b64.size);
        n[have + b64.size] = '\0';
        *pem = n;
    }
    gnutls_free(b64.data);
}

/* The chain as PEM: the certificates of @p parts re-keyed and re-signed (see
 * the top) unless @p as_is;
 * those that do not parse go as they came. */
static char *chain_from_der(const gnutls_datum_t *parts, unsigned n, bool as_is)
{
    gnutls_x509_crt_t crts[MAX_PARTS] = {NULL};
    char *pem = NULL;
    for (unsigned i = 0; i < n; i++)
        if (gnutls_x509_crt_init(&crts[i]) < 0 ||
            gnutls_x509_crt_import(crts[i], &parts[i], GNUTLS_X509_FMT_DER) < 0) {
            gnutls_x509_crt_deinit(crts[i]);
            crts[i] = NULL;
        }
    /* From the last: each certificate's issuer must be final when it signs. */
    for (unsigned i = n; !as_is && i-- > 0;) {
        if (!crts[i])
            continue;
        gnutls_x509_privkey_t key = i == 0 ? leaf_key : ca_key;
        gnutls_x509_crt_t issuer = i + 1 < n && crts[i + 1] ? crts[i + 1] : crts[i];
        gnutls_x509_privkey_t ikey = issuer == crts[i] ? key : ca_key;
        if (gnutls_x509_crt_set_key(crts[i], key) < 0)
            continue;
        (void)gnutls_x509_crt_sign2(crts[i], issuer, ikey, GNUTLS_DIG_SHA256, 0);
    }
    for (unsigned i = 0; i < n; i++) {
        gnutls_datum_t der = parts[i];
        gnutls_datum_t out = {NULL, 0};
        if (crts[i] && gnutls_x509_crt_export2(crts[i], GNUTLS_X509_FMT_DER, &out) >= 0)
            der = out;
        pem_append(&pem, &der);
        gnutls_free(out.data);
        gnutls_x509_crt_deinit(crts[i]);
    }
    return pem;
}

/* No line of the start-up key's base64 in @p s (a fuzzed key's text may
 * well repeat words of the messages). */
static void no_key_in(const char *s, const char *key_pem)
{
    for (const char *l = key_pem; *l;) {
        size_t len = strcspn(l, "\n");
        if (len >= 16 && l[0] != '-') {
            char *line = strndup(l, len);
            if (strstr(s, line))
                abort(); /* key material in a message */
            free(line);
        }
        l += len + (l[len] == '\n');
    }
}

static void check(const char *chain, const char *key)
{
    struct tls_cert_info info;
    char *err = NULL;
    int rc = tls_cert_check(chain, key, NOW, &info, &err);
    if (rc < 0) {
        if (rc != -EINVAL || !err)
            abort(); /* a refusal always says why */
        no_key_in(err, leaf_key_pem);
        free(err);
        return;
    }
    if (err || !info.chain_pem || !info.key_type || !info.family || !info.subject || !info.issuer ||
        !info.serial || info.chain_len < 1 || json_array_size(info.sans) == 0 ||
        info.not_before > NOW || info.not_after < NOW || strstr(info.chain_pem, "PRIVATE"))
        abort();
    /* What is stored is checked again the next start: it must pass. */
    struct tls_cert_info again;
    if (tls_cert_check(info.chain_pem, key, NOW, &again, &err) != 0 ||
        strcmp(again.serial, info.serial) != 0 || strcmp(again.key_type, info.key_type) != 0 ||
        again.chain_len != info.chain_len)
        abort();
    tls_cert_info_clear(&again);
    tls_cert_info_clear(&info);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!leaf_key)
        setup();
    if (size < 1)
        return 0;
    uint8_t flags = data[0];
    data++, size--;

    if (flags & 2) {
        /* Text: chain, NUL, key (the start-up key when there is no NUL). */
        char *s = malloc(size + 1);
        if (!s)
            return 0;
        memcpy(s, data, size);
        s[size] = '\0';
        size_t cl = strlen(s);
        check(s, cl < size ? s + cl + 1 : leaf_key_pem);
        free(s);
        return 0;
    }

    gnutls_datum_t parts[MAX_PARTS];
    unsigned n = 0;
    const uint8_t *p = data, *end = data + size;
    while (n < MAX_PARTS) {
        const uint8_t *sep = memmem(p, (size_t)(end - p), "CHN!", 4);
        parts[n].data = (unsigned char *)p;
        parts[n].size = (unsigned)((sep ? sep : end) - p);
        n++;
        if (!sep)
            break;
        p = sep + 4;
    }
    char *chain = chain_from_der(parts, n, flags & 1);
    if (chain)
        check(chain, leaf_key_pem);
    free(chain);
    return 0;
}
