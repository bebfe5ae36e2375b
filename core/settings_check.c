#include "core/settings_check.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/utf8.h"
#include "core/xalloc.h"

/*
 * The value as an error message shows it: quoted, control characters and
 * quotes escaped, cut at 64 bytes so a huge value does not make a huge line.
 * The cut falls between characters: half of one makes the message invalid
 * UTF-8, which the API cannot put in JSON.  A secret is never shown.
 */
static char *show(const struct tlsbox_setting_def *def, const char *v)
{
    if (settings_is_secret(def))
        return xstrdup("the secret value");
    size_t len = strlen(v), n = utf8_clip(v, len, 64);
    char *out = xmalloc(n * 4 + 8), *p = out;
    *p++ = '"';
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c < 0x20 || c == 0x7f || c == '"' || c == '\\') {
            static const char hex[] = "0123456789abcdef";
            if (c == '"' || c == '\\') {
                *p++ = '\\';
                *p++ = (char)c;
            } else {
                *p++ = '\\';
                *p++ = 'x';
                *p++ = hex[c >> 4];
                *p++ = hex[c & 15];
            }
        } else {
            *p++ = (char)c;
        }
    }
    *p++ = '"';
    if (n < len) {
        memcpy(p, "...", 3);
        p += 3;
    }
    *p = '\0';
    return out;
}

const char *settings_check_type_name(enum tlsbox_setting_type t)
{
    switch (t) {
    case TLSBOX_SETTING_BOOL:
        return "bool";
    case TLSBOX_SETTING_INT:
        return "int";
    case TLSBOX_SETTING_STRING:
        return "string";
    case TLSBOX_SETTING_ENUM:
        return "enum";
    case TLSBOX_SETTING_LIST:
        return "list";
    default:
        return "unknown";
    }
}

int settings_parse_bool(const char *v)
{
    static const char *const yes[] = {"true", "1", "yes", "on"};
    static const char *const no[] = {"false", "0", "no", "off"};
    if (!v)
        return -EINVAL;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return 1;
        if (strcasecmp(v, no[i]) == 0)
            return 0;
    }
    return -EINVAL;
}

int settings_check_parse_int(const char *v, long long *out)
{
    const char *p = v;
    char *end = NULL;
    if (!v)
        return -EINVAL;
    if (*p == '-')
        p++;
    if (!isdigit((unsigned char)*p)) /* strtoll would skip spaces and take '+' */
        return -EINVAL;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno != 0 || *end != '\0')
        return -EINVAL;
    *out = n;
    return 0;
}

int settings_check_compile(const char *full_key, const struct tlsbox_setting_def *def, regex_t **re,
                           char **err)
{
    *re = NULL;
    if (!def->pattern || (def->type != TLSBOX_SETTING_STRING && def->type != TLSBOX_SETTING_LIST))
        return 0;
    regex_t *r = xmalloc(sizeof(*r));
    int rc = regcomp(r, def->pattern, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char buf[128];
        regerror(rc, r, buf, sizeof(buf));
        xset_err(err, "%s: declared pattern %s does not compile: %s", full_key, def->pattern, buf);
        free(r);
        return -EINVAL;
    }
    *re = r;
    return 0;
}

void settings_check_free_regex(regex_t *re)
{
    if (re) {
        regfree(re);
        free(re);
    }
}

static bool in_choices(const char *choices, const char *v)
{
    size_t len = strlen(v);
    for (const char *p = choices; p;) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n == len && strncmp(p, v, n) == 0)
            return true;
        p = bar ? bar + 1 : NULL;
    }
    return false;
}

static bool matches(const regex_t *re, const char *v)
{
    return !re || regexec(re, v, 0, NULL, 0) == 0;
}

static bool is_address(const char *v)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, v, buf) == 1 || inet_pton(AF_INET6, v, buf) == 1;
}

/*
 * A STRING value or LIST item longer than the declared .max (bytes; 0 = no
 * bound): a POSIX ERE can bound each part of a value but not the whole, so a
 * DNS name's 253 characters cannot be a pattern.  True, with *err naming the
 * setting, the value (@p what, "" or "item ") and the bound, when too long.
 */
static bool too_long(const char *full_key, const struct tlsbox_setting_def *def, const char *what,
                     const char *v, char **err)
{
    size_t len = strlen(v);
    if (def->max <= 0 || len <= (unsigned long long)def->max)
        return false;
    char *shown = show(def, v);
    xset_err(err, "%s: %s%s is %zu bytes long, more than the %lld allowed", full_key, what, shown,
             len, def->max);
    free(shown);
    return true;
}

/* "KEY: [item ]VALUE does not match PATTERN" into *err.  A pattern too long
 * to read (acme.domains: host names and IPv4 and IPv6 addresses) gives way
 * to the setting's help, which says the same to a person. */
static void no_match(char **err, const char *full_key, const struct tlsbox_setting_def *def,
                     const char *what, const char *shown)
{
    if (strlen(def->pattern) > 160 && def->help && *def->help)
        xset_err(err, "%s: %s%s does not match the form it takes: %s", full_key, what, shown,
                 def->help);
    else
        xset_err(err, "%s: %s%s does not match %s", full_key, what, shown, def->pattern);
}

/* LIST: split on ',', trim blanks, refuse empty items, check each item. */
static int check_list(const char *full_key, const struct tlsbox_setting_def *def, const regex_t *re,
                      const char *value, char **canon, char **err)
{
    size_t len = strlen(value);
    char *out = xmalloc(len + 1), *o = out;
    char *item = xmalloc(len + 1);
    const char *p = value;
    int rc = -EINVAL;

    while (*p == ' ' || *p == '\t')
        p++;
    if (*p == '\0') { /* "" or blanks: the empty list */
        *o = '\0';
        rc = 0;
        goto out;
    }
    for (int idx = 1;; idx++) {
        const char *comma = strchr(p, ',');
        const char *e = comma ? comma : p + strlen(p);
        const char *s = p;
        while (s < e && (*s == ' ' || *s == '\t'))
            s++;
        while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        if (s == e) {
            char *shown = show(def, value);
            xset_err(err, "%s: %s has an empty item (#%d)", full_key, shown, idx);
            free(shown);
            goto out;
        }
        memcpy(item, s, (size_t)(e - s));
        item[e - s] = '\0';
        if (too_long(full_key, def, "item ", item, err))
            goto out;
        if (!matches(re, item)) {
            char *shown = show(def, item);
            no_match(err, full_key, def, "item ", shown);
            free(shown);
            goto out;
        }
        if (o != out)
            *o++ = ',';
        memcpy(o, item, (size_t)(e - s));
        o += e - s;
        if (!comma)
            break;
        p = comma + 1;
    }
    *o = '\0';
    rc = 0;
out:
    if (settings_is_secret(def))
        wipe(item, len + 1);
    free(item);
    if (rc == 0 && canon)
        *canon = out;
    else if (settings_is_secret(def))
        wipe_free(out, len + 1); /* refused: out has items but no '\0' yet */
    else
        free(out);
    return rc;
}

int settings_check(const char *full_key, const struct tlsbox_setting_def *def, const regex_t *re,
                   const char *value, char **canon, char **err)
{
    regex_t *own = NULL;
    char *shown = NULL;
    int rc = -EINVAL;
    long long n;

    if (canon)
        *canon = NULL;
    if (!def) {
        xset_err(err, "%s: no such setting", full_key ? full_key : "(null)");
        return -EINVAL;
    }
    if (!value) {
        xset_err(err, "%s: no value given", full_key);
        return -EINVAL;
    }
    if (strlen(value) > SETTINGS_VALUE_MAX) {
        xset_err(err, "%s: value is longer than %d bytes", full_key, SETTINGS_VALUE_MAX);
        return -EINVAL;
    }
    shown = show(def, value);
    /* Values are text: the API, the history and the UI carry them in JSON,
     * which cannot hold invalid UTF-8 (the value would vanish from them). */
    size_t bad = utf8_invalid_at(value, strlen(value));
    if (bad < strlen(value)) {
        xset_err(err, "%s: the value is not valid UTF-8 (byte %zu)", full_key, bad + 1);
        goto out;
    }
    /* Control characters would break the one-line-per-record CLI and logs. */
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if (*p < 0x20 || *p == 0x7f) {
            xset_err(err, "%s: %s contains a control character", full_key, shown);
            goto out;
        }
    }
    if (!re && settings_check_compile(full_key, def, &own, err) < 0)
        goto out;
    if (!re)
        re = own;

    switch (def->type) {
    case TLSBOX_SETTING_BOOL: {
        int b = settings_parse_bool(value);
        if (b < 0) {
            xset_err(err, "%s: %s is not a boolean (true/false, yes/no, on/off, 1/0)", full_key,
                     shown);
            goto out;
        }
        if (canon)
            *canon = xstrdup(b ? "true" : "false");
        break;
    }
    case TLSBOX_SETTING_INT:
        if (settings_check_parse_int(value, &n) < 0) {
            xset_err(err, "%s: %s is not an integer", full_key, shown);
            goto out;
        }
        if ((def->min || def->max) && (n < def->min || n > def->max)) {
            xset_err(err, "%s: %s is out of range %lld..%lld", full_key, shown, def->min, def->max);
            goto out;
        }
        if (canon)
            *canon = xasprintf("%lld", n);
        break;
    case TLSBOX_SETTING_STRING:
        if ((def->flags & SETTINGS_CORE_ADDRESS) && *value && !is_address(value)) {
            xset_err(err, "%s: %s is not an IPv4 or IPv6 address", full_key, shown);
            goto out;
        }
        if (too_long(full_key, def, "", value, err))
            goto out;
        if (!matches(re, value)) {
            no_match(err, full_key, def, "", shown);
            goto out;
        }
        if (canon)
            *canon = xstrdup(value);
        break;
    case TLSBOX_SETTING_ENUM:
        if (!def->choices || !in_choices(def->choices, value)) {
            xset_err(err, "%s: %s is not one of %s", full_key, shown,
                     def->choices ? def->choices : "(no choices declared)");
            goto out;
        }
        if (canon)
            *canon = xstrdup(value);
        break;
    case TLSBOX_SETTING_LIST:
        if (check_list(full_key, def, re, value, canon, err) < 0)
            goto out;
        break;
    default:
        xset_err(err, "%s: declared with unknown type %d", full_key, (int)def->type);
        goto out;
    }
    rc = 0;
out:
    if (own) {
        /* A pattern compiled just for this check may have taken megabytes
         * (see settings_register); give them back to the system. */
        settings_check_free_regex(own);
        malloc_trim(0);
    }
    free(shown);
    return rc;
}

static bool valid_name(const char *s, bool first_alpha)
{
    if (!s || !*s || strlen(s) > 64)
        return false;
    if (first_alpha && !(*s >= 'a' && *s <= 'z'))
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return false;
    return true;
}

int settings_check_owner(const char *owner, char **err)
{
    if (!valid_name(owner, true)) {
        xset_err(err, "settings owner \"%s\" is not a valid name ([a-z][a-z0-9_]*)",
                 owner ? owner : "");
        return -EINVAL;
    }
    return 0;
}

int settings_check_def(const char *owner, const struct tlsbox_setting_def *def, char **err)
{
    if (settings_check_owner(owner, err) < 0)
        return -EINVAL;
    if (!valid_name(def->key, false)) {
        xset_err(err, "%s: setting key \"%s\" is not [a-z0-9_]+", owner, def->key);
        return -EINVAL;
    }
    if ((unsigned)def->type >= TLSBOX_SETTING_TYPE_MAX) {
        xset_err(err, "%s.%s: unknown type %d", owner, def->key, (int)def->type);
        return -EINVAL;
    }
    if (def->type == TLSBOX_SETTING_INT && def->min > def->max) {
        xset_err(err, "%s.%s: declared range %lld..%lld is empty", owner, def->key, def->min,
                 def->max);
        return -EINVAL;
    }
    if (def->type == TLSBOX_SETTING_ENUM && (!def->choices || !*def->choices)) {
        xset_err(err, "%s.%s: an enum needs choices", owner, def->key);
        return -EINVAL;
    }
    if (!def->default_value) {
        xset_err(err, "%s.%s: no default value declared", owner, def->key);
        return -EINVAL;
    }
    return 0;
}

int settings_check_decl(const char *owner, const struct tlsbox_setting_def *defs, size_t i,
                        regex_t **re, char **err)
{
    const struct tlsbox_setting_def *d = &defs[i];
    char *full = xasprintf("%s.%s", owner, d->key);
    int rc = -EINVAL;

    *re = NULL;
    if (settings_check_def(owner, d, err) < 0 || settings_check_compile(full, d, re, err) < 0)
        goto out;
    if (settings_check(full, d, *re, d->default_value, NULL, err) < 0) {
        if (err) {
            char *e = *err;
            *err = xasprintf("declared default is invalid: %s", e);
            free(e);
        }
        goto out;
    }
    for (size_t j = 0; j < i; j++) {
        if (strcmp(defs[j].key, d->key) == 0) {
            xset_err(err, "%s: declared twice", full);
            goto out;
        }
    }
    rc = 0;
out:
    free(full);
    return rc;
}
