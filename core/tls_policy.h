/* The TLS policy: a structured JSON object (what a person edits) compiled to
 * a GnuTLS priority string (what a session uses).  Pure functions: no store,
 * no globals; the versioned storage is in tls_policy_store.c. */
#ifndef TLSBOX_CORE_TLS_POLICY_H
#define TLSBOX_CORE_TLS_POLICY_H

#include <stdbool.h>

#include <gnutls/gnutls.h>
#include <jansson.h>

/*
 * Policy fields (every normalised policy has all of them):
 *   preset                 "modern" | "intermediate" | "compat" | "custom"
 *   min_version            "TLS1.0" .. "TLS1.3"
 *   max_version            "TLS1.0" .. "TLS1.3"
 *   ciphers, macs, kx,     arrays of GnuTLS names in preference order
 *   groups, sigalgs          ("AES-128-GCM", "AEAD", "ECDHE-RSA", "X25519", ...)
 *   server_precedence      bool: the server's order wins over the client's
 *   tickets                bool: session tickets (TLS 1.2 and 1.3)
 *   ticket_rotation_hours  1..168: master ticket key lifetime
 *   hsts_max_age           0 (no header) .. 63072000 seconds
 *   hsts_include_subdomains, hsts_preload  bool
 *   ocsp_stapling          bool
 *   key_types              array of "ecdsa", "rsa", "ed25519": certificates served
 *   dh_mode                "auto" (stored params, else RFC 7919) | "rfc7919" | "off"
 *   priority_override      "" or a raw GnuTLS priority string used instead
 */

/* A new policy equal to preset @p name, or NULL for an unknown name. */
/* Whether the CPU has AES instructions (read once from /proc/cpuinfo). */
bool tls_policy_cpu_has_aes(void);
/* 1 when the cpuinfo file at @p path lists "aes", 0 when not, -errno unreadable. */
int tls_policy_cpuinfo_has_aes(const char *path);
json_t *tls_policy_preset(const char *name);
/*
 * Preset @p name with the current policy's non-TLS fields kept (tickets,
 * HSTS, OCSP stapling): what "policy preset NAME" applies.  NULL with *err.
 */
json_t *tls_policy_with_preset(json_t *current, const char *name, char **err);
/* The default policy: intermediate, HSTS one year. */
json_t *tls_policy_default(void);
/* True when @p name is a preset ("modern", "intermediate", "compat"). */
bool tls_policy_is_preset(const char *name);

/*
 * Check every field of @p in and return a complete, normalised copy (missing
 * fields taken from @p in's preset, or intermediate).  NULL with *err set
 * (caller frees), e.g. "ciphers: 'AES-999' is not a cipher GnuTLS knows".
 */
json_t *tls_policy_normalize(json_t *in, char **err);

/*
 * @p base with the fields of @p fields replaced.  Values may be typed JSON or
 * text as typed on a command line ("true", "3600", "AES-128-GCM,AES-256-GCM").
 * Changing a TLS field (not HSTS, tickets, OCSP) makes the preset "custom".
 * Returns a normalised policy or NULL with *err.
 */
json_t *tls_policy_apply_fields(json_t *base, json_t *fields, char **err);

/*
 * Compile a normalised policy to a priority string, validated with
 * gnutls_priority_init.  Returns the string (caller frees) and, when @p out
 * is not NULL, the initialised priority cache (caller deinits).  NULL with
 * *err naming the offending token and its position for a raw override, or
 * the field for a structured policy.
 */
char *tls_policy_compile(json_t *policy, gnutls_priority_t *out, char **err);

/*
 * Validate a raw priority string: gnutls_priority_init, then refuse what is
 * never allowed (SSL 3.0, RC4, 3DES, NULL ciphers, export) and strings that
 * leave nothing usable.  0, or -EINVAL with *err ("... 'BOGUS' at position 7").
 */
int tls_policy_check_priority(const char *prio, gnutls_priority_t *out, char **err);

/*
 * What GnuTLS derives from @p prio: {"priority", "protocols", "ciphers",
 * "macs", "kx", "groups", "sigalgs", "suites"}.  New reference, or NULL with *err.
 */
json_t *tls_policy_preview(const char *prio, char **err);

/* The Strict-Transport-Security value for @p policy, or NULL (caller frees). */
/* Whether the policy's key_types allow a certificate of @p key_type
 * (certificates.key_type: "ecdsa-p256", "rsa-2048", "ed25519"). */
bool tls_policy_key_type_allowed(json_t *policy, const char *key_type);

char *tls_policy_hsts(json_t *policy);

#endif
