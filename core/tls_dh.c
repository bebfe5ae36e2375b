/* Diffie-Hellman parameters of the TLS bundle: check, store, load, serve. */
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gmp.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "core/log.h"
#include "core/tls_dh.h"
#include "core/xalloc.h"

#define TLS_DH_PEM_MAX 16384

/* The RFC 7919 groups GnuTLS knows, smallest first. */
static const struct ffdhe {
    gnutls_group_t id;
    const char *name;
    int bits;
    const gnutls_datum_t *p, *q, *g;
} ffdhe[] = {
    {GNUTLS_GROUP_FFDHE2048, "ffdhe2048", 2048, &gnutls_ffdhe_2048_group_prime,
     &gnutls_ffdhe_2048_group_q, &gnutls_ffdhe_2048_group_generator},
    {GNUTLS_GROUP_FFDHE3072, "ffdhe3072", 3072, &gnutls_ffdhe_3072_group_prime,
     &gnutls_ffdhe_3072_group_q, &gnutls_ffdhe_3072_group_generator},
    {GNUTLS_GROUP_FFDHE4096, "ffdhe4096", 4096, &gnutls_ffdhe_4096_group_prime,
     &gnutls_ffdhe_4096_group_q, &gnutls_ffdhe_4096_group_generator},
    {GNUTLS_GROUP_FFDHE6144, "ffdhe6144", 6144, &gnutls_ffdhe_6144_group_prime,
     &gnutls_ffdhe_6144_group_q, &gnutls_ffdhe_6144_group_generator},
    {GNUTLS_GROUP_FFDHE8192, "ffdhe8192", 8192, &gnutls_ffdhe_8192_group_prime,
     &gnutls_ffdhe_8192_group_q, &gnutls_ffdhe_8192_group_generator},
};
#define NFFDHE (sizeof(ffdhe) / sizeof(ffdhe[0]))

static const struct ffdhe *ffdhe_by_id(unsigned id)
{
    for (size_t i = 0; i < NFFDHE; i++)
        if (ffdhe[i].id == (gnutls_group_t)id)
            return &ffdhe[i];
    return NULL;
}

/* Primality and range checks on p and g (big-endian magnitudes). */
static int check_numbers(const gnutls_datum_t *p, const gnutls_datum_t *g, struct tls_dh_check *out,
                         char **err)
{
    mpz_t mp, mg, t;
    int rc = -EINVAL;
    mpz_inits(mp, mg, t, NULL);
    mpz_import(mp, p->size, 1, 1, 1, 0, p->data);
    mpz_import(mg, g->size, 1, 1, 1, 0, g->data);
    out->bits = (int)mpz_sizeinbase(mp, 2);
    if (out->bits < TLS_DH_MIN_BITS) {
        *err = xasprintf("DH parameters of %d bits are too small: at least %d bits are needed "
                         "(1024-bit groups can be broken by precomputation, see Logjam); "
                         "make new ones with openssl dhparam -out dhparam.pem 3072",
                         out->bits, TLS_DH_MIN_BITS);
        goto out;
    }
    if (out->bits > TLS_DH_MAX_BITS) {
        *err = xasprintf("DH parameters of %d bits are too large: at most %d bits", out->bits,
                         TLS_DH_MAX_BITS);
        goto out;
    }
    mpz_sub_ui(t, mp, 2);
    if (mpz_cmp_ui(mg, 2) < 0 || mpz_cmp(mg, t) > 0) {
        *err = xstrdup("DH parameters: the generator is outside 2..p-2");
        goto out;
    }
    /* 25 rounds: a composite passes with odds far below a hardware fault. */
    if (mpz_probab_prime_p(mp, 25) == 0) {
        *err = xasprintf("DH parameters: the %d-bit modulus is not a prime", out->bits);
        goto out;
    }
    mpz_sub_ui(t, mp, 1);
    mpz_fdiv_q_2exp(t, t, 1);
    out->safe_prime = mpz_probab_prime_p(t, 25) != 0;
    rc = 0;
out:
    mpz_clears(mp, mg, t, NULL);
    return rc;
}

static void fingerprint(gnutls_dh_params_t dh, char out[17])
{
    gnutls_datum_t der = {NULL, 0};
    unsigned char h[32];
    out[0] = 0;
    if (gnutls_dh_params_export2_pkcs3(dh, GNUTLS_X509_FMT_DER, &der) < 0)
        return;
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, der.data, der.size, h) == 0)
        for (int i = 0; i < 8; i++)
            snprintf(out + 2 * i, 3, "%02x", h[i]);
    gnutls_free(der.data);
}

int tls_dh_check(const char *pem, struct tls_dh_check *out, char **err)
{
    gnutls_dh_params_t dh = NULL;
    gnutls_datum_t p = {NULL, 0}, g = {NULL, 0};
    int rc = -EINVAL, r;
    memset(out, 0, sizeof(*out));
    *err = NULL;
    if (!pem || strlen(pem) > TLS_DH_PEM_MAX) {
        *err = xasprintf("DH parameters: %s", pem ? "more than 16 KiB of text" : "none given");
        return rc;
    }
    /* The text is stored as given: never with key material in it. */
    if (strstr(pem, "PRIVATE KEY-----")) {
        *err = xstrdup("the text holds a private key: give the DH parameters alone");
        return rc;
    }
    if (strstr(pem, "-----BEGIN X9.42 DH PARAMETERS-----")) {
        *err = xstrdup("X9.42 DH parameters (openssl dhparam -dsaparam) are not supported: "
                       "give PKCS#3 \"DH PARAMETERS\" as written by openssl dhparam without "
                       "-dsaparam");
        return rc;
    }
    if (!strstr(pem, "-----BEGIN DH PARAMETERS-----")) {
        *err = xstrdup("not DH parameters: expected a PEM block \"-----BEGIN DH "
                       "PARAMETERS-----\" as written by openssl dhparam");
        return rc;
    }
    gnutls_dh_params_init(&dh);
    gnutls_datum_t in = {(unsigned char *)pem, (unsigned)strlen(pem)};
    if ((r = gnutls_dh_params_import_pkcs3(dh, &in, GNUTLS_X509_FMT_PEM)) < 0) {
        *err = xasprintf("DH parameters do not parse: %s", gnutls_strerror(r));
        goto out;
    }
    if ((r = gnutls_dh_params_export_raw(dh, &p, &g, NULL)) < 0) {
        *err = xasprintf("DH parameters: %s", gnutls_strerror(r));
        goto out;
    }
    if ((rc = check_numbers(&p, &g, out, err)) < 0)
        goto out;
    fingerprint(dh, out->fingerprint);
    rc = 0;
out:
    gnutls_free(p.data);
    gnutls_free(g.data);
    gnutls_dh_params_deinit(dh);
    return rc;
}

/* What the priority allows: TLS 1.2 DHE key exchange, TLS 1.3 FFDHE groups,
 * the smallest FFDHE group.  Returns the size of the first FFDHE group it
 * lists, 0 for none: GnuTLS then uses that group for TLS 1.2 DHE too, for
 * every client, and never the credentials' parameters (seen with 3.7.9). */
static int policy_dh(gnutls_priority_t prio, json_t *info)
{
    const unsigned *l;
    bool dhe = false, tls13 = false;
    int n = gnutls_priority_kx_list(prio, &l);
    for (int i = 0; i < n; i++)
        if (l[i] == GNUTLS_KX_DHE_RSA || l[i] == GNUTLS_KX_DHE_DSS)
            dhe = true;
    n = gnutls_priority_protocol_list(prio, &l);
    for (int i = 0; i < n; i++)
        if (l[i] == GNUTLS_TLS1_3)
            tls13 = true;
    json_t *groups = json_array();
    int min = 0, first = 0;
    n = gnutls_priority_group_list(prio, &l);
    for (int i = 0; i < n; i++) {
        const struct ffdhe *f = ffdhe_by_id(l[i]);
        if (!f)
            continue;
        json_array_append_new(groups, json_string(f->name));
        if (!min || f->bits < min)
            min = f->bits;
        if (!first)
            first = f->bits;
    }
    json_object_set_new(info, "policy_min_bits", json_integer(min ? min : TLS_DH_MIN_BITS));
    json_object_set_new(info, "policy_groups", json_boolean(first != 0));
    json_object_set_new(info, "dhe_tls12", json_boolean(dhe));
    json_object_set_new(info, "ffdhe_tls13", json_boolean(tls13 && first));
    json_object_set_new(info, "tls13_groups", tls13 ? groups : json_array());
    if (!tls13)
        json_decref(groups);
    return first;
}

/* The tls_dh row as {source, bits, fingerprint, set_at} (new reference) and
 * its PEM in *pem (caller frees), or json null when there is none. */
static json_t *stored_row(sqlite3 *db, char **pem)
{
    sqlite3_stmt *st = NULL;
    json_t *row = json_null();
    *pem = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pem, source, bits, fingerprint, set_at FROM tls_dh", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        *pem = xstrdup((const char *)sqlite3_column_text(st, 0));
        row = json_pack("{s:s, s:i, s:s, s:I}", "source", (const char *)sqlite3_column_text(st, 1),
                        "bits", sqlite3_column_int(st, 2), "fingerprint",
                        (const char *)sqlite3_column_text(st, 3), "set_at",
                        (json_int_t)sqlite3_column_int64(st, 4));
    }
    sqlite3_finalize(st);
    return row ? row : json_null();
}

/* Serve the stored parameters; false (nothing set) when they are unusable. */
static bool use_stored(gnutls_certificate_credentials_t cred, const char *pem, json_t *row,
                       json_t *info, gnutls_dh_params_t *dh)
{
    gnutls_datum_t in = {(unsigned char *)pem, (unsigned)strlen(pem)};
    gnutls_dh_params_init(dh);
    int r = gnutls_dh_params_import_pkcs3(*dh, &in, GNUTLS_X509_FMT_PEM);
    if (r < 0) {
        log_warn("tls: stored DH parameters unusable (%s); using an RFC 7919 group",
                 gnutls_strerror(r));
        gnutls_dh_params_deinit(*dh);
        *dh = NULL;
        return false;
    }
    gnutls_certificate_set_dh_params(cred, *dh);
    json_object_set(info, "source", json_object_get(row, "source"));
    json_object_set_new(info, "group", json_null());
    json_object_set(info, "bits", json_object_get(row, "bits"));
    json_object_set(info, "fingerprint", json_object_get(row, "fingerprint"));
    return true;
}

/* Serve the RFC 7919 group of @p bits (the smallest one at least that big). */
static void use_group(gnutls_certificate_credentials_t cred, int bits, json_t *info,
                      gnutls_dh_params_t *dh)
{
    size_t i = 0;
    while (i + 1 < NFFDHE && ffdhe[i].bits < bits)
        i++;
    const struct ffdhe *f = &ffdhe[i];
    gnutls_dh_params_init(dh);
    int r = gnutls_dh_params_import_raw3(*dh, f->p, f->q, f->g);
    if (r < 0) {
        /* Cannot happen with GnuTLS's own constants; serve its default. */
        log_warn("tls: %s: %s", f->name, gnutls_strerror(r));
        gnutls_dh_params_deinit(*dh);
        *dh = NULL;
        gnutls_certificate_set_known_dh_params(cred, GNUTLS_SEC_PARAM_MEDIUM);
        f = &ffdhe[0];
    } else {
        gnutls_certificate_set_dh_params(cred, *dh);
    }
    char fp[17] = "";
    if (*dh)
        fingerprint(*dh, fp);
    json_object_set_new(info, "source", json_string("rfc7919"));
    json_object_set_new(info, "group", json_string(f->name));
    json_object_set_new(info, "bits", json_integer(f->bits));
    json_object_set_new(info, "fingerprint", json_string(fp));
}

json_t *tls_dh_load(sqlite3 *db, gnutls_certificate_credentials_t cred, json_t *policy,
                    gnutls_priority_t prio, gnutls_dh_params_t *dh)
{
    const char *mode = json_string_value(json_object_get(policy, "dh_mode"));
    json_t *info = json_object();
    char *pem = NULL;
    *dh = NULL;
    int first = policy_dh(prio, info);
    bool used = false;
    json_t *row = stored_row(db, &pem);
    json_object_set(info, "stored", row);
    if (mode && strcmp(mode, "off") == 0) {
        json_object_set_new(info, "source", json_string("off"));
        json_object_set_new(info, "group", json_null());
        json_object_set_new(info, "bits", json_integer(0));
        json_object_set_new(info, "fingerprint", json_null());
    } else if (first) {
        /* Stored parameters would serve no client: describe what does. */
        use_group(cred, first, info, dh);
    } else if (mode && strcmp(mode, "auto") == 0 && pem) {
        used = use_stored(cred, pem, row, info, dh);
    }
    if (!used && !json_object_get(info, "source"))
        use_group(cred, TLS_DH_MIN_BITS, info, dh);
    json_object_set_new(info, "stored_used", json_boolean(used));
    json_decref(row);
    free(pem);
    return info;
}
