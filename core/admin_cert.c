/* The admin server's certificate, chosen per handshake among the TLS
 * bundle's certificates as the site chooses (core/tls_select.c): the one
 * that names the client's server name exactly, else a wildcard that matches
 * it, else one that names the address the client reached (a browser opened
 * on https://192.0.2.10:9443/ sends no server name), else the first.  Among
 * those, one whose key the client can use comes first (its signature
 * algorithms and, for ECDSA in TLS 1.2, the curves of its ClientHello, which
 * admin_cert_hello_hook notes).
 *
 * The chains and keys are copied out of the bundle's credentials once per
 * bundle generation, so a certificate renewed or imported reaches the next
 * handshake without a restart.  A handshake uses the copy it was given
 * within the gnutls_handshake() call that asked for it (the server's flight
 * is written then), so a copy replaced ten minutes ago is freed. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "core/admin.h"
#include "core/log.h"
#include "core/tls.h"
#include "core/tls_addr.h"
#include "core/tls_bundle.h"
#include "core/tls_hello.h"
#include "core/xalloc.h"

#define MAX_CHAIN 8
/* More certificates than the admin server chooses among (the rest: not at all). */
#define MAX_CERTS 64
/* How long a replaced copy is kept for a handshake that may still use it. */
#define RETIRED_KEEP_S 600

struct certentry {
    gnutls_pcert_st pcerts[MAX_CHAIN];
    unsigned n;
    gnutls_privkey_t key;
    gnutls_x509_crt_t leaf; /* to match names and addresses */
    gnutls_pk_algorithm_t pk;
    gnutls_ecc_curve_t curve; /* ECDSA: TLS 1.3 signs with one curve per algorithm */
};

struct certset {
    uint64_t generation;
    struct certentry certs[MAX_CERTS];
    size_t ncerts;
    time_t retired; /* monotonic second a newer set replaced it (0: current) */
    struct certset *older;
};

static pthread_mutex_t cert_lock = PTHREAD_MUTEX_INITIALIZER;
static struct certset *current;

static void certentry_free(struct certentry *e)
{
    for (unsigned i = 0; i < e->n; i++)
        gnutls_pcert_deinit(&e->pcerts[i]);
    if (e->key)
        gnutls_privkey_deinit(e->key);
    if (e->leaf)
        gnutls_x509_crt_deinit(e->leaf);
}

static void certset_free(struct certset *c)
{
    for (size_t k = 0; k < c->ncerts; k++)
        certentry_free(&c->certs[k]);
    free(c);
}

/* Copy certificate @p idx of @p b (its chain and key) into @p e, zeroed
 * by the caller: 0, or -1 when there is none (certentry_free() it anyway). */
static int certentry_from(struct certentry *e, struct tlsbox_bundle *b, unsigned idx)
{
    gnutls_certificate_credentials_t cred = tls_bundle_credentials(b);
    gnutls_datum_t der;
    while (e->n < MAX_CHAIN && gnutls_certificate_get_crt_raw(cred, idx, e->n, &der) == 0) {
        if (e->n == 0 && (gnutls_x509_crt_init(&e->leaf) < 0 ||
                          gnutls_x509_crt_import(e->leaf, &der, GNUTLS_X509_FMT_DER) < 0))
            return -1;
        if (gnutls_pcert_import_x509_raw(&e->pcerts[e->n], &der, GNUTLS_X509_FMT_DER, 0) < 0)
            break;
        e->n++;
    }
    if (e->n == 0 || tls_bundle_privkey(b, idx, &e->key) < 0)
        return -1;
    e->pk = (gnutls_pk_algorithm_t)gnutls_pubkey_get_pk_algorithm(e->pcerts[0].pubkey, NULL);
    if (e->pk == GNUTLS_PK_ECDSA) {
        gnutls_datum_t x = {NULL, 0}, y = {NULL, 0};
        if (gnutls_pubkey_export_ecc_raw2(e->pcerts[0].pubkey, &e->curve, &x, &y, 0) < 0)
            e->curve = GNUTLS_ECC_CURVE_INVALID;
        gnutls_free(x.data);
        gnutls_free(y.data);
    }
    return 0;
}

/* Copy every certificate of @p b, in its order.  NULL (logged) when it has none. */
static struct certset *certset_from(struct tlsbox_bundle *b)
{
    struct certset *c = xcalloc(1, sizeof *c);
    c->generation = tls_bundle_generation(b);
    while (c->ncerts < MAX_CERTS) {
        struct certentry e = {0};
        if (certentry_from(&e, b, (unsigned)c->ncerts) < 0) {
            certentry_free(&e);
            break;
        }
        c->certs[c->ncerts++] = e;
    }
    if (c->ncerts == 0) {
        log_err("admin: no certificate in TLS bundle generation %llu",
                (unsigned long long)c->generation);
        certset_free(c);
        return NULL;
    }
    return c;
}

/* Whether @p e's key can sign with @p sign.  gnutls_sign_supports_pk_algorithm
 * answers by key type alone, but the TLS 1.3 ECDSA algorithms each name one
 * curve: a client that sent ecdsa_secp384r1_sha384 only cannot use a P-256
 * key, and GnuTLS then fails the handshake rather than pick another
 * certificate.  (In TLS 1.2 that code point is ECDSA-SHA384, any curve.) */
static bool signs_with(const struct certentry *e, gnutls_sign_algorithm_t sign)
{
    if (!gnutls_sign_supports_pk_algorithm(sign, e->pk))
        return false;
    switch (sign) {
    case GNUTLS_SIGN_ECDSA_SECP256R1_SHA256:
        return e->curve == GNUTLS_ECC_CURVE_SECP256R1;
    case GNUTLS_SIGN_ECDSA_SECP384R1_SHA384:
        return e->curve == GNUTLS_ECC_CURVE_SECP384R1;
    case GNUTLS_SIGN_ECDSA_SECP521R1_SHA512:
        return e->curve == GNUTLS_ECC_CURVE_SECP521R1;
    default:
        return true;
    }
}

/* Whether the client can use @p e's key: the signature algorithms it sent
 * include one for the key's algorithm (GnuTLS's own pk_algos did not tell:
 * a client that sent RSA ones only got an ECDSA certificate and failed the
 * handshake).  Without that extension (TLS 1.2 clients may omit it), the
 * key algorithms GnuTLS passes (an empty list: it said nothing, so any).
 * An ECDSA key in TLS 1.2 must also be on a curve the client lists in
 * supported_groups (RFC 8422; tls_hello.h), when it lists any of them. */
static bool usable(const struct certentry *e, gnutls_session_t session,
                   const struct gnutls_cert_retr_st *info)
{
    gnutls_sign_algorithm_t sign;
    bool sent = false;
    unsigned curves;
    if (e->pk == GNUTLS_PK_ECDSA && tls_hello_curves(session, &curves) == 0 && curves != 0 &&
        !(curves & tls_hello_curve_bit(e->curve)))
        return false;
    for (unsigned i = 0; gnutls_sign_algorithm_get_requested(session, i, &sign) == 0; i++) {
        sent = true;
        if (signs_with(e, sign))
            return true;
    }
    if (sent)
        return false;
    if (!info || info->pk_algos_length == 0)
        return true;
    for (unsigned i = 0; i < info->pk_algos_length; i++)
        if (info->pk_algos[i] == e->pk ||
            (e->pk == GNUTLS_PK_RSA && info->pk_algos[i] == GNUTLS_PK_RSA_PSS))
            return true;
    return false;
}

/* The first certificate of @p c the client can use (all of them when
 * @p any_key) that @p match accepts; NULL when none does. */
static const struct certentry *first_where(const struct certset *c, gnutls_session_t session,
                                           const struct gnutls_cert_retr_st *info, bool any_key,
                                           bool (*match)(const struct certentry *, const void *),
                                           const void *arg)
{
    for (size_t k = 0; k < c->ncerts; k++)
        if ((any_key || usable(&c->certs[k], session, info)) && match(&c->certs[k], arg))
            return &c->certs[k];
    return NULL;
}

static bool names_exactly(const struct certentry *e, const void *sni)
{
    return gnutls_x509_crt_check_hostname2(e->leaf, sni, GNUTLS_VERIFY_DO_NOT_ALLOW_WILDCARDS);
}

static bool names_by_wildcard(const struct certentry *e, const void *sni)
{
    return gnutls_x509_crt_check_hostname2(e->leaf, sni, 0);
}

static bool names_address(const struct certentry *e, const void *addr)
{
    const struct tls_addr *a = addr;
    return gnutls_x509_crt_check_ip(e->leaf, a->ip, a->len, 0);
}

static bool any(const struct certentry *e, const void *arg)
{
    (void)e, (void)arg;
    return true;
}

/* The certificate for @p session: see the top of this file. */
static const struct certentry *choose(const struct certset *c, gnutls_session_t session,
                                      const struct gnutls_cert_retr_st *info)
{
    char sni[256];
    size_t len = sizeof(sni) - 1;
    unsigned type;
    bool has_sni = gnutls_server_name_get(session, sni, &len, &type, 0) == 0 &&
                   type == GNUTLS_NAME_DNS && len > 0;
    if (has_sni) {
        sni[len] = '\0';
        /* One trailing dot names the same host (RFC 6066 forbids it, some
         * clients send it): GnuTLS's name check would match nothing.  The
         * site's bundle does the same (tls_select_by_name). */
        if (len >= 2 && sni[len - 1] == '.' && sni[len - 2] != '.')
            sni[len - 1] = '\0';
    }
    /* The socket MHD gave GnuTLS: the address the client reached. */
    struct tls_addr addr;
    int fd = gnutls_transport_get_int(session);
    bool has_addr = fd >= 0 && tls_addr_local(fd, &addr) == 0;
    for (int any_key = 0; any_key <= 1; any_key++) {
        const struct certentry *e = NULL;
        if (has_sni && !(e = first_where(c, session, info, any_key, names_exactly, sni)))
            e = first_where(c, session, info, any_key, names_by_wildcard, sni);
        if (!e && has_addr)
            e = first_where(c, session, info, any_key, names_address, &addr);
        if (!e)
            e = first_where(c, session, info, any_key, any, NULL);
        if (e)
            return e;
    }
    return &c->certs[0];
}

/* Free the sets replaced more than RETIRED_KEEP_S ago (cert_lock held). */
static void retired_free(time_t now)
{
    for (struct certset **pp = &current->older; *pp;) {
        struct certset *o = *pp;
        if (now - o->retired > RETIRED_KEEP_S) {
            *pp = o->older;
            certset_free(o);
        } else {
            pp = &o->older;
        }
    }
}

int admin_cert_callback(gnutls_session_t session, const struct gnutls_cert_retr_st *info,
                        gnutls_pcert_st **certs, unsigned int *pcert_length,
                        gnutls_ocsp_data_st **ocsp, unsigned int *ocsp_length,
                        gnutls_privkey_t *privkey, unsigned int *flags)
{
    struct tlsbox_bundle *b = tls_bundle_acquire();
    if (!b)
        return -1;
    pthread_mutex_lock(&cert_lock);
    if (!current || current->generation != tls_bundle_generation(b)) {
        struct certset *c = certset_from(b);
        if (c) {
            /* Monotonic: a clock set by NTP (a Pi has no RTC) must not age a copy. */
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            time_t now = ts.tv_sec;
            if (current)
                current->retired = now;
            c->older = current;
            current = c;
            retired_free(now);
            log_info("admin: serving the %zu certificate(s) of TLS bundle generation %llu",
                     c->ncerts, (unsigned long long)c->generation);
        }
    }
    struct certset *c = current;
    pthread_mutex_unlock(&cert_lock);
    tls_bundle_release(b);
    if (!c)
        return -1;
    const struct certentry *e = choose(c, session, info);
    *certs = (gnutls_pcert_st *)e->pcerts;
    *pcert_length = e->n;
    *privkey = e->key;
    *ocsp = NULL;
    *ocsp_length = 0;
    *flags = 0;
    return 0;
}

void admin_cert_hello_hook(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *i =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    if (i && i->tls_session)
        gnutls_handshake_set_hook_function((gnutls_session_t)i->tls_session,
                                           GNUTLS_HANDSHAKE_CLIENT_HELLO, GNUTLS_HOOK_PRE,
                                           tls_hello_note);
}

void admin_cert_free(void)
{
    pthread_mutex_lock(&cert_lock);
    while (current) {
        struct certset *o = current->older;
        certset_free(current);
        current = o;
    }
    pthread_mutex_unlock(&cert_lock);
}
