/* API routes: cert, cert/{name}, cert/import, cert/root, policy, policy/preset,
 * policy/raw, policy/history, policy/rollback, policy/preview. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/api.h"
#include "core/events.h"
#include "core/plugin_loader.h"
#include "core/store.h"
#include "core/tls.h"
#include "core/tls_api.h"
#include "core/tls_bundle.h"
#include "core/tls_ca.h"
#include "core/tls_cert.h"
#include "core/tls_policy.h"
#include "core/tls_policy_store.h"
#include "core/tls_probe.h"
#include "core/utf8.h"
#include "core/xalloc.h"

/* A store connection for this request; replies 500 when none. */
static sqlite3 *req_db(struct tlsbox_api_reply *reply)
{
    sqlite3 *db = store_connect();
    if (!db)
        api_reply_error(reply, 500, "store: cannot open a connection");
    return db;
}

static const char *actor(const struct tlsbox_api_request *req)
{
    return req->user && *req->user ? req->user : "api";
}

/* ---- certificates ------------------------------------------------------ */

static void on_cert_list(void *arg, const struct tlsbox_api_request *req,
                         struct tlsbox_api_reply *reply)
{
    (void)arg;
    (void)req;
    sqlite3 *db = req_db(reply);
    if (!db)
        return;
    json_t *j = json_object();
    json_object_set_new(j, "certificates", tls_cert_list(db, time(NULL)));
    struct tlsbox_bundle *b = tls_bundle_acquire();
    json_object_set_new(j, "bundle", tls_bundle_describe(b));
    tls_bundle_release(b);
    store_disconnect(db);
    api_reply_json(reply, 200, j);
}

static void on_cert_root(void *arg, const struct tlsbox_api_request *req,
                         struct tlsbox_api_reply *reply)
{
    (void)arg;
    (void)req;
    char *pem = NULL;
    sqlite3 *db = req_db(reply);
    if (!db)
        return;
    int r = tls_ca_root_pem(db, &pem);
    store_disconnect(db);
    if (r == -ENOENT)
        api_reply_error(reply, 404, "no internal CA root exists yet");
    else if (r < 0)
        api_reply_error(reply, 500, "store: cannot read the internal CA root");
    else
        api_reply_json(reply, 200, json_pack("{s:s}", "pem", pem));
    free(pem);
}

static void on_cert_get(void *arg, const struct tlsbox_api_request *req,
                        struct tlsbox_api_reply *reply)
{
    (void)arg;
    const char *name = req->path + strlen("cert/");
    char *pem = NULL;
    if (!tls_cert_name_ok(name)) {
        api_reply_error(reply, 400, "certificate name '%s' is not valid", name);
        return;
    }
    sqlite3 *db = req_db(reply);
    if (!db)
        return;
    int r = tls_cert_chain(db, name, &pem);
    store_disconnect(db);
    if (r == -ENOENT)
        api_reply_error(reply, 404, "no certificate named '%s'", name);
    else if (r < 0)
        api_reply_error(reply, 500, "store: cannot read certificate '%s'", name);
    else
        api_reply_json(reply, 200, json_pack("{s:s, s:s}", "name", name, "chain_pem", pem));
    free(pem);
}

/* Body: {"chain_pem" | "cert_pem" [+ "chain_pem"], "key_pem", "name"?}. */
static void on_cert_import(void *arg, const struct tlsbox_api_request *req,
                           struct tlsbox_api_reply *reply)
{
    (void)arg;
    json_t *body = api_body_object(req, reply);
    char *chain = NULL, *err = NULL, *name = NULL;
    if (!body)
        return;
    const char *cert = json_string_value(json_object_get(body, "cert_pem"));
    const char *rest = json_string_value(json_object_get(body, "chain_pem"));
    const char *key = json_string_value(json_object_get(body, "key_pem"));
    json_t *jn = json_object_get(body, "name");
    if ((!cert && !rest) || !key || (jn && !json_is_string(jn))) {
        api_reply_error(reply, 400,
                        "cert/import needs cert_pem (or chain_pem), key_pem and an "
                        "optional name");
        goto out;
    }
    chain = xasprintf("%s%s%s", cert ? cert : "", cert && rest ? "\n" : "", rest ? rest : "");
    struct tlsbox_cert_install in = {
        .name = json_string_value(jn),
        .chain_pem = chain,
        .key_pem = key,
        .source = TLSBOX_CERT_IMPORT,
    };
    int r = tls_cert_install_as(actor(req), &in, &name, &err);
    if (r < 0) {
        api_reply_error(reply, r == -EINVAL ? 400 : 500, "%s", err);
        goto out;
    }
    sqlite3 *db = req_db(reply);
    if (!db)
        goto out;
    json_t *list = tls_cert_list(db, time(NULL));
    store_disconnect(db);
    json_t *mine = NULL;
    size_t i;
    json_t *e;
    json_array_foreach(
        list, i, e) if (strcmp(json_string_value(json_object_get(e, "name")), name) == 0) mine = e;
    api_reply_json(reply, 201, json_pack("{s:s, s:O?}", "name", name, "certificate", mine));
    json_decref(list);
out:
    /* The body held the private key. */
    if (key)
        wipe((void *)key, strlen(key));
    json_decref(body);
    free(chain);
    free(err);
    free(name);
}

/* ---- policy ------------------------------------------------------------- */

static json_t *policy_reply(sqlite3 *db)
{
    json_t *p = NULL;
    int64_t id = 0;
    char *prio = NULL;
    if (tls_policy_store_active(db, &p, &id, &prio) < 0)
        return NULL;
    json_t *j = json_pack("{s:I, s:o, s:s}", "id", (json_int_t)id, "policy", p, "priority",
                          prio ? prio : "");
    free(prio);
    /* The stored policy a newer tlsbox refuses: the default serves instead. */
    struct tlsbox_bundle *b = tls_bundle_acquire();
    if (b && tls_bundle_policy_id(b) == id && tls_bundle_policy_refused(b))
        json_object_set_new(j, "refused", json_string(tls_bundle_policy_refused(b)));
    tls_bundle_release(b);
    return j;
}

static void on_policy_get(void *arg, const struct tlsbox_api_request *req,
                          struct tlsbox_api_reply *reply)
{
    (void)arg;
    (void)req;
    sqlite3 *db = req_db(reply);
    if (!db)
        return;
    json_t *j = policy_reply(db);
    store_disconnect(db);
    if (j)
        api_reply_json(reply, 200, j);
    else
        api_reply_error(reply, 500, "no active TLS policy");
}

/*
 * The candidate a request describes, from the active policy @p cur:
 * {"preset": NAME} | {"priority": RAW} | {"fields": {...}} | {field: value...}.
 * NULL with *err.
 */
static json_t *candidate(json_t *cur, json_t *body, char **err)
{
    json_t *fields = json_object_get(body, "fields");
    const char *preset = json_string_value(json_object_get(body, "preset"));
    json_t *raw = json_object_get(body, "priority");
    /* Only a preset: its own message for an unknown name.  With other
     * fields, they apply on top of the preset (tls_policy_apply_fields). */
    if (preset && !fields && json_object_size(body) - !!json_object_get(body, "comment") == 1)
        return tls_policy_with_preset(cur, preset, err);
    if (fields) {
        /* Beside "fields", a field (or "preset", "priority") would be
         * dropped unsaid while the rest is stored: refused by name. */
        const char *k;
        json_t *v;
        json_object_foreach(body, k, v)
        {
            if (strcmp(k, "fields") != 0 && strcmp(k, "comment") != 0 && strcmp(k, "base") != 0) {
                *err = xasprintf("policy: '%s' beside \"fields\" is not applied; put it "
                                 "inside \"fields\"",
                                 k);
                return NULL;
            }
        }
        return tls_policy_apply_fields(cur, fields, err);
    }
    json_t *f = json_deep_copy(body);
    json_object_del(f, "comment");
    if (raw) {
        if (!json_is_string(raw)) {
            *err = xstrdup("priority: expected a string");
            json_decref(f);
            return NULL;
        }
        json_object_set(f, "priority_override", raw);
        json_object_del(f, "priority");
    }
    json_t *out = tls_policy_apply_fields(cur, f, err);
    json_decref(f);
    return out;
}

static void publish_policy(int64_t id)
{
    char data[64];
    snprintf(data, sizeof(data), "{\"id\":%lld}", (long long)id);
    events_publish("policy.changed", data);
}

/*
 * Held from reading the active policy to storing the change made from it:
 * the admin server's threads and the control socket's run changes at the
 * same time, and two edits of different fields, each applied to the same
 * active version, would store one and lose the other (and an edit made from
 * the version before a rollback would undo it).
 */
static pthread_mutex_t change_lock = PTHREAD_MUTEX_INITIALIZER;

/* The longest comment a policy change may carry, in bytes. */
#define POLICY_COMMENT_MAX 200

/* Apply the candidate described by the body; @p kind shapes the body check. */
static void policy_change(const struct tlsbox_api_request *req, struct tlsbox_api_reply *reply,
                          const char *kind)
{
    json_t *body = api_body_object(req, reply), *cur = NULL, *cand = NULL;
    char *err = NULL, *comment = NULL;
    sqlite3 *db = NULL;
    int64_t id = 0;
    bool locked = false;
    if (!body)
        return;
    if ((strcmp(kind, "preset") == 0 && !json_is_string(json_object_get(body, "preset"))) ||
        (strcmp(kind, "raw") == 0 && !json_is_string(json_object_get(body, "priority")))) {
        api_reply_error(reply, 400, "policy/%s needs {\"%s\": \"...\"}", kind,
                        strcmp(kind, "raw") == 0 ? "priority" : "preset");
        goto out;
    }
    /* The comment stays in the history, shown by the web UI and tlsboxctl:
     * a line of text, not a second body. */
    json_t *cj = json_object_get(body, "comment");
    const char *ct = json_string_value(cj);
    if (cj &&
        (!ct || strlen(ct) > POLICY_COMMENT_MAX || utf8_invalid_at(ct, strlen(ct)) != strlen(ct))) {
        api_reply_error(reply, 400, "policy/%s: \"comment\" must be UTF-8 text of at most %d bytes",
                        kind, POLICY_COMMENT_MAX);
        goto out;
    }
    /* Control characters would break that line: a newline forges a row of
     * tlsboxctl policy history, an escape sequence reaches the terminal. */
    for (const unsigned char *p = (const unsigned char *)ct; p && *p; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            api_reply_error(reply, 400,
                            "policy/%s: \"comment\" contains a control character at byte %zu", kind,
                            (size_t)(p - (const unsigned char *)ct) + 1);
            goto out;
        }
    }
    /* "base": the version a form was filled from.  Applied to a newer one,
     * the form's other fields would quietly undo a change made since. */
    json_t *bj = json_object_get(body, "base");
    json_int_t base = json_integer_value(bj);
    bool has_base = bj != NULL;
    if (has_base && (!json_is_integer(bj) || base <= 0)) {
        api_reply_error(reply, 400,
                        "policy/%s: \"base\" must be the version number (N > 0) the "
                        "change was made from",
                        kind);
        goto out;
    }
    json_object_del(body, "base");
    if (!(db = req_db(reply)))
        goto out;
    pthread_mutex_lock(&change_lock);
    locked = true;
    int64_t cur_id = 0;
    if (tls_policy_store_active(db, &cur, &cur_id, NULL) < 0) {
        api_reply_error(reply, 500, "no active TLS policy");
        goto out;
    }
    if (has_base && base != cur_id) {
        api_reply_error(reply, 409,
                        "policy/%s: version %lld is active now, not version %lld this change was "
                        "made from; nothing stored: reload and apply again",
                        kind, (long long)cur_id, (long long)base);
        goto out;
    }
    if (!(cand = candidate(cur, body, &err))) {
        api_reply_error(reply, 400, "%s", err);
        goto out;
    }
    const char *c = json_string_value(json_object_get(body, "comment"));
    if (c)
        comment = xstrdup(c);
    else if (strcmp(kind, "preset") == 0)
        comment = xasprintf("preset %s", json_string_value(json_object_get(body, "preset")));
    else if (strcmp(kind, "raw") == 0)
        comment = xstrdup("raw priority string");
    else {
        json_t *f = json_object_get(body, "fields") ? json_object_get(body, "fields") : body;
        comment = xstrdup("set");
        const char *k;
        json_t *v;
        json_object_foreach(f, k, v)
        {
            if (strcmp(k, "comment") == 0)
                continue;
            char *n = xasprintf("%s %s", comment, k);
            free(comment);
            comment = n;
        }
    }
    int r = tls_policy_store_save(db, cand, actor(req), comment, &id, &err);
    pthread_mutex_unlock(&change_lock);
    locked = false;
    if (r < 0) {
        api_reply_error(reply, r == -EINVAL ? 400 : 500, "%s", err);
        goto out;
    }
    publish_policy(id);
    api_reply_json(reply, 200, policy_reply(db));
out:
    if (locked)
        pthread_mutex_unlock(&change_lock);
    if (db)
        store_disconnect(db);
    json_decref(body);
    json_decref(cur);
    json_decref(cand);
    free(err);
    free(comment);
}

/* PUT policy, POST policy/preset, POST policy/raw: @p arg names the change. */
static void on_policy_change(void *arg, const struct tlsbox_api_request *req,
                             struct tlsbox_api_reply *reply)
{
    policy_change(req, reply, arg);
}

static void on_policy_history(void *arg, const struct tlsbox_api_request *req,
                              struct tlsbox_api_reply *reply)
{
    (void)arg;
    (void)req;
    sqlite3 *db = req_db(reply);
    if (!db)
        return;
    json_t *h = tls_policy_store_history(db, 200);
    store_disconnect(db);
    api_reply_json(reply, 200, json_pack("{s:o}", "versions", h));
}

static void on_policy_rollback(void *arg, const struct tlsbox_api_request *req,
                               struct tlsbox_api_reply *reply)
{
    (void)arg;
    json_t *body = api_body_object(req, reply);
    char *err = NULL;
    int64_t id = 0;
    if (!body)
        return;
    json_t *v = json_object_get(body, "version");
    json_int_t version = 0;
    if (json_is_integer(v))
        version = json_integer_value(v);
    else if (json_is_string(v)) {
        /* Digits and nothing else: "1xyz" is not version 1. */
        const char *t = json_string_value(v);
        char *end = NULL;
        errno = 0;
        version = *t >= '0' && *t <= '9' ? strtoll(t, &end, 10) : 0;
        if (errno || !end || *end)
            version = 0;
    }
    if (version <= 0) {
        api_reply_error(reply, 400, "policy/rollback needs {\"version\": N} with N > 0");
        json_decref(body);
        return;
    }
    sqlite3 *db = req_db(reply);
    if (!db) {
        json_decref(body);
        return;
    }
    /* Under the edits' lock: an edit that read the active version before
     * this rollback would otherwise be stored over it and undo it. */
    pthread_mutex_lock(&change_lock);
    int r = tls_policy_store_rollback(db, version, actor(req), &id, &err);
    pthread_mutex_unlock(&change_lock);
    if (r < 0) {
        api_reply_error(reply, r == -ENOENT ? 404 : r == -EINVAL ? 400 : 500, "%s", err);
    } else {
        publish_policy(id);
        api_reply_json(reply, 200, policy_reply(db));
    }
    store_disconnect(db);
    json_decref(body);
    free(err);
}

/*
 * "clients": each client family's handshake against @p prio with the
 * certificates the candidate @p cand would serve (the active ones its
 * key_types allow, as the bundle built from it would load them), so the
 * answer is GnuTLS' own, not a rule of thumb, and the one the site gives
 * once the candidate is applied.
 */
static void add_client_probe(json_t *pv, sqlite3 *db, json_t *cand, const char *prio)
{
    gnutls_certificate_credentials_t cred = NULL;
    gnutls_dh_params_t dh = NULL;
    char *err = NULL, *have = NULL;
    json_t *clients = NULL;
    if (tls_policy_store_credentials(db, cand, prio, &cred, &dh, &have) > 0)
        clients = tls_probe_families(prio, cred, &err);
    else
        err = xstrdup("no active certificate of a key type this policy allows");
    json_object_set_new(pv, "clients", clients ? clients : json_null());
    if (err)
        json_object_set_new(pv, "clients_error", json_string(err));
    if (cred)
        gnutls_certificate_free_credentials(cred);
    if (dh)
        gnutls_dh_params_deinit(dh);
    free(have);
    free(err);
}

/* GET: the active policy, or ?preset=NAME / ?priority=RAW.  POST: a body
 * like PUT policy.  Nothing is stored. */
static void on_policy_preview(void *arg, const struct tlsbox_api_request *req,
                              struct tlsbox_api_reply *reply)
{
    (void)arg;
    json_t *body = NULL, *cur = NULL, *cand = NULL;
    char *err = NULL, *prio = NULL;
    sqlite3 *db = NULL;
    if (strcmp(req->method, "POST") == 0) {
        if (!(body = api_body_object(req, reply)))
            return;
    } else if (req->query) {
        char *preset = api_query_get(req->query, "preset");
        char *raw = api_query_get(req->query, "priority");
        if (preset || raw)
            body = json_pack("{s:s?, s:s?}", "preset", preset, "priority", raw);
        free(preset);
        free(raw);
    }
    if (!(db = req_db(reply)))
        goto out;
    if (tls_policy_store_active(db, &cur, NULL, NULL) < 0) {
        api_reply_error(reply, 500, "no active TLS policy");
        goto out;
    }
    cand = body ? candidate(cur, body, &err) : json_incref(cur);
    if (!cand || !(prio = tls_policy_compile(cand, NULL, &err))) {
        api_reply_error(reply, 400, "%s", err);
        goto out;
    }
    json_t *pv = tls_policy_preview(prio, &err);
    if (!pv) {
        api_reply_error(reply, 400, "%s", err);
        goto out;
    }
    char *hsts = tls_policy_hsts(cand);
    json_object_set_new(pv, "hsts", hsts ? json_string(hsts) : json_null());
    free(hsts);
    json_object_set(pv, "policy", cand);
    add_client_probe(pv, db, cand, prio);
    api_reply_json(reply, 200, pv);
out:
    if (db)
        store_disconnect(db);
    json_decref(body);
    json_decref(cur);
    json_decref(cand);
    free(err);
    free(prio);
}

void tls_api_register(void)
{
    struct tlsbox_plugin *me = core_self();
    api_route_add(me, "GET", "cert", on_cert_list, NULL);
    api_route_add(me, "GET", "cert/root", on_cert_root, NULL);
    api_route_add(me, "POST", "cert/import", on_cert_import, NULL);
    api_route_add(me, "GET", "cert/*", on_cert_get, NULL);
    api_route_add(me, "GET", "policy", on_policy_get, NULL);
    api_route_add(me, "PUT", "policy", on_policy_change, "set");
    api_route_add(me, "POST", "policy/preset", on_policy_change, "preset");
    api_route_add(me, "POST", "policy/raw", on_policy_change, "raw");
    api_route_add(me, "GET", "policy/history", on_policy_history, NULL);
    api_route_add(me, "POST", "policy/rollback", on_policy_rollback, NULL);
    api_route_add(me, "GET", "policy/preview", on_policy_preview, NULL);
    api_route_add(me, "POST", "policy/preview", on_policy_preview, NULL);
}
