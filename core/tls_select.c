/* Which certificate a TLS client gets, by address and by wildcard (see tls_select.h). */
#include "core/tls_select.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/xalloc.h"

/* One certificate's names, read from its sans. */
struct names {
    struct tls_addr ips[TLS_ADDR_MAX];
    size_t nips;
    json_t *sans;
};

static char *lower_dup(const char *s)
{
    char *d = xstrdup(s);
    for (char *p = d; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return d;
}

/* Whether @p nm has DNS name @p wild (any case). */
static bool names_wild(const struct names *nm, const char *wild)
{
    size_t i;
    json_t *e;
    json_array_foreach(nm->sans, i, e)
    {
        const char *s = json_string_value(e);
        if (s && strcasecmp(s, wild) == 0)
            return true;
    }
    return false;
}

/* Credentials with the certificates of rank 0 first, then those of rank 1,
 * and so on up to @p nranks - 1, each group in the bundle's order; NULL with
 * *err on failure. */
static gnutls_certificate_credentials_t cred_in_order(const unsigned char *rank, size_t n,
                                                      unsigned nranks, tls_select_load_fn load,
                                                      void *arg, char **err)
{
    gnutls_certificate_credentials_t cred;
    int r = gnutls_certificate_allocate_credentials(&cred);
    if (r < 0) {
        *err = xstrdup(gnutls_strerror(r));
        return NULL;
    }
    gnutls_certificate_set_flags(cred, GNUTLS_CERTIFICATE_API_V2);
    for (unsigned pass = 0; pass < nranks; pass++)
        for (size_t j = 0; j < n; j++)
            if (rank[j] == pass && load(arg, cred, j, err) < 0) {
                gnutls_certificate_free_credentials(cred);
                return NULL;
            }
    return cred;
}

/* Credentials with the certificates @p first marks first, then the others,
 * each group in the bundle's order; NULL with *err on failure. */
static gnutls_certificate_credentials_t
cred_with_first(const bool *first, size_t n, tls_select_load_fn load, void *arg, char **err)
{
    unsigned char *rank = xcalloc(n, 1);
    for (size_t j = 0; j < n; j++)
        rank[j] = first[j] ? 0 : 1;
    gnutls_certificate_credentials_t cred = cred_in_order(rank, n, 2, load, arg, err);
    free(rank);
    return cred;
}

/* Whether the certificates @p first marks already come first in the bundle. */
static bool already_first(const bool *first, size_t n)
{
    size_t j = 0;
    while (j < n && first[j])
        j++;
    while (j < n && !first[j])
        j++;
    return j == n;
}

/*
 * Make @p p's credentials when the certificates @p first marks do not
 * already lead the bundle: GnuTLS gives a client the first certificate whose
 * key it can use, so with an ECDSA one first, an RSA-only client would get
 * the bundle's first RSA certificate, not the RSA one for its name.  False
 * (logged) when that fails.
 */
static bool pref_cred(struct tls_select_pref *p, const bool *first, size_t n,
                      tls_select_load_fn load, void *arg, const char *what)
{
    if (already_first(first, n))
        return true;
    char *err = NULL;
    p->cred = cred_with_first(first, n, load, arg, &err);
    if (!p->cred)
        log_warn("tls: clients of %s get the first certificate: %s", what,
                 err ? err : "out of memory");
    free(err);
    return p->cred != NULL;
}

static void build_addresses(struct tls_select *s, const struct tls_select_cert *certs,
                            const struct names *nm, size_t n, bool *first, tls_select_load_fn load,
                            void *arg)
{
    struct tls_addr failed[TLS_ADDR_MAX];
    size_t nfailed = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < nm[i].nips && s->naddrs < TLS_ADDR_MAX; k++) {
            const struct tls_addr *a = &nm[i].ips[k];
            bool seen = tls_addr_in(a, failed, nfailed);
            for (size_t j = 0; j < s->naddrs && !seen; j++)
                seen = tls_addr_in(a, &s->addrs[j].addr, 1);
            if (seen)
                continue; /* certificate i is not the first naming it */
            struct tls_select_pref p = {.addr = *a};
            for (size_t j = 0; j < n; j++)
                first[j] = tls_addr_in(a, nm[j].ips, nm[j].nips);
            char text[64];
            if (!pref_cred(&p, first, n, load, arg, tls_addr_text(a, text, sizeof(text)))) {
                if (nfailed < TLS_ADDR_MAX)
                    failed[nfailed++] = *a;
                continue;
            }
            p.name = xstrdup(certs[i].name);
            s->naddr_creds += p.cred != NULL;
            s->addrs[s->naddrs++] = p;
        }
    }
}

static void build_wildcards(struct tls_select *s, const struct tls_select_cert *certs,
                            const struct names *nm, size_t n, bool *first, tls_select_load_fn load,
                            void *arg)
{
    const char *failed[TLS_WILD_MAX];
    size_t nfailed = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k;
        json_t *e;
        json_array_foreach(nm[i].sans, k, e)
        {
            const char *w = json_string_value(e);
            if (!w || strncmp(w, "*.", 2) != 0 || s->nwilds == TLS_WILD_MAX)
                continue;
            bool seen = false;
            for (size_t j = 0; j < nfailed && !seen; j++)
                seen = strcasecmp(failed[j], w) == 0;
            for (size_t j = 0; j < s->nwilds && !seen; j++)
                seen = strcasecmp(s->wilds[j].wild, w) == 0;
            if (seen)
                continue;
            struct tls_select_pref p = {.addr = {{0}, 0}};
            for (size_t j = 0; j < n; j++)
                first[j] = names_wild(&nm[j], w);
            if (!pref_cred(&p, first, n, load, arg, w)) {
                if (nfailed < TLS_WILD_MAX)
                    failed[nfailed++] = w; /* in nm[i].sans, alive until the build ends */
                continue;
            }
            p.wild = lower_dup(w);
            p.name = xstrdup(certs[i].name);
            s->nwild_creds += p.cred != NULL;
            s->wilds[s->nwilds++] = p;
        }
    }
}

/* Whether @p s is an IPv4 or IPv6 address: no SNI names one (RFC 6066). */
static bool is_address(const char *s)
{
    unsigned char buf[16];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* The credentials of an earlier name that put the same certificates first
 * (names of one certificate share them), or NULL.  @p vecs holds each
 * name's @p first, @p n entries apiece. */
static gnutls_certificate_credentials_t name_cred_like(const struct tls_select *s, const bool *vecs,
                                                       const bool *first, size_t n)
{
    for (size_t k = 0; k < s->nnames; k++)
        if (s->names[k].cred && memcmp(vecs + k * n, first, n * sizeof(*first)) == 0)
            return s->names[k].cred;
    return NULL;
}

/*
 * GnuTLS finds a name only spelt as the certificate spells it, byte for
 * byte; a client may send it in any case (RFC 6066 section 3), and would
 * then get the first certificate.  So each name gets credentials that put
 * the certificates naming it first, shared by the names of the same
 * certificates (one for all of the internal leaf's names).
 */
static void build_names(struct tls_select *s, const struct tls_select_cert *certs,
                        const struct names *nm, size_t n, bool *first, tls_select_load_fn load,
                        void *arg)
{
    bool *vecs = xcalloc(TLS_NAME_MAX * n, sizeof(*vecs));
    for (size_t i = 0; i < n; i++) {
        size_t k;
        json_t *e;
        json_array_foreach(nm[i].sans, k, e)
        {
            const char *w = json_string_value(e);
            if (!w || w[0] == '*' || is_address(w) || s->nnames == TLS_NAME_MAX)
                continue;
            bool seen = false;
            for (size_t j = 0; j < s->nnames && !seen; j++)
                seen = strcasecmp(s->names[j].wild, w) == 0;
            if (seen)
                continue;
            struct tls_select_pref p = {.addr = {{0}, 0}};
            for (size_t j = 0; j < n; j++)
                first[j] = names_wild(&nm[j], w);
            if ((p.cred = name_cred_like(s, vecs, first, n)) != NULL)
                p.shared = true;
            else if (!pref_cred(&p, first, n, load, arg, w))
                continue; /* its clients get the first certificate, as before */
            memcpy(vecs + s->nnames * n, first, n * sizeof(*first));
            p.wild = lower_dup(w);
            p.name = xstrdup(certs[i].name);
            s->nname_creds += p.cred != NULL;
            s->names[s->nnames++] = p;
        }
    }
    free(vecs);
}

static void build_exact(struct tls_select *s, const struct names *nm, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t k;
        json_t *e;
        json_array_foreach(nm[i].sans, k, e)
        {
            const char *name = json_string_value(e); /* addresses too: no SNI matches one */
            if (!name || name[0] == '*')
                continue;
            s->exact = xrealloc(s->exact, (s->nexact + 1) * sizeof(*s->exact));
            s->exact[s->nexact++] = xstrdup(name);
        }
    }
}

/*
 * The variants of credentials whose certificates @p first marks come first
 * (NULL: none, the bundle's own), for each set of curves of
 * s->curve_sets: first those it marks that a client listing only those
 * curves can use, then the rest it marks, then the others likewise.  A
 * variant in the same order as its credentials is NULL (they serve).
 */
static void curve_variants(const struct tls_select *s, const bool *first, const unsigned *curve,
                           size_t n, tls_select_load_fn load, void *arg,
                           gnutls_certificate_credentials_t *out)
{
    unsigned char *rank = xcalloc(n, 1);
    for (size_t k = 0; k < s->ncurve_sets; k++) {
        /* In the credentials' order already: in each of their two groups,
         * no certificate the client can use after one it cannot. */
        bool sorted = true, seen_unusable[2] = {false, false};
        for (size_t j = 0; j < n; j++) {
            bool usable = curve[j] == 0 || (curve[j] & s->curve_sets[k]) != 0;
            unsigned group = first && !first[j];
            rank[j] = (unsigned char)(2 * group + !usable);
            if (usable && seen_unusable[group])
                sorted = false;
            seen_unusable[group] |= !usable;
        }
        char *err = NULL;
        if (!sorted && !(out[k] = cred_in_order(rank, n, 4, load, arg, &err)))
            log_warn("tls: TLS 1.2 clients with fewer curves get the certificate of others: %s",
                     err ? err : "out of memory");
        free(err);
    }
    free(rank);
}

/* The TLS_CURVE_* bit of a certificate of key type @p key_type, 0 when not ECDSA. */
static unsigned key_curve(const char *key_type)
{
    if (!key_type)
        return 0;
    if (strcmp(key_type, "ecdsa-p256") == 0)
        return TLS_CURVE_P256;
    if (strcmp(key_type, "ecdsa-p384") == 0)
        return TLS_CURVE_P384;
    if (strcmp(key_type, "ecdsa-p521") == 0)
        return TLS_CURVE_P521;
    return 0;
}

/* With certificates on more than one curve: the proper subsets of those
 * curves, and the variants of the bundle's credentials and of each
 * address's, wildcard's and name's for them. */
static void build_curves(struct tls_select *s, const struct tls_select_cert *certs,
                         const struct names *nm, size_t n, bool *first, tls_select_load_fn load,
                         void *arg)
{
    unsigned *curve = xcalloc(n, sizeof(*curve));
    for (size_t j = 0; j < n; j++)
        s->curves |= curve[j] = key_curve(certs[j].key_type);
    for (unsigned m = 1; m < s->curves; m++)
        if ((m & ~s->curves) == 0 && s->ncurve_sets < TLS_CURVE_SETS_MAX)
            s->curve_sets[s->ncurve_sets++] = m;
    if (s->ncurve_sets == 0)
        goto out;
    curve_variants(s, NULL, curve, n, load, arg, s->main_by_curve);
    for (size_t i = 0; i < s->naddrs; i++) {
        if (!s->addrs[i].cred)
            continue;
        for (size_t j = 0; j < n; j++)
            first[j] = tls_addr_in(&s->addrs[i].addr, nm[j].ips, nm[j].nips);
        curve_variants(s, first, curve, n, load, arg, s->addrs[i].by_curve);
    }
    for (size_t i = 0; i < s->nwilds + s->nnames; i++) {
        struct tls_select_pref *p = i < s->nwilds ? &s->wilds[i] : &s->names[i - s->nwilds];
        if (!p->cred || p->shared)
            continue;
        for (size_t j = 0; j < n; j++)
            first[j] = names_wild(&nm[j], p->wild);
        curve_variants(s, first, curve, n, load, arg, p->by_curve);
    }
    /* A name sharing an earlier name's credentials shares their variants. */
    for (size_t i = 0; i < s->nnames; i++)
        for (size_t k = 0; s->names[i].shared && k < i; k++)
            if (!s->names[k].shared && s->names[k].cred == s->names[i].cred)
                memcpy(s->names[i].by_curve, s->names[k].by_curve, sizeof(s->names[i].by_curve));
out:
    free(curve);
}

void tls_select_build(struct tls_select *s, const struct tls_select_cert *certs, size_t n,
                      tls_select_load_fn load, void *arg)
{
    if (n == 0)
        return;
    struct names *nm = xcalloc(n, sizeof(*nm));
    bool *first = xcalloc(n, sizeof(*first));
    for (size_t i = 0; i < n; i++) {
        nm[i].nips = tls_addr_from_sans(certs[i].sans_json, nm[i].ips, TLS_ADDR_MAX);
        nm[i].sans = certs[i].sans_json ? json_loads(certs[i].sans_json, 0, NULL) : NULL;
    }
    build_addresses(s, certs, nm, n, first, load, arg);
    build_wildcards(s, certs, nm, n, first, load, arg);
    build_names(s, certs, nm, n, first, load, arg);
    build_curves(s, certs, nm, n, first, load, arg);
    if (s->nwilds || s->nnames)
        build_exact(s, nm, n);
    for (size_t i = 0; i < n; i++)
        json_decref(nm[i].sans);
    free(nm);
    free(first);
}

void tls_select_set_dh(struct tls_select *s, gnutls_dh_params_t dh)
{
    for (size_t i = 0; dh && i < s->naddrs; i++)
        if (s->addrs[i].cred)
            gnutls_certificate_set_dh_params(s->addrs[i].cred, dh);
    for (size_t i = 0; dh && i < s->nwilds; i++)
        if (s->wilds[i].cred)
            gnutls_certificate_set_dh_params(s->wilds[i].cred, dh);
    for (size_t i = 0; dh && i < s->nnames; i++)
        if (s->names[i].cred && !s->names[i].shared)
            gnutls_certificate_set_dh_params(s->names[i].cred, dh);
    for (size_t k = 0; dh && k < s->ncurve_sets; k++) {
        if (s->main_by_curve[k])
            gnutls_certificate_set_dh_params(s->main_by_curve[k], dh);
        for (size_t i = 0; i < s->naddrs; i++)
            if (s->addrs[i].by_curve[k])
                gnutls_certificate_set_dh_params(s->addrs[i].by_curve[k], dh);
        for (size_t i = 0; i < s->nwilds; i++)
            if (s->wilds[i].by_curve[k])
                gnutls_certificate_set_dh_params(s->wilds[i].by_curve[k], dh);
        for (size_t i = 0; i < s->nnames; i++)
            if (s->names[i].by_curve[k] && !s->names[i].shared)
                gnutls_certificate_set_dh_params(s->names[i].by_curve[k], dh);
    }
}

static void pref_free(struct tls_select_pref *p)
{
    if (p->cred && !p->shared)
        gnutls_certificate_free_credentials(p->cred);
    for (size_t k = 0; k < TLS_CURVE_SETS_MAX && !p->shared; k++)
        if (p->by_curve[k])
            gnutls_certificate_free_credentials(p->by_curve[k]);
    free(p->wild);
    free(p->name);
}

void tls_select_free(struct tls_select *s)
{
    for (size_t i = 0; i < s->naddrs; i++)
        pref_free(&s->addrs[i]);
    for (size_t i = 0; i < s->nwilds; i++)
        pref_free(&s->wilds[i]);
    for (size_t i = 0; i < s->nnames; i++)
        pref_free(&s->names[i]);
    for (size_t i = 0; i < s->nexact; i++)
        free(s->exact[i]);
    free(s->exact);
    for (size_t k = 0; k < s->ncurve_sets; k++)
        if (s->main_by_curve[k])
            gnutls_certificate_free_credentials(s->main_by_curve[k]);
    memset(s, 0, sizeof(*s));
}

bool tls_select_owns(const struct tls_select *s, const void *cred)
{
    for (size_t i = 0; i < s->naddrs; i++)
        if (s->addrs[i].cred && (const void *)s->addrs[i].cred == cred)
            return true;
    for (size_t i = 0; i < s->nwilds; i++)
        if (s->wilds[i].cred && (const void *)s->wilds[i].cred == cred)
            return true;
    for (size_t i = 0; i < s->nnames; i++)
        if (s->names[i].cred && (const void *)s->names[i].cred == cred)
            return true;
    for (size_t k = 0; k < s->ncurve_sets; k++) {
        if (s->main_by_curve[k] && (const void *)s->main_by_curve[k] == cred)
            return true;
        for (size_t i = 0; i < s->naddrs; i++)
            if (s->addrs[i].by_curve[k] && (const void *)s->addrs[i].by_curve[k] == cred)
                return true;
        for (size_t i = 0; i < s->nwilds; i++)
            if (s->wilds[i].by_curve[k] && (const void *)s->wilds[i].by_curve[k] == cred)
                return true;
        for (size_t i = 0; i < s->nnames; i++)
            if (s->names[i].by_curve[k] && (const void *)s->names[i].by_curve[k] == cred)
                return true;
    }
    return false;
}

gnutls_certificate_credentials_t tls_select_by_address(const struct tls_select *s,
                                                       const struct tls_addr *a)
{
    for (size_t i = 0; i < s->naddrs; i++)
        if (s->addrs[i].cred && tls_addr_in(a, &s->addrs[i].addr, 1))
            return s->addrs[i].cred;
    return NULL;
}

/*
 * @p sni as the name it asks for, in lower case into @p out: one trailing
 * dot dropped ("www.example.org." is the same host; RFC 6066 forbids the
 * dot but some clients send it, and nginx drops it too).  Returns whether
 * it was dropped, false for a name too long.  "." and "a.example.." keep
 * their dots: they name no host and match nothing.
 */
static bool sni_lower(const char *sni, char out[256], bool *dotted)
{
    size_t len = strlen(sni);
    *dotted = false;
    if (len == 0 || len >= 256)
        return false;
    if (len >= 2 && sni[len - 1] == '.' && sni[len - 2] != '.') {
        *dotted = true;
        len--;
    }
    for (size_t i = 0; i < len; i++)
        out[i] = (char)tolower((unsigned char)sni[i]);
    out[len] = 0;
    return true;
}

gnutls_certificate_credentials_t tls_select_by_name(const struct tls_select *s,
                                                    gnutls_certificate_credentials_t main,
                                                    const char *sni)
{
    if ((s->nwilds == 0 && s->nnames == 0) || !sni)
        return NULL;
    char lower[256];
    bool dotted;
    if (!sni_lower(sni, lower, &dotted))
        return NULL;
    /* GnuTLS compares the SNI as sent: with a dot it finds no certificate. */
    for (size_t i = 0; i < s->nexact && !dotted; i++)
        if (strcmp(s->exact[i], sni) == 0)
            return NULL; /* spelt alike: GnuTLS finds it in any order */
    for (size_t i = 0; i < s->nnames; i++)
        if (strcmp(s->names[i].wild, lower) == 0)
            return s->names[i].cred ? s->names[i].cred : main;
    for (size_t i = 0; i < s->nexact; i++)
        if (strcasecmp(s->exact[i], lower) == 0)
            return NULL; /* beyond TLS_NAME_MAX: an exact name still wins */
    /* A wildcard stands for one whole label (RFC 6125 section 6.4.3). */
    const char *dot = strchr(lower, '.');
    if (!dot || dot == lower)
        return NULL;
    for (size_t i = 0; i < s->nwilds; i++)
        if (strcmp(s->wilds[i].wild + 2, dot + 1) == 0)
            return s->wilds[i].cred ? s->wilds[i].cred : main;
    return NULL;
}

/* The variants of the credentials @p cred of @p s (@p main: the bundle's),
 * or NULL when they are none of its. */
static gnutls_certificate_credentials_t const *variants_of(const struct tls_select *s,
                                                           gnutls_certificate_credentials_t main,
                                                           gnutls_certificate_credentials_t cred)
{
    if (cred == main)
        return s->main_by_curve;
    for (size_t i = 0; i < s->naddrs; i++)
        if (s->addrs[i].cred == cred)
            return s->addrs[i].by_curve;
    for (size_t i = 0; i < s->nwilds; i++)
        if (s->wilds[i].cred == cred)
            return s->wilds[i].by_curve;
    for (size_t i = 0; i < s->nnames; i++)
        if (s->names[i].cred == cred)
            return s->names[i].by_curve;
    return NULL;
}

gnutls_certificate_credentials_t tls_select_by_curve(const struct tls_select *s,
                                                     gnutls_certificate_credentials_t main,
                                                     gnutls_certificate_credentials_t cred,
                                                     unsigned curves)
{
    unsigned usable = curves & s->curves;
    gnutls_certificate_credentials_t const *v = variants_of(s, main, cred);
    if (!v || usable == 0 || usable == s->curves)
        return NULL;
    for (size_t k = 0; k < s->ncurve_sets; k++)
        if (s->curve_sets[k] == usable)
            return v[k];
    return NULL;
}

static json_t *describe(const struct tls_select_pref *p, size_t n, bool addr)
{
    json_t *o = json_object();
    for (size_t i = 0; i < n; i++) {
        char text[64];
        json_object_set_new(o, addr ? tls_addr_text(&p[i].addr, text, sizeof(text)) : p[i].wild,
                            json_string(p[i].name));
    }
    return o;
}

json_t *tls_select_describe_addresses(const struct tls_select *s)
{
    return describe(s->addrs, s->naddrs, true);
}

json_t *tls_select_describe_wildcards(const struct tls_select *s)
{
    return describe(s->wilds, s->nwilds, false);
}
