/* JOSE for ACME: base64url, keys, JWK + RFC 7638 thumbprint, JWS (ES256/384, RS256), EAB. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>

#include "plugins/acme/acme.h"

static const char jws_b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

char *acme_b64url(const void *data, size_t len)
{
    const unsigned char *p = data;
    char *out = tlsbox_xmalloc(len / 3 * 4 + 5);
    size_t o = 0, i = 0;
    for (; i + 2 < len; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
        out[o++] = jws_b64_alphabet[v >> 18 & 63];
        out[o++] = jws_b64_alphabet[v >> 12 & 63];
        out[o++] = jws_b64_alphabet[v >> 6 & 63];
        out[o++] = jws_b64_alphabet[v & 63];
    }
    if (len - i == 1) {
        unsigned v = (unsigned)p[i] << 16;
        out[o++] = jws_b64_alphabet[v >> 18 & 63];
        out[o++] = jws_b64_alphabet[v >> 12 & 63];
    } else if (len - i == 2) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8;
        out[o++] = jws_b64_alphabet[v >> 18 & 63];
        out[o++] = jws_b64_alphabet[v >> 12 & 63];
        out[o++] = jws_b64_alphabet[v >> 6 & 63];
    }
    out[o] = '\0';
    return out;
}

static int jws_b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-' || c == '+')
        return 62;
    if (c == '_' || c == '/')
        return 63;
    return -EINVAL;
}

int acme_b64url_decode(const char *s, unsigned char **out, size_t *out_len)
{
    size_t n = strlen(s);
    while (n > 0 && s[n - 1] == '=')
        n--;
    if (n % 4 == 1)
        return -EINVAL;
    unsigned char *buf = tlsbox_xmalloc(n / 4 * 3 + 3);
    size_t o = 0;
    unsigned acc = 0, bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = jws_b64_value(s[i]);
        if (v < 0) {
            free(buf);
            return -EINVAL;
        }
        acc = acc << 6 | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            buf[o++] = (unsigned char)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    *out = buf;
    *out_len = o;
    return 0;
}

int acme_fixed_width(const unsigned char *in, size_t in_len, unsigned char *out, size_t width)
{
    while (in_len > 0 && in[0] == 0) {
        in++;
        in_len--;
    }
    if (in_len > width)
        return -ERANGE;
    memset(out, 0, width - in_len);
    memcpy(out + width - in_len, in, in_len);
    return 0;
}

int acme_ecdsa_der_to_rs(const gnutls_datum_t *der, size_t half, unsigned char *out)
{
    gnutls_datum_t r = {0}, s = {0};
    int ret = gnutls_decode_rs_value(der, &r, &s);
    if (ret < 0)
        return -EINVAL;
    ret = acme_fixed_width(r.data, r.size, out, half);
    if (ret == 0)
        ret = acme_fixed_width(s.data, s.size, out + half, half);
    gnutls_free(r.data);
    gnutls_free(s.data);
    return ret;
}

int acme_key_generate(const char *key_type, gnutls_privkey_t *out)
{
    gnutls_pk_algorithm_t pk;
    unsigned bits;
    if (strcmp(key_type, "ecdsa-p256") == 0) {
        pk = GNUTLS_PK_ECDSA;
        bits = GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1);
    } else if (strcmp(key_type, "ecdsa-p384") == 0) {
        pk = GNUTLS_PK_ECDSA;
        bits = GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP384R1);
    } else if (strcmp(key_type, "rsa-2048") == 0) {
        pk = GNUTLS_PK_RSA;
        bits = 2048;
    } else if (strcmp(key_type, "rsa-3072") == 0) {
        pk = GNUTLS_PK_RSA;
        bits = 3072;
    } else {
        return -EINVAL;
    }
    gnutls_privkey_t k;
    if (gnutls_privkey_init(&k) < 0)
        return -ENOMEM;
    if (gnutls_privkey_generate2(k, pk, bits, 0, NULL, 0) < 0) {
        gnutls_privkey_deinit(k);
        return -EIO;
    }
    *out = k;
    return 0;
}

int acme_key_export_pem(gnutls_privkey_t key, char **pem)
{
    gnutls_x509_privkey_t xk = NULL;
    gnutls_datum_t d = {0};
    int ret = -EIO;
    if (gnutls_privkey_export_x509(key, &xk) < 0)
        goto out;
    if (gnutls_x509_privkey_export2_pkcs8(xk, GNUTLS_X509_FMT_PEM, NULL, GNUTLS_PKCS_PLAIN, &d) < 0)
        goto out;
    *pem = tlsbox_xstrndup((const char *)d.data, d.size);
    ret = 0;
out:
    if (d.data) {
        gnutls_memset(d.data, 0, d.size);
        gnutls_free(d.data);
    }
    if (xk)
        gnutls_x509_privkey_deinit(xk);
    return ret;
}

int acme_key_import_pem(const char *pem, gnutls_privkey_t *out)
{
    gnutls_privkey_t k;
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)strlen(pem)};
    if (gnutls_privkey_init(&k) < 0)
        return -ENOMEM;
    if (gnutls_privkey_import_x509_raw(k, &d, GNUTLS_X509_FMT_PEM, NULL, 0) < 0) {
        gnutls_privkey_deinit(k);
        return -EINVAL;
    }
    *out = k;
    return 0;
}

/* The JWS algorithm for a key: name, signature algorithm, ECDSA half width (0 = RSA). */
static int jws_alg(gnutls_privkey_t key, const char **name, gnutls_sign_algorithm_t *sign,
                   size_t *half)
{
    unsigned bits = 0;
    int pk = gnutls_privkey_get_pk_algorithm(key, &bits);
    if (pk == GNUTLS_PK_RSA) {
        *name = "RS256";
        *sign = GNUTLS_SIGN_RSA_SHA256;
        *half = 0;
        return 0;
    }
    if (pk != GNUTLS_PK_ECDSA)
        return -ENOTSUP;
    gnutls_ecc_curve_t curve;
    if (gnutls_privkey_export_ecc_raw2(key, &curve, NULL, NULL, NULL, 0) < 0)
        return -EIO;
    if (curve == GNUTLS_ECC_CURVE_SECP256R1) {
        *name = "ES256";
        *sign = GNUTLS_SIGN_ECDSA_SHA256;
        *half = 32;
    } else if (curve == GNUTLS_ECC_CURVE_SECP384R1) {
        *name = "ES384";
        *sign = GNUTLS_SIGN_ECDSA_SHA384;
        *half = 48;
    } else {
        return -ENOTSUP;
    }
    return 0;
}

static json_t *jws_b64_member(const gnutls_datum_t *d, size_t width)
{
    unsigned char buf[512];
    char *s;
    if (width) {
        if (width > sizeof(buf) || acme_fixed_width(d->data, d->size, buf, width) < 0)
            return NULL;
        s = acme_b64url(buf, width);
    } else {
        /* RSA n and e: minimal big-endian, no leading zero (RFC 7518 6.3.1). */
        size_t off = 0;
        while (off + 1 < d->size && d->data[off] == 0)
            off++;
        s = acme_b64url(d->data + off, d->size - off);
    }
    json_t *j = json_string(s);
    free(s);
    return j;
}

json_t *acme_jwk(gnutls_privkey_t key)
{
    gnutls_pubkey_t pub = NULL;
    gnutls_datum_t a = {0}, b = {0};
    json_t *jwk = NULL;
    if (gnutls_pubkey_init(&pub) < 0)
        return NULL;
    if (gnutls_pubkey_import_privkey(pub, key, 0, 0) < 0)
        goto out;
    int pk = gnutls_pubkey_get_pk_algorithm(pub, NULL);
    if (pk == GNUTLS_PK_ECDSA) {
        gnutls_ecc_curve_t curve;
        if (gnutls_pubkey_export_ecc_raw2(pub, &curve, &a, &b, 0) < 0)
            goto out;
        size_t w = curve == GNUTLS_ECC_CURVE_SECP256R1   ? 32
                   : curve == GNUTLS_ECC_CURVE_SECP384R1 ? 48
                                                         : 0;
        if (!w)
            goto out;
        jwk = json_object();
        json_object_set_new(jwk, "crv", json_string(w == 32 ? "P-256" : "P-384"));
        json_object_set_new(jwk, "kty", json_string("EC"));
        json_object_set_new(jwk, "x", jws_b64_member(&a, w));
        json_object_set_new(jwk, "y", jws_b64_member(&b, w));
    } else if (pk == GNUTLS_PK_RSA) {
        if (gnutls_pubkey_export_rsa_raw2(pub, &a, &b, 0) < 0)
            goto out;
        jwk = json_object();
        json_object_set_new(jwk, "e", jws_b64_member(&b, 0));
        json_object_set_new(jwk, "kty", json_string("RSA"));
        json_object_set_new(jwk, "n", jws_b64_member(&a, 0));
    }
out:
    gnutls_free(a.data);
    gnutls_free(b.data);
    gnutls_pubkey_deinit(pub);
    return jwk;
}

char *acme_jwk_thumbprint(const json_t *jwk)
{
    /* RFC 7638: the required members only, sorted, no whitespace. */
    static const char *const ec[] = {"crv", "kty", "x", "y", NULL};
    static const char *const rsa[] = {"e", "kty", "n", NULL};
    const char *kty = json_string_value(json_object_get(jwk, "kty"));
    if (!kty)
        return NULL;
    const char *const *members = strcmp(kty, "EC") == 0 ? ec : strcmp(kty, "RSA") == 0 ? rsa : NULL;
    if (!members)
        return NULL;
    json_t *req = json_object();
    for (size_t i = 0; members[i]; i++) {
        json_t *v = json_object_get(jwk, members[i]);
        if (!v) {
            json_decref(req);
            return NULL;
        }
        json_object_set(req, members[i], v);
    }
    char *text = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(req);
    unsigned char digest[32];
    gnutls_hash_fast(GNUTLS_DIG_SHA256, text, strlen(text), digest);
    free(text);
    return acme_b64url(digest, sizeof(digest));
}

/* Sign "protected.payload" with @p key in JWS form (r||s for ECDSA). */
static char *jws_sign(gnutls_privkey_t key, gnutls_sign_algorithm_t sign, size_t half,
                      const char *input)
{
    gnutls_datum_t data = {(unsigned char *)input, (unsigned)strlen(input)}, sig = {0};
    char *out = NULL;
    if (gnutls_privkey_sign_data2(key, sign, 0, &data, &sig) < 0)
        return NULL;
    if (half) {
        unsigned char rs[96];
        if (acme_ecdsa_der_to_rs(&sig, half, rs) == 0)
            out = acme_b64url(rs, 2 * half);
    } else {
        out = acme_b64url(sig.data, sig.size);
    }
    gnutls_free(sig.data);
    return out;
}

char *acme_jws(gnutls_privkey_t key, const char *kid, const char *nonce, const char *url,
               const char *payload)
{
    const char *alg;
    gnutls_sign_algorithm_t sign;
    size_t half;
    if (jws_alg(key, &alg, &sign, &half) < 0)
        return NULL;
    json_t *hdr = json_object();
    json_object_set_new(hdr, "alg", json_string(alg));
    if (kid) {
        json_object_set_new(hdr, "kid", json_string(kid));
    } else {
        json_t *jwk = acme_jwk(key);
        if (!jwk) {
            json_decref(hdr);
            return NULL;
        }
        json_object_set_new(hdr, "jwk", jwk);
    }
    if (nonce)
        json_object_set_new(hdr, "nonce", json_string(nonce));
    json_object_set_new(hdr, "url", json_string(url));
    char *hdr_text = json_dumps(hdr, JSON_COMPACT);
    json_decref(hdr);
    char *p64 = acme_b64url(hdr_text, strlen(hdr_text));
    free(hdr_text);
    char *pl64 = payload ? acme_b64url(payload, strlen(payload)) : tlsbox_xstrdup("");
    char *input = tlsbox_xasprintf("%s.%s", p64, pl64);
    char *sig = jws_sign(key, sign, half, input);
    free(input);
    char *out = NULL;
    if (sig) {
        json_t *jws = json_object();
        json_object_set_new(jws, "protected", json_string(p64));
        json_object_set_new(jws, "payload", json_string(pl64));
        json_object_set_new(jws, "signature", json_string(sig));
        out = json_dumps(jws, JSON_COMPACT);
        json_decref(jws);
    }
    free(sig);
    free(p64);
    free(pl64);
    return out;
}

json_t *acme_eab(const char *kid, const char *hmac_b64, const json_t *jwk, const char *url,
                 char **err)
{
    unsigned char *key = NULL;
    size_t key_len = 0;
    if (acme_b64url_decode(hmac_b64, &key, &key_len) < 0 || key_len == 0) {
        free(key);
        *err = tlsbox_xstrdup("acme.eab_hmac: not base64url text");
        return NULL;
    }
    json_t *hdr = json_object();
    json_object_set_new(hdr, "alg", json_string("HS256"));
    json_object_set_new(hdr, "kid", json_string(kid));
    json_object_set_new(hdr, "url", json_string(url));
    char *hdr_text = json_dumps(hdr, JSON_COMPACT);
    json_decref(hdr);
    char *jwk_text = json_dumps(jwk, JSON_COMPACT | JSON_SORT_KEYS);
    char *p64 = acme_b64url(hdr_text, strlen(hdr_text));
    char *pl64 = acme_b64url(jwk_text, strlen(jwk_text));
    free(hdr_text);
    free(jwk_text);
    char *input = tlsbox_xasprintf("%s.%s", p64, pl64);
    unsigned char mac[32];
    gnutls_hmac_fast(GNUTLS_MAC_SHA256, key, key_len, input, strlen(input), mac);
    tlsbox_wipe(key, key_len);
    free(key);
    free(input);
    char *sig = acme_b64url(mac, sizeof(mac));
    tlsbox_wipe(mac, sizeof(mac));
    json_t *out = json_object();
    json_object_set_new(out, "protected", json_string(p64));
    json_object_set_new(out, "payload", json_string(pl64));
    json_object_set_new(out, "signature", json_string(sig));
    free(p64);
    free(pl64);
    free(sig);
    return out;
}
