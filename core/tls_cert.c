/* Certificates: validating a chain and its key, and the certificates table. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "core/store.h"
#include "core/tls_cert.h"
#include "core/xalloc.h"

void tls_cert_info_clear(struct tls_cert_info *info)
{
    free(info->chain_pem);
    free(info->key_type);
    free(info->family);
    json_decref(info->sans);
    free(info->subject);
    free(info->issuer);
    free(info->serial);
    free(info->first_name);
    memset(info, 0, sizeof(*info));
}

bool tls_cert_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 128 || name[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_' || c == '*'))
            return false;
    }
    return true;
}

static char *crt_dn(gnutls_x509_crt_t crt, bool issuer)
{
    gnutls_datum_t d = {NULL, 0};
    int r =
        issuer ? gnutls_x509_crt_get_issuer_dn3(crt, &d, 0) : gnutls_x509_crt_get_dn3(crt, &d, 0);
    if (r < 0)
        return xstrdup("(unreadable name)");
    char *s = xstrndup((const char *)d.data, d.size);
    gnutls_free(d.data);
    return s;
}

static char *fmt_time(time_t t)
{
    struct tm tm;
    char buf[64];
    gmtime_r(&t, &tm);
    strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
    return xstrdup(buf);
}

/* Read SANs (DNS and IP) into a JSON array; first DNS name into *first. */
static json_t *crt_sans(gnutls_x509_crt_t crt, char **first)
{
    json_t *a = json_array();
    for (unsigned seq = 0;; seq++) {
        unsigned char buf[512];
        size_t size = sizeof(buf) - 1;
        unsigned type;
        int r = gnutls_x509_crt_get_subject_alt_name2(crt, seq, buf, &size, &type, NULL);
        if (r == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            break;
        if (r < 0)
            continue;
        if (type == GNUTLS_SAN_DNSNAME) {
            buf[size] = 0;
            json_array_append_new(a, json_string((char *)buf));
            if (first && !*first)
                *first = xstrdup((char *)buf);
        } else if (type == GNUTLS_SAN_IPADDRESS && (size == 4 || size == 16)) {
            char ip[INET6_ADDRSTRLEN];
            if (inet_ntop(size == 4 ? AF_INET : AF_INET6, buf, ip, sizeof(ip)))
                json_array_append_new(a, json_string(ip));
        }
    }
    return a;
}

static char *crt_serial(gnutls_x509_crt_t crt)
{
    unsigned char buf[64];
    size_t size = sizeof(buf);
    if (gnutls_x509_crt_get_serial(crt, buf, &size) < 0)
        return xstrdup("");
    char *hex = xmalloc(size * 2 + 1);
    for (size_t i = 0; i < size; i++)
        sprintf(hex + 2 * i, "%02x", buf[i]);
    hex[size * 2] = 0;
    return hex;
}

/* Key type of the leaf; -EINVAL with *err for unsupported keys. */
static int crt_key_type(gnutls_x509_crt_t crt, struct tls_cert_info *info, char **err)
{
    unsigned bits = 0;
    int pk = gnutls_x509_crt_get_pk_algorithm(crt, &bits);
    switch (pk) {
    case GNUTLS_PK_ECDSA: {
        gnutls_ecc_curve_t curve;
        gnutls_datum_t x = {NULL, 0}, y = {NULL, 0};
        if (gnutls_x509_crt_get_pk_ecc_raw(crt, &curve, &x, &y) < 0) {
            *err = xstrdup("certificate: unreadable ECDSA public key");
            return -EINVAL;
        }
        gnutls_free(x.data);
        gnutls_free(y.data);
        if (curve == GNUTLS_ECC_CURVE_SECP256R1)
            info->key_type = xstrdup("ecdsa-p256");
        else if (curve == GNUTLS_ECC_CURVE_SECP384R1)
            info->key_type = xstrdup("ecdsa-p384");
        else {
            const char *cn = gnutls_ecc_curve_get_name(curve);
            *err = xasprintf("certificate: ECDSA curve %s is not supported (P-256 and P-384 are)",
                             cn ? cn : "unknown");
            return -EINVAL;
        }
        info->family = xstrdup("ecdsa");
        return 0;
    }
    case GNUTLS_PK_RSA:
        if (bits < 2048) {
            *err = xasprintf("certificate: RSA key of %u bits is too short (2048 at least)", bits);
            return -EINVAL;
        }
        if (bits > 8192) {
            *err = xasprintf("certificate: RSA key of %u bits is too long (8192 at most)", bits);
            return -EINVAL;
        }
        info->key_type = xasprintf("rsa-%u", bits);
        info->family = xstrdup("rsa");
        return 0;
    case GNUTLS_PK_EDDSA_ED25519:
        info->key_type = xstrdup("ed25519");
        info->family = xstrdup("ed25519");
        return 0;
    default: {
        const char *name = pk >= 0 ? gnutls_pk_get_name(pk) : NULL;
        *err = xasprintf("certificate: key type %s is not supported (ECDSA P-256/P-384, RSA of "
                         "2048 bits or more, Ed25519 are)",
                         name ? name : "unknown");
        return -EINVAL;
    }
    }
}

static bool same_der(gnutls_x509_crt_t a, gnutls_x509_crt_t b)
{
    return gnutls_x509_crt_equals(a, b) != 0;
}

/* Import the private key; never echoes any of its bytes. */
static int import_key(const char *key_pem, gnutls_x509_privkey_t *key, char **err)
{
    *key = NULL;
    if (!key_pem || !strstr(key_pem, "-----BEGIN")) {
        *err = xstrdup("private key: no PEM block found (expected -----BEGIN PRIVATE KEY----- "
                       "or a traditional EC/RSA key)");
        return -EINVAL;
    }
    if (strstr(key_pem, "ENCRYPTED") || strstr(key_pem, "Proc-Type: 4,ENCRYPTED")) {
        *err = xstrdup("private key: the key is encrypted; decrypt it first (it stays in the "
                       "0600 store)");
        return -EINVAL;
    }
    if (!strstr(key_pem, "PRIVATE KEY-----")) {
        *err = xstrdup("private key: the PEM block is not a private key");
        return -EINVAL;
    }
    gnutls_datum_t d = {(unsigned char *)key_pem, (unsigned)strlen(key_pem)};
    gnutls_x509_privkey_init(key);
    int r = gnutls_x509_privkey_import2(*key, &d, GNUTLS_X509_FMT_PEM, NULL, 0);
    if (r < 0) {
        *err = xasprintf("private key: unreadable PEM (%s)", gnutls_strerror(r));
        gnutls_x509_privkey_deinit(*key);
        *key = NULL;
        return -EINVAL;
    }
    return 0;
}

/* "certificate 1 (CN=...)" or "chain certificate 2 (CN=...)": which one, for messages. */
static char *crt_label(gnutls_x509_crt_t crt, unsigned i)
{
    char *dn = crt_dn(crt, false);
    char *s = xasprintf("%s %u (%s)", i == 0 ? "certificate" : "chain certificate", i + 1, dn);
    free(dn);
    return s;
}

/* *err = the label of certificate @p i, then the formatted fault; -EINVAL. */
static int crt_refuse(char **err, gnutls_x509_crt_t crt, unsigned i, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int crt_refuse(char **err, gnutls_x509_crt_t crt, unsigned i, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *fault = xvasprintf(fmt, ap);
    va_end(ap);
    char *label = crt_label(crt, i);
    *err = xasprintf("%s%s", label, fault);
    free(label);
    free(fault);
    return -EINVAL;
}

static bool self_signed(gnutls_x509_crt_t crt)
{
    return gnutls_x509_crt_check_issuer(crt, crt) != 0;
}

/* A short name for the key purposes a wrong leaf tends to carry. */
static const char *kp_name(const char *oid)
{
    static const struct {
        const char *oid, *name;
    } names[] = {
        {GNUTLS_KP_TLS_WWW_SERVER, "serverAuth"},  {GNUTLS_KP_TLS_WWW_CLIENT, "clientAuth"},
        {GNUTLS_KP_CODE_SIGNING, "codeSigning"},   {GNUTLS_KP_EMAIL_PROTECTION, "emailProtection"},
        {GNUTLS_KP_TIME_STAMPING, "timeStamping"}, {GNUTLS_KP_OCSP_SIGNING, "OCSPSigning"},
        {GNUTLS_KP_ANY, "anyExtendedKeyUsage"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(oid, names[i].oid) == 0)
            return names[i].name;
    return oid;
}

/*
 * Extended key usage: absent means any use (RFC 5280 4.2.1.12); present, it
 * must name serverAuth, as browsers require (Firefox does not take
 * anyExtendedKeyUsage for it, so neither do we).
 */
static int leaf_eku_ok(gnutls_x509_crt_t crt, char **err)
{
    char *have = NULL;
    bool server = false;
    unsigned seq;
    for (seq = 0;; seq++) {
        char oid[128];
        size_t size = sizeof(oid);
        int r = gnutls_x509_crt_get_key_purpose_oid(crt, seq, oid, &size, NULL);
        if (r == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            break;
        if (r == GNUTLS_E_SHORT_MEMORY_BUFFER)
            continue; /* an OID too long to be one we know */
        if (r < 0) {
            /* A malformed extension fails at every seq: this loop would never end. */
            free(have);
            return crt_refuse(err, crt, 0, ": its extended key usage is unreadable (%s)",
                              gnutls_strerror(r));
        }
        server = server || strcmp(oid, GNUTLS_KP_TLS_WWW_SERVER) == 0;
        char *h = xasprintf("%s%s%s", have ? have : "", have ? ", " : "", kp_name(oid));
        free(have);
        have = h;
    }
    int rc = 0;
    if (seq > 0 && !server)
        rc = crt_refuse(err, crt, 0,
                        " is not for TLS servers: its extended key usage is %s, without "
                        "serverAuth; browsers refuse it for a web server",
                        have ? have : "unreadable");
    free(have);
    return rc;
}

/* basicConstraints CA:TRUE on a leaf: browsers refuse a CA certificate as a
 * server's.  A lone self-signed certificate is its own trust anchor (what
 * `openssl req -x509` makes), trusted by hand; that one may be a CA. */
static int leaf_not_ca(gnutls_x509_crt_t crt, unsigned n, char **err)
{
    if (gnutls_x509_crt_get_ca_status(crt, NULL) <= 0 || (n == 1 && self_signed(crt)))
        return 0;
    return crt_refuse(err, crt, 0,
                      " is a CA certificate (basicConstraints CA:TRUE); browsers refuse a CA "
                      "certificate as a web server's: reissue it with CA:FALSE");
}

/* keyUsage, when present, must allow signing the handshake: TLS 1.3 and every
 * ECDHE key exchange sign with the key, whatever its type. */
static int leaf_key_usage_ok(gnutls_x509_crt_t crt, const char *family, char **err)
{
    unsigned usage = 0;
    if (gnutls_x509_crt_get_key_usage(crt, &usage, NULL) < 0 ||
        (usage & GNUTLS_KEY_DIGITAL_SIGNATURE))
        return 0;
    bool rsa = strcmp(family, "rsa") == 0;
    if (rsa && (usage & GNUTLS_KEY_KEY_ENCIPHERMENT))
        return crt_refuse(err, crt, 0,
                          ": its key usage has keyEncipherment but not digitalSignature; TLS 1.3 "
                          "and every ECDHE key exchange need digitalSignature, so browsers "
                          "refuse it");
    return crt_refuse(err, crt, 0,
                      ": its key usage lacks digitalSignature%s, which %s key needs to sign the "
                      "TLS handshake; browsers refuse it",
                      rsa ? " and keyEncipherment" : "",
                      rsa                            ? "an RSA"
                      : strcmp(family, "ecdsa") == 0 ? "an ECDSA"
                                                     : "an Ed25519");
}

/* Browsers match the host name against the subjectAltName only, never the CN. */
static int leaf_has_names(gnutls_x509_crt_t crt, json_t *sans, char **err)
{
    if (json_array_size(sans) > 0)
        return 0;
    return crt_refuse(err, crt, 0,
                      " has no subjectAltName with a DNS name or IP address; browsers ignore the "
                      "subject's CN: reissue it with the names in subjectAltName");
}

/*
 * Each certificate a browser checks, the leaf and the intermediates: signed
 * with neither SHA-1 nor MD5, and an intermediate's RSA key not under 2048
 * bits (the leaf's is checked by crt_key_type).  A self-signed root at the end
 * is a trust anchor: its own signature is never checked.
 */
static int chain_crypto_ok(gnutls_x509_crt_t *crts, unsigned n, char **err)
{
    for (unsigned i = 0; i < n; i++) {
        if (i > 0 && self_signed(crts[i]))
            continue;
        int sign = gnutls_x509_crt_get_signature_algorithm(crts[i]);
        gnutls_digest_algorithm_t dig =
            sign > 0 ? gnutls_sign_get_hash_algorithm((gnutls_sign_algorithm_t)sign)
                     : GNUTLS_DIG_UNKNOWN;
        if (dig == GNUTLS_DIG_SHA1 || dig == GNUTLS_DIG_MD5 || dig == GNUTLS_DIG_MD2)
            return crt_refuse(err, crts[i], i,
                              " is signed with %s (%s); browsers refuse SHA-1 and MD5 "
                              "signatures: get it reissued with SHA-256 or better",
                              gnutls_digest_get_name(dig),
                              gnutls_sign_get_name((gnutls_sign_algorithm_t)sign));
        unsigned bits = 0;
        if (i > 0 && gnutls_x509_crt_get_pk_algorithm(crts[i], &bits) == GNUTLS_PK_RSA &&
            bits < 2048)
            return crt_refuse(err, crts[i], i,
                              " has an RSA key of %u bits; browsers refuse RSA keys under 2048 "
                              "bits",
                              bits);
    }
    return 0;
}

/* What browsers require of a web server's leaf beyond its validity. */
static int leaf_fit_for_web(gnutls_x509_crt_t *crts, unsigned n, const struct tls_cert_info *info,
                            char **err)
{
    if (leaf_eku_ok(crts[0], err) < 0 || leaf_not_ca(crts[0], n, err) < 0 ||
        leaf_key_usage_ok(crts[0], info->family, err) < 0 ||
        leaf_has_names(crts[0], info->sans, err) < 0)
        return -EINVAL;
    return 0;
}

int tls_cert_check(const char *chain_pem, const char *key_pem, time_t now,
                   struct tls_cert_info *info, char **err)
{
    gnutls_x509_crt_t *crts = NULL;
    unsigned n = 0, m = 0;
    gnutls_x509_privkey_t key = NULL;
    int rc = -EINVAL;
    char *a = NULL, *b = NULL;

    memset(info, 0, sizeof(*info));
    *err = NULL;
    if (!chain_pem || !strstr(chain_pem, "-----BEGIN CERTIFICATE-----")) {
        *err = xstrdup("certificate: no PEM certificate found (expected -----BEGIN "
                       "CERTIFICATE-----)");
        goto out;
    }
    if (strstr(chain_pem, "PRIVATE KEY-----")) {
        /* Refuse rather than store a key in a column that the API serves. */
        *err = xstrdup("certificate: the certificate file contains a private key; give the key "
                       "separately");
        goto out;
    }
    gnutls_datum_t d = {(unsigned char *)chain_pem, (unsigned)strlen(chain_pem)};
    int r = gnutls_x509_crt_list_import2(&crts, &n, &d, GNUTLS_X509_FMT_PEM, 0);
    if (r < 0 || n == 0) {
        *err = xasprintf("certificate: unreadable PEM (%s)", r < 0 ? gnutls_strerror(r) : "empty");
        goto out;
    }
    if (n > TLS_CERT_MAX_CHAIN) {
        /* Before the repeats are dropped: that compares each certificate with
         * every other, and gnutls_x509_crt_equals decodes both subjects each
         * time: the 2,400 distinct ones a 1 MiB upload holds kept the API
         * thread busy for 20 s of CPU. */
        *err = xasprintf("certificate: %u certificates given; a chain has at most %d (the leaf, "
                         "then its intermediates)",
                         n, TLS_CERT_MAX_CHAIN);
        goto out;
    }
    /* fullchain.pem plus chain.pem repeats the intermediates: drop repeats. */
    for (unsigned i = 0; i < n; i++) {
        bool dup = false;
        for (unsigned j = 0; j < m; j++)
            if (same_der(crts[i], crts[j]))
                dup = true;
        if (dup)
            gnutls_x509_crt_deinit(crts[i]);
        else
            crts[m++] = crts[i];
    }
    n = m;
    info->chain_len = (int)n;

    if (import_key(key_pem, &key, err) < 0)
        goto out;
    /* Which certificate is the key's?  The first, or the chain is misordered. */
    int owner = -1;
    unsigned char kid[64];
    size_t ks = sizeof(kid);
    if (gnutls_x509_privkey_get_key_id(key, GNUTLS_KEYID_USE_SHA256, kid, &ks) < 0) {
        *err = xstrdup("private key: cannot compute its public key id");
        goto out;
    }
    for (unsigned i = 0; i < n && owner < 0; i++) {
        unsigned char cid[64];
        size_t cs = sizeof(cid);
        if (gnutls_x509_crt_get_key_id(crts[i], GNUTLS_KEYID_USE_SHA256, cid, &cs) >= 0 &&
            cs == ks && memcmp(cid, kid, cs) == 0)
            owner = (int)i;
    }
    if (owner < 0) {
        *err = xstrdup("private key does not match the certificate (nor any certificate in the "
                       "chain)");
        goto out;
    }
    if (owner > 0) {
        a = crt_dn(crts[owner], false);
        *err = xasprintf("chain out of order: the key belongs to certificate %d (%s); put the "
                         "leaf first, then each issuer",
                         owner + 1, a);
        goto out;
    }

    /* Before the signatures are verified: GnuTLS would only say "insecure
     * algorithm", without which certificate or algorithm. */
    if (chain_crypto_ok(crts, n, err) < 0)
        goto out;
    /* Order and chaining: certificate i must be issued and signed by i + 1. */
    for (unsigned i = 0; i + 1 < n; i++) {
        if (!gnutls_x509_crt_check_issuer(crts[i], crts[i + 1])) {
            a = crt_dn(crts[i], false);
            b = crt_dn(crts[i + 1], false);
            for (unsigned j = 0; j < n; j++) {
                if (j != i + 1 && j != i && gnutls_x509_crt_check_issuer(crts[i], crts[j])) {
                    *err = xasprintf("chain out of order: certificate %u (%s) is issued by "
                                     "certificate %u, not by the next one (%s); put the leaf "
                                     "first, then each issuer",
                                     i + 1, a, j + 1, b);
                    goto out;
                }
            }
            *err = xasprintf("chain does not chain: certificate %u (%s) is not issued by "
                             "certificate %u (%s)",
                             i + 1, a, i + 2, b);
            goto out;
        }
        unsigned status = 0;
        r = gnutls_x509_crt_verify(
            crts[i], &crts[i + 1], 1,
            GNUTLS_VERIFY_DISABLE_TIME_CHECKS | GNUTLS_VERIFY_DISABLE_TRUSTED_TIME_CHECKS, &status);
        if (r < 0 || status != 0) {
            gnutls_datum_t why = {NULL, 0};
            gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &why, 0);
            a = crt_dn(crts[i], false);
            *err = xasprintf("chain does not verify: certificate %u (%s): %s", i + 1, a,
                             why.data ? (char *)why.data : gnutls_strerror(r));
            gnutls_free(why.data);
            goto out;
        }
    }
    for (unsigned i = 0; i < n; i++) {
        time_t nb = gnutls_x509_crt_get_activation_time(crts[i]);
        time_t na = gnutls_x509_crt_get_expiration_time(crts[i]);
        if (nb > now) {
            b = fmt_time(nb);
            crt_refuse(err, crts[i], i, " is not yet valid: valid from %s", b);
            goto out;
        }
        if (na < now) {
            b = fmt_time(na);
            crt_refuse(err, crts[i], i, " expired on %s", b);
            goto out;
        }
    }
    if (crt_key_type(crts[0], info, err) < 0)
        goto out;

    info->sans = crt_sans(crts[0], &info->first_name);
    if (leaf_fit_for_web(crts, n, info, err) < 0)
        goto out;
    info->subject = crt_dn(crts[0], false);
    info->issuer = crt_dn(crts[0], true);
    info->serial = crt_serial(crts[0]);
    info->not_before = gnutls_x509_crt_get_activation_time(crts[0]);
    info->not_after = gnutls_x509_crt_get_expiration_time(crts[0]);
    if (!info->first_name) {
        char cn[256];
        size_t cs = sizeof(cn);
        if (gnutls_x509_crt_get_dn_by_oid(crts[0], GNUTLS_OID_X520_COMMON_NAME, 0, 0, cn, &cs) >= 0)
            info->first_name = xstrdup(cn);
    }
    info->chain_pem = xstrdup("");
    for (unsigned i = 0; i < n; i++) {
        gnutls_datum_t out = {NULL, 0};
        if (gnutls_x509_crt_export2(crts[i], GNUTLS_X509_FMT_PEM, &out) < 0) {
            *err = xasprintf("certificate %u: cannot be re-encoded", i + 1);
            goto out;
        }
        char *c = xasprintf("%s%.*s", info->chain_pem, (int)out.size, (char *)out.data);
        free(info->chain_pem);
        info->chain_pem = c;
        gnutls_free(out.data);
    }
    rc = 0;
out:
    if (rc < 0)
        tls_cert_info_clear(info);
    free(a);
    free(b);
    if (key)
        gnutls_x509_privkey_deinit(key);
    for (unsigned i = 0; i < n; i++)
        gnutls_x509_crt_deinit(crts[i]);
    gnutls_free(crts);
    return rc;
}

int tls_cert_store(sqlite3 *db, const char *name, const struct tls_cert_info *info,
                   const char *key_pem, const char *source, const char *ari_id,
                   const char *meta_json, const char *actor, char **err)
{
    static const char sql[] =
        "INSERT INTO certificates (name, sans, key_type, chain_pem, key_pem, issuer, serial, "
        "not_before, not_after, source, ari_id, status, meta_json, created_at, updated_at) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'active', ?12, ?13, ?13) "
        "ON CONFLICT(name) DO UPDATE SET sans = ?2, key_type = ?3, chain_pem = ?4, "
        "key_pem = ?5, issuer = ?6, serial = ?7, not_before = ?8, not_after = ?9, "
        "source = ?10, ari_id = ?11, status = 'active', meta_json = ?12, updated_at = ?13";
    sqlite3_stmt *st = NULL;
    char *sans = json_dumps(info->sans, JSON_COMPACT);
    int rc = -EIO;

    *err = NULL;
    if (store_begin(db, err) < 0)
        goto out;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, sans, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, info->key_type, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, info->chain_pem, -1, SQLITE_STATIC);
    sqlite3_bind_blob(st, 5, key_pem, (int)strlen(key_pem), SQLITE_STATIC);
    sqlite3_bind_text(st, 6, info->issuer, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, info->serial, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 8, (sqlite3_int64)info->not_before);
    sqlite3_bind_int64(st, 9, (sqlite3_int64)info->not_after);
    sqlite3_bind_text(st, 10, source, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 11, ari_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 12, meta_json, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 13, (sqlite3_int64)time(NULL));
    if (sqlite3_step(st) != SQLITE_DONE)
        goto fail;
    sqlite3_finalize(st);
    st = NULL;
    /* The old staple belongs to the old certificate. */
    if (sqlite3_prepare_v2(db, "DELETE FROM tls_staples WHERE cert_name = ?", -1, &st, NULL) !=
        SQLITE_OK)
        goto fail;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto fail;
    char *detail = xasprintf("%s %s serial %s source %s", info->key_type,
                             info->first_name ? info->first_name : "", info->serial, source);
    store_audit(db, actor, "cert.install", name, detail);
    free(detail);
    if (store_commit(db, err) < 0)
        goto out;
    rc = 0;
    goto out;
fail:
    *err = xasprintf("store: cannot save certificate %s: %s", name, sqlite3_errmsg(db));
    store_rollback(db);
out:
    sqlite3_finalize(st);
    free(sans);
    return rc;
}

bool tls_cert_any(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    bool any = false;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM certificates LIMIT 1", -1, &st, NULL) == SQLITE_OK)
        any = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return any;
}

json_t *tls_cert_list(sqlite3 *db, time_t now)
{
    sqlite3_stmt *st = NULL;
    json_t *a = json_array();
    if (sqlite3_prepare_v2(db,
                           "SELECT name, sans, key_type, issuer, serial, not_before, not_after, "
                           "source, status, ari_id FROM certificates ORDER BY name",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    while (sqlite3_step(st) == SQLITE_ROW) {
        json_t *sans = json_loads((const char *)sqlite3_column_text(st, 1), 0, NULL);
        int64_t na = sqlite3_column_int64(st, 6);
        json_array_append_new(
            a,
            json_pack("{s:s, s:o, s:s, s:s, s:s, s:I, s:I, s:I, s:s, s:s, s:s?}", "name",
                      (const char *)sqlite3_column_text(st, 0), "sans", sans ? sans : json_array(),
                      "key_type", (const char *)sqlite3_column_text(st, 2), "issuer",
                      (const char *)sqlite3_column_text(st, 3), "serial",
                      (const char *)sqlite3_column_text(st, 4), "not_before",
                      (json_int_t)sqlite3_column_int64(st, 5), "not_after", (json_int_t)na,
                      "days_left", (json_int_t)((na - (int64_t)now) / 86400), "source",
                      (const char *)sqlite3_column_text(st, 7), "status",
                      (const char *)sqlite3_column_text(st, 8), "ari_id",
                      (const char *)sqlite3_column_text(st, 9)));
    }
out:
    sqlite3_finalize(st);
    return a;
}

int tls_cert_chain(sqlite3 *db, const char *name, char **chain_pem)
{
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    *chain_pem = NULL;
    if (sqlite3_prepare_v2(db, "SELECT chain_pem FROM certificates WHERE name = ?", -1, &st,
                           NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    rc = store_step_row(st);
    if (rc == 0)
        *chain_pem = xstrdup((const char *)sqlite3_column_text(st, 0));
out:
    sqlite3_finalize(st);
    return rc;
}
