/* tlsboxctl ocsp status [NAME] | refresh [NAME] */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/ctl.h"

/* The status word people look for first; REVOKED is meant to stand out. */
static const char *ocsp_status_word(const char *s)
{
    if (!s)
        return "?";
    if (strcmp(s, "good") == 0)
        return "GOOD";
    if (strcmp(s, "revoked") == 0)
        return "REVOKED (!!) - replace this certificate";
    if (strcmp(s, "not_applicable") == 0)
        return "not applicable";
    if (strcmp(s, "unknown") == 0)
        return "UNKNOWN";
    /* The last answer was good, but clients get no staple now. */
    if (strcmp(s, "expired") == 0)
        return "EXPIRED - no staple is sent: no fresh answer came before the last one ended";
    if (strcmp(s, "not_stapled") == 0)
        return "not stapled - waiting for a fresh answer";
    /* Checked by CRL: the last CRL ran out and no fresh one came. */
    if (strcmp(s, "stale") == 0)
        return "STALE - the last CRL ran out: revocation not known now";
    return s;
}

static void ocsp_print_cert(json_t *c)
{
    const char *s = json_string_value(json_object_get(c, "status"));
    /* Not sent for a reason no fresh answer cures (the TLS policy). */
    const char *held = json_string_value(json_object_get(c, "not_stapled_because"));
    printf("certificate %s\n", json_string_value(json_object_get(c, "name")));
    if (held && s && strcmp(s, "not_stapled") == 0)
        printf("  %-14s not stapled - %s\n", "status", held);
    else
        printf("  %-14s %s\n", "status", ocsp_status_word(s));
    const char *reason = json_string_value(json_object_get(c, "reason"));
    if (reason) {
        printf("  %-14s %s\n", "why", reason);
        return;
    }
    const char *resp = json_string_value(json_object_get(c, "responder"));
    const char *method = json_string_value(json_object_get(c, "method"));
    bool by_crl = method && strcmp(method, "crl") == 0;
    printf("  %-14s %s\n", "checked by", by_crl ? "CRL" : "OCSP");
    printf("  %-14s %s\n", by_crl ? "CRL" : "responder", resp ? resp : "-");
    json_t *age = json_object_get(c, "staple_age");
    if (by_crl)
        printf("  %-14s no (no OCSP in this certificate: nothing to staple)\n", "stapled");
    else if (json_is_true(json_object_get(c, "stapled")))
        printf("  %-14s yes (age %llds)\n", "stapled", (long long)json_integer_value(age));
    else
        printf("  %-14s no\n", "stapled");
    ctl_print_when("produced", json_object_get(c, "produced_at"));
    ctl_print_when("this update", json_object_get(c, "this_update"));
    ctl_print_when("next update", json_object_get(c, "next_update"));
    ctl_print_when("served until", json_object_get(c, "serve_until"));
    ctl_print_when("next refresh", json_object_get(c, "next_refresh"));
    if (s && strcmp(s, "revoked") == 0)
        ctl_print_when("revoked at", json_object_get(c, "revoked_at"));
    printf("  %-14s %lld\n", "failures",
           (long long)json_integer_value(json_object_get(c, "failures")));
    const char *err = json_string_value(json_object_get(c, "last_error"));
    printf("  %-14s %s\n", "last error", err ? err : "-");
    const char *warn = json_string_value(json_object_get(c, "warning"));
    if (warn)
        printf("  WARNING: %s\n", warn);
}

/* Print the certificates of status @p j (only @p name when not NULL). */
static int ocsp_print(struct ctl *c, json_t *j, const char *name)
{
    json_t *certs = json_object_get(j, "certificates"), *e;
    size_t i;
    int found = 0;
    if (c->json && !name) {
        ctl_print_json(c, j);
        return CTL_EXIT_OK;
    }
    json_array_foreach(certs, i, e)
    {
        const char *n = json_string_value(json_object_get(e, "name"));
        if (name && (!n || strcmp(n, name) != 0))
            continue;
        found++;
        if (c->json)
            ctl_print_json(c, e);
        else
            ocsp_print_cert(e);
    }
    if (name && !found) {
        fprintf(stderr, "tlsboxctl: no certificate named %s in the OCSP status\n", name);
        return CTL_EXIT_REFUSED;
    }
    if (!found)
        printf("no certificates\n");
    return CTL_EXIT_OK;
}

static int cmd_ocsp_status(struct ctl *c, int argc, char **argv)
{
    if (argc > 1) {
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl ocsp status [NAME]\n");
        return CTL_EXIT_USAGE;
    }
    json_t *j = NULL;
    int rc = ctl_call(c, "GET", "ocsp/status", NULL, &j);
    if (rc)
        return rc;
    rc = ocsp_print(c, j, argc ? argv[0] : NULL);
    json_decref(j);
    return rc;
}

/* Ask for a refresh, wait (30 s at most) for the run that serves it, show the result. */
static int cmd_ocsp_refresh(struct ctl *c, int argc, char **argv)
{
    if (argc > 1) {
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl ocsp refresh [NAME]\n");
        return CTL_EXIT_USAGE;
    }
    json_t *body = argc ? json_pack("{s:s}", "name", argv[0]) : json_object(), *j = NULL;
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    int rc = ctl_call(c, "POST", "ocsp/refresh", text, &j);
    free(text);
    if (rc)
        return rc;
    json_int_t run = json_integer_value(json_object_get(j, "run"));
    json_decref(j);
    for (int i = 0; i < 300; i++) {
        j = NULL;
        if ((rc = ctl_call(c, "GET", "ocsp/status", NULL, &j)) != 0)
            return rc;
        if (json_integer_value(json_object_get(j, "runs")) >= run) {
            rc = ocsp_print(c, j, argc ? argv[0] : NULL);
            json_decref(j);
            return rc;
        }
        json_decref(j);
        usleep(100 * 1000);
    }
    fprintf(stderr, "tlsboxctl: the refresh did not finish within 30 s; see tlsboxctl ocsp "
                    "status\n");
    return CTL_EXIT_REFUSED;
}

const struct ctl_command ctl_ocsp_commands[] = {
    {"ocsp", "status", "[NAME]",
     "per certificate: responder, status, this/next update, next refresh, last error",
     cmd_ocsp_status},
    {"ocsp", "refresh", "[NAME]", "fetch now (all, or NAME), wait for it and show the result",
     cmd_ocsp_refresh},
    {NULL, NULL, NULL, NULL, NULL}};
