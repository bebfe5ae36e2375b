/*
 * The ACME plugin: descriptor, settings, hooks, and the http-01 answers the
 * site serves on /.well-known/acme-challenge/.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/acme/acme_plugin.h"

#define ACME_CHALLENGE_PREFIX "/.well-known/acme-challenge/"
/* A DNS server as acme_dns.h takes it: address or name, :port; [v6]:port. */
#define DNS_PORT_PATTERN                                                                           \
    ":0*([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
/* A bare IPv6 address has two colons or more; with one, it is host:port. */
#define DNS_HOST_PORT_PATTERN                                                                      \
    "^([A-Za-z0-9.-]+(" DNS_PORT_PATTERN ")?|[0-9a-fA-F]*:[0-9a-fA-F]*:[0-9a-fA-F:]*"              \
    "|\\[[0-9a-fA-F:]+\\](" DNS_PORT_PATTERN ")?)?$"

static const struct tlsbox_setting_def acme_settings[] = {
    {.key = "directory",
     .type = TLSBOX_SETTING_STRING,
     .default_value = ACME_LE_PRODUCTION,
     .pattern = "^(production|staging|https://[^[:space:]]+)$",
     .help = "ACME directory URL; 'production' or 'staging' for Let's Encrypt"},
    {.key = "domains",
     .type = TLSBOX_SETTING_LIST,
     .default_value = "",
     /* A host name, whose last label starts with a letter as every
      * top-level domain does (a wildcard: "*." before it, one label, RFC
      * 8555 section 7.1.3), or an IP address (RFC 8738: Let's Encrypt
      * issues for one with the shortlived profile): an IPv4 dotted quad, or
      * IPv6 text in lowercase (the pattern takes its shape; the address is
      * read with inet_pton when the order is made). */
     .pattern =
         "^((\\*\\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\\.)+[a-z]([-a-z0-9]{0,61}[a-z0-9])?"
         "|((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}"
         "(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])"
         "|([0-9a-f]{1,4}:){7}[0-9a-f]{1,4}|([0-9a-f]{1,4}:){1,7}:"
         "|([0-9a-f]{1,4}:){1,6}(:[0-9a-f]{1,4}){1}|([0-9a-f]{1,4}:){1,5}(:[0-9a-f]{1,4}){1,2}"
         "|([0-9a-f]{1,4}:){1,4}(:[0-9a-f]{1,4}){1,3}|([0-9a-f]{1,4}:){1,3}(:[0-9a-f]{1,4}){1,4}"
         "|([0-9a-f]{1,4}:){1,2}(:[0-9a-f]{1,4}){1,5}|[0-9a-f]{1,4}:(:[0-9a-f]{1,4}){1,6}"
         "|:(:[0-9a-f]{1,4}){1,7})$",
     /* The pattern bounds each label (63); only .max can bound the name:
      * a CA refuses every order holding a name over 253 characters. */
     .max = 253,
     .help = "Host names (lowercase; *.name for a wildcard, which needs dns-01) or IP "
             "addresses for one certificate (all as SANs; the first names it); empty = ACME off"},
    {.key = "email",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .pattern = "^([^@[:space:]]+@[^@[:space:]]+)?$",
     .help = "Contact address given to the CA (optional)"},
    {.key = "agree_tos",
     .type = TLSBOX_SETTING_BOOL,
     .default_value = "false",
     .help = "Agree to the CA's terms of service (required by most CAs)"},
    {.key = "key_type",
     .type = TLSBOX_SETTING_ENUM,
     .default_value = "ecdsa-p256",
     .choices = "ecdsa-p256|ecdsa-p384|rsa-2048|rsa-3072|ecdsa+rsa",
     .help = "Certificate key; ecdsa+rsa gets two certificates (P-256 and RSA-2048)"},
    {.key = "profile",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .pattern = "^[A-Za-z0-9._-]{0,64}$",
     .help = "Certificate profile to ask for when the CA lists profiles (e.g. shortlived)"},
    {.key = "eab_kid",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .pattern = "^[^[:space:]]{0,256}$",
     .help = "External account binding key id, for CAs that require one"},
    {.key = "eab_hmac",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .pattern = "^[A-Za-z0-9_=+/-]{0,512}$",
     .help = "External account binding HMAC key (base64url)",
     .flags = TLSBOX_SETTING_SECRET},
    {.key = "ca_file",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .pattern = "^(/[^[:space:]]*)?$",
     .help = "PEM file trusted for the CA's HTTPS (a private or test CA); empty = system"},
    {.key = "preferred_chain",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .pattern = "^[^\"]{0,128}$",
     .help = "Issuer common name of the root to prefer among alternate chains"},
    {.key = "challenge",
     .type = TLSBOX_SETTING_ENUM,
     .default_value = "auto",
     .choices = "auto|http-01|tls-alpn-01|dns-01",
     .help = "How the CA checks the names are ours: http-01 on the site's HTTP port (80), "
             "tls-alpn-01 on its HTTPS port (443, for a box whose port 80 is closed), "
             "dns-01 by a TXT record (acme.dns_*); auto = http-01 while site.http_port is on, "
             "else tls-alpn-01; another when the CA does not offer that one (a wildcard: "
             "dns-01), and the other of http-01 / tls-alpn-01 on the try after that one "
             "failed"},
    {.key = "dns_server",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .pattern = DNS_HOST_PORT_PATTERN,
     .help = "dns-01: the DNS server that takes RFC 2136 updates for acme.dns_zone "
             "(address or name, :port; e.g. 192.0.2.53 or [2001:db8::53]:5353)"},
    {.key = "dns_zone",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .pattern = "^(([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)?$",
     .max = 253,
     .help = "dns-01: the zone the _acme-challenge records go in (e.g. example.org)"},
    {.key = "dns_alias",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .pattern = "^(([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)?$",
     .max = 237,
     .help = "dns-01 for names whose DNS takes no updates: every record goes at "
             "_acme-challenge.ALIAS (a name in acme.dns_zone) instead; point each "
             "_acme-challenge.NAME there once with a CNAME (e.g. acme.example.org)"},
    {.key = "dns_resolver",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     .pattern = DNS_HOST_PORT_PATTERN,
     .help = "dns-01: the resolver asked where a CNAME at _acme-challenge.NAME points (the "
             "record then goes there, in acme.dns_zone; acme.dns_alias skips the question); "
             "empty = the first nameserver in /etc/resolv.conf"},
    {.key = "dns_tsig_key",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     /* A domain name (RFC 8945 4.2): no empty label, none over 63 bytes. */
     .pattern = "^(([A-Za-z0-9_-]{1,63}\\.)*[A-Za-z0-9_-]{1,63}\\.?)?$",
     .max = 253,
     .help = "dns-01: name of the TSIG key the server allows updates with (tsig-keygen NAME)"},
    {.key = "dns_tsig_algorithm",
     .type = TLSBOX_SETTING_ENUM,
     .default_value = "hmac-sha256",
     .choices = "hmac-sha256|hmac-sha512",
     .help = "dns-01: the TSIG key's algorithm"},
    {.key = "dns_tsig_secret",
     .type = TLSBOX_SETTING_STRING,
     .default_value = "",
     /* Base64 as acme_dns_tsig_key_load() decodes it: groups of four, then
      * two or three characters with their padding or without. */
     .pattern = "^(([A-Za-z0-9+/]{4}){0,128}([A-Za-z0-9+/]{2}(==)?|[A-Za-z0-9+/]{3}=?)?)$",
     .help = "dns-01: the TSIG key's secret (base64, as tsig-keygen prints it)",
     .flags = TLSBOX_SETTING_SECRET},
    {.key = "dns_wait_seconds",
     .type = TLSBOX_SETTING_INT,
     .default_value = "0",
     .min = 0,
     .max = 600,
     .help = "dns-01: wait this long after the record shows on acme.dns_server before the CA "
             "looks (for secondary servers that get it by zone transfer)"},
    {.key = "renew_check_minutes",
     .type = TLSBOX_SETTING_INT,
     .default_value = "10",
     .min = 1,
     .max = 1440,
     .help = "How often certificates are checked for renewal",
     .flags = TLSBOX_SETTING_RESTART},
    TLSBOX_SETTINGS_END};

static char *acme_setting(struct acme *a, const char *key)
{
    char *v = a->host->setting_get(a->self, key);
    return v ? v : tlsbox_xstrdup("");
}

void acme_conf_load(struct acme *a, struct acme_conf *conf)
{
    memset(conf, 0, sizeof(*conf));
    char *dir = acme_setting(a, "directory");
    if (strcmp(dir, "production") == 0 || !*dir) {
        free(dir);
        dir = tlsbox_xstrdup(ACME_LE_PRODUCTION);
    } else if (strcmp(dir, "staging") == 0) {
        free(dir);
        dir = tlsbox_xstrdup(ACME_LE_STAGING);
    }
    conf->directory = dir;
    char *list = acme_setting(a, "domains"), *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        if (!*tok)
            continue;
        /* An IP address as the certificate's SAN list will say it. */
        char ip[46];
        const char *name = acme_ip(tok, NULL, NULL, ip) ? ip : tok;
        /* Once each (2001:db8::1 and 2001:db8:0::1 are one name): a CA
         * issues one SAN for both, and a repeat would never match it. */
        bool seen = false;
        for (size_t i = 0; i < conf->ndomains && !seen; i++)
            seen = strcasecmp(conf->domains[i], name) == 0;
        if (seen)
            continue;
        conf->domains = tlsbox_xrealloc(conf->domains, (conf->ndomains + 1) * sizeof(char *));
        conf->domains[conf->ndomains++] = tlsbox_xstrdup(name);
    }
    free(list);
    conf->email = acme_setting(a, "email");
    conf->agree_tos = a->host->setting_get_bool(a->self, "agree_tos", false);
    conf->key_type = acme_setting(a, "key_type");
    conf->profile = acme_setting(a, "profile");
    conf->eab_kid = acme_setting(a, "eab_kid");
    conf->eab_hmac = acme_setting(a, "eab_hmac");
    conf->ca_file = acme_setting(a, "ca_file");
    conf->preferred_chain = acme_setting(a, "preferred_chain");
    char *ch = acme_setting(a, "challenge");
    conf->challenge_fallback = strcmp(ch, "auto") == 0;
    if (conf->challenge_fallback) {
        /* auto: a box without a plain HTTP port can only be reached on TLS */
        bool http = a->host->setting_get_int(a->self, "site.http_port", 80) > 0;
        free(ch);
        ch = tlsbox_xstrdup(http ? "http-01" : "tls-alpn-01");
    }
    conf->challenge = ch;
}

void acme_conf_free(struct acme_conf *conf)
{
    free(conf->directory);
    for (size_t i = 0; i < conf->ndomains; i++)
        free(conf->domains[i]);
    free(conf->domains);
    free(conf->email);
    free(conf->key_type);
    free(conf->profile);
    free(conf->eab_kid);
    tlsbox_wipe_free_str(conf->eab_hmac);
    free(conf->ca_file);
    free(conf->preferred_chain);
    free(conf->challenge);
    memset(conf, 0, sizeof(*conf));
}

/* ---- http-01 answers ------------------------------------------------------ */

void acme_chal_put(void *arg, const char *token, const char *key_auth)
{
    struct acme *a = arg;
    char *t = tlsbox_xstrdup(token), *k = tlsbox_xstrdup(key_auth);
    pthread_mutex_lock(&a->chal_lock);
    a->chal = tlsbox_xrealloc(a->chal, (a->nchal + 1) * sizeof(*a->chal));
    a->chal[a->nchal].token = t;
    a->chal[a->nchal].key_auth = k;
    a->nchal++;
    pthread_mutex_unlock(&a->chal_lock);
}

void acme_chal_del(void *arg, const char *token)
{
    struct acme *a = arg;
    pthread_mutex_lock(&a->chal_lock);
    for (size_t i = 0; i < a->nchal; i++) {
        if (strcmp(a->chal[i].token, token) == 0) {
            free(a->chal[i].token);
            free(a->chal[i].key_auth);
            a->chal[i] = a->chal[--a->nchal];
            break;
        }
    }
    pthread_mutex_unlock(&a->chal_lock);
}

/* Site worker thread: a lookup under a short lock, nothing else. */
static int acme_on_challenge(void *arg, const char *method, const char *path,
                             struct tlsbox_http_reply *reply)
{
    struct acme *a = arg;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return -ENOENT;
    size_t pl = strlen(ACME_CHALLENGE_PREFIX);
    if (strncmp(path, ACME_CHALLENGE_PREFIX, pl) != 0)
        return -ENOENT;
    const char *token = path + pl;
    size_t tl = strcspn(token, "?#");
    char *answer = NULL;
    pthread_mutex_lock(&a->chal_lock);
    for (size_t i = 0; i < a->nchal; i++) {
        if (strlen(a->chal[i].token) == tl && memcmp(a->chal[i].token, token, tl) == 0) {
            answer = tlsbox_xstrdup(a->chal[i].key_auth);
            break;
        }
    }
    pthread_mutex_unlock(&a->chal_lock);
    reply->content_type = "text/plain";
    if (answer) {
        reply->status = 200;
        reply->body = answer;
        reply->body_len = strlen(answer);
    } else {
        /* Ours alone: an unknown token is a 404, never a redirect to HTTPS. */
        reply->status = 404;
        reply->body = tlsbox_xstrdup("no such challenge\n");
        reply->body_len = strlen(reply->body);
    }
    return 0;
}

/* ---- hooks ----------------------------------------------------------------- */

static void acme_on_settings(void *arg, const char *event, const char *data)
{
    struct acme *a = arg;
    (void)event;
    /*
     * {"key":"acme.domains"}: a person changed ACME, try at once (past the
     * failure backoff).  {"reload":true} comes with every SIGHUP (logrotate
     * among them): re-check with the values read, but keep the backoff.
     */
    if (!data || strstr(data, "\"acme."))
        acme_run_submit(a, false, true);
    else if (strstr(data, "\"reload\""))
        acme_run_submit(a, false, false);
}

/* The ocsp plugin found a certificate revoked: if it is one of ours, replace
 * it now rather than at its renewal time. */
static void acme_on_revoked(void *arg, const char *event, const char *data)
{
    struct acme *a = arg;
    (void)event;
    json_t *d = data ? json_loads(data, 0, NULL) : NULL;
    const char *source = json_string_value(json_object_get(d, "source"));
    const char *name = json_string_value(json_object_get(d, "name"));
    const char *method = json_string_value(json_object_get(d, "method"));
    if (source && name && strcmp(source, "acme") == 0) {
        /* Found by an OCSP answer or in the CA's CRL (ocsp plugin). */
        a->host->log(a->self, TLSBOX_LOG_WARN, "%s: revoked (%s); ordering a replacement now", name,
                     method && strcmp(method, "crl") == 0 ? "CRL" : "OCSP");
        acme_run_submit(a, true, true);
    }
    json_decref(d);
}

static int acme_init(struct tlsbox_plugin *self, const struct tlsbox_host *host, void **state)
{
    struct acme *a = tlsbox_xcalloc(1, sizeof(*a));
    a->self = self;
    a->host = host;
    pthread_mutex_init(&a->chal_lock, NULL);
    pthread_mutex_init(&a->run_lock, NULL);
    pthread_mutex_init(&a->wake_lock, NULL);
    pthread_mutex_init(&a->status_lock, NULL);
    a->status_json = tlsbox_xstrdup("{\"state\":\"starting\"}");
    a->check_minutes = (long)host->setting_get_int(self, "renew_check_minutes", 10);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        host->log(self, TLSBOX_LOG_ERR, "libcurl did not initialise");
        *state = a;
        return -EIO;
    }
    *state = a;
    return 0;
}

static int acme_start(void *state)
{
    struct acme *a = state;
    const struct tlsbox_host *h = a->host;
    int ret;
    if ((ret = h->http_route_add(a->self, ACME_CHALLENGE_PREFIX, acme_on_challenge, a)) < 0) {
        h->log(a->self, TLSBOX_LOG_ERR, "cannot serve %s: %s", ACME_CHALLENGE_PREFIX,
               strerror(-ret));
        return ret;
    }
    if ((ret = acme_api_register(a)) < 0)
        return ret;
    a->m_ok = h->metric_register(a->self, "tlsbox_acme_orders_total{result=\"ok\"}",
                                 TLSBOX_METRIC_COUNTER, "ACME certificates issued", NULL, 0);
    a->m_err = h->metric_register(a->self, "tlsbox_acme_orders_total{result=\"error\"}",
                                  TLSBOX_METRIC_COUNTER, "ACME attempts that failed", NULL, 0);
    a->m_bad_nonce = h->metric_register(a->self, "tlsbox_acme_bad_nonce_total",
                                        TLSBOX_METRIC_COUNTER, "badNonce answers retried", NULL, 0);
    a->m_next = h->metric_register(a->self, "tlsbox_acme_next_renewal_timestamp_seconds",
                                   TLSBOX_METRIC_GAUGE, "When the next renewal is due", NULL, 0);
    a->sub = h->event_subscribe(a->self, "settings.changed", acme_on_settings, a);
    a->sub_revoked = h->event_subscribe(a->self, "ocsp.revoked", acme_on_revoked, a);
    uint64_t period = (uint64_t)a->check_minutes * 60000;
    a->timer = h->timer_add(a->self, "acme-check", period, period, period / 10, acme_run_check, a);
    if (a->timer < 0)
        return (int)a->timer;
    /* The first check at once: a fresh box should not wait minutes for its certificate. */
    acme_run_submit(a, false, false);
    return 0;
}

static void acme_stop(void *state)
{
    struct acme *a = state;
    atomic_store(&a->stopping, true);
    if (a->sub > 0)
        a->host->event_unsubscribe(a->self, a->sub);
    if (a->sub_revoked > 0)
        a->host->event_unsubscribe(a->self, a->sub_revoked);
    if (a->timer > 0)
        a->host->timer_cancel(a->self, a->timer);
    pthread_mutex_lock(&a->wake_lock);
    if (a->wake_timer > 0)
        a->host->timer_cancel(a->self, a->wake_timer);
    a->wake_timer = 0;
    pthread_mutex_unlock(&a->wake_lock);
}

static void acme_fini(void *state)
{
    struct acme *a = state;
    if (!a)
        return;
    for (size_t i = 0; i < a->nchal; i++) {
        free(a->chal[i].token);
        free(a->chal[i].key_auth);
    }
    free(a->chal);
    acme_answer_forget_all(a);
    free(a->status_json);
    pthread_mutex_destroy(&a->chal_lock);
    pthread_mutex_destroy(&a->run_lock);
    pthread_mutex_destroy(&a->wake_lock);
    pthread_mutex_destroy(&a->status_lock);
    free(a);
}

TLSBOX_PLUGIN(.name = "acme", .version = PACKAGE_VERSION,
              .description = "Certificates from an ACME CA (RFC 8555), renewed by themselves",
              .settings = acme_settings, .init = acme_init, .start = acme_start, .stop = acme_stop,
              .fini = acme_fini, .migrations = acme_migrations);
