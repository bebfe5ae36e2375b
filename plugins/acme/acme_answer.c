/*
 * Answering the challenges the site's HTTP port does not: tls-alpn-01 (the
 * core serves the validation certificate on the HTTPS port, host ABI 1.3)
 * and dns-01 (a TXT record put on the box's DNS server by an RFC 2136
 * update signed with TSIG, e.g. BIND with allow-update or update-policy).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gnutls/crypto.h>

#include "plugins/acme/acme_dns.h"
#include "plugins/acme/acme_plugin.h"

/* How long a dns-01 record may take to show on the server it was given to. */
#define DNS_VISIBLE_MS 30000
#define DNS_TTL 60
/* The limit of each step of a put or a withdrawal once the daemon stops,
 * which waits for it: a server that takes the connection and never answers
 * would otherwise hold the stop for the client's default 10 s a record
 * (acme_dns_conf.stop: also a step already waiting when the stop comes). */
#define DNS_STOPPING_MS 2000
/* The limit of a check's withdrawal of the records an earlier run left
 * (acme_answer_leftovers): it comes before the check's own work. */
#define DNS_LEFTOVERS_MS 10000
#define DNS_LEFTOVERS_MAX 64

/* The dns-01 settings, read when used (they are few and rarely used). */
struct dns_settings {
    char *server, *zone, *alias, *resolver, *key, *alg, *secret;
    long wait_seconds;
    struct acme_dns_conf conf;
};

static char *setting(struct acme *a, const char *key)
{
    char *v = a->host->setting_get(a->self, key);
    return v ? v : tlsbox_xstrdup("");
}

static void dns_settings_conf(struct dns_settings *d)
{
    d->conf = (struct acme_dns_conf){.server = d->server,
                                     .zone = d->zone,
                                     .key_name = d->key,
                                     .key_alg = d->alg,
                                     .key_secret = d->secret};
}

/* Every question and update gives up DNS_STOPPING_MS after a stop. */
static void dns_conf_stop(struct acme *a, struct acme_dns_conf *c)
{
    c->stop = &a->stopping;
    c->stop_ms = DNS_STOPPING_MS;
}

static void dns_settings_load(struct acme *a, struct dns_settings *d)
{
    d->server = setting(a, "dns_server");
    d->zone = setting(a, "dns_zone");
    d->alias = setting(a, "dns_alias");
    d->resolver = setting(a, "dns_resolver");
    d->key = setting(a, "dns_tsig_key");
    d->alg = setting(a, "dns_tsig_algorithm");
    d->secret = setting(a, "dns_tsig_secret");
    d->wait_seconds = (long)a->host->setting_get_int(a->self, "dns_wait_seconds", 0);
    dns_settings_conf(d);
}

static void dns_settings_copy(struct dns_settings *to, const struct dns_settings *from)
{
    to->server = tlsbox_xstrdup(from->server);
    to->zone = tlsbox_xstrdup(from->zone);
    to->alias = tlsbox_xstrdup(from->alias);
    to->resolver = tlsbox_xstrdup(from->resolver);
    to->key = tlsbox_xstrdup(from->key);
    to->alg = tlsbox_xstrdup(from->alg);
    to->secret = tlsbox_xstrdup(from->secret);
    to->wait_seconds = from->wait_seconds;
    dns_settings_conf(to);
}

static void dns_settings_free(struct dns_settings *d)
{
    free(d->server);
    free(d->zone);
    free(d->alias);
    free(d->resolver);
    free(d->key);
    free(d->alg);
    tlsbox_wipe_free_str(d->secret);
}

/* Which of the four settings dns-01 needs are empty, or NULL when none is. */
static char *dns_missing(const struct dns_settings *d)
{
    char *m = NULL;
    const char *names[] = {"acme.dns_server", "acme.dns_zone", "acme.dns_tsig_key",
                           "acme.dns_tsig_secret"};
    const char *vals[] = {d->server, d->zone, d->key, d->secret};
    for (int i = 0; i < 4; i++) {
        if (*vals[i])
            continue;
        char *n = tlsbox_xasprintf("%s%s%s", m ? m : "", m ? ", " : "", names[i]);
        free(m);
        m = n;
    }
    return m;
}

unsigned acme_answer_types(struct acme *a)
{
    unsigned t = 0;
    if (TLSBOX_HOST_HAS(a->host, tls_alpn_challenge_put))
        t |= ACME_CH_ALPN;
    struct dns_settings d;
    dns_settings_load(a, &d);
    char *missing = dns_missing(&d);
    if (!missing)
        t |= ACME_CH_DNS;
    free(missing);
    dns_settings_free(&d);
    return t;
}

/* The TXT value of a dns-01 answer (RFC 8555 section 8.4). */
static char *dns_value(const char *key_auth)
{
    unsigned char digest[32];
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, key_auth, strlen(key_auth), digest) < 0)
        return NULL;
    return acme_b64url(digest, sizeof(digest));
}

/*
 * Where @p identifier's dns-01 record goes, into *fqdn (malloc'd), and why
 * there into *via (static: "acme.dns_alias", "CNAME" or NULL for the name's
 * own _acme-challenge).  RFC 8555 section 8.4: the CA follows a CNAME at
 * _acme-challenge.NAME, so a name whose DNS takes no updates is pointed once
 * at a name in acme.dns_zone.  acme.dns_alias says where for every name; else
 * the resolver is asked, each time (a CNAME changed meanwhile is followed).
 * Returns 0, or -errno with *why saying what to mend.
 */
static int dns_record_find(struct acme *a, const struct dns_settings *d, const char *identifier,
                           char **fqdn, const char **via, char **why)
{
    *via = NULL;
    if (*d->alias) {
        if (!acme_dns_in_zone(d->alias, d->zone)) {
            *why =
                tlsbox_xasprintf("acme.dns_alias %s is not in acme.dns_zone %s", d->alias, d->zone);
            return -EINVAL;
        }
        *fqdn = tlsbox_xasprintf("_acme-challenge.%s", d->alias);
        *via = "acme.dns_alias";
        return 0;
    }
    char *name = tlsbox_xasprintf("_acme-challenge.%s", identifier), *target = NULL, *err = NULL;
    char *resolver =
        *d->resolver ? tlsbox_xstrdup(d->resolver) : acme_dns_system_resolver("/etc/resolv.conf");
    struct acme_dns_conf rc = {.server = resolver, .timeout_ms = 2000};
    dns_conf_stop(a, &rc);
    int n = resolver ? acme_dns_cname_follow(&rc, name, &target, &err) : 0;
    bool in_zone = acme_dns_in_zone(name, d->zone);
    int ret = 0;
    if (n == 1 && acme_dns_in_zone(target, d->zone)) {
        *fqdn = target;
        target = NULL;
        *via = "CNAME";
    } else if (n == 1) {
        *why = tlsbox_xasprintf("%s is a CNAME to %s, which is not in acme.dns_zone %s", name,
                                target, d->zone);
        ret = -EINVAL;
    } else if (!in_zone) {
        *why = n < 0 ? tlsbox_xasprintf("%s is not in acme.dns_zone %s, and where it points is "
                                        "unknown: %s",
                                        name, d->zone, err)
                     : tlsbox_xasprintf("%s is not in acme.dns_zone %s, nor a CNAME to a name "
                                        "in it (asked %s; or set acme.dns_alias)",
                                        name, d->zone, resolver ? resolver : "no resolver");
        ret = -EINVAL;
    } else {
        if (n < 0) /* in the zone: the record can go at the name itself */
            a->host->log(a->self, TLSBOX_LOG_WARN, "%s; the dns-01 record goes at %s itself", err,
                         name);
        *fqdn = name;
        name = NULL;
    }
    free(name);
    free(target);
    free(err);
    free(resolver);
    return ret;
}

/* A dns-01 record put: deleted from where it went, not from where a new
 * question might say now (a resolver down, a CNAME changed meanwhile), nor
 * from where the settings say now (acme.dns_server changed meanwhile): by
 * the server and zone it went to, with the key it was put with.  @c row is
 * its acme_dns_records row, deleted once the record is. */
struct acme_dns_put {
    char *identifier, *value, *fqdn;
    int64_t row;
    struct dns_settings d;
    struct acme_dns_put *next;
};

/* Write down a record about to be put, before a byte is sent: a tlsboxd
 * killed before it withdraws the record finds it at the next check. */
static int dns_row_add(struct acme *a, const struct dns_settings *d, const char *fqdn,
                       const char *value, int64_t *row)
{
    sqlite3 *db = a->host->store_open(a->self);
    int ret = db ? acme_store_dns_record_add(db, d->server, d->zone, fqdn, value, row) : -EIO;
    if (db)
        a->host->store_close(a->self, db);
    return ret;
}

static void dns_row_del(struct acme *a, int64_t row)
{
    sqlite3 *db = a->host->store_open(a->self);
    if (!db || acme_store_dns_record_del(db, row) < 0)
        a->host->log(a->self, TLSBOX_LOG_WARN,
                     "acme_dns_records: cannot delete row %lld (withdrawn again at the next check)",
                     (long long)row);
    if (db)
        a->host->store_close(a->self, db);
}

static void dns_put_free(struct acme_dns_put *p)
{
    free(p->identifier);
    free(p->value);
    free(p->fqdn);
    dns_settings_free(&p->d);
    free(p);
}

static void dns_put_remember(struct acme *a, const char *identifier, const char *value,
                             const char *fqdn, const struct dns_settings *d, int64_t row)
{
    struct acme_dns_put *p = tlsbox_xcalloc(1, sizeof(*p));
    p->identifier = tlsbox_xstrdup(identifier);
    p->value = tlsbox_xstrdup(value);
    p->fqdn = tlsbox_xstrdup(fqdn);
    p->row = row;
    dns_settings_copy(&p->d, d);
    pthread_mutex_lock(&a->chal_lock);
    p->next = a->dns_puts;
    a->dns_puts = p;
    pthread_mutex_unlock(&a->chal_lock);
}

/* The record of @p identifier with @p value, taken off the list (the caller
 * frees it with dns_put_free), or NULL when none was put. */
static struct acme_dns_put *dns_put_forget(struct acme *a, const char *identifier,
                                           const char *value)
{
    struct acme_dns_put *found = NULL;
    pthread_mutex_lock(&a->chal_lock);
    for (struct acme_dns_put **pp = &a->dns_puts; *pp; pp = &(*pp)->next) {
        struct acme_dns_put *p = *pp;
        if (strcmp(p->identifier, identifier) == 0 && strcmp(p->value, value) == 0) {
            *pp = p->next;
            found = p;
            break;
        }
    }
    pthread_mutex_unlock(&a->chal_lock);
    return found;
}

void acme_answer_forget_all(struct acme *a)
{
    while (a->dns_puts) {
        struct acme_dns_put *p = a->dns_puts;
        a->dns_puts = p->next;
        dns_put_free(p);
    }
}

char *acme_answer_dns_hint(struct acme *a)
{
    char *alias = setting(a, "dns_alias"), *hint = NULL;
    if (*alias)
        hint = tlsbox_xasprintf("(acme.dns_alias: the name's _acme-challenge must be a CNAME to "
                                "_acme-challenge.%s)",
                                alias);
    free(alias);
    return hint;
}

static bool sleep_ms(struct acme *a, unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    return !atomic_load(&a->stopping);
}

static int dns_put(struct acme *a, const char *identifier, const char *key_auth, char **why)
{
    struct dns_settings d;
    char *value = NULL, *fqdn = NULL, *missing;
    int ret;
    dns_settings_load(a, &d);
    if ((missing = dns_missing(&d))) {
        *why = tlsbox_xasprintf("dns-01 needs %s", missing);
        free(missing);
        ret = -ENOTSUP;
        goto out;
    }
    if (!(value = dns_value(key_auth))) {
        ret = -EIO;
        goto out;
    }
    const char *via;
    if ((ret = dns_record_find(a, &d, identifier, &fqdn, &via, why)) < 0)
        goto out;
    int64_t row;
    if ((ret = dns_row_add(a, &d, fqdn, value, &row)) < 0) {
        /* Not put: a record no restart could find again might stay for ever. */
        *why = tlsbox_xstrdup("cannot write it down in acme_dns_records (the store)");
        goto out;
    }
    dns_conf_stop(a, &d.conf);
    ret = acme_dns_update(&d.conf, true, fqdn, value, DNS_TTL, why);
    /* No answer, or one that cannot be read or trusted, after the update
     * was sent: the server may have added the record all the same, so it
     * is withdrawn too (deleting a record that is not there is a success). */
    if (ret == 0 || ret == -ETIMEDOUT || ret == -ECONNRESET || ret == -EPROTO)
        dns_put_remember(a, identifier, value, fqdn, &d, row);
    else
        dns_row_del(a, row);
    /* Cut short by a stop: no failure of the challenge, which the CA has
     * not been asked to check (as a stop in the wait below). */
    if (ret < 0 && atomic_load(&a->stopping))
        ret = -ECANCELED;
    if (ret < 0)
        goto out;
    if (via)
        a->host->log(a->self, TLSBOX_LOG_INFO,
                     "_acme-challenge.%s: dns-01 record put at %s (%s) on %s", identifier, fqdn,
                     via, d.server);
    else
        a->host->log(a->self, TLSBOX_LOG_INFO, "%s: dns-01 record put on %s", fqdn, d.server);
    /* The CA asks the zone's servers; the one updated must say it first. */
    ret = -ETIMEDOUT;
    /* Short questions, and the whole wait bounded by the clock: a server
     * that takes connections and never answers costs 30 s, not 120 x 2 s. */
    d.conf.timeout_ms = 2000;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= DNS_VISIBLE_MS)
            break;
        char *e = NULL;
        int has = acme_dns_txt_has(&d.conf, fqdn, value, &e);
        if (has == 1) {
            ret = 0;
            break;
        }
        if (has < 0) {
            free(*why);
            *why = e;
        } else {
            free(e);
        }
        if (!sleep_ms(a, 250)) {
            ret = -ECANCELED;
            break;
        }
    }
    if (ret == -ETIMEDOUT && !*why)
        *why = tlsbox_xasprintf("%s: the record does not show on %s after %d s", fqdn, d.server,
                                DNS_VISIBLE_MS / 1000);
    if (ret < 0)
        goto out;
    free(*why);
    *why = NULL;
    /* Secondaries the update reaches by zone transfer: a wait the user sets. */
    for (long ms = d.wait_seconds * 1000; ms > 0 && ret == 0; ms -= 100)
        if (!sleep_ms(a, 100))
            ret = -ECANCELED;
out:
    free(fqdn);
    free(value);
    dns_settings_free(&d);
    return ret;
}

static void dns_del(struct acme *a, const char *identifier, const char *key_auth)
{
    char *value = dns_value(key_auth), *err = NULL;
    struct acme_dns_put *p = value ? dns_put_forget(a, identifier, value) : NULL;
    if (!p) {
        free(value); /* nothing was put */
        return;
    }
    struct acme_dns_conf conf = p->d.conf;
    dns_conf_stop(a, &conf);
    if (acme_dns_update(&conf, false, p->fqdn, value, 0, &err) < 0)
        a->host->log(a->self, TLSBOX_LOG_WARN,
                     "dns-01 record left behind: %s (withdrawn again at the next check)", err);
    else
        dns_row_del(a, p->row);
    free(err);
    free(value);
    dns_put_free(p);
}

/* Withdraw one record an earlier run left; true when it is gone. */
static bool dns_leftover_withdraw(struct acme *a, const struct dns_settings *d,
                                  const struct acme_dns_record *r)
{
    struct acme_dns_conf conf = d->conf;
    char *err = NULL;
    conf.server = r->server;
    conf.zone = r->zone;
    conf.timeout_ms = DNS_STOPPING_MS;
    dns_conf_stop(a, &conf);
    if (acme_dns_update(&conf, false, r->fqdn, r->value, 0, &err) < 0) {
        a->host->log(a->self, TLSBOX_LOG_WARN,
                     "dns-01 record left by an earlier run not withdrawn: %s (tried again at the "
                     "next check)",
                     err);
        free(err);
        return false;
    }
    a->host->log(a->self, TLSBOX_LOG_INFO,
                 "dns-01 record left by an earlier run withdrawn: %s TXT \"%s\" on %s", r->fqdn,
                 r->value, r->server);
    return true;
}

void acme_answer_leftovers(struct acme *a)
{
    struct acme_dns_record *rows = NULL;
    size_t n = 0;
    sqlite3 *db = a->host->store_open(a->self);
    if (!db || acme_store_dns_records(db, DNS_LEFTOVERS_MAX, &rows, &n) < 0 || n == 0)
        goto out;
    /* From the server and zone each went to, with the key the settings
     * name now: the secret is kept in the settings only. */
    struct dns_settings d;
    dns_settings_load(a, &d);
    if (!*d.key || !*d.secret) {
        a->host->log(a->self, TLSBOX_LOG_WARN,
                     "%zu dns-01 record(s) left by an earlier run, first %s on %s: not withdrawn "
                     "without acme.dns_tsig_key and acme.dns_tsig_secret",
                     n, rows[0].fqdn, rows[0].server);
        dns_settings_free(&d);
        goto out;
    }
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (size_t i = 0; i < n && !atomic_load(&a->stopping); i++) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= DNS_LEFTOVERS_MS)
            break; /* the rest at the next check */
        if (dns_leftover_withdraw(a, &d, &rows[i]) && acme_store_dns_record_del(db, rows[i].id) < 0)
            a->host->log(a->self, TLSBOX_LOG_WARN, "acme_dns_records: cannot delete row %lld",
                         (long long)rows[i].id);
    }
    dns_settings_free(&d);
out:
    acme_dns_records_free(rows, n);
    if (db)
        a->host->store_close(a->self, db);
}

int acme_answer_put(void *arg, const char *type, const char *identifier, const char *key_auth,
                    char **why)
{
    struct acme *a = arg;
    *why = NULL;
    if (strcmp(type, "dns-01") == 0)
        return dns_put(a, identifier, key_auth, why);
    if (strcmp(type, "tls-alpn-01") != 0)
        return -ENOTSUP;
    if (!TLSBOX_HOST_HAS(a->host, tls_alpn_challenge_put)) {
        *why = tlsbox_xstrdup("this tlsboxd serves no tls-alpn-01 answers (host ABI < 1.3)");
        return -ENOTSUP;
    }
    unsigned char digest[32];
    if (gnutls_hash_fast(GNUTLS_DIG_SHA256, key_auth, strlen(key_auth), digest) < 0)
        return -EIO;
    return a->host->tls_alpn_challenge_put(a->self, identifier, digest);
}

void acme_answer_del(void *arg, const char *type, const char *identifier, const char *key_auth)
{
    struct acme *a = arg;
    if (strcmp(type, "dns-01") == 0)
        dns_del(a, identifier, key_auth);
    else if (strcmp(type, "tls-alpn-01") == 0 && TLSBOX_HOST_HAS(a->host, tls_alpn_challenge_del))
        a->host->tls_alpn_challenge_del(a->self, identifier);
}
