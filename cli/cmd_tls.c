/* tlsboxctl cert list|root|export|import and policy show|set|preset|raw|
 * history|rollback|preview: thin clients of the cert and policy API. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/ctl.h"

static int usage_error(const char *what)
{
    fprintf(stderr, "tlsboxctl: usage: tlsboxctl %s\n", what);
    return CTL_EXIT_USAGE;
}

static const char *str(json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* Wipe then free text that held a private key. */
static void wipe_free(char *s)
{
    if (!s)
        return;
    volatile char *p = s;
    while (*p)
        *p++ = 0;
    free(s);
}

/* Whole file as text (at most 1 MiB); NULL with a message naming the file.
 * Grows by copying, so an old buffer can be wiped: it may hold a key. */
static char *read_file(const char *path, const char *what)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "tlsboxctl: %s %s: %s\n", what, path, strerror(errno));
        return NULL;
    }
    size_t cap = 16384, len = 0, n;
    char *buf = calloc(1, cap), tmp[4096];
    while (buf && (n = fread(tmp, 1, sizeof(tmp), f)) > 0) {
        if (len + n + 1 > cap) {
            char *nb = len + n > (1u << 20) ? NULL : calloc(1, cap * 2);
            if (nb)
                memcpy(nb, buf, len);
            wipe_free(buf);
            buf = nb;
            cap *= 2;
            if (!buf) {
                fprintf(stderr, "tlsboxctl: %s %s: larger than 1 MiB\n", what, path);
                break;
            }
        }
        memcpy(buf + len, tmp, n);
        len += n;
        buf[len] = 0;
    }
    /* A read error (a directory, an I/O error) is not an empty file: the
     * daemon would only say that no PEM block was found. */
    if (buf && ferror(f)) {
        fprintf(stderr, "tlsboxctl: %s %s: %s\n", what, path, strerror(errno));
        wipe_free(buf);
        buf = NULL;
    }
    memset(tmp, 0, sizeof(tmp));
    fclose(f);
    return buf;
}

/* ---- cert --------------------------------------------------------------- */

static int cmd_cert_list(struct ctl *c, int argc, char **argv)
{
    (void)argv;
    json_t *j;
    if (argc != 0)
        return usage_error("cert list");
    int rc = ctl_call(c, "GET", "cert", NULL, &j);
    if (rc)
        return rc;
    if (c->json) {
        ctl_print_json(c, j);
    } else {
        printf("%-24s %-11s %5s %-9s %-8s %-32s %s\n", "NAME", "KEY", "DAYS", "SOURCE", "STATUS",
               "ISSUER", "NAMES");
        size_t i, k;
        json_t *e, *s;
        json_array_foreach(json_object_get(j, "certificates"), i, e)
        {
            printf("%-24s %-11s %5lld %-9s %-8s %-32.32s ", str(e, "name"), str(e, "key_type"),
                   (long long)json_integer_value(json_object_get(e, "days_left")), str(e, "source"),
                   str(e, "status"), str(e, "issuer"));
            /* Every name, however many: the last column has no width. */
            json_array_foreach(json_object_get(e, "sans"), k, s)
                printf("%s%s", k ? "," : "", json_string_value(s));
            putchar('\n');
        }
        json_t *b = json_object_get(j, "bundle");
        if (json_is_object(b)) {
            char *certs = json_dumps(json_object_get(b, "certificates"), JSON_COMPACT);
            char *fast = json_dumps(json_object_get(b, "signed_by_libcrypto"), JSON_COMPACT);
            printf("serving: bundle %lld with %s\n",
                   (long long)json_integer_value(json_object_get(b, "generation")), certs);
            /* An old daemon does not say: then nothing is printed. */
            if (fast)
                printf("signatures by libcrypto for: %s\n", fast);
            free(fast);
            free(certs);
        }
    }
    json_decref(j);
    return CTL_EXIT_OK;
}

static int print_pem(struct ctl *c, const char *path, const char *field)
{
    json_t *j;
    int rc = ctl_call(c, "GET", path, NULL, &j);
    if (rc)
        return rc;
    if (c->json)
        ctl_print_json(c, j);
    else
        fputs(str(j, field), stdout);
    json_decref(j);
    return CTL_EXIT_OK;
}

static int cmd_cert_root(struct ctl *c, int argc, char **argv)
{
    (void)argv;
    if (argc != 0)
        return usage_error("cert root");
    return print_pem(c, "cert/root", "pem");
}

static int cmd_cert_export(struct ctl *c, int argc, char **argv)
{
    if (argc != 1)
        return usage_error("cert export NAME");
    char *path = ctl_path("cert", argv[0], "");
    int rc = print_pem(c, path, "chain_pem");
    free(path);
    return rc;
}

static int cmd_cert_import(struct ctl *c, int argc, char **argv)
{
    const char *cert = NULL, *key = NULL, *chain = NULL, *name = NULL;
    static const char use[] = "cert import --cert FILE --key FILE [--chain FILE] [--name NAME]";
    for (int i = 0; i < argc; i++) {
        const char **dst = !strcmp(argv[i], "--cert")    ? &cert
                           : !strcmp(argv[i], "--key")   ? &key
                           : !strcmp(argv[i], "--chain") ? &chain
                           : !strcmp(argv[i], "--name")  ? &name
                                                         : NULL;
        if (!dst || i + 1 >= argc)
            return usage_error(use);
        *dst = argv[++i];
    }
    if (!cert || !key)
        return usage_error(use);
    char *certs = read_file(cert, "certificate"), *chains = NULL, *keys = NULL, *body = NULL;
    int rc = CTL_EXIT_IO;
    if (!certs || (chain && !(chains = read_file(chain, "chain"))) ||
        !(keys = read_file(key, "key")))
        goto out;
    json_t *req = json_pack("{s:s, s:s}", "cert_pem", certs, "key_pem", keys);
    /* A chain or name jansson refuses (not UTF-8) must not be left out
     * silently: no body then, and ctl_request says why. */
    if (req && ((chains && json_object_set_new(req, "chain_pem", json_string(chains)) < 0) ||
                (name && json_object_set_new(req, "name", json_string(name)) < 0))) {
        json_decref(req);
        req = NULL;
    }
    body = json_dumps(req, JSON_COMPACT);
    /* The JSON object held a copy of the key: wipe it before freeing. */
    char *kcopy = (char *)json_string_value(json_object_get(req, "key_pem"));
    if (kcopy)
        memset(kcopy, 0, strlen(kcopy));
    json_decref(req);
    json_t *j = NULL;
    rc = ctl_call(c, "POST", "cert/import", body, &j);
    if (rc == CTL_EXIT_OK) {
        if (c->json) {
            ctl_print_json(c, j);
        } else {
            json_t *info = json_object_get(j, "certificate");
            printf("imported %s: %s, %lld days left, issuer %s\n", str(j, "name"),
                   str(info, "key_type"),
                   (long long)json_integer_value(json_object_get(info, "days_left")),
                   str(info, "issuer"));
        }
    }
    json_decref(j);
out:
    free(certs);
    free(chains);
    wipe_free(keys);
    wipe_free(body);
    return rc;
}

/* ---- policy ------------------------------------------------------------- */

static void print_list(const char *label, json_t *a)
{
    size_t i;
    json_t *e;
    printf("%-24s", label);
    json_array_foreach(a, i, e) printf("%s%s", i ? " " : "", json_string_value(e));
    printf("\n");
}

static void print_policy(json_t *j)
{
    json_t *p = json_object_get(j, "policy");
    printf("version %lld (active)\n", (long long)json_integer_value(json_object_get(j, "id")));
    const char *k;
    json_t *v;
    json_object_foreach(p, k, v)
    {
        if (json_is_array(v)) {
            print_list(k, v);
        } else {
            char *s = json_is_string(v) ? strdup(json_string_value(v))
                                        : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            printf("%-24s%s\n", k, s && *s ? s : "-");
            free(s);
        }
    }
    printf("%-24s%s\n", "priority", str(j, "priority"));
    const char *refused = json_string_value(json_object_get(j, "refused"));
    if (refused)
        printf("NOT SERVED: %s; the default policy serves until another is set\n", refused);
}

static int policy_call(struct ctl *c, const char *method, const char *path, json_t *req)
{
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_t *j = NULL;
    int rc = ctl_call(c, method, path, body, &j);
    free(body);
    if (rc == CTL_EXIT_OK) {
        if (c->json)
            ctl_print_json(c, j);
        else
            print_policy(j);
    }
    json_decref(j);
    return rc;
}

static int cmd_policy_show(struct ctl *c, int argc, char **argv)
{
    (void)argv;
    if (argc != 0)
        return usage_error("policy show");
    return policy_call(c, "GET", "policy", NULL);
}

static int cmd_policy_set(struct ctl *c, int argc, char **argv)
{
    if (argc != 2)
        return usage_error("policy set FIELD VALUE");
    json_t *req = json_pack("{s:{s:s}}", "fields", argv[0], argv[1]);
    int rc = policy_call(c, "PUT", "policy", req);
    json_decref(req);
    return rc;
}

static int cmd_policy_preset(struct ctl *c, int argc, char **argv)
{
    if (argc != 1)
        return usage_error("policy preset modern|intermediate|compat");
    json_t *req = json_pack("{s:s}", "preset", argv[0]);
    int rc = policy_call(c, "POST", "policy/preset", req);
    json_decref(req);
    return rc;
}

static int cmd_policy_raw(struct ctl *c, int argc, char **argv)
{
    if (argc != 1)
        return usage_error("policy raw PRIORITY-STRING   (\"\" returns to the structured policy)");
    json_t *req = json_pack("{s:s}", "priority", argv[0]);
    int rc = policy_call(c, "POST", "policy/raw", req);
    json_decref(req);
    return rc;
}

static int cmd_policy_history(struct ctl *c, int argc, char **argv)
{
    (void)argv;
    json_t *j;
    if (argc != 0)
        return usage_error("policy history");
    int rc = ctl_call(c, "GET", "policy/history", NULL, &j);
    if (rc)
        return rc;
    if (c->json) {
        ctl_print_json(c, j);
    } else {
        printf("%-7s %-6s %-24s %-12s %-13s %s\n", "VERSION", "ACTIVE", "TIME (UTC)", "AUTHOR",
               "PRESET", "COMMENT");
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(j, "versions"), i, e)
        {
            time_t t = (time_t)json_integer_value(json_object_get(e, "created_at"));
            char when[32];
            ctl_utc(t, when, sizeof when);
            printf("%-7lld %-6s %-24s %-12s %-13s %s\n",
                   (long long)json_integer_value(json_object_get(e, "id")),
                   json_is_true(json_object_get(e, "active")) ? "*" : "", when, str(e, "author"),
                   str(e, "preset"), str(e, "comment"));
        }
    }
    json_decref(j);
    return CTL_EXIT_OK;
}

static int cmd_policy_rollback(struct ctl *c, int argc, char **argv)
{
    long long v = argc == 1 ? ctl_positive(argv[0]) : 0;
    if (v <= 0)
        return usage_error("policy rollback VERSION");
    json_t *req = json_pack("{s:I}", "version", (json_int_t)v);
    int rc = policy_call(c, "POST", "policy/rollback", req);
    json_decref(req);
    return rc;
}

/* The server's handshake per client family: what connects, with what. */
static void print_clients(json_t *j)
{
    json_t *cl = json_object_get(j, "clients");
    if (!json_is_array(cl)) {
        printf("client families: not checked (%s)\n", str(j, "clients_error"));
        return;
    }
    printf("client families (a GnuTLS handshake each, with the certificates it would serve):\n");
    size_t i;
    json_t *e;
    json_array_foreach(cl, i, e)
    {
        if (json_is_true(json_object_get(e, "ok")))
            printf("  %-18s connects  %s %s %s %s\n", str(e, "family"), str(e, "protocol"),
                   str(e, "cipher"),
                   json_is_string(json_object_get(e, "group")) ? str(e, "group") : "-",
                   json_is_string(json_object_get(e, "sigalg")) ? str(e, "sigalg") : "-");
        else
            printf("  %-18s refused   %s (%s)\n", str(e, "family"), str(e, "error"),
                   str(e, "side"));
    }
}

static int cmd_policy_preview(struct ctl *c, int argc, char **argv)
{
    json_t *req = NULL;
    if (argc == 2 && !strcmp(argv[0], "--preset"))
        req = json_pack("{s:s}", "preset", argv[1]);
    else if (argc == 2 && !strcmp(argv[0], "--raw"))
        req = json_pack("{s:s}", "priority", argv[1]);
    else if (argc == 3 && !strcmp(argv[0], "--set"))
        req = json_pack("{s:{s:s}}", "fields", argv[1], argv[2]);
    else if (argc != 0)
        return usage_error("policy preview [--preset NAME | --raw STRING | --set FIELD VALUE]");
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_t *j = NULL;
    int rc = ctl_call(c, req ? "POST" : "GET", "policy/preview", body, &j);
    free(body);
    json_decref(req);
    if (rc)
        return rc;
    if (c->json) {
        ctl_print_json(c, j);
    } else {
        printf("%-24s%s\n", "priority", str(j, "priority"));
        print_list("protocols", json_object_get(j, "protocols"));
        print_list("ciphers", json_object_get(j, "ciphers"));
        print_list("macs", json_object_get(j, "macs"));
        print_list("key exchange", json_object_get(j, "kx"));
        print_list("groups", json_object_get(j, "groups"));
        print_list("signatures", json_object_get(j, "sigalgs"));
        printf("%-24s%s\n", "hsts",
               json_is_string(json_object_get(j, "hsts")) ? str(j, "hsts") : "(none)");
        printf("cipher suites:\n");
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(j, "suites"), i, e)
            printf("  %s\n", json_string_value(e));
        print_clients(j);
    }
    json_decref(j);
    return CTL_EXIT_OK;
}

const struct ctl_command ctl_tls_commands[] = {
    {"cert", "list", "", "certificates: name, key type, days left, source, issuer, names",
     cmd_cert_list},
    {"cert", "root", "", "print the internal CA's root certificate (PEM) to trust it",
     cmd_cert_root},
    {"cert", "export", "NAME", "print a certificate chain (PEM; never the key)", cmd_cert_export},
    {"cert", "import", "--cert FILE --key FILE [--chain FILE] [--name NAME]",
     "import a certificate (certbot fullchain.pem + privkey.pem work as is)", cmd_cert_import},
    {"policy", "show", "", "the active TLS policy and its priority string", cmd_policy_show},
    {"policy", "set", "FIELD VALUE", "change one field (lists comma-separated)", cmd_policy_set},
    {"policy", "preset", "modern|intermediate|compat", "apply a Mozilla-style preset",
     cmd_policy_preset},
    {"policy", "raw", "STRING", "use a raw GnuTLS priority string (\"\" to stop)", cmd_policy_raw},
    {"policy", "history", "", "every policy version, newest first", cmd_policy_history},
    {"policy", "rollback", "VERSION", "apply an earlier version again (as a new version)",
     cmd_policy_rollback},
    {"policy", "preview", "[--preset N | --raw S | --set F V]",
     "what GnuTLS derives from the active or a candidate policy", cmd_policy_preview},
    {.name = NULL},
};
