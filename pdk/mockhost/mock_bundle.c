/* The mock host's TLS bundle (built from PEM files by the test) and
 * certificates (cert_install keeps chains, never keys). */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/x509.h>

#include "mock.h"

struct tlsbox_bundle {
    _Atomic int refs;
    gnutls_certificate_credentials_t cred;
    gnutls_priority_t prio;
    gnutls_datum_t ticket;
    char *hsts;
    uint64_t gen;
};

static struct tlsbox_bundle *current;
static pthread_mutex_t bundle_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int alive;
static uint64_t generation;

static void bundle_unref(struct tlsbox_bundle *b)
{
    if (atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    gnutls_certificate_free_credentials(b->cred);
    gnutls_priority_deinit(b->prio);
    if (b->ticket.data)
        gnutls_memset(b->ticket.data, 0, b->ticket.size);
    gnutls_free(b->ticket.data);
    free(b->hsts);
    free(b);
    atomic_fetch_sub(&alive, 1);
}

static int bundle_creds(struct tlsbox_bundle *b, const char *cert, const char *key,
                        const char *cert2, const char *key2, const char *priority)
{
    int r = gnutls_certificate_allocate_credentials(&b->cred);
    if (r < 0)
        return r;
    gnutls_certificate_set_flags(b->cred, GNUTLS_CERTIFICATE_API_V2);
    r = gnutls_certificate_set_x509_key_file(b->cred, cert, key, GNUTLS_X509_FMT_PEM);
    if (r >= 0 && cert2)
        r = gnutls_certificate_set_x509_key_file(b->cred, cert2, key2, GNUTLS_X509_FMT_PEM);
    if (r >= 0)
        r = gnutls_certificate_set_known_dh_params(b->cred, GNUTLS_SEC_PARAM_MEDIUM);
    if (r >= 0)
        r = gnutls_priority_init(&b->prio, priority, NULL);
    if (r >= 0)
        r = gnutls_session_ticket_key_generate(&b->ticket);
    return r;
}

int tlsbox_mock_bundle_load(const char *cert, const char *key, const char *cert2, const char *key2,
                            const char *priority, const char *hsts)
{
    struct tlsbox_bundle *b = tlsbox_xcalloc(1, sizeof *b);
    b->refs = 1;
    int r = bundle_creds(b, cert, key, cert2, key2, priority);
    if (r < 0) {
        fprintf(stderr, "# mock host: bundle: %s\n", gnutls_strerror(r));
        atomic_fetch_add(&alive, 1);
        bundle_unref(b);
        return r;
    }
    b->hsts = hsts ? tlsbox_xstrdup(hsts) : NULL;
    atomic_fetch_add(&alive, 1);
    pthread_mutex_lock(&bundle_lock);
    b->gen = ++generation;
    struct tlsbox_bundle *old = current;
    current = b;
    pthread_mutex_unlock(&bundle_lock);
    if (old)
        bundle_unref(old);
    return 0;
}

void tlsbox_mock_bundle_clear(void)
{
    pthread_mutex_lock(&bundle_lock);
    struct tlsbox_bundle *old = current;
    current = NULL;
    pthread_mutex_unlock(&bundle_lock);
    if (old)
        bundle_unref(old);
}

int tlsbox_mock_bundles_alive(void)
{
    return atomic_load(&alive);
}

struct tlsbox_bundle *tlsbox_mockp_bundle_acquire(void)
{
    pthread_mutex_lock(&bundle_lock);
    struct tlsbox_bundle *b = current;
    if (b)
        atomic_fetch_add(&b->refs, 1);
    pthread_mutex_unlock(&bundle_lock);
    return b;
}

void tlsbox_mockp_bundle_release(struct tlsbox_bundle *b)
{
    if (b)
        bundle_unref(b);
}

int tlsbox_mockp_bundle_session_setup(const struct tlsbox_bundle *b, gnutls_session_t s)
{
    static const gnutls_datum_t protos[2] = {{(unsigned char *)"h2", 2},
                                             {(unsigned char *)"http/1.1", 8}};
    if (!b) /* none acquired: as core/tls_bundle.c answers */
        return -EINVAL;
    int r = gnutls_priority_set(s, b->prio);
    if (r >= 0)
        r = gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, b->cred);
    if (r >= 0)
        r = gnutls_session_ticket_enable_server(s, &b->ticket);
    if (r >= 0)
        r = gnutls_alpn_set_protocols(s, protos, 2, GNUTLS_ALPN_SERVER_PRECEDENCE);
    return r < 0 ? -EINVAL : 0;
}

/* The mock bundle has one certificate: nothing to choose by address. */
int tlsbox_mockp_bundle_session_address(const struct tlsbox_bundle *b, gnutls_session_t s, int fd)
{
    (void)s, (void)fd;
    return b ? 0 : -EINVAL;
}

const char *tlsbox_mockp_bundle_hsts(const struct tlsbox_bundle *b)
{
    return b ? b->hsts : NULL;
}

uint64_t tlsbox_mockp_bundle_generation(const struct tlsbox_bundle *b)
{
    return b ? b->gen : 0;
}

/* ---- certificates ------------------------------------------------------------- */

static struct cert {
    char *name, *chain, *info;
} * certs;
static size_t ncerts;
static int installs;

int tlsbox_mock_cert_add(const char *name, const char *chain_pem, const char *info_json)
{
    if (!name || !chain_pem || !info_json)
        return -EINVAL;
    size_t i = 0;
    while (i < ncerts && strcmp(certs[i].name, name) != 0)
        i++;
    if (i == ncerts) {
        certs = tlsbox_xrealloc(certs, (ncerts + 1) * sizeof *certs);
        certs[ncerts++].name = tlsbox_xstrdup(name);
    } else {
        free(certs[i].chain);
        free(certs[i].info);
    }
    certs[i].chain = tlsbox_xstrdup(chain_pem);
    certs[i].info = tlsbox_xstrdup(info_json);
    return 0;
}

/* A store name as core/tls_cert.c takes it: 1-128 of A-Z a-z 0-9 . - _ *,
 * not starting with '.'. */
static bool cert_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    return n > 0 && n <= 128 && name[0] != '.' &&
           strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_*") == n;
}

/* The leaf's validity and, in *name (caller frees), the name the core
 * stores it under when none is given (core/tls.c): its first DNS name (else
 * its CN, else "imported"), "-rsa" added for an RSA key.  -EINVAL for a
 * chain that does not parse. */
static int leaf_info(const char *chain, time_t *nb, time_t *na, char **name)
{
    gnutls_x509_crt_t crt;
    gnutls_datum_t d = {(unsigned char *)chain, (unsigned)strlen(chain)};
    char first[512] = "";
    if (gnutls_x509_crt_init(&crt) < 0)
        return -ENOMEM;
    int r = gnutls_x509_crt_import(crt, &d, GNUTLS_X509_FMT_PEM);
    if (r >= 0) {
        *nb = gnutls_x509_crt_get_activation_time(crt);
        *na = gnutls_x509_crt_get_expiration_time(crt);
        for (unsigned seq = 0; !first[0]; seq++) {
            size_t size = sizeof(first) - 1;
            unsigned type;
            int s = gnutls_x509_crt_get_subject_alt_name2(crt, seq, first, &size, &type, NULL);
            if (s == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
                break;
            if (s >= 0 && type == GNUTLS_SAN_DNSNAME)
                first[size] = '\0';
            else
                first[0] = '\0';
        }
        size_t size = sizeof(first);
        if (!first[0] &&
            gnutls_x509_crt_get_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, 0, first, &size) < 0)
            first[0] = '\0';
        bool rsa = gnutls_x509_crt_get_pk_algorithm(crt, NULL) == GNUTLS_PK_RSA;
        *name =
            tlsbox_xasprintf("%s%s", cert_name_ok(first) ? first : "imported", rsa ? "-rsa" : "");
    }
    gnutls_x509_crt_deinit(crt);
    return r < 0 ? -EINVAL : 0;
}

int tlsbox_mockp_cert_install(struct tlsbox_plugin *self, const struct tlsbox_cert_install *in,
                              char **err)
{
    static const char *const sources[] = {"internal", "import", "acme"};
    time_t nb, na;
    char *derived = NULL, *why = NULL;
    (void)self;
    if (err)
        *err = NULL;
    if (!in || !in->chain_pem || !in->key_pem || in->source >= TLSBOX_CERT_SOURCE_MAX ||
        leaf_info(in->chain_pem, &nb, &na, &derived) < 0)
        why = tlsbox_xstrdup("mock host: a PEM chain and a key are needed");
    /* The core's checks of the name (core/tls.c). */
    const char *name = in && in->name && *in->name ? in->name : derived;
    if (!why && !cert_name_ok(name))
        why = tlsbox_xasprintf("certificate name '%s' is not valid (1-128 of A-Z a-z 0-9 . - _ *)",
                               name);
    if (!why && strcmp(name, "internal") == 0 && in->source != TLSBOX_CERT_INTERNAL)
        why = tlsbox_xstrdup("certificate name 'internal' is reserved for the internal CA's leaf");
    if (why) {
        if (err)
            *err = why;
        else
            free(why);
        free(derived);
        return -EINVAL;
    }
    char *q = tlsbox_mockp_json_string(name),
         *ari = in->ari_id ? tlsbox_mockp_json_string(in->ari_id) : NULL;
    char *info =
        tlsbox_xasprintf("{\"name\":%s,\"source\":\"%s\",\"status\":\"active\","
                         "\"not_before\":%lld,\"not_after\":%lld,\"ari_id\":%s}",
                         q, sources[in->source], (long long)nb, (long long)na, ari ? ari : "null");
    tlsbox_mock_cert_add(name, in->chain_pem, info);
    free(info);
    free(ari);
    free(derived);
    /* The core's event data (core/tls.c). */
    char *data = tlsbox_xasprintf("{\"name\":%s,\"source\":\"%s\"}", q, sources[in->source]);
    free(q);
    installs++;
    tlsbox_mockp_event_publish(NULL, "cert.changed", data);
    free(data);
    return 0;
}

char *tlsbox_mockp_cert_list(struct tlsbox_plugin *self)
{
    (void)self;
    char *out = tlsbox_xstrdup("[");
    for (size_t i = 0; i < ncerts; i++) {
        char *next = tlsbox_xasprintf("%s%s%s", out, i ? "," : "", certs[i].info);
        free(out);
        out = next;
    }
    char *done = tlsbox_xasprintf("%s]", out);
    free(out);
    return done;
}

int tlsbox_mockp_cert_get(struct tlsbox_plugin *self, const char *name, char **chain_pem,
                          char **info_json)
{
    (void)self;
    *chain_pem = NULL;
    if (info_json)
        *info_json = NULL;
    for (size_t i = 0; name && i < ncerts; i++)
        if (strcmp(certs[i].name, name) == 0) {
            *chain_pem = tlsbox_xstrdup(certs[i].chain);
            if (info_json)
                *info_json = tlsbox_xstrdup(certs[i].info);
            return 0;
        }
    return -ENOENT;
}

int tlsbox_mock_cert_installs(void)
{
    return installs;
}

void tlsbox_mockp_certs_reset(void)
{
    for (size_t i = 0; i < ncerts; i++) {
        free(certs[i].name);
        free(certs[i].chain);
        free(certs[i].info);
    }
    free(certs);
    certs = NULL;
    ncerts = 0;
    installs = 0;
}
