/* TLS policy: presets, validation, compilation to a GnuTLS priority string. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tls_policy.h"
#include "core/xalloc.h"

enum field_type { F_STR, F_ENUM, F_BOOL, F_INT, F_LIST };
/* Which kind of GnuTLS name a list holds (for validation and tokens). */
enum list_kind { L_NONE, L_CIPHER, L_MAC, L_KX, L_GROUP, L_SIGN, L_KEYTYPE };

struct field {
    const char *name;
    enum field_type type;
    long long min, max;       /* F_INT */
    const char *const *enums; /* F_ENUM, F_LIST of L_KEYTYPE */
    enum list_kind kind;      /* F_LIST */
    bool tls;                 /* changing it makes the preset "custom" */
};

static const char *const presets[] = {"modern", "intermediate", "compat", "custom", NULL};
static const char *const versions[] = {"TLS1.0", "TLS1.1", "TLS1.2", "TLS1.3", NULL};
static const char *const dh_modes[] = {"auto", "rfc7919", "off", NULL};
static const char *const key_types[] = {"ecdsa", "rsa", "ed25519", NULL};

static const struct field fields[] = {
    {"preset", F_ENUM, 0, 0, presets, L_NONE, false},
    {"min_version", F_ENUM, 0, 0, versions, L_NONE, true},
    {"max_version", F_ENUM, 0, 0, versions, L_NONE, true},
    {"ciphers", F_LIST, 0, 0, NULL, L_CIPHER, true},
    {"macs", F_LIST, 0, 0, NULL, L_MAC, true},
    {"kx", F_LIST, 0, 0, NULL, L_KX, true},
    {"groups", F_LIST, 0, 0, NULL, L_GROUP, true},
    {"sigalgs", F_LIST, 0, 0, NULL, L_SIGN, true},
    {"server_precedence", F_BOOL, 0, 0, NULL, L_NONE, true},
    {"tickets", F_BOOL, 0, 0, NULL, L_NONE, false},
    {"ticket_rotation_hours", F_INT, 1, 168, NULL, L_NONE, false},
    {"hsts_max_age", F_INT, 0, 63072000, NULL, L_NONE, false},
    {"hsts_include_subdomains", F_BOOL, 0, 0, NULL, L_NONE, false},
    {"hsts_preload", F_BOOL, 0, 0, NULL, L_NONE, false},
    {"ocsp_stapling", F_BOOL, 0, 0, NULL, L_NONE, false},
    {"key_types", F_LIST, 0, 0, key_types, L_KEYTYPE, true},
    {"dh_mode", F_ENUM, 0, 0, dh_modes, L_NONE, true},
    {"priority_override", F_STR, 0, 0, NULL, L_NONE, true},
    {NULL, 0, 0, 0, NULL, 0, false},
};

/* Never allowed, whatever a person asks for (also checked on raw strings). */
static const char *const banned_ciphers[] = {"ARCFOUR-128", "ARCFOUR-40", "3DES-CBC", "NULL",
                                             "DES-CBC",     "RC2-40",     NULL};
static const char *const banned_macs[] = {"MD5", "NULL", NULL};
/* Priority-string flags that weaken every connection without the preview
 * (protocols, suites, groups, signatures) showing it: never allowed. */
static const struct {
    const char *flag, *why;
} banned_flags[] = {
    {"%NO_SESSION_HASH", "turns off the extended master secret (RFC 7627)"},
    {"%NO_EXTENSIONS", "turns off the extended master secret and secure renegotiation"},
    {"%DISABLE_SAFE_RENEGOTIATION", "turns off secure renegotiation (RFC 5746)"},
    {"%UNSAFE_RENEGOTIATION", "allows renegotiation without RFC 5746"},
    {"%NO_ETM", "turns off encrypt-then-MAC for CBC suites (RFC 7366)"},
    {"%DEBUG_ALLOW_KEY_USAGE_VIOLATIONS", "uses keys against their certificate's key usage"},
};

/* Signatures over MD5 (or MD2) are broken like the MAC: never allowed. */
static bool sign_banned(gnutls_sign_algorithm_t a)
{
    gnutls_digest_algorithm_t h = gnutls_sign_get_hash_algorithm(a);
    return h == GNUTLS_DIG_MD5 || h == GNUTLS_DIG_MD2;
}

static const struct field *field_find(const char *name)
{
    for (const struct field *f = fields; f->name; f++)
        if (strcmp(f->name, name) == 0)
            return f;
    return NULL;
}

static bool in_list(const char *const *list, const char *s)
{
    for (; *list; list++)
        if (strcasecmp(*list, s) == 0)
            return true;
    return false;
}

static json_t *strlist(const char *const *v)
{
    json_t *a = json_array();
    for (; *v; v++)
        json_array_append_new(a, json_string(*v));
    return a;
}

bool tls_policy_is_preset(const char *name)
{
    return name && (strcmp(name, "modern") == 0 || strcmp(name, "intermediate") == 0 ||
                    strcmp(name, "compat") == 0);
}

/*
 * Presets after Mozilla's Server Side TLS 5.x.  modern: TLS 1.3 only.
 * intermediate: 1.2 + 1.3, AEAD with ECDHE only (5.8 dropped DHE).  compat ("old"): down to TLS 1.0
 * with CBC, static RSA and DHE for old clients; but never SSL 3.0, RC4, 3DES or export.  Every
 * preset uses the server's cipher order (testssl and most audits ask for it) and, on a CPU without
 * AES instructions (a Raspberry Pi before the 5), puts ChaCha20-Poly1305 first: there it costs the
 * server about a third of software AES-GCM.
 */
int tls_policy_cpuinfo_has_aes(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -errno;
    int has = 0;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        /* x86 "flags : ... aes ...", ARM "Features : ... aes ..." */
        if (strncmp(line, "flags", 5) != 0 && strncmp(line, "Features", 8) != 0)
            continue;
        char *save = NULL;
        char *colon = strchr(line, ':');
        for (char *t = strtok_r(colon ? colon + 1 : line, " \t\n", &save); t;
             t = strtok_r(NULL, " \t\n", &save))
            if (strcmp(t, "aes") == 0)
                has = 1;
        break;
    }
    fclose(f);
    return has;
}

bool tls_policy_cpu_has_aes(void)
{
    static int has = -1; /* benign race: every caller computes the same */
    if (has < 0)
        has = tls_policy_cpuinfo_has_aes("/proc/cpuinfo") != 0; /* unknown: usual order */
    return has;
}

json_t *tls_policy_preset(const char *name)
{
    static const char *const aead[] = {"AES-128-GCM", "AES-256-GCM", "CHACHA20-POLY1305", NULL};
    static const char *const compat_ciphers[] = {"AES-128-GCM", "AES-256-GCM", "CHACHA20-POLY1305",
                                                 "AES-128-CBC", "AES-256-CBC", NULL};
    static const char *const aead_mac[] = {"AEAD", NULL};
    static const char *const compat_macs[] = {"AEAD", "SHA256", "SHA384", "SHA1", NULL};
    static const char *const ecdhe[] = {"ECDHE-ECDSA", "ECDHE-RSA", NULL};
    static const char *const compat_kx[] = {"ECDHE-ECDSA", "ECDHE-RSA", "DHE-RSA", "RSA", NULL};
    static const char *const groups[] = {"X25519", "SECP256R1", "SECP384R1", NULL};
    static const char *const compat_groups[] = {"X25519",    "SECP256R1", "SECP384R1",
                                                "FFDHE2048", "FFDHE3072", NULL};
    static const char *const sigs[] = {"ECDSA-SECP256R1-SHA256",
                                       "ECDSA-SECP384R1-SHA384",
                                       "ECDSA-SECP521R1-SHA512",
                                       "EdDSA-Ed25519",
                                       "RSA-PSS-RSAE-SHA256",
                                       "RSA-PSS-RSAE-SHA384",
                                       "RSA-PSS-RSAE-SHA512",
                                       "RSA-PSS-SHA256",
                                       "RSA-PSS-SHA384",
                                       "RSA-PSS-SHA512",
                                       "ECDSA-SHA256",
                                       "ECDSA-SHA384",
                                       "ECDSA-SHA512",
                                       "RSA-SHA256",
                                       "RSA-SHA384",
                                       "RSA-SHA512",
                                       NULL};
    static const char *const keys[] = {"ecdsa", "rsa", "ed25519", NULL};

    bool modern = strcmp(name, "modern") == 0;
    bool compat = strcmp(name, "compat") == 0;
    if (!modern && !compat && strcmp(name, "intermediate") != 0)
        return NULL;

    json_t *p = json_object();
    json_object_set_new(p, "preset", json_string(name));
    json_object_set_new(p, "min_version",
                        json_string(modern   ? "TLS1.3"
                                    : compat ? "TLS1.0"
                                             : "TLS1.2"));
    json_object_set_new(p, "max_version", json_string("TLS1.3"));
    json_t *ciphers = strlist(compat ? compat_ciphers : aead);
    if (!tls_policy_cpu_has_aes()) {
        json_array_remove(ciphers, 2); /* CHACHA20-POLY1305 */
        json_array_insert_new(ciphers, 0, json_string("CHACHA20-POLY1305"));
    }
    json_object_set_new(p, "ciphers", ciphers);
    json_object_set_new(p, "macs", strlist(compat ? compat_macs : aead_mac));
    json_object_set_new(p, "kx", strlist(compat ? compat_kx : ecdhe));
    json_object_set_new(p, "groups", strlist(compat ? compat_groups : groups));
    json_t *sigalgs = strlist(sigs);
    if (compat) {
        /* Old clients may only sign with SHA-1. */
        json_array_append_new(sigalgs, json_string("ECDSA-SHA1"));
        json_array_append_new(sigalgs, json_string("RSA-SHA1"));
    }
    json_object_set_new(p, "sigalgs", sigalgs);
    json_object_set_new(p, "server_precedence", json_true());
    json_object_set_new(p, "tickets", json_true());
    json_object_set_new(p, "ticket_rotation_hours", json_integer(12));
    json_object_set_new(p, "hsts_max_age", json_integer(31536000));
    json_object_set_new(p, "hsts_include_subdomains", json_false());
    json_object_set_new(p, "hsts_preload", json_false());
    json_object_set_new(p, "ocsp_stapling", json_true());
    json_object_set_new(p, "key_types", strlist(keys));
    json_object_set_new(p, "dh_mode", json_string("auto"));
    json_object_set_new(p, "priority_override", json_string(""));
    return p;
}

json_t *tls_policy_with_preset(json_t *current, const char *name, char **err)
{
    *err = NULL;
    json_t *p = name ? tls_policy_preset(name) : NULL;
    if (!p) {
        *err =
            xasprintf("preset: '%s' is not one of modern, intermediate, compat", name ? name : "");
        return NULL;
    }
    for (const struct field *f = fields; f->name; f++) {
        json_t *v = json_object_get(current, f->name);
        if (!f->tls && v && strcmp(f->name, "preset") != 0)
            json_object_set(p, f->name, v);
    }
    json_t *out = tls_policy_normalize(p, err);
    json_decref(p);
    return out;
}

json_t *tls_policy_default(void)
{
    return tls_policy_preset("intermediate");
}

/* Canonical spelling of a GnuTLS name of @p kind, or NULL when unknown. */
static const char *canon_name(enum list_kind kind, const char *s)
{
    switch (kind) {
    case L_CIPHER: {
        gnutls_cipher_algorithm_t c = gnutls_cipher_get_id(s);
        return c == GNUTLS_CIPHER_UNKNOWN ? NULL : gnutls_cipher_get_name(c);
    }
    case L_MAC: {
        gnutls_mac_algorithm_t m = gnutls_mac_get_id(s);
        return m == GNUTLS_MAC_UNKNOWN ? NULL : gnutls_mac_get_name(m);
    }
    case L_KX: {
        gnutls_kx_algorithm_t k = gnutls_kx_get_id(s);
        return k == GNUTLS_KX_UNKNOWN ? NULL : gnutls_kx_get_name(k);
    }
    case L_GROUP: {
        gnutls_group_t g = gnutls_group_get_id(s);
        return g == GNUTLS_GROUP_INVALID ? NULL : gnutls_group_get_name(g);
    }
    case L_SIGN: {
        gnutls_sign_algorithm_t a = gnutls_sign_get_id(s);
        return a == GNUTLS_SIGN_UNKNOWN ? NULL : gnutls_sign_get_name(a);
    }
    default:
        return NULL;
    }
}

static const char *kind_noun(enum list_kind kind)
{
    switch (kind) {
    case L_CIPHER:
        return "a cipher";
    case L_MAC:
        return "a MAC";
    case L_KX:
        return "a key exchange";
    case L_GROUP:
        return "a group";
    case L_SIGN:
        return "a signature algorithm";
    default:
        return "a value";
    }
}

/* Normalise one list field value; returns a new array or NULL with *err. */
static json_t *norm_list(const struct field *f, json_t *v, char **err)
{
    if (!json_is_array(v)) {
        *err = xasprintf("%s: expected a list", f->name);
        return NULL;
    }
    json_t *out = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        const char *s = json_string_value(e);
        if (!s || !*s) {
            *err = xasprintf("%s: entry %zu is not a name", f->name, i + 1);
            goto fail;
        }
        const char *c;
        if (f->kind == L_KEYTYPE) {
            /* The list's own spelling: certificates' key types are
             * lower case ("rsa-2048"), and "RSA" kept as typed matched none. */
            c = NULL;
            for (const char *const *k = f->enums; *k && !c; k++)
                if (strcasecmp(*k, s) == 0)
                    c = *k;
            if (!c) {
                *err = xasprintf("%s: '%s' is not one of ecdsa, rsa, ed25519", f->name, s);
                goto fail;
            }
        } else {
            if ((f->kind == L_CIPHER && in_list(banned_ciphers, s)) ||
                (f->kind == L_MAC && in_list(banned_macs, s)) ||
                (f->kind == L_SIGN && sign_banned(gnutls_sign_get_id(s)))) {
                *err = xasprintf("%s: '%s' is never allowed (broken)", f->name, s);
                goto fail;
            }
            c = canon_name(f->kind, s);
            if (!c) {
                *err = xasprintf("%s: '%s' is not %s GnuTLS knows", f->name, s, kind_noun(f->kind));
                goto fail;
            }
        }
        /* Duplicates would only confuse the preview. */
        size_t j;
        json_t *o;
        bool dup = false;
        json_array_foreach(out, j, o) if (strcasecmp(json_string_value(o), c) == 0) dup = true;
        if (!dup)
            json_array_append_new(out, json_string(c));
    }
    if (json_array_size(out) == 0 && f->kind != L_SIGN) {
        *err = xasprintf("%s: the list is empty", f->name);
        goto fail;
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

/* Normalise one field value (already the right JSON type or not). */
static json_t *norm_value(const struct field *f, json_t *v, char **err)
{
    switch (f->type) {
    case F_STR:
        if (json_is_null(v))
            return json_string("");
        if (!json_is_string(v)) {
            *err = xasprintf("%s: expected a string", f->name);
            return NULL;
        }
        return json_string(json_string_value(v));
    case F_ENUM: {
        const char *s = json_string_value(v);
        if (!s || !in_list(f->enums, s)) {
            char *allowed = xstrdup("");
            for (const char *const *e = f->enums; *e; e++) {
                char *n = xasprintf("%s%s%s", allowed, *allowed ? ", " : "", *e);
                free(allowed);
                allowed = n;
            }
            *err =
                xasprintf("%s: '%s' is not one of %s", f->name, s ? s : "(not a string)", allowed);
            free(allowed);
            return NULL;
        }
        for (const char *const *e = f->enums; *e; e++)
            if (strcasecmp(*e, s) == 0)
                return json_string(*e);
        return NULL;
    }
    case F_BOOL:
        if (!json_is_boolean(v)) {
            *err = xasprintf("%s: expected true or false", f->name);
            return NULL;
        }
        return json_boolean(json_is_true(v));
    case F_INT:
        if (!json_is_integer(v) || json_integer_value(v) < f->min ||
            json_integer_value(v) > f->max) {
            *err = xasprintf("%s: expected a whole number in %lld..%lld", f->name, f->min, f->max);
            return NULL;
        }
        return json_integer(json_integer_value(v));
    case F_LIST:
        return norm_list(f, v, err);
    }
    return NULL;
}

static int version_rank(const char *v)
{
    for (int i = 0; versions[i]; i++)
        if (strcmp(versions[i], v) == 0)
            return i;
    return -ENOENT;
}

json_t *tls_policy_normalize(json_t *in, char **err)
{
    *err = NULL;
    if (!json_is_object(in)) {
        *err = xstrdup("policy: expected a JSON object");
        return NULL;
    }
    const char *key;
    json_t *v;
    json_object_foreach(in, key, v)
    {
        if (!field_find(key)) {
            *err = xasprintf("policy: unknown field '%s'", key);
            return NULL;
        }
    }
    const char *pname = json_string_value(json_object_get(in, "preset"));
    json_t *base = tls_policy_preset(tls_policy_is_preset(pname) ? pname : "intermediate");
    json_t *out = json_object();
    for (const struct field *f = fields; f->name; f++) {
        json_t *val = json_object_get(in, f->name);
        if (!val)
            val = json_object_get(base, f->name);
        json_t *n = norm_value(f, val, err);
        if (!n)
            goto fail;
        json_object_set_new(out, f->name, n);
    }
    const char *minv = json_string_value(json_object_get(out, "min_version"));
    const char *maxv = json_string_value(json_object_get(out, "max_version"));
    if (version_rank(minv) > version_rank(maxv)) {
        *err = xasprintf("min_version: %s is newer than max_version %s", minv, maxv);
        goto fail;
    }
    if (json_is_true(json_object_get(out, "hsts_preload"))) {
        if (!json_is_true(json_object_get(out, "hsts_include_subdomains")) ||
            json_integer_value(json_object_get(out, "hsts_max_age")) < 31536000) {
            *err = xstrdup("hsts_preload: needs hsts_include_subdomains and hsts_max_age of at "
                           "least 31536000 (one year)");
            goto fail;
        }
    }
    json_decref(base);
    return out;
fail:
    json_decref(base);
    json_decref(out);
    return NULL;
}

/* Turn command-line text into the JSON type field @p f expects. */
static json_t *from_text(const struct field *f, const char *s, char **err)
{
    switch (f->type) {
    case F_STR:
    case F_ENUM:
        return json_string(s);
    case F_BOOL:
        if (!strcasecmp(s, "true") || !strcasecmp(s, "on") || !strcasecmp(s, "yes") ||
            !strcmp(s, "1"))
            return json_true();
        if (!strcasecmp(s, "false") || !strcasecmp(s, "off") || !strcasecmp(s, "no") ||
            !strcmp(s, "0"))
            return json_false();
        *err = xasprintf("%s: '%s' is not true or false", f->name, s);
        return NULL;
    case F_INT: {
        char *end;
        errno = 0;
        long long n = strtoll(s, &end, 10);
        if (errno || end == s || *end) {
            *err = xasprintf("%s: '%s' is not a whole number", f->name, s);
            return NULL;
        }
        return json_integer(n);
    }
    case F_LIST: {
        json_t *a = json_array();
        const char *p = s;
        while (*p) {
            while (*p == ' ' || *p == ',' || *p == ':')
                p++;
            const char *q = p;
            while (*q && *q != ',' && *q != ' ' && *q != ':')
                q++;
            if (q > p)
                json_array_append_new(a, json_stringn(p, (size_t)(q - p)));
            p = q;
        }
        return a;
    }
    }
    return NULL;
}

json_t *tls_policy_apply_fields(json_t *base, json_t *set, char **err)
{
    *err = NULL;
    if (!json_is_object(set) || json_object_size(set) == 0) {
        *err = xstrdup("policy: no fields given");
        return NULL;
    }
    /* A preset named here is its content, not only its name: the other
     * fields of the request apply on top of it. */
    const char *pname = json_string_value(json_object_get(set, "preset"));
    static const char *const preset_names[] = {"modern", "intermediate", "compat", NULL};
    for (const char *const *n = preset_names; pname && *n; n++)
        if (strcasecmp(pname, *n) == 0)
            pname = *n;
    json_t *cand = tls_policy_is_preset(pname) ? tls_policy_with_preset(base, pname, err)
                                               : json_deep_copy(base);
    if (!cand)
        return NULL;
    bool tls_changed = false;
    const char *key;
    json_t *v;
    json_object_foreach(set, key, v)
    {
        if (strcmp(key, "preset") == 0 && tls_policy_is_preset(pname))
            continue;
        const struct field *f = field_find(key);
        if (!f) {
            *err = xasprintf("policy: unknown field '%s'", key);
            goto fail;
        }
        json_t *val;
        if (json_is_string(v) && f->type != F_STR && f->type != F_ENUM)
            val = from_text(f, json_string_value(v), err);
        else
            val = json_incref(v);
        if (!val)
            goto fail;
        if (f->tls && !json_equal(val, json_object_get(cand, key)))
            tls_changed = true;
        json_object_set_new(cand, key, val);
    }
    if (tls_changed)
        json_object_set_new(cand, "preset", json_string("custom"));
    json_t *out = tls_policy_normalize(cand, err);
    json_decref(cand);
    /* The name follows the content: a custom policy whose TLS fields equal
     * a preset's (say, after a raw string is cleared) is that preset. */
    if (out && strcmp(json_string_value(json_object_get(out, "preset")), "custom") == 0) {
        static const char *const names[] = {"modern", "intermediate", "compat"};
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            json_t *p = tls_policy_preset(names[i]);
            bool same = true;
            for (const struct field *f = fields; f->name && same; f++)
                if (f->tls &&
                    !json_equal(json_object_get(p, f->name), json_object_get(out, f->name)))
                    same = false;
            json_decref(p);
            if (same) {
                json_object_set_new(out, "preset", json_string(names[i]));
                break;
            }
        }
    }
    return out;
fail:
    json_decref(cand);
    return NULL;
}

/* Append ":+<prefix><name>" for each name of list @p key. */
static void add_tokens(char **s, json_t *policy, const char *key, const char *prefix)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(policy, key), i, e)
    {
        char *n = xasprintf("%s:+%s%s", *s, prefix, json_string_value(e));
        free(*s);
        *s = n;
    }
}

/* The token of @p prio at @p pos (up to the next ':'), caller frees. */
static char *token_at(const char *prio, size_t pos)
{
    const char *p = prio + pos;
    const char *q = strchr(p, ':');
    return xstrndup(p, q ? (size_t)(q - p) : strlen(p));
}

/* Whether @p p starts a token of @p prio: at the start, or after a ':'
 * and the spaces GnuTLS skips there. */
static bool token_start(const char *prio, const char *p)
{
    while (p > prio && p[-1] == ' ')
        p--;
    return p == prio || p[-1] == ':';
}

/* Find the token that adds @p tok (given without its sign) to @p prio; its
 * offset (of the '+', when it has one) or -ENOENT.  Only a whole token: the
 * "NULL" of "+COMP-NULL" is not the cipher NULL, nor does "!NULL" add it. */
static long find_token(const char *prio, const char *tok)
{
    size_t n = strlen(tok);
    for (const char *p = prio; (p = strcasestr(p, tok)) != NULL; p++) {
        const char *t = p > prio && strchr("+-!", p[-1]) ? p - 1 : p;
        bool end = p[n] == '\0' || p[n] == ':';
        if (end && *t != '-' && *t != '!' && token_start(prio, t))
            return (long)(t - prio);
    }
    return -ENOENT;
}

/* The first banned flag of @p prio (GnuTLS reads them in any case): its
 * message in *err, or 0 when none. */
static int check_flags(const char *prio, char **err)
{
    for (const char *p = prio; *p;) {
        size_t len = strcspn(p, ":");
        /* GnuTLS skips the spaces that start a token ("NORMAL: %NO_ETM"). */
        const char *t = p;
        size_t tlen = len;
        while (tlen > 0 && *t == ' ')
            t++, tlen--;
        for (size_t i = 0; i < sizeof(banned_flags) / sizeof(banned_flags[0]); i++)
            if (tlen == strlen(banned_flags[i].flag) &&
                strncasecmp(t, banned_flags[i].flag, tlen) == 0) {
                *err = xasprintf("priority string: %s at position %zu is never allowed: it %s",
                                 banned_flags[i].flag, (size_t)(t - prio), banned_flags[i].why);
                return -EINVAL;
            }
        p += len + (p[len] == ':');
    }
    return 0;
}

int tls_policy_check_priority(const char *prio, gnutls_priority_t *out, char **err)
{
    gnutls_priority_t p = NULL;
    const char *epos = NULL;
    *err = NULL;
    if (!prio || !*prio) {
        *err = xstrdup("priority string is empty");
        return -EINVAL;
    }
    int r = gnutls_priority_init(&p, prio, &epos);
    if (r == GNUTLS_E_INVALID_REQUEST && epos && epos >= prio) {
        size_t pos = (size_t)(epos - prio);
        char *tok = token_at(prio, pos);
        *err = xasprintf("priority string: invalid token '%s' at position %zu", tok, pos);
        free(tok);
        return -EINVAL;
    }
    if (r == GNUTLS_E_NO_PRIORITIES_WERE_SET) {
        *err = xstrdup("priority string leaves no usable protocol or cipher suite");
        return -EINVAL;
    }
    if (r < 0) {
        *err = xasprintf("priority string: %s", gnutls_strerror(r));
        return -EINVAL;
    }
    if (check_flags(prio, err) < 0)
        goto fail;
    const unsigned *l;
    int n = gnutls_priority_cipher_list(p, &l);
    for (int i = 0; i < n; i++) {
        const char *name = gnutls_cipher_get_name(l[i]);
        if (name && in_list(banned_ciphers, name)) {
            long at = find_token(prio, name);
            if (at >= 0)
                *err = xasprintf("priority string: cipher %s at position %ld is never allowed",
                                 name, at);
            else
                *err = xasprintf("priority string enables cipher %s, which is never allowed", name);
            goto fail;
        }
    }
    n = gnutls_priority_mac_list(p, &l);
    for (int i = 0; i < n; i++) {
        const char *name = gnutls_mac_get_name(l[i]);
        if (name && in_list(banned_macs, name)) {
            long at = find_token(prio, name);
            *err = xasprintf("priority string: MAC %s at position %ld is never allowed", name, at);
            goto fail;
        }
    }
    n = gnutls_priority_sign_list(p, &l);
    for (int i = 0; i < n; i++) {
        const char *name = gnutls_sign_get_name(l[i]);
        if (name && sign_banned(l[i])) {
            char *tok = xasprintf("SIGN-%s", name);
            long at = find_token(prio, tok);
            free(tok);
            if (at >= 0)
                *err = xasprintf("priority string: signature algorithm %s at position %ld is "
                                 "never allowed",
                                 name, at);
            else
                *err = xasprintf("priority string enables signature algorithm %s, which is never "
                                 "allowed",
                                 name);
            goto fail;
        }
    }
    n = gnutls_priority_protocol_list(p, &l);
    bool any_tls = false;
    for (int i = 0; i < n; i++) {
        if (l[i] == GNUTLS_SSL3) {
            *err = xstrdup("priority string enables SSL 3.0, which is never allowed");
            goto fail;
        }
        if (l[i] >= GNUTLS_TLS1_0 && l[i] <= GNUTLS_TLS1_3)
            any_tls = true;
    }
    unsigned idx;
    if (!any_tls || gnutls_priority_get_cipher_suite_index(p, 0, &idx) ==
                        GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE) {
        *err = xstrdup("priority string leaves no usable protocol or cipher suite");
        goto fail;
    }
    if (out)
        *out = p;
    else
        gnutls_priority_deinit(p);
    return 0;
fail:
    gnutls_priority_deinit(p);
    return -EINVAL;
}

char *tls_policy_compile(json_t *policy, gnutls_priority_t *out, char **err)
{
    *err = NULL;
    const char *raw = json_string_value(json_object_get(policy, "priority_override"));
    if (raw && *raw) {
        if (tls_policy_check_priority(raw, out, err) < 0)
            return NULL;
        return xstrdup(raw);
    }
    char *s = xstrdup("NONE");
    int lo = version_rank(json_string_value(json_object_get(policy, "min_version")));
    int hi = version_rank(json_string_value(json_object_get(policy, "max_version")));
    if (lo < 0 || hi < 0) {
        *err = xstrdup("policy: min_version or max_version missing");
        free(s);
        return NULL;
    }
    /* Newest first: GnuTLS takes the order as preference. */
    for (int v = hi; v >= lo; v--) {
        char *n = xasprintf("%s:+VERS-%s", s, versions[v]);
        free(s);
        s = n;
    }
    add_tokens(&s, policy, "ciphers", "");
    add_tokens(&s, policy, "macs", "");
    add_tokens(&s, policy, "kx", "");
    add_tokens(&s, policy, "groups", "GROUP-");
    if (json_array_size(json_object_get(policy, "sigalgs")) > 0) {
        add_tokens(&s, policy, "sigalgs", "SIGN-");
    } else {
        char *n = xasprintf("%s:+SIGN-ALL", s);
        free(s);
        s = n;
    }
    char *n = xasprintf(
        "%s:+COMP-NULL:+CTYPE-X509%s", s,
        json_is_true(json_object_get(policy, "server_precedence")) ? ":%SERVER_PRECEDENCE" : "");
    free(s);
    s = n;
    if (tls_policy_check_priority(s, out, err) < 0) {
        /* Every name was validated: what remains is a combination that leaves
         * nothing (e.g. TLS 1.3 only with CBC ciphers).  Say it about the policy. */
        char *e = xasprintf("policy: %s (compiled: %s)", *err, s);
        free(*err);
        *err = e;
        free(s);
        return NULL;
    }
    return s;
}

typedef const char *(*name_fn)(unsigned id);
static const char *n_cipher(unsigned id)
{
    return gnutls_cipher_get_name(id);
}
static const char *n_mac(unsigned id)
{
    return gnutls_mac_get_name(id);
}
static const char *n_kx(unsigned id)
{
    return gnutls_kx_get_name(id);
}
static const char *n_group(unsigned id)
{
    return gnutls_group_get_name(id);
}
static const char *n_sign(unsigned id)
{
    return gnutls_sign_get_name(id);
}

static json_t *name_list(const unsigned *l, int n, name_fn fn)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        const char *s = fn(l[i]);
        if (s)
            json_array_append_new(a, json_string(s));
    }
    return a;
}

json_t *tls_policy_preview(const char *prio, char **err)
{
    gnutls_priority_t p;
    if (tls_policy_check_priority(prio, &p, err) < 0)
        return NULL;
    json_t *j = json_object();
    const unsigned *l;
    int n;
    json_object_set_new(j, "priority", json_string(prio));
    /* Only TLS: the site never speaks DTLS, though NORMAL lists it. */
    n = gnutls_priority_protocol_list(p, &l);
    json_t *protos = json_array();
    for (int i = 0; i < n; i++)
        if (l[i] >= GNUTLS_SSL3 && l[i] <= GNUTLS_TLS1_3 && gnutls_protocol_get_name(l[i]))
            json_array_append_new(protos, json_string(gnutls_protocol_get_name(l[i])));
    json_object_set_new(j, "protocols", protos);
    n = gnutls_priority_cipher_list(p, &l);
    json_object_set_new(j, "ciphers", name_list(l, n, n_cipher));
    n = gnutls_priority_mac_list(p, &l);
    json_object_set_new(j, "macs", name_list(l, n, n_mac));
    n = gnutls_priority_kx_list(p, &l);
    json_object_set_new(j, "kx", name_list(l, n, n_kx));
    n = gnutls_priority_group_list(p, &l);
    json_object_set_new(j, "groups", name_list(l, n, n_group));
    n = gnutls_priority_sign_list(p, &l);
    json_object_set_new(j, "sigalgs", name_list(l, n, n_sign));
    json_t *suites = json_array();
    for (unsigned i = 0;; i++) {
        unsigned idx;
        int r = gnutls_priority_get_cipher_suite_index(p, i, &idx);
        if (r == GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE)
            break;
        if (r < 0)
            continue;
        unsigned char id[2];
        const char *name = gnutls_cipher_suite_info(idx, id, NULL, NULL, NULL, NULL);
        if (name)
            json_array_append_new(suites, json_string(name));
    }
    json_object_set_new(j, "suites", suites);
    gnutls_priority_deinit(p);
    return j;
}

bool tls_policy_key_type_allowed(json_t *policy, const char *key_type)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(policy, "key_types"), i, e)
    {
        const char *t = json_string_value(e);
        /* Any case: a policy stored before key types were normalised may say "RSA". */
        if (t && key_type && strncasecmp(key_type, t, strlen(t)) == 0)
            return true;
    }
    return false;
}

char *tls_policy_hsts(json_t *policy)
{
    json_int_t age = json_integer_value(json_object_get(policy, "hsts_max_age"));
    if (age <= 0)
        return NULL;
    return xasprintf("max-age=%lld%s%s", (long long)age,
                     json_is_true(json_object_get(policy, "hsts_include_subdomains"))
                         ? "; includeSubDomains"
                         : "",
                     json_is_true(json_object_get(policy, "hsts_preload")) ? "; preload" : "");
}
