/* Validation of one setting value against its declaration (no state, no
 * locks): the part of settings.c that is pure and so tested on its own.  It
 * needs only libc, core/utf8.c and xset_err (core/xalloc.c): the plugin kit's
 * mock host compiles it in (pdk/mockhost/local.mk), so a plugin's unit tests
 * meet the daemon's rules and messages. */
#ifndef TLSBOX_CORE_SETTINGS_CHECK_H
#define TLSBOX_CORE_SETTINGS_CHECK_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#include <tlsbox/plugin.h>

/* Longest value accepted, in bytes.  Settings are small; a bound keeps a
 * careless client from storing megabytes in a row read at every start. */
#define SETTINGS_VALUE_MAX 4096

/* A flag for the core's own declarations, above the bits of the plugin ABI
 * (enum tlsbox_setting_flag): a STRING that is empty or a numeric IPv4 or
 * IPv6 address (inet_pton).  A pattern cannot say that ("1.2.3.4.5" and "::::"
 * are made of the right characters) and a bad one stops a listener starting. */
#define SETTINGS_CORE_ADDRESS (1u << 31)
/* Another: set only on the box itself (the control socket, tlsboxd --set),
 * never by a web UI session.  For core.user: a web admin is not thereby any
 * of the box's accounts, nor chooses one for a root-started tlsboxd and its
 * keys. */
#define SETTINGS_FROM_BOX_ONLY (1u << 30)

/*
 * Compile @p def's pattern (POSIX ERE, no sub-matches) into *re, or set *re
 * NULL when the def has none or its type ignores it.  Returns 0, or -EINVAL with
 * *err naming @p full_key when the pattern does not compile.
 */
int settings_check_compile(const char *full_key, const struct tlsbox_setting_def *def, regex_t **re,
                           char **err);
void settings_check_free_regex(regex_t *re);

/*
 * Validate @p value against @p def using @p re (the compiled pattern, or NULL:
 * then compiled here when the def has one).  On success returns 0 and, when
 * @p canon is not NULL, the canonical text to store in *canon (caller frees):
 * "true"/"false" for BOOL, plain decimal for INT, trimmed items joined by ","
 * for LIST, the value itself otherwise.  On failure -EINVAL with *err naming key,
 * value and rule; a SECRET value never appears in *err.
 */
int settings_check(const char *full_key, const struct tlsbox_setting_def *def, const regex_t *re,
                   const char *value, char **canon, char **err);

/* Parse a BOOL text the way settings_check accepts it: 1 true, 0 false, -EINVAL invalid. */
int settings_parse_bool(const char *v);

/* Strict decimal integer: optional '-', digits, nothing else.  0 or -EINVAL. */
int settings_check_parse_int(const char *v, long long *out);

/* Owner name syntax: [a-z][a-z0-9_]*, at most 64 bytes.  0 or -EINVAL with *err. */
int settings_check_owner(const char *owner, char **err);

/* Declaration sanity: key syntax, type, range, choices.  0 or -EINVAL with *err. */
int settings_check_def(const char *owner, const struct tlsbox_setting_def *def, char **err);

/*
 * Declaration @p i of @p owner's table @p defs, as settings_register takes
 * it: settings_check_def, its pattern compiled into *re (settings_check_compile),
 * its default valid, its key not declared before @p i.  Returns 0, or -EINVAL
 * with *err; *re may be set either way (caller frees it).
 */
int settings_check_decl(const char *owner, const struct tlsbox_setting_def *defs, size_t i,
                        regex_t **re, char **err);

/* Name of a type as shown by the API: "bool", "int", "string", "enum", "list". */
const char *settings_check_type_name(enum tlsbox_setting_type t);

/* True for TLSBOX_SETTING_SECRET declarations: never shown, wiped when freed. */
static inline bool settings_is_secret(const struct tlsbox_setting_def *def)
{
    return (def->flags & TLSBOX_SETTING_SECRET) != 0;
}

#endif
