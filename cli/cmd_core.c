/* tlsboxctl status | plugins | settings | get | set | metrics | version */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/ctl.h"

static int usage_error(const char *what)
{
    fprintf(stderr, "tlsboxctl: usage: tlsboxctl %s\n", what);
    return CTL_EXIT_USAGE;
}

static int cmd_status(struct ctl *c, int argc, char **argv)
{
    json_t *j;
    int rc = ctl_call(c, "GET", "status", NULL, &j);
    if (rc)
        return rc;
    if (c->json) {
        ctl_print_json(c, j);
    } else {
        json_t *gen = json_object_get(j, "tls_bundle_generation");
        printf("tlsboxd %s (plugin ABI %s), pid %lld, up %llds\n",
               json_string_value(json_object_get(j, "version")),
               json_string_value(json_object_get(j, "abi")),
               (long long)json_integer_value(json_object_get(j, "pid")),
               (long long)json_integer_value(json_object_get(j, "uptime_s")));
        printf("store: %s\n", json_string_value(json_object_get(j, "store")));
        if (json_is_integer(gen))
            printf("tls bundle: generation %lld\n", (long long)json_integer_value(gen));
        else
            printf("tls bundle: none (HTTPS cannot be served)\n");
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(j, "plugins"), i, p)
        {
            printf("plugin %-10s %s\n", json_string_value(json_object_get(p, "name")),
                   json_string_value(json_object_get(p, "state")));
        }
    }
    json_decref(j);
    return CTL_EXIT_OK;
}

static int cmd_plugins(struct ctl *c, int argc, char **argv)
{
    json_t *j;
    int rc = ctl_call(c, "GET", "plugins", NULL, &j);
    if (rc)
        return rc;
    if (c->json) {
        ctl_print_json(c, j);
    } else {
        size_t i;
        json_t *p;
        printf("%-10s %-8s %-5s %-12s %s\n", "NAME", "VERSION", "ABI", "STATE", "DESCRIPTION");
        json_array_foreach(j, i, p)
        {
            const char *err = json_string_value(json_object_get(p, "error"));
            printf("%-10s %-8s %-5s %-12s %s%s%s\n", json_string_value(json_object_get(p, "name")),
                   json_string_value(json_object_get(p, "version")),
                   json_string_value(json_object_get(p, "abi")),
                   json_string_value(json_object_get(p, "state")),
                   json_string_value(json_object_get(p, "description")), err ? ": " : "",
                   err ? err : "");
        }
    }
    json_decref(j);
    return CTL_EXIT_OK;
}

static int cmd_settings(struct ctl *c, int argc, char **argv)
{
    if (argc != 1)
        return usage_error("settings PLUGIN");
    char *name = ctl_escape(argv[0]);
    char path[512];
    snprintf(path, sizeof path, "plugins/%s/settings", name);
    free(name);
    json_t *j;
    int rc = ctl_call(c, "GET", path, NULL, &j);
    if (rc)
        return rc;
    if (c->json) {
        ctl_print_json(c, j);
    } else {
        size_t i;
        json_t *s;
        json_array_foreach(j, i, s)
        {
            printf("%-32s = %-24s %s\n", json_string_value(json_object_get(s, "full_key")),
                   json_string_value(json_object_get(s, "value")),
                   json_string_value(json_object_get(s, "help")) ?: "");
        }
    }
    json_decref(j);
    return CTL_EXIT_OK;
}

static int cmd_get(struct ctl *c, int argc, char **argv)
{
    if (argc != 1)
        return usage_error("get PLUGIN.KEY");
    char *key = ctl_escape(argv[0]);
    char path[512];
    snprintf(path, sizeof path, "settings/%s", key);
    free(key);
    json_t *j;
    int rc = ctl_call(c, "GET", path, NULL, &j);
    if (rc)
        return rc;
    if (c->json)
        ctl_print_json(c, j);
    else
        printf("%s\n", json_string_value(json_object_get(j, "value")));
    json_decref(j);
    return CTL_EXIT_OK;
}

static int cmd_set(struct ctl *c, int argc, char **argv)
{
    if (argc != 2)
        return usage_error("set PLUGIN.KEY VALUE");
    char *key = ctl_escape(argv[0]);
    char path[512];
    snprintf(path, sizeof path, "settings/%s", key);
    free(key);
    json_t *body = json_pack("{s:s}", "value", argv[1]);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    json_t *j;
    int rc = ctl_call(c, "PUT", path, text, &j);
    free(text);
    if (rc)
        return rc;
    if (c->json)
        ctl_print_json(c, j);
    else if (json_is_true(json_object_get(j, "restart_needed")))
        printf("%s = %s (takes effect when tlsboxd restarts)\n", argv[0],
               json_string_value(json_object_get(j, "value")));
    json_decref(j);
    return CTL_EXIT_OK;
}

static int cmd_metrics(struct ctl *c, int argc, char **argv)
{
    json_t *j;
    int rc = ctl_call(c, "GET", "metrics", NULL, &j);
    if (rc)
        return rc;
    if (c->json) {
        ctl_print_json(c, j);
    } else {
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v)
        {
            if (json_is_integer(v))
                printf("%s %lld\n", k, (long long)json_integer_value(v));
            else if (json_is_real(v))
                printf("%s %g\n", k, json_real_value(v));
            else if (json_is_object(v))
                printf("%s count=%lld sum=%g\n", k,
                       (long long)json_integer_value(json_object_get(v, "count")),
                       json_number_value(json_object_get(v, "sum")));
        }
    }
    json_decref(j);
    return CTL_EXIT_OK;
}

static int cmd_version(struct ctl *c, int argc, char **argv)
{
    printf("tlsboxctl %s\n", PACKAGE_VERSION);
    long status;
    json_t *j = NULL;
    /* The daemon's version is extra information: no daemon is not an error here. */
    if (ctl_request(c, "GET", "status", NULL, &status, &j) == CTL_EXIT_OK && status == 200)
        printf("tlsboxd %s (plugin ABI %s)\n", json_string_value(json_object_get(j, "version")),
               json_string_value(json_object_get(j, "abi")));
    json_decref(j);
    return CTL_EXIT_OK;
}

const struct ctl_command ctl_core_commands[] = {
    {"status", NULL, "", "daemon version, uptime, store, TLS bundle, plugins", cmd_status},
    {"plugins", NULL, "", "loaded plugins, their ABI and state", cmd_plugins},
    {"settings", NULL, "PLUGIN", "every setting of a plugin (or core)", cmd_settings},
    {"get", NULL, "PLUGIN.KEY", "print one setting", cmd_get},
    {"set", NULL, "PLUGIN.KEY VALUE", "validate and store one setting", cmd_set},
    {"metrics", NULL, "", "current metrics", cmd_metrics},
    {"version", NULL, "", "client and daemon versions", cmd_version},
    {NULL, NULL, NULL, NULL, NULL}};
