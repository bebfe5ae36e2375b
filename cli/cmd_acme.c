/* tlsboxctl acme status | renew [--force] | revoke NAME */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/ctl.h"

static int cmd_acme_status(struct ctl *c, int argc, char **argv)
{
    (void)argv;
    if (argc != 0) {
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl acme status\n");
        return CTL_EXIT_USAGE;
    }
    json_t *j = NULL;
    int rc = ctl_call(c, "GET", "acme/status", NULL, &j);
    if (rc)
        return rc;
    if (c->json) {
        ctl_print_json(c, j);
        json_decref(j);
        return CTL_EXIT_OK;
    }
    const char *state = json_string_value(json_object_get(j, "state"));
    printf("state:     %s\n", state ? state : "?");
    const char *reason = json_string_value(json_object_get(j, "reason"));
    if (reason)
        printf("           %s\n", reason);
    const char *dir = json_string_value(json_object_get(j, "directory"));
    if (dir) {
        printf("directory: %s\n", dir);
        const char *acct = json_string_value(json_object_get(j, "account"));
        printf("account:   %s\n", acct ? acct : "(not registered yet)");
        const char *ch = json_string_value(json_object_get(j, "challenge"));
        if (ch)
            printf("challenge: %s\n", ch);
        const char *rec = json_string_value(json_object_get(j, "dns_record"));
        if (rec) /* acme.dns_alias: where dns-01 answers go */
            printf("dns-01 at: %s\n", rec);
        ctl_print_when("next check", json_object_get(j, "next_check"));
    }
    size_t i;
    json_t *cj, *ev;
    json_array_foreach(json_object_get(j, "certificates"), i, cj)
    {
        printf("certificate %s (%s)\n", json_string_value(json_object_get(cj, "name")),
               json_string_value(json_object_get(cj, "key_type")));
        json_t *dl = json_object_get(cj, "days_left");
        if (json_is_number(dl))
            printf("  %-14s %.1f\n", "days left", json_number_value(dl));
        ctl_print_when("expires", json_object_get(cj, "not_after"));
        ctl_print_when("renew at", json_object_get(cj, "renew_at"));
        json_t *w = json_object_get(cj, "ari_window");
        if (json_is_object(w)) {
            ctl_print_when("ARI start", json_object_get(w, "start"));
            ctl_print_when("ARI end", json_object_get(w, "end"));
        } else {
            printf("  %-14s none (renewal at 1/3 of the lifetime left)\n", "ARI window");
        }
        long long f = (long long)json_integer_value(json_object_get(cj, "failures"));
        json_t *ca = json_object_get(cj, "ca_retry_after");
        if (f)
            printf("  %-14s %lld in a row\n", "failures", f);
        if (f || json_is_integer(ca))
            ctl_print_when("next attempt", json_object_get(cj, "next_attempt"));
        /* The CA's Retry-After: renew --force and setting changes do not order before it. */
        if (json_is_integer(ca))
            ctl_print_when("CA wait until", ca);
    }
    json_t *evs = json_object_get(j, "events");
    if (json_array_size(evs))
        printf("last attempts:\n");
    json_array_foreach(evs, i, ev)
    {
        time_t t = (time_t)json_integer_value(json_object_get(ev, "at"));
        struct tm tm;
        char buf[32];
        gmtime_r(&t, &tm);
        strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
        const char *pt = json_string_value(json_object_get(ev, "problem_type"));
        const char *detail = json_string_value(json_object_get(ev, "detail"));
        printf("  %s %-10s %-13s %s%s%s%s%s\n", buf, json_string_value(json_object_get(ev, "cert")),
               json_string_value(json_object_get(ev, "step")),
               json_is_true(json_object_get(ev, "ok")) ? "ok" : "FAILED", pt ? " " : "",
               pt ? pt : "", detail ? ": " : "", detail ? detail : "");
    }
    json_decref(j);
    return CTL_EXIT_OK;
}

static int cmd_acme_renew(struct ctl *c, int argc, char **argv)
{
    int force = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--force") == 0) {
            force = 1;
        } else {
            fprintf(stderr, "tlsboxctl: usage: tlsboxctl acme renew [--force]\n");
            return CTL_EXIT_USAGE;
        }
    }
    json_t *j = NULL;
    int rc = ctl_call(c, "POST", "acme/renew", force ? "{\"force\":true}" : "{}", &j);
    if (rc)
        return rc;
    if (c->json)
        ctl_print_json(c, j);
    else
        printf("renewal check queued%s; see tlsboxctl acme status\n", force ? " (forced)" : "");
    json_decref(j);
    return CTL_EXIT_OK;
}

static int cmd_acme_revoke(struct ctl *c, int argc, char **argv)
{
    if (argc != 1) {
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl acme revoke NAME\n");
        return CTL_EXIT_USAGE;
    }
    json_t *body = json_pack("{s:s}", "name", argv[0]), *j = NULL;
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    int rc = ctl_call(c, "POST", "acme/revoke", text, &j);
    free(text);
    if (rc)
        return rc;
    if (c->json)
        ctl_print_json(c, j);
    else
        printf("revocation of %s queued; a replacement follows\n", argv[0]);
    json_decref(j);
    return CTL_EXIT_OK;
}

const struct ctl_command ctl_acme_commands[] = {
    {"acme", "status", "", "account, certificates, renewal times, last attempts", cmd_acme_status},
    {"acme", "renew", "[--force]", "check now; --force renews even when not due", cmd_acme_renew},
    {"acme", "revoke", "NAME", "revoke an ACME certificate and order a replacement",
     cmd_acme_revoke},
    {NULL, NULL, NULL, NULL, NULL}};
