/*
 * The ACME conversation (RFC 8555 section 7): account, order, http-01,
 * finalize, download; revocation and ARI renewal info.  Every order step is
 * written to acme_orders before the next request, so a crash resumes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/acme/acme.h"

/* Longest wait for one authorization or order to leave pending/processing. */
#define FLOW_POLL_LIMIT_MS (180 * 1000)

/*
 * Passes over a pending order's authorizations that found one not valid yet,
 * per attempt.  A real CA needs one (a second when its order status lags);
 * a CA, or a cache in front of it, that keeps answering them pending again
 * would otherwise keep one attempt going for ever, with no wait in between.
 */
#define FLOW_AUTHZ_PASSES 4

void acme_issued_free(struct acme_issued *is)
{
    free(is->chain_pem);
    tlsbox_wipe_free_str(is->key_pem);
    free(is->order_url);
    memset(is, 0, sizeof(*is));
}

static void flow_step(const struct acme_order_req *req, const char *step)
{
    if (req->on_step)
        req->on_step(req->step_arg, step);
}

/* ---- account ----------------------------------------------------------- */

int acme_flow_account(struct acme_client *c, sqlite3 *db, const struct acme_account_req *a,
                      struct acme_err *e)
{
    char *key_pem = NULL, *url = NULL;
    gnutls_privkey_t key = NULL;
    json_t *payload = NULL;
    struct acme_resp r = {0};
    int64_t id = 0;
    int ret = acme_client_directory(c, e);
    if (ret < 0)
        goto out;

    json_t *meta = json_object_get(c->dir, "meta");
    const char *tos = json_string_value(json_object_get(meta, "termsOfService"));
    if (tos && !a->agree_tos) {
        acme_err_set(e, "account", "tlsbox:terms",
                     "the CA requires agreeing to its terms (%s): set acme.agree_tos=true", tos);
        ret = -EPERM;
        goto out;
    }
    bool eab_needed = json_is_true(json_object_get(meta, "externalAccountRequired"));
    bool have_eab = a->eab_kid && *a->eab_kid && a->eab_hmac && *a->eab_hmac;
    if (eab_needed && !have_eab) {
        acme_err_set(e, "account", "tlsbox:eab",
                     "the CA requires external account binding: set acme.eab_kid and "
                     "acme.eab_hmac");
        ret = -EPERM;
        goto out;
    }

    /* The key is stored before the CA sees it, so a crash never orphans an account. */
    ret = acme_store_account_get(db, c->directory_url, &id, &key_pem, &url);
    if (ret == -ENOENT) {
        if ((ret = acme_key_generate("ecdsa-p256", &key)) < 0 ||
            (ret = acme_key_export_pem(key, &key_pem)) < 0) {
            acme_err_set(e, "account", "tlsbox:key", "could not make the account key");
            goto out;
        }
        ret = acme_store_account_put(db, c->directory_url, a->email, key_pem, &id);
    } else if (ret == 0) {
        ret = acme_key_import_pem(key_pem, &key);
    }
    if (ret < 0) {
        acme_err_set(e, "account", "tlsbox:store", "could not load or store the account key");
        goto out;
    }
    if (c->account_key)
        gnutls_privkey_deinit(c->account_key);
    c->account_key = key;
    key = NULL;
    c->account_id = id;
    json_decref(c->jwk);
    c->jwk = acme_jwk(c->account_key);
    free(c->thumbprint);
    c->thumbprint = c->jwk ? acme_jwk_thumbprint(c->jwk) : NULL;
    if (!c->thumbprint) {
        acme_err_set(e, "account", "tlsbox:key", "unusable account key");
        ret = -EINVAL;
        goto out;
    }

    /*
     * newAccount every time: for a known key the CA answers 200 with the same
     * URL, so a CA that forgot us (pebble restarted) is handled the same way.
     */
    payload = json_object();
    json_object_set_new(payload, "termsOfServiceAgreed", json_boolean(a->agree_tos));
    if (a->email && *a->email) {
        char *m = tlsbox_xasprintf("mailto:%s", a->email);
        json_object_set_new(payload, "contact", json_pack("[s]", m));
        free(m);
    }
    if (have_eab) {
        char *err = NULL;
        json_t *eab =
            acme_eab(a->eab_kid, a->eab_hmac, c->jwk, acme_client_dir_url(c, "newAccount"), &err);
        if (!eab) {
            acme_err_set(e, "account", "tlsbox:eab", "%s", err);
            free(err);
            ret = -EINVAL;
            goto out;
        }
        json_object_set_new(payload, "externalAccountBinding", eab);
    }
    char *text = json_dumps(payload, JSON_COMPACT);
    free(c->kid);
    c->kid = NULL;
    ret = acme_post(c, "account", acme_client_dir_url(c, "newAccount"), text, NULL, &r, e);
    free(text);
    if (ret < 0)
        goto out;
    if (!r.location) {
        acme_err_set(e, "account", "tlsbox:protocol", "newAccount answered without a Location");
        ret = -EPROTO;
        goto out;
    }
    c->kid = tlsbox_xstrdup(r.location);
    if (!url || strcmp(url, r.location) != 0)
        acme_store_account_set_url(db, id, r.location);
out:
    if (key)
        gnutls_privkey_deinit(key);
    tlsbox_wipe_free_str(key_pem);
    free(url);
    json_decref(payload);
    acme_resp_free(&r);
    return ret;
}

/* ---- order --------------------------------------------------------------- */

static char *flow_domains_json(const struct acme_order_req *req)
{
    json_t *a = json_array();
    for (size_t i = 0; i < req->ndomains; i++)
        json_array_append_new(a, json_string(req->domains[i]));
    char *s = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return s;
}

/*
 * Wait before the next poll: the CA's Retry-After (in full: polling sooner
 * than asked is what it asked us not to do), else a growing short delay.
 * Returns 0 after the wait, -ECANCELED when stopping, or -ETIMEDOUT without
 * waiting when the wait would take the poll past FLOW_POLL_LIMIT_MS; then the
 * Retry-After goes into e->retry_after, so the scheduler waits that long
 * before the next attempt.  @p what says what is still not done, for the error.
 */
static int flow_poll_wait(struct acme_client *c, const struct acme_resp *r, unsigned n,
                          uint64_t *waited, struct acme_err *e, const char *step, const char *what)
{
    uint64_t ms = n < 3 ? 50u << n : n < 8 ? 500 : 2000;
    time_t now = time(NULL);
    if (r->retry_after)
        ms = r->retry_after > now ? (uint64_t)(r->retry_after - now) * 1000 : 1000;
    if (*waited + ms > FLOW_POLL_LIMIT_MS) {
        /* The CA's time still counts (no order before it), whichever limit ended the wait. */
        time_t until = r->retry_after > now ? r->retry_after : 0;
        if (until && ms > FLOW_POLL_LIMIT_MS)
            acme_err_set(e, step, "tlsbox:timeout",
                         "%s: the CA asks to look again in %llu s, longer than the %u s an "
                         "attempt waits; the next attempt is after that",
                         what, (unsigned long long)(ms / 1000), FLOW_POLL_LIMIT_MS / 1000);
        else
            acme_err_set(e, step, "tlsbox:timeout", "%s after %llu s", what,
                         (unsigned long long)(*waited / 1000));
        e->retry_after = until; /* after acme_err_set, which resets it */
        return -ETIMEDOUT;
    }
    *waited += ms;
    if (acme_client_sleep(c, ms)) {
        acme_err_set(e, step, "tlsbox:cancelled", "cancelled (stopping)");
        return -ECANCELED;
    }
    return 0;
}

static int flow_new_order(struct acme_client *c, sqlite3 *db, const struct acme_order_req *req,
                          struct acme_order_row *o, struct acme_resp *r, struct acme_err *e)
{
    json_t *p = json_object();
    json_t *ids = json_array();
    for (size_t i = 0; i < req->ndomains; i++) {
        char ip[46];
        bool is_ip = acme_ip(req->domains[i], NULL, NULL, ip); /* RFC 8738 */
        json_array_append_new(ids, json_pack("{s:s,s:s}", "type", is_ip ? "ip" : "dns", "value",
                                             is_ip ? ip : req->domains[i]));
    }
    json_object_set_new(p, "identifiers", ids);
    json_t *profiles = json_object_get(json_object_get(c->dir, "meta"), "profiles");
    if (req->profile && *req->profile) {
        if (json_is_object(profiles) && !json_object_get(profiles, req->profile)) {
            acme_err_set(e, "order", "tlsbox:profile",
                         "acme.profile: '%s' is not offered by the CA", req->profile);
            json_decref(p);
            return -EINVAL;
        }
        if (json_is_object(profiles))
            json_object_set_new(p, "profile", json_string(req->profile));
    }
    /* "replaces" only where the CA speaks ARI. */
    bool with_replaces = o->replaces && acme_client_dir_url(c, "renewalInfo");
    if (with_replaces)
        json_object_set_new(p, "replaces", json_string(o->replaces));
    char *text = json_dumps(p, JSON_COMPACT);
    int ret = acme_post(c, "order", acme_client_dir_url(c, "newOrder"), text, NULL, r, e);
    free(text);
    /*
     * "replaces" is advice (RFC 9773 section 5): a CA refuses it for reasons
     * that do not stop it issuing, and says so in many ways: Let's Encrypt
     * answers 403 unauthorized for a certificate another account ordered (an
     * imported one, or one from the staging CA) and 400 malformed for an
     * issuer it does not know; others 404 or 409 alreadyReplaced.  Sending it
     * again could only fail again, for ever, so any refusal is asked once
     * more at once without it.  Not when the CA asked us to wait (a rate
     * limit, an overload): that wait holds for the plain order too.
     */
    if (ret == -EPROTO && with_replaces && e->http_status >= 400 && !e->retry_after &&
        !(e->type && strstr(e->type, ":rateLimited"))) {
        if (req->note) {
            char *msg = tlsbox_xasprintf(
                "the CA refused the order replacing %s (HTTP %ld, %s: %s); ordering again "
                "without \"replaces\"",
                o->replaces, e->http_status, e->type ? e->type : "no problem type",
                e->detail ? e->detail : "");
            req->note(req->note_arg, msg);
            free(msg);
        }
        /* What failed is said above; a later failure must not be told with it. */
        acme_err_clear(e);
        json_object_del(p, "replaces");
        free(o->replaces);
        o->replaces = NULL;
        text = json_dumps(p, JSON_COMPACT);
        ret = acme_post(c, "order", acme_client_dir_url(c, "newOrder"), text, NULL, r, e);
        free(text);
    }
    json_decref(p);
    if (ret < 0)
        return ret;
    if (!r->location || !json_is_object(r->json)) {
        acme_err_set(e, "order", "tlsbox:protocol", "newOrder answered without Location or body");
        return -EPROTO;
    }
    free(o->order_url);
    o->order_url = tlsbox_xstrdup(r->location);
    const char *fin = json_string_value(json_object_get(r->json, "finalize"));
    free(o->finalize_url);
    o->finalize_url = fin ? tlsbox_xstrdup(fin) : NULL;
    free(o->status);
    o->status = tlsbox_xstrdup("pending");
    acme_store_order_update(db, o);
    flow_step(req, "order");
    return 0;
}

/* The challenge of type @p type of an authorization, or NULL. */
static json_t *flow_challenge_of(json_t *authz, const char *type)
{
    json_t *chs = json_object_get(authz, "challenges"), *ch;
    size_t i;
    json_array_foreach(chs, i, ch)
    {
        if (strcmp(json_string_value(json_object_get(ch, "type")) ?: "", type) == 0)
            return ch;
    }
    return NULL;
}

static const char *const flow_types[] = {"http-01", "tls-alpn-01", "dns-01"};

/* ACME_CH_* of a challenge type (0: not one we answer). */
static unsigned flow_type_bit(const char *type)
{
    for (unsigned i = 0; i < 3; i++)
        if (type && strcmp(type, flow_types[i]) == 0)
            return 1u << i;
    return 0;
}

/*
 * The challenge to answer: the one asked for, else (fallback) the first
 * of the others the CA offers and we can answer.  *type names the one
 * asked for when none is found.
 */
static json_t *flow_challenge(json_t *authz, const struct acme_order_req *req, const char **type)
{
    unsigned can = ACME_CH_HTTP | (req->answer_put ? req->answer_types : 0);
    const char *want = flow_type_bit(req->challenge) ? req->challenge : "http-01";
    /* The one asked for is tried even when it looks unanswerable: its
     * answer_put then says why (e.g. which dns-01 settings are missing). */
    json_t *ch = flow_challenge_of(authz, want);
    *type = want;
    for (unsigned i = 0; !ch && req->challenge_fallback && i < 3; i++) {
        if (!(can & (1u << i)) || strcmp(flow_types[i], want) == 0)
            continue;
        if ((ch = flow_challenge_of(authz, flow_types[i])))
            *type = flow_types[i];
    }
    return ch;
}

static const char *flow_authz_name(json_t *authz)
{
    return json_string_value(json_object_get(json_object_get(authz, "identifier"), "value")) ?: "?";
}

/* The error of an invalid authorization, from its failed challenge. */
static int flow_authz_failed(json_t *authz, struct acme_err *e)
{
    /* The challenge that failed is the one with an error. */
    json_t *chs = json_object_get(authz, "challenges"), *ch = NULL, *c;
    size_t i;
    json_array_foreach(chs, i, c)
    {
        if (json_object_get(c, "error")) {
            ch = c;
            break;
        }
    }
    json_t *err = json_object_get(ch, "error");
    const char *type = json_string_value(json_object_get(err, "type"));
    const char *detail = json_string_value(json_object_get(err, "detail"));
    acme_err_set(e, "challenge", type ? type : "tlsbox:invalid", "%s: %s", flow_authz_name(authz),
                 detail ? detail : "authorization became invalid");
    snprintf(e->challenge, sizeof(e->challenge), "%s",
             json_string_value(json_object_get(ch, "type")) ?: "");
    return -EPROTO;
}

/*
 * Answers published (http-01 tokens; tls-alpn-01 and dns-01 answers by
 * identifier and key authorization), withdrawn
 * only when acme_flow_issue returns:
 * a challenge answered twice (once before a crash, once by the resumed
 * order) is validated twice, and a CA may run the second validation after
 * the authorization turned valid; a 404 then invalidates the order.
 */
struct flow_answer {
    const char *type; /* one of flow_types */
    char *id;         /* the token (http-01) or the identifier */
    char *key_auth;   /* NULL for http-01 */
};

struct flow_tokens {
    struct flow_answer *v;
    size_t n;
};

/* Whether this answer is published already (by an earlier pass over the order). */
static bool flow_tokens_has(const struct flow_tokens *t, const char *type, const char *id,
                            const char *key_auth)
{
    for (size_t i = 0; i < t->n; i++)
        if (strcmp(t->v[i].type, type) == 0 && strcmp(t->v[i].id, id) == 0 &&
            strcmp(t->v[i].key_auth ? t->v[i].key_auth : "", key_auth ? key_auth : "") == 0)
            return true;
    return false;
}

static void flow_tokens_add(struct flow_tokens *t, const char *type, const char *id,
                            const char *key_auth)
{
    t->v = tlsbox_xrealloc(t->v, (t->n + 1) * sizeof(*t->v));
    t->v[t->n].type = type;
    t->v[t->n].id = tlsbox_xstrdup(id);
    t->v[t->n++].key_auth = key_auth ? tlsbox_xstrdup(key_auth) : NULL;
}

static void flow_tokens_withdraw(struct flow_tokens *t, const struct acme_order_req *req)
{
    for (size_t i = 0; i < t->n; i++) {
        struct flow_answer *a = &t->v[i];
        if (!a->key_auth)
            req->challenge_del(req->challenge_arg, a->id);
        else if (req->answer_del)
            req->answer_del(req->challenge_arg, a->type, a->id, a->key_auth);
        free(a->id);
        free(a->key_auth);
    }
    free(t->v);
    t->v = NULL;
    t->n = 0;
}

/*
 * Answer and wait for the authorizations of a pending order.  *progress is
 * set when one of them was not valid yet (this pass did something).
 */
static int flow_authorizations(struct acme_client *c, const struct acme_order_req *req,
                               json_t *order, struct flow_tokens *tokens, bool *progress,
                               struct acme_err *e)
{
    json_t *urls = json_object_get(order, "authorizations"), *u;
    size_t n = json_array_size(urls), i;
    struct acme_resp r = {0};
    int ret = 0;
    /* The name of each authorization still to validate, NULL once valid. */
    char **waiting = tlsbox_xcalloc(n ? n : 1, sizeof(char *));

    /* First answer every challenge, then poll: the CA validates the names in parallel. */
    json_array_foreach(urls, i, u)
    {
        const char *url = json_string_value(u);
        if (!url)
            continue;
        if ((ret = acme_post(c, "authorization", url, NULL, NULL, &r, e)) < 0)
            goto out;
        const char *st = json_string_value(json_object_get(r.json, "status")) ?: "";
        if (strcmp(st, "valid") == 0)
            continue;
        *progress = true;
        if (strcmp(st, "pending") != 0) {
            ret = flow_authz_failed(r.json, e);
            goto out;
        }
        const char *type;
        json_t *ch = flow_challenge(r.json, req, &type);
        const char *token = json_string_value(json_object_get(ch, "token"));
        const char *ch_url = json_string_value(json_object_get(ch, "url"));
        const char *ident = flow_authz_name(r.json);
        if (!token || !ch_url) {
            bool wildcard = json_is_true(json_object_get(r.json, "wildcard"));
            if (wildcard)
                acme_err_set(e, "authorization", "tlsbox:no-dns-01",
                             "*.%s: a wildcard is validated by dns-01 only: %s", ident,
                             (req->answer_types & ACME_CH_DNS)
                                 ? "set acme.challenge to auto or dns-01"
                                 : "set acme.dns_server, acme.dns_zone, acme.dns_tsig_key and "
                                   "acme.dns_tsig_secret");
            else
                acme_err_set(e, "authorization", "tlsbox:no-challenge",
                             "%s: the CA offers no %s challenge", ident, type);
            ret = -ENOTSUP;
            goto out;
        }
        waiting[i] = tlsbox_xasprintf("%s: authorization still pending", ident);
        char *ka = tlsbox_xasprintf("%s.%s", token, c->thumbprint);
        if (flow_tokens_has(tokens, type, strcmp(type, "http-01") != 0 ? ident : token,
                            strcmp(type, "http-01") != 0 ? ka : NULL)) {
            /* Published by an earlier pass and still served (withdrawn only
             * at the end): publishing it again would only grow both lists. */
        } else if (strcmp(type, "http-01") != 0) {
            /* Listed first: a put that fails half-way (a DNS record added
             * that never showed) is still withdrawn. */
            flow_tokens_add(tokens, type, ident, ka);
            char *why = NULL;
            ret = req->answer_put ? req->answer_put(req->challenge_arg, type, ident, ka, &why)
                                  : -ENOTSUP;
            if (ret == -ECANCELED) {
                /* Stopping (in a dns-01 wait): no failure of the challenge,
                 * which the CA has not been asked to check; the order is
                 * kept for the next start. */
                acme_err_set(e, "challenge", "tlsbox:cancelled", "%s: cancelled (stopping)", ident);
            } else if (ret < 0) {
                acme_err_set(e, "challenge", "tlsbox:answer", "%s: cannot answer %s: %s", ident,
                             type, why ? why : strerror(-ret));
                snprintf(e->challenge, sizeof(e->challenge), "%s", type);
            }
            if (ret < 0) {
                free(why);
                free(ka);
                goto out;
            }
        } else {
            flow_tokens_add(tokens, type, token, NULL);
            req->challenge_put(req->challenge_arg, token, ka);
        }
        free(ka);
        const char *chst = json_string_value(json_object_get(ch, "status")) ?: "";
        if (strcmp(chst, "pending") == 0 &&
            (ret = acme_post(c, "challenge", ch_url, "{}", NULL, &r, e)) < 0)
            goto out;
    }
    flow_step(req, "challenge");
    json_array_foreach(urls, i, u)
    {
        uint64_t waited = 0;
        for (unsigned k = 0; waiting[i]; k++) {
            if ((ret = flow_poll_wait(c, &r, k, &waited, e, "authorization", waiting[i])) < 0)
                goto out;
            if ((ret = acme_post(c, "authorization", json_string_value(u), NULL, NULL, &r, e)) < 0)
                goto out;
            const char *st = json_string_value(json_object_get(r.json, "status")) ?: "";
            if (strcmp(st, "valid") == 0) {
                free(waiting[i]);
                waiting[i] = NULL;
            } else if (strcmp(st, "pending") != 0) {
                ret = flow_authz_failed(r.json, e);
                goto out;
            }
        }
    }
out:
    for (i = 0; i < n; i++)
        free(waiting[i]);
    free(waiting);
    acme_resp_free(&r);
    return ret;
}

static int flow_finalize(struct acme_client *c, sqlite3 *db, const struct acme_order_req *req,
                         struct acme_order_row *o, struct acme_resp *r, struct acme_err *e)
{
    gnutls_privkey_t key = NULL;
    char *csr = NULL, *err = NULL;
    int ret = acme_key_import_pem(o->key_pem, &key);
    if (ret < 0) {
        acme_err_set(e, "finalize", "tlsbox:key", "the order's key does not load");
        goto out;
    }
    if ((ret = acme_csr_make(key, req->domains, req->ndomains, &csr, &err)) < 0) {
        acme_err_set(e, "finalize", "tlsbox:csr", "%s", err);
        goto out;
    }
    if (!o->finalize_url) {
        acme_err_set(e, "finalize", "tlsbox:protocol", "the order has no finalize URL");
        ret = -EPROTO;
        goto out;
    }
    char *payload = tlsbox_xasprintf("{\"csr\":\"%s\"}", csr);
    ret = acme_post(c, "finalize", o->finalize_url, payload, NULL, r, e);
    free(payload);
    if (ret < 0)
        goto out;
    free(o->status);
    o->status = tlsbox_xstrdup("processing");
    acme_store_order_update(db, o);
    flow_step(req, "finalize");
out:
    free(csr);
    free(err);
    if (key)
        gnutls_privkey_deinit(key);
    return ret;
}

/* Issuer CN of the last certificate in a PEM chain (the one nearest the root). */
static char *flow_top_issuer_cn(const char *chain_pem)
{
    gnutls_x509_crt_t *crts = NULL;
    unsigned n = 0;
    gnutls_datum_t d = {(unsigned char *)chain_pem, (unsigned)strlen(chain_pem)};
    if (gnutls_x509_crt_list_import2(&crts, &n, &d, GNUTLS_X509_FMT_PEM, 0) < 0 || n == 0)
        return NULL;
    char buf[256];
    size_t len = sizeof(buf);
    char *cn = NULL;
    if (gnutls_x509_crt_get_issuer_dn_by_oid(crts[n - 1], GNUTLS_OID_X520_COMMON_NAME, 0, 0, buf,
                                             &len) == 0)
        cn = tlsbox_xstrndup(buf, len);
    for (unsigned i = 0; i < n; i++)
        gnutls_x509_crt_deinit(crts[i]);
    gnutls_free(crts);
    return cn;
}

static bool flow_chain_ok(const char *pem)
{
    gnutls_x509_crt_t *crts = NULL;
    unsigned n = 0;
    gnutls_datum_t d = {(unsigned char *)pem, (unsigned)strlen(pem)};
    if (gnutls_x509_crt_list_import2(&crts, &n, &d, GNUTLS_X509_FMT_PEM,
                                     GNUTLS_X509_CRT_LIST_FAIL_IF_UNSORTED) < 0)
        return false;
    for (unsigned i = 0; i < n; i++)
        gnutls_x509_crt_deinit(crts[i]);
    gnutls_free(crts);
    return n > 0;
}

static int flow_download(struct acme_client *c, const struct acme_order_req *req, const char *url,
                         char **chain, struct acme_err *e)
{
    struct acme_resp r = {0}, alt = {0};
    int ret = acme_post(c, "download", url, NULL, "application/pem-certificate-chain", &r, e);
    if (ret < 0)
        goto out;
    if (!r.body || !flow_chain_ok(r.body)) {
        acme_err_set(e, "download", "tlsbox:chain", "%s: not a PEM certificate chain", url);
        ret = -EPROTO;
        goto out;
    }
    char *use = r.body;
    r.body = NULL;
    if (req->preferred_chain && *req->preferred_chain) {
        char *cn = flow_top_issuer_cn(use);
        bool match = cn && strcmp(cn, req->preferred_chain) == 0;
        free(cn);
        /* Alternates are fetched only when the default is not the one asked for. */
        for (size_t i = 0; !match && i < r.nalternates; i++) {
            if (acme_post(c, "download", r.alternates[i], NULL, "application/pem-certificate-chain",
                          &alt, e) < 0 ||
                !alt.body || !flow_chain_ok(alt.body))
                continue;
            cn = flow_top_issuer_cn(alt.body);
            if (cn && strcmp(cn, req->preferred_chain) == 0) {
                free(use);
                use = alt.body;
                alt.body = NULL;
                match = true;
            }
            free(cn);
        }
        acme_err_clear(e);
    }
    *chain = use;
out:
    acme_resp_free(&r);
    acme_resp_free(&alt);
    return ret;
}

static int flow_fetch_order(struct acme_client *c, struct acme_order_row *o, struct acme_resp *r,
                            struct acme_err *e)
{
    int ret = acme_post(c, "order", o->order_url, NULL, NULL, r, e);
    if (ret < 0)
        return ret;
    if (!json_is_object(r->json) || !json_string_value(json_object_get(r->json, "status"))) {
        acme_err_set(e, "order", "tlsbox:protocol", "%s: order without a status", o->order_url);
        return -EPROTO;
    }
    const char *fin = json_string_value(json_object_get(r->json, "finalize"));
    if (fin && (!o->finalize_url || strcmp(fin, o->finalize_url) != 0)) {
        free(o->finalize_url);
        o->finalize_url = tlsbox_xstrdup(fin);
    }
    return 0;
}

/* Open an order row: the unfinished one for the same request, else a fresh one. */
static int flow_order_row(struct acme_client *c, sqlite3 *db, const struct acme_order_req *req,
                          struct acme_order_row *o, bool *resumed, struct acme_err *e)
{
    char *domains = flow_domains_json(req);
    int ret = acme_store_order_open(db, req->cert_name, o);
    *resumed = false;
    if (ret == 0) {
        if (strcmp(o->domains, domains) == 0 && strcmp(o->key_type, req->key_type) == 0 &&
            o->account_id == c->account_id && o->key_pem) {
            *resumed = true;
            free(domains);
            return 0;
        }
        /* Names, key type or account changed: that order is of no use any more. */
        acme_store_order_set_status(db, o->id, "abandoned");
        acme_order_row_free(o);
    }
    gnutls_privkey_t key = NULL;
    memset(o, 0, sizeof(*o));
    if ((ret = acme_key_generate(req->key_type, &key)) < 0 ||
        (ret = acme_key_export_pem(key, &o->key_pem)) < 0) {
        acme_err_set(e, "key", "tlsbox:key", "could not generate a %s key", req->key_type);
        goto out;
    }
    o->account_id = c->account_id;
    o->cert_name = tlsbox_xstrdup(req->cert_name);
    o->domains = domains;
    domains = NULL;
    o->key_type = tlsbox_xstrdup(req->key_type);
    o->status = tlsbox_xstrdup("new");
    o->replaces = req->replaces ? tlsbox_xstrdup(req->replaces) : NULL;
    if ((ret = acme_store_order_insert(db, o)) < 0)
        acme_err_set(e, "order", "tlsbox:store", "could not store the order");
out:
    if (key)
        gnutls_privkey_deinit(key);
    free(domains);
    return ret;
}

/* Forget the CA side of an order row (the key stays): the next step places a new order. */
static void flow_order_reset(struct acme_order_row *o)
{
    free(o->order_url);
    o->order_url = NULL;
    free(o->cert_url);
    o->cert_url = NULL;
    free(o->finalize_url);
    o->finalize_url = NULL;
}

int acme_flow_issue(struct acme_client *c, sqlite3 *db, const struct acme_order_req *req,
                    struct acme_issued *out, struct acme_err *e)
{
    struct acme_order_row o = {0};
    struct acme_resp r = {0};
    struct flow_tokens tokens = {0};
    bool resumed = false, restarted = false, fresh = false;
    int ret;

    memset(out, 0, sizeof(*out));
    if ((ret = flow_order_row(c, db, req, &o, &resumed, e)) < 0)
        goto out;
again:
    if (!o.order_url) {
        if ((ret = flow_new_order(c, db, req, &o, &r, e)) < 0)
            goto out;
        fresh = true;
    } else if ((ret = flow_fetch_order(c, &o, &r, e)) < 0) {
        /*
         * The CA forgot the order (404, 410; an expired one is answered
         * "invalid", below) or answered it as no order: start over once with
         * a new one.  Any other error (an overload, a rate limit, a CA being
         * restarted) says nothing about the order, which may be valid with
         * its certificate issued: a new order would issue a duplicate (counted
         * against the CA's duplicate-certificate limit) and ignore the CA's
         * Retry-After.  Then this attempt fails keeping the order, and the
         * next one, after the Retry-After (kept in e), resumes it.
         */
        bool gone = e->http_status == 404 || e->http_status == 410 || e->http_status < 400;
        if (ret == -EPROTO && !restarted && gone) {
            flow_order_reset(&o);
            restarted = true;
            acme_err_clear(e);
            goto again;
        }
        if (ret == -EPROTO && !gone) {
            /* Say which order waits, and that it is not given up. */
            char *d = tlsbox_xasprintf("%s: HTTP %ld: %s; the order is kept for the next attempt",
                                       o.order_url, e->http_status, e->detail ? e->detail : "");
            free(e->detail);
            e->detail = d;
        }
        goto out;
    }
    if (resumed && !restarted && !fresh &&
        strcmp(json_string_value(json_object_get(r.json, "status")) ?: "", "invalid") == 0) {
        /* It failed while we were down (nobody answered the challenge): place a new one. */
        flow_order_reset(&o);
        restarted = true;
        goto again;
    }

    uint64_t waited = 0;
    unsigned passes = 0; /* over the authorizations, that found one not valid yet */
    for (unsigned k = 0;; k++) {
        const char *st = json_string_value(json_object_get(r.json, "status")) ?: "";
        if (strcmp(st, "pending") == 0 && passes >= FLOW_AUTHZ_PASSES) {
            /* The order stays with the CA: the next attempt looks at it again. */
            acme_err_set(e, "order", "tlsbox:protocol",
                         "%s: the order is still pending after %u passes over its "
                         "authorizations: the CA keeps answering them pending again after they "
                         "were valid",
                         o.order_url, passes);
            ret = -EPROTO;
            goto out;
        }
        if (strcmp(st, "pending") == 0) {
            /* Without authorizations there is nothing to answer: polling could never end. */
            json_t *urls = json_object_get(r.json, "authorizations"), *u;
            size_t i;
            bool usable = json_array_size(urls) > 0;
            json_array_foreach(urls, i, u) usable &= json_is_string(u);
            if (!usable) {
                acme_err_set(e, "order", "tlsbox:protocol",
                             "%s: pending order without a list of authorization URLs", o.order_url);
                ret = -EPROTO;
                goto out;
            }
            json_t *order = json_incref(r.json);
            bool progress = false;
            ret = flow_authorizations(c, req, order, &tokens, &progress, e);
            json_decref(order);
            if (ret < 0 && ret != -ECANCELED && resumed && !restarted && !fresh &&
                strcmp(e->step, "challenge") == 0) {
                /*
                 * A resumed order whose validation ran while we were down (or
                 * restarting) fails for that reason alone: one fresh order.
                 */
                flow_order_reset(&o);
                restarted = true;
                acme_err_clear(e);
                goto again;
            }
            if (ret < 0)
                goto out;
            passes += progress;
            /* Every authorization was valid already, yet the order is pending: wait. */
            if (!progress)
                ret = flow_poll_wait(c, &r, k, &waited, e, "order",
                                     "order still pending (its authorizations valid)");
            if (ret < 0)
                goto out;
        } else if (strcmp(st, "ready") == 0) {
            if ((ret = flow_finalize(c, db, req, &o, &r, e)) < 0)
                goto out;
            /* The finalize answer is the order; still "ready": wait, then look again. */
            if (strcmp(json_string_value(json_object_get(r.json, "status")) ?: "", "ready") != 0)
                continue;
            ret = flow_poll_wait(c, &r, k, &waited, e, "finalize",
                                 "order still ready after finalize");
            if (ret < 0)
                goto out;
        } else if (strcmp(st, "processing") == 0) {
            ret = flow_poll_wait(c, &r, k, &waited, e, "finalize", "order still processing");
            if (ret < 0)
                goto out;
        } else if (strcmp(st, "valid") == 0) {
            const char *cu = json_string_value(json_object_get(r.json, "certificate"));
            if (!cu) {
                acme_err_set(e, "download", "tlsbox:protocol", "valid order without certificate");
                ret = -EPROTO;
                goto out;
            }
            free(o.cert_url);
            o.cert_url = tlsbox_xstrdup(cu);
            free(o.status);
            o.status = tlsbox_xstrdup("valid");
            acme_store_order_update(db, &o);
            break;
        } else {
            /* invalid (or unknown): the order cannot succeed; say why if the CA did. */
            json_t *err = json_object_get(r.json, "error");
            const char *type = json_string_value(json_object_get(err, "type"));
            const char *detail = json_string_value(json_object_get(err, "detail"));
            if (!e->detail)
                acme_err_set(e, "order", type ? type : "tlsbox:invalid", "order is %s%s%s", st,
                             detail ? ": " : "", detail ? detail : "");
            acme_store_order_set_status(db, o.id, "invalid");
            ret = -EPROTO;
            goto out;
        }
        if ((ret = flow_fetch_order(c, &o, &r, e)) < 0)
            goto out;
        const char *nst = json_string_value(json_object_get(r.json, "status")) ?: "";
        if (strcmp(nst, "invalid") == 0) {
            /* Find the failed authorization to give the real reason. */
            json_t *urls = json_object_get(r.json, "authorizations"), *u;
            size_t i;
            struct acme_resp ar = {0};
            json_array_foreach(urls, i, u)
            {
                if (acme_post(c, "authorization", json_string_value(u), NULL, NULL, &ar, e) == 0 &&
                    strcmp(json_string_value(json_object_get(ar.json, "status")) ?: "",
                           "invalid") == 0) {
                    flow_authz_failed(ar.json, e);
                    break;
                }
            }
            acme_resp_free(&ar);
        }
    }

    if ((ret = flow_download(c, req, o.cert_url, &out->chain_pem, e)) < 0)
        goto out;
    flow_step(req, "download");
    out->key_pem = o.key_pem;
    o.key_pem = NULL;
    out->order_id = o.id;
    out->order_url = o.order_url;
    o.order_url = NULL;
out:
    if (ret < 0 && o.id && strcmp(e->type ? e->type : "", "tlsbox:cancelled") != 0 && o.status &&
        strcmp(o.status, "invalid") != 0 && e->step[0] && strcmp(e->step, "challenge") == 0) {
        /* A failed challenge invalidates the order at the CA: the next try needs a new one. */
        acme_store_order_set_status(db, o.id, "invalid");
    }
    flow_tokens_withdraw(&tokens, req);
    acme_order_row_free(&o);
    acme_resp_free(&r);
    return ret;
}

/* ---- revocation, ARI ----------------------------------------------------- */

int acme_flow_revoke(struct acme_client *c, const char *chain_pem, int reason, struct acme_err *e)
{
    gnutls_x509_crt_t crt = NULL;
    gnutls_datum_t pem = {(unsigned char *)chain_pem, (unsigned)strlen(chain_pem)}, der = {0};
    struct acme_resp r = {0};
    int ret = -EINVAL;
    if (gnutls_x509_crt_init(&crt) < 0 ||
        gnutls_x509_crt_import(crt, &pem, GNUTLS_X509_FMT_PEM) < 0 ||
        gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_DER, &der) < 0) {
        acme_err_set(e, "revoke", "tlsbox:chain", "the stored certificate does not parse");
        goto out;
    }
    const char *url = acme_client_dir_url(c, "revokeCert");
    if (!url) {
        acme_err_set(e, "revoke", "tlsbox:directory", "the CA offers no revokeCert");
        ret = -ENOTSUP;
        goto out;
    }
    char *b64 = acme_b64url(der.data, der.size);
    char *payload = tlsbox_xasprintf("{\"certificate\":\"%s\",\"reason\":%d}", b64, reason);
    free(b64);
    ret = acme_post(c, "revoke", url, payload, NULL, &r, e);
    free(payload);
    /*
     * RFC 8555 7.6: the CA says it is revoked already, most likely by an
     * earlier revoke whose answer was lost.  What was asked for holds: a
     * failure here would leave the revoked certificate served, unreplaced.
     */
    if (ret == -EPROTO && e->type && strlen(e->type) >= 15 &&
        strcmp(e->type + strlen(e->type) - 15, ":alreadyRevoked") == 0) {
        acme_err_clear(e);
        ret = 1;
    }
out:
    gnutls_free(der.data);
    if (crt)
        gnutls_x509_crt_deinit(crt);
    acme_resp_free(&r);
    return ret;
}

int acme_flow_renewal_info(struct acme_client *c, const char *ari_id, time_t *ws, time_t *we,
                           time_t *retry_after, struct acme_err *e)
{
    struct acme_resp r = {0};
    int ret = acme_client_directory(c, e);
    if (ret < 0)
        return ret;
    const char *base = acme_client_dir_url(c, "renewalInfo");
    if (!base)
        return -ENOTSUP;
    size_t bl = strlen(base);
    char *url = tlsbox_xasprintf("%s%s%s", base, bl && base[bl - 1] == '/' ? "" : "/", ari_id);
    snprintf(e->step, sizeof(e->step), "renewal-info");
    ret = acme_get(c, url, &r, e);
    if (ret < 0)
        goto out;
    json_t *w = json_object_get(r.json, "suggestedWindow");
    *ws = acme_parse_rfc3339(json_string_value(json_object_get(w, "start")));
    *we = acme_parse_rfc3339(json_string_value(json_object_get(w, "end")));
    if (!*ws || !*we || *we <= *ws) {
        acme_err_set(e, "renewal-info", "tlsbox:protocol", "%s: no usable suggestedWindow", url);
        ret = -EPROTO;
        goto out;
    }
    time_t now = time(NULL);
    /* RFC 9773 4.3: clamp the poll interval to between 1 minute and 1 day; 6 h by default. */
    *retry_after = r.retry_after ? r.retry_after : now + 6 * 3600;
    if (*retry_after < now + 60)
        *retry_after = now + 60;
out:
    free(url);
    acme_resp_free(&r);
    return ret;
}
