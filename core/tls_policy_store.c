/* The versioned TLS policy in the store (see tls_policy_store.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/store.h"
#include "core/tls_dh.h"
#include "core/tls_policy.h"
#include "core/tls_policy_store.h"
#include "core/tls_probe.h"
#include "core/xalloc.h"

static json_t *parse_policy(const unsigned char *text)
{
    return text ? json_loads((const char *)text, JSON_REJECT_DUPLICATES, NULL) : NULL;
}

int tls_policy_store_active(sqlite3 *db, json_t **policy, int64_t *id, char **prio)
{
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    *policy = NULL;
    if (prio)
        *prio = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT id, policy_json, priority FROM policy_versions "
                           "WHERE active = 1",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    int s = store_step_row(st);
    if (s < 0) {
        rc = s;
        goto out;
    }
    *policy = parse_policy(sqlite3_column_text(st, 1));
    if (!*policy)
        goto out;
    if (id)
        *id = sqlite3_column_int64(st, 0);
    if (prio)
        *prio = xstrdup((const char *)sqlite3_column_text(st, 2));
    rc = 0;
out:
    sqlite3_finalize(st);
    return rc;
}

int tls_policy_store_get(sqlite3 *db, int64_t id, json_t **policy)
{
    sqlite3_stmt *st = NULL;
    int rc = -EIO;
    *policy = NULL;
    if (sqlite3_prepare_v2(db, "SELECT policy_json FROM policy_versions WHERE id = ?", -1, &st,
                           NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int64(st, 1, id);
    int s = store_step_row(st);
    if (s < 0) {
        rc = s;
        goto out;
    }
    *policy = parse_policy(sqlite3_column_text(st, 0));
    rc = *policy ? 0 : -EIO;
out:
    sqlite3_finalize(st);
    return rc;
}

/*
 * -EINVAL with *err when @p policy's key_types allow none of the active
 * certificates: stored, it would only be logged as a failed rebuild while
 * the old policy went on serving, and after a restart nothing would.  A
 * store without certificates (the first start) has nothing to judge by.
 */
static int check_key_types(sqlite3 *db, json_t *policy, char **err)
{
    sqlite3_stmt *st = NULL;
    bool any = false, allowed = false;
    char *have = xstrdup("");
    if (sqlite3_prepare_v2(db,
                           "SELECT DISTINCT key_type FROM certificates WHERE status = 'active' "
                           "ORDER BY key_type",
                           -1, &st, NULL) != SQLITE_OK) {
        free(have);
        return 0; /* the bundle's rebuild will say it */
    }
    while (sqlite3_step(st) == SQLITE_ROW && !allowed) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        any = true;
        allowed = tls_policy_key_type_allowed(policy, t);
        char *n = xasprintf("%s%s%s", have, *have ? ", " : "", t ? t : "?");
        free(have);
        have = n;
    }
    sqlite3_finalize(st);
    int rc = 0;
    if (any && !allowed) {
        char *want = json_dumps(json_object_get(policy, "key_types"), JSON_COMPACT);
        *err = xasprintf("key_types: %s allows none of the active certificates (their keys: %s); "
                         "install one of an allowed type first",
                         want ? want : "[]", have);
        free(want);
        rc = -EINVAL;
    }
    free(have);
    return rc;
}

int tls_policy_store_credentials(sqlite3 *db, json_t *policy, const char *prio,
                                 gnutls_certificate_credentials_t *cred, gnutls_dh_params_t *dh,
                                 char **have)
{
    sqlite3_stmt *st = NULL;
    gnutls_priority_t p = NULL;
    int loaded = 0;
    *cred = NULL;
    *dh = NULL;
    *have = xstrdup("");
    if (gnutls_certificate_allocate_credentials(cred) < 0) {
        *cred = NULL;
        goto out;
    }
    if (sqlite3_prepare_v2(db,
                           "SELECT chain_pem, key_pem, key_type FROM certificates "
                           "WHERE status = 'active' ORDER BY key_type",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 2);
        if (!tls_policy_key_type_allowed(policy, t))
            continue;
        gnutls_datum_t chain = {(unsigned char *)sqlite3_column_blob(st, 0),
                                (unsigned)sqlite3_column_bytes(st, 0)};
        gnutls_datum_t key = {(unsigned char *)sqlite3_column_blob(st, 1),
                              (unsigned)sqlite3_column_bytes(st, 1)};
        if (!chain.data || !key.data ||
            gnutls_certificate_set_x509_key_mem2(*cred, &chain, &key, GNUTLS_X509_FMT_PEM, NULL,
                                                 0) < 0)
            continue;
        loaded++;
        char *n = xasprintf("%s%s%s", *have, **have ? ", " : "", t ? t : "?");
        free(*have);
        *have = n;
    }
    /* The DH parameters the bundle would serve for TLS 1.2 DHE. */
    if (loaded > 0 && gnutls_priority_init(&p, prio, NULL) >= 0) {
        json_decref(tls_dh_load(db, *cred, policy, p, dh));
        gnutls_priority_deinit(p);
    }
out:
    sqlite3_finalize(st);
    if (loaded == 0 && *cred) {
        gnutls_certificate_free_credentials(*cred);
        *cred = NULL;
    }
    return loaded;
}

/*
 * -EINVAL with *err when no client at all could complete a handshake with
 * priority string @p prio and the active certificates @p policy serves
 * (say, RSA-only signature algorithms with an ECDSA key, or TLS 1.2 with
 * ECDHE and only FFDHE groups): compiled alone such a string is valid, and
 * stored it would take the site off the air.  Nothing to judge by (no
 * certificate loads): 0.
 */
static int check_handshake(sqlite3 *db, json_t *policy, const char *prio, char **err)
{
    gnutls_certificate_credentials_t cred = NULL;
    gnutls_dh_params_t dh = NULL;
    char *have = NULL, *why = NULL;
    int rc = 0;
    if (tls_policy_store_credentials(db, policy, prio, &cred, &dh, &have) > 0 &&
        tls_probe_any(prio, cred, &why) == -EINVAL) {
        *err = xasprintf("policy: no client could complete a handshake with it and the active "
                         "certificates (their keys: %s): %s",
                         have, why ? why : "?");
        rc = -EINVAL;
    }
    free(why);
    free(have);
    if (cred)
        gnutls_certificate_free_credentials(cred);
    if (dh)
        gnutls_dh_params_deinit(dh);
    return rc;
}

int tls_policy_store_save(sqlite3 *db, json_t *policy, const char *author, const char *comment,
                          int64_t *id, char **err)
{
    sqlite3_stmt *st = NULL;
    char *prio = NULL, *text = NULL;
    int rc = -EINVAL;
    *err = NULL;

    json_t *norm = tls_policy_normalize(policy, err);
    if (!norm)
        goto out;
    prio = tls_policy_compile(norm, NULL, err);
    if (!prio || check_key_types(db, norm, err) < 0 || check_handshake(db, norm, prio, err) < 0)
        goto out;
    /* Sorted keys: two equal policies are byte-equal in the store. */
    text = json_dumps(norm, JSON_COMPACT | JSON_SORT_KEYS);

    rc = -EIO;
    if (store_begin(db, err) < 0)
        goto out;
    if (sqlite3_exec(db, "UPDATE policy_versions SET active = 0 WHERE active = 1", NULL, NULL,
                     NULL) != SQLITE_OK)
        goto fail;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO policy_versions "
                           "(created_at, author, comment, policy_json, priority, active) "
                           "VALUES (?, ?, ?, ?, ?, 1)",
                           -1, &st, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)time(NULL));
    sqlite3_bind_text(st, 2, author && *author ? author : "system", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, comment, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, text, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, prio, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        goto fail;
    int64_t newid = sqlite3_last_insert_rowid(db);
    char target[32];
    snprintf(target, sizeof(target), "%lld", (long long)newid);
    store_audit(db, author, "policy.set", target, comment);
    if (store_commit(db, err) < 0)
        goto out;
    if (id)
        *id = newid;
    rc = 0;
    goto out;
fail:
    *err = xasprintf("store: cannot save the policy: %s", sqlite3_errmsg(db));
    store_rollback(db);
out:
    sqlite3_finalize(st);
    json_decref(norm);
    free(prio);
    free(text);
    return rc;
}

int tls_policy_store_ensure_default(sqlite3 *db, char **err)
{
    json_t *p = NULL;
    int r = tls_policy_store_active(db, &p, NULL, NULL);
    json_decref(p);
    if (r == 0)
        return 0;
    if (r != -ENOENT) {
        *err = xasprintf("store: cannot read the active policy: %s", sqlite3_errmsg(db));
        return -EIO;
    }
    p = tls_policy_default();
    r = tls_policy_store_save(db, p, "system", "default policy (intermediate)", NULL, err);
    json_decref(p);
    return r;
}

int tls_policy_store_rollback(sqlite3 *db, int64_t version, const char *author, int64_t *id,
                              char **err)
{
    json_t *p = NULL;
    *err = NULL;
    int r = tls_policy_store_get(db, version, &p);
    if (r == -ENOENT) {
        *err = xasprintf("policy version %lld does not exist", (long long)version);
        return r;
    }
    if (r < 0) {
        *err = xasprintf("store: cannot read policy version %lld", (long long)version);
        return r;
    }
    char *comment = xasprintf("rollback to version %lld", (long long)version);
    r = tls_policy_store_save(db, p, author, comment, id, err);
    free(comment);
    json_decref(p);
    return r;
}

json_t *tls_policy_store_history(sqlite3 *db, int limit)
{
    sqlite3_stmt *st = NULL;
    json_t *a = json_array();
    if (sqlite3_prepare_v2(db,
                           "SELECT id, created_at, author, comment, active, policy_json, priority "
                           "FROM policy_versions ORDER BY id DESC LIMIT ?",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    sqlite3_bind_int(st, 1, limit > 0 ? limit : 100);
    while (sqlite3_step(st) == SQLITE_ROW) {
        json_t *p = parse_policy(sqlite3_column_text(st, 5));
        const unsigned char *comment = sqlite3_column_text(st, 3);
        json_array_append_new(a, json_pack("{s:I, s:I, s:s, s:s?, s:b, s:s?, s:s}", "id",
                                           (json_int_t)sqlite3_column_int64(st, 0), "created_at",
                                           (json_int_t)sqlite3_column_int64(st, 1), "author",
                                           (const char *)sqlite3_column_text(st, 2), "comment",
                                           (const char *)comment, "active",
                                           sqlite3_column_int(st, 4) == 1, "preset",
                                           json_string_value(json_object_get(p, "preset")),
                                           "priority", (const char *)sqlite3_column_text(st, 6)));
        json_decref(p);
    }
out:
    sqlite3_finalize(st);
    return a;
}
