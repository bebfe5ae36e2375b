/* TLS policy: presets compiled and checked against what GnuTLS derives, raw
 * strings with errors, field edits, and the versioned store with rollback. */
#include <errno.h>

#include <gnutls/gnutls.h>

#include "core/tls_policy.h"
#include "core/tls_policy_store.h"
#include "tests/tap.h"
#include "tests/unit/core/tls_test_util.h"

static char *list_of(json_t *pv, const char *key)
{
    char *s = json_dumps(json_object_get(pv, key), JSON_COMPACT);
    return s ? s : xstrdup("null");
}

static void preset_case(const char *name, const char *protos, const char *ciphers, const char *kx,
                        const char *first_suite)
{
    char *err = NULL;
    json_t *p = tls_policy_preset(name);
    json_t *n = tls_policy_normalize(p, &err);
    ok(n != NULL, "%s: normalises", name);
    char *prio = tls_policy_compile(n, NULL, &err);
    ok(prio != NULL, "%s: compiles (%s)", name, prio ? prio : err);
    json_t *pv = prio ? tls_policy_preview(prio, &err) : NULL;
    char *got = list_of(pv, "protocols");
    is_str(got, protos, "%s: protocols GnuTLS derives", name);
    free(got);
    got = list_of(pv, "ciphers");
    is_str(got, ciphers, "%s: ciphers GnuTLS derives", name);
    free(got);
    got = list_of(pv, "kx");
    is_str(got, kx, "%s: key exchanges GnuTLS derives", name);
    free(got);
    json_t *suites = json_object_get(pv, "suites");
    is_str(json_string_value(json_array_get(suites, 0)), first_suite, "%s: first suite", name);
    char *all = list_of(pv, "suites");
    ok(!strstr(all, "3DES") && !strstr(all, "ARCFOUR") && !strstr(all, "NULL"),
       "%s: no 3DES, RC4 or NULL suites", name);
    if (strcmp(name, "compat") != 0)
        ok(!strstr(all, "CBC"), "%s: AEAD only", name);
    free(all);
    json_decref(pv);
    json_decref(p);
    json_decref(n);
    free(prio);
    free(err);
}

static void raw_error(const char *raw, const char *want, const char *what)
{
    char *err = NULL;
    json_t *base = tls_policy_default();
    json_t *f = json_pack("{s:s}", "priority_override", raw);
    json_t *p = tls_policy_apply_fields(base, f, &err);
    char *prio = p ? tls_policy_compile(p, NULL, &err) : NULL;
    ok(prio == NULL, "%s: refused", what);
    like(err, want, "%s: message", what);
    free(prio);
    free(err);
    json_decref(p);
    json_decref(f);
    json_decref(base);
}

static void field_error(const char *field, const char *value, const char *want)
{
    char *err = NULL;
    json_t *base = tls_policy_default();
    json_t *f = json_pack("{s:s}", field, value);
    json_t *p = tls_policy_apply_fields(base, f, &err);
    ok(p == NULL, "%s=%s refused", field, value);
    like(err, want, "%s=%s: message", field, value);
    json_decref(p);
    json_decref(f);
    json_decref(base);
    free(err);
}

static char *active_text(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    char *s = NULL;
    if (sqlite3_prepare_v2(db, "SELECT policy_json FROM policy_versions WHERE active = 1", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        s = xstrdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return s;
}

static char *version_text(sqlite3 *db, int id)
{
    sqlite3_stmt *st = NULL;
    char *s = NULL;
    if (sqlite3_prepare_v2(db, "SELECT policy_json FROM policy_versions WHERE id = ?", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, id);
        if (sqlite3_step(st) == SQLITE_ROW)
            s = xstrdup((const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    return s;
}

int main(void)
{
    tt_tmpdir();
    gnutls_global_init();

    /* TLS 1.3 negotiates groups, not kx: GnuTLS lists no kx for 1.3 only. */
    preset_case("modern", "[\"TLS1.3\"]", "[\"AES-128-GCM\",\"AES-256-GCM\",\"CHACHA20-POLY1305\"]",
                "[]", "TLS_AES_128_GCM_SHA256");
    preset_case("intermediate", "[\"TLS1.3\",\"TLS1.2\"]",
                "[\"AES-128-GCM\",\"AES-256-GCM\",\"CHACHA20-POLY1305\"]",
                "[\"ECDHE-ECDSA\",\"ECDHE-RSA\"]", "TLS_AES_128_GCM_SHA256");
    preset_case("compat", "[\"TLS1.3\",\"TLS1.2\",\"TLS1.1\",\"TLS1.0\"]",
                "[\"AES-128-GCM\",\"AES-256-GCM\",\"CHACHA20-POLY1305\",\"AES-128-CBC\","
                "\"AES-256-CBC\"]",
                "[\"ECDHE-ECDSA\",\"ECDHE-RSA\",\"DHE-RSA\",\"RSA\"]", "TLS_AES_128_GCM_SHA256");
    ok(tls_policy_preset("sslv3") == NULL, "unknown preset refused");

    /* Defaults: intermediate, HSTS one year without preload. */
    json_t *def = tls_policy_default();
    char *hsts = tls_policy_hsts(def);
    is_str(hsts, "max-age=31536000", "default HSTS one year, no preload");
    free(hsts);
    is_str(json_string_value(json_object_get(def, "preset")), "intermediate", "default preset");

    /* Raw strings: the offending token and its position. */
    raw_error("NORMAL:+BOGUS-ALG", "'+BOGUS-ALG' at position 7", "unknown token");
    raw_error("NONE:+VERS-TLS1.2:+AES-128-GCM:+AEAD:+ECDHE-RSA:+GROUP-NOPE",
              "'+GROUP-NOPE' at position 48", "unknown group");
    raw_error("NORMAL:+3DES-CBC", "3DES-CBC at position 7 is never allowed", "3DES");
    raw_error("NORMAL:+ARCFOUR-128", "ARCFOUR-128 at position 7 is never allowed", "RC4");
    raw_error("NONE:+VERS-TLS1.2", "no usable", "nothing usable");
    /* The position of the token itself, not of a name inside another. */
    raw_error("NORMAL:+COMP-NULL:+NULL", "cipher NULL at position 18 is never allowed",
              "NULL after COMP-NULL");
    raw_error("NORMAL:!NULL:+NULL", "cipher NULL at position 13 is never allowed",
              "NULL removed, then added");
    /* GnuTLS skips spaces after a ':': a banned flag behind one is still it. */
    raw_error("NORMAL: %NO_SESSION_HASH", "%NO_SESSION_HASH at position 8 is never allowed",
              "a banned flag after a space");
    raw_error("NORMAL:  %DISABLE_SAFE_RENEGOTIATION",
              "%DISABLE_SAFE_RENEGOTIATION at position 9 is never allowed",
              "a banned flag after two spaces");
    {
        char *err = NULL;
        json_t *base = tls_policy_default();
        json_t *f = json_pack("{s:s}", "priority_override", "SECURE256:-VERS-TLS1.0");
        json_t *p = tls_policy_apply_fields(base, f, &err);
        char *prio = p ? tls_policy_compile(p, NULL, &err) : NULL;
        is_str(prio, "SECURE256:-VERS-TLS1.0", "a valid raw string is used as is");
        is_str(json_string_value(json_object_get(p, "preset")), "custom", "raw makes it custom");
        free(prio);
        free(err);
        json_decref(p);
        json_decref(f);
        json_decref(base);
    }

    /* Structured fields, as typed on a command line. */
    field_error("ciphers", "AES-999", "'AES-999' is not a cipher GnuTLS knows");
    field_error("ciphers", "AES-128-GCM,3DES-CBC", "'3DES-CBC' is never allowed");
    field_error("min_version", "SSL3.0", "min_version: 'SSL3.0' is not one of TLS1.0");
    field_error("hsts_max_age", "-1", "0..63072000");
    field_error("hsts_preload", "true", "needs hsts_include_subdomains");
    field_error("tickets", "maybe", "not true or false");
    field_error("nonsense", "1", "unknown field 'nonsense'");
    {
        char *err = NULL;
        json_t *f = json_pack("{s:s, s:s}", "ciphers", "AES-256-GCM, chacha20-poly1305",
                              "hsts_max_age", "0");
        json_t *p = tls_policy_apply_fields(def, f, &err);
        char *c = p ? json_dumps(json_object_get(p, "ciphers"), JSON_COMPACT) : NULL;
        is_str(c, "[\"AES-256-GCM\",\"CHACHA20-POLY1305\"]", "list from text, canonical names");
        is_str(json_string_value(json_object_get(p, "preset")), "custom", "now custom");
        ok(tls_policy_hsts(p) == NULL, "hsts_max_age 0: no header");
        free(c);
        json_decref(p);
        json_decref(f);
        f = json_pack("{s:s, s:s}", "min_version", "TLS1.3", "max_version", "TLS1.2");
        p = tls_policy_apply_fields(def, f, &err);
        ok(p == NULL && err && strstr(err, "newer than max_version"), "min > max refused");
        free(err);
        json_decref(f);
        f = json_pack("{s:s}", "hsts_include_subdomains", "on");
        p = tls_policy_apply_fields(def, f, &err);
        is_str(json_string_value(json_object_get(p, "preset")), "intermediate",
               "HSTS change keeps the preset");
        json_t *m = tls_policy_with_preset(p, "modern", &err);
        ok(json_is_true(json_object_get(m, "hsts_include_subdomains")) &&
               !strcmp(json_string_value(json_object_get(m, "min_version")), "TLS1.3"),
           "preset keeps HSTS, replaces TLS fields");
        json_decref(m);
        json_decref(p);
        json_decref(f);
    }
    {
        /* Key types in any case are stored as the list spells them: "RSA"
         * kept as typed allowed no "rsa-2048" certificate. */
        char *err = NULL;
        json_t *f = json_pack("{s:s}", "key_types", "ECDSA, Rsa");
        json_t *p = tls_policy_apply_fields(def, f, &err);
        char *k = p ? json_dumps(json_object_get(p, "key_types"), JSON_COMPACT) : NULL;
        is_str(k, "[\"ecdsa\",\"rsa\"]", "key_types in capitals: stored in lower case");
        ok(p && tls_policy_key_type_allowed(p, "rsa-2048") &&
               tls_policy_key_type_allowed(p, "ecdsa-p256") &&
               !tls_policy_key_type_allowed(p, "ed25519"),
           "and allow rsa-2048 and ecdsa-p256 certificates, not ed25519");
        free(k);
        json_decref(p);
        json_decref(f);
        /* A policy stored so before: what it names is still served. */
        json_t *old = json_pack("{s:[s]}", "key_types", "RSA");
        ok(tls_policy_key_type_allowed(old, "rsa-2048"), "a stored \"RSA\" allows rsa-2048");
        json_decref(old);
        free(err);
    }
    {
        /* "policy set preset modern": the preset's content, not its name on
         * the old content (which served TLS 1.2 as "modern"). */
        char *err = NULL;
        json_t *f = json_pack("{s:s}", "preset", "Modern");
        json_t *p = tls_policy_apply_fields(def, f, &err);
        is_str(json_string_value(json_object_get(p, "preset")), "modern", "preset field: named");
        is_str(json_string_value(json_object_get(p, "min_version")), "TLS1.3",
               "preset field: with the preset's min_version");
        json_decref(p);
        json_decref(f);
        /* Other fields of the request apply on top of the preset. */
        f = json_pack("{s:s, s:s, s:s}", "preset", "modern", "hsts_max_age", "600", "ciphers",
                      "AES-256-GCM");
        p = tls_policy_apply_fields(def, f, &err);
        is_str(json_string_value(json_object_get(p, "min_version")), "TLS1.3",
               "preset and fields: the preset's min_version");
        is_int(json_integer_value(json_object_get(p, "hsts_max_age")), 600,
               "preset and fields: the HSTS field applied");
        is_str(json_string_value(json_array_get(json_object_get(p, "ciphers"), 0)), "AES-256-GCM",
               "preset and fields: the cipher field applied");
        is_str(json_string_value(json_object_get(p, "preset")), "custom",
               "preset and a TLS field that differs from it: custom");
        json_decref(p);
        json_decref(f);
        free(err);
    }

    /* The versioned store. */
    sqlite3 *db = tt_store("policy.db");
    char *err = NULL;
    int64_t id = 0;
    is_int(tls_policy_store_ensure_default(db, &err), 0, "default stored");
    is_int(tls_policy_store_ensure_default(db, &err), 0, "only once");
    is_int(tt_int(db, "SELECT count(*) FROM policy_versions"), 1, "one version");
    char *v1 = active_text(db);
    json_t *modern = tls_policy_preset("modern");
    is_int(tls_policy_store_save(db, modern, "alice", "go modern", &id, &err), 0, "save modern");
    is_int(id, 2, "version 2");
    char *before = active_text(db);
    json_t *bad =
        json_pack("{s:s, s:s}", "preset", "custom", "priority_override", "NORMAL:+BOGUS-ALG");
    int r = tls_policy_store_save(db, bad, "mallory", "bad", &id, &err);
    is_int(r, -EINVAL, "invalid raw string refused by save");
    like(err, "position 7", "save error names the position");
    free(err);
    err = NULL;
    is_int(tt_int(db, "SELECT count(*) FROM policy_versions"), 2, "store unchanged: no new row");
    char *after = active_text(db);
    is_str(after, before, "store unchanged: same active version");
    is_int(tls_policy_store_rollback(db, 1, "bob", &id, &err), 0, "rollback to 1");
    is_int(id, 3, "rollback appends version 3");
    char *v3 = version_text(db, 3);
    is_str(v3, v1, "version 3 is exactly version 1");
    is_int(tt_int(db, "SELECT id FROM policy_versions WHERE active = 1"), 3, "3 is active");
    is_int(tt_int(db, "SELECT count(*) FROM policy_versions WHERE active = 1"), 1,
           "exactly one active");
    is_int(tls_policy_store_rollback(db, 99, "bob", &id, &err), -ENOENT, "unknown version");
    like(err, "version 99 does not exist", "unknown version message");
    free(err);
    err = NULL;
    json_t *h = tls_policy_store_history(db, 10);
    is_int(json_array_size(h), 3, "history has 3 versions");
    json_t *h0 = json_array_get(h, 0);
    is_int(json_integer_value(json_object_get(h0, "id")), 3, "newest first");
    is_str(json_string_value(json_object_get(h0, "comment")), "rollback to version 1",
           "rollback comment");
    is_str(json_string_value(json_object_get(h0, "author")), "bob", "author kept");
    is_str(json_string_value(json_object_get(json_array_get(h, 1), "preset")), "modern",
           "preset in history");
    is_int(tt_int(db, "SELECT count(*) FROM audit WHERE action = 'policy.set'"), 3,
           "audit row per version");
    json_decref(h);

    free(v1);
    free(v3);
    free(before);
    free(after);
    json_decref(bad);
    json_decref(modern);
    json_decref(def);
    sqlite3_close(db);
    gnutls_global_deinit();
    /* Cipher order follows the CPU: AES first with AES instructions,
     * ChaCha20 first without (a Raspberry Pi 4). */
    {
        char x86[] = "/tmp/tlsbox-cpuinfo-x86.XXXXXX", arm[] = "/tmp/tlsbox-cpuinfo-arm.XXXXXX";
        int fx = mkstemp(x86), fa = mkstemp(arm);
        dprintf(fx, "processor\t: 0\nflags\t\t: fpu sse2 aes avx2\n");
        dprintf(fa, "processor\t: 0\nFeatures\t: fp asimd evtstrm crc32 cpuid\n");
        close(fx);
        close(fa);
        is_int(tls_policy_cpuinfo_has_aes(x86), 1, "x86 flags with aes: has AES");
        is_int(tls_policy_cpuinfo_has_aes(arm), 0, "Pi 4 Features without aes: no AES");
        is_int(tls_policy_cpuinfo_has_aes("/nonexistent"), -ENOENT, "unreadable: -ENOENT");
        unlink(x86);
        unlink(arm);
        json_t *p = tls_policy_preset("intermediate");
        const char *first = json_string_value(json_array_get(json_object_get(p, "ciphers"), 0));
        is_str(first, tls_policy_cpu_has_aes() ? "AES-128-GCM" : "CHACHA20-POLY1305",
               "intermediate's first cipher suits this CPU");
        ok(json_is_true(json_object_get(p, "server_precedence")),
           "intermediate uses the server's cipher order");
        json_decref(p);
    }
    return done_testing();
}
