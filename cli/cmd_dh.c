/* tlsboxctl dh status | generate [--bits N] | import FILE | mode MODE */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/ctl.h"

static void dh_print_served(json_t *s)
{
    const char *src = json_string_value(json_object_get(s, "source"));
    const char *group = json_string_value(json_object_get(s, "group"));
    if (!src) {
        printf("served:     (no TLS bundle yet)\n");
        return;
    }
    printf("served:     %s%s%s, %lld bits", src, group ? " " : "", group ? group : "",
           (long long)json_integer_value(json_object_get(s, "bits")));
    const char *fp = json_string_value(json_object_get(s, "fingerprint"));
    printf("%s%s\n", fp && *fp ? ", fingerprint " : "", fp && *fp ? fp : "");
    printf("policy:     TLS 1.2 DHE %s; TLS 1.3 FFDHE %s; smallest group %lld bits\n",
           json_is_true(json_object_get(s, "dhe_tls12")) ? "on" : "off",
           json_is_true(json_object_get(s, "ffdhe_tls13")) ? "on" : "off",
           (long long)json_integer_value(json_object_get(s, "policy_min_bits")));
}

static void dh_print_params(const char *label, json_t *p)
{
    if (!json_is_object(p)) {
        printf("%-11s none\n", label);
        return;
    }
    printf("%-11s %lld bits, %.1f days old", label,
           (long long)json_integer_value(json_object_get(p, "bits")),
           json_number_value(json_object_get(p, "age_days")));
    json_t *s = json_object_get(p, "generation_seconds");
    if (json_is_number(s))
        printf(", made in %.1f s", json_number_value(s));
    printf("\n");
}

static void dh_print_time(time_t t, char *buf, size_t size)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, size, "%Y-%m-%d %H:%M UTC", &tm);
}

/* The last finished run; one stopped by a dhparam.bits change is shown as
 * cancelled, with why ("outcome", "cancelled_because"). */
static void dh_print_last_run(json_t *r)
{
    if (!json_is_object(r))
        return;
    const char *outcome = json_string_value(json_object_get(r, "outcome"));
    const char *because = json_string_value(json_object_get(r, "cancelled_because"));
    const char *err = json_string_value(json_object_get(r, "error"));
    char buf[32];
    dh_print_time((time_t)json_integer_value(json_object_get(r, "finished_at")), buf, sizeof buf);
    if (!outcome)
        outcome = json_string_value(json_object_get(r, "state"));
    printf("last run:   %lld bits, ", (long long)json_integer_value(json_object_get(r, "bits")));
    if (because)
        printf("%s (%s)", outcome, because);
    else
        printf("%s%s%s", outcome ? outcome : "?", err ? ": " : "", err ? err : "");
    printf(", %s (%s)\n", buf, json_string_value(json_object_get(r, "reason")));
}

static void dh_show_status(struct ctl *c, json_t *j)
{
    (void)c;
    printf("mode:       %s\n", json_string_value(json_object_get(j, "mode")));
    dh_print_served(json_object_get(j, "served"));
    const char *note = json_string_value(json_object_get(j, "note"));
    if (note)
        printf("note:       %s\n", note);
    json_t *g = json_object_get(j, "generation");
    if (json_is_object(g)) {
        printf("generating: %lld bits, stage %s, %.1f s elapsed",
               (long long)json_integer_value(json_object_get(g, "bits")),
               json_string_value(json_object_get(g, "stage")),
               json_number_value(json_object_get(g, "elapsed_seconds")));
        json_t *pct = json_object_get(g, "percent_estimate");
        if (json_is_integer(pct))
            printf(", about %lld%%", (long long)json_integer_value(pct));
        printf(" (%s, attempt %lld)\n", json_string_value(json_object_get(g, "reason")),
               (long long)json_integer_value(json_object_get(g, "attempts")));
    }
    json_t *p = json_object_get(j, "params");
    dh_print_params("generated:", json_object_get(p, "generated"));
    dh_print_params("imported:", json_object_get(p, "import"));
    json_t *next = json_object_get(j, "next_rotation");
    if (json_is_integer(next)) {
        char buf[32];
        dh_print_time((time_t)json_integer_value(next), buf, sizeof buf);
        printf("rotation:   %s (every %lld days)\n", buf,
               (long long)json_integer_value(json_object_get(j, "rotate_days")));
    }
    dh_print_last_run(json_object_get(j, "last_run"));
}

static int cmd_dh_status(struct ctl *c, int argc, char **argv)
{
    (void)argv;
    if (argc != 0) {
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl dh status\n");
        return CTL_EXIT_USAGE;
    }
    return ctl_show(c, "GET", "dh/status", NULL, dh_show_status);
}

static void dh_show_generate(struct ctl *c, json_t *j)
{
    (void)c;
    const char *note = json_string_value(json_object_get(j, "note"));
    const char *prio = json_string_value(json_object_get(j, "priority"));
    /* The setting dhparam.priority says idle or normal: print what the
     * daemon reports, not a fixed "idle". */
    printf("generating %lld-bit parameters%s%s%s; see tlsboxctl dh status%s%s\n",
           (long long)json_integer_value(json_object_get(j, "bits")), prio ? " at " : "",
           prio ? prio : "", prio ? " priority" : "", note ? "\nnote: " : "", note ? note : "");
}

static int cmd_dh_generate(struct ctl *c, int argc, char **argv)
{
    char body[64] = "{}";
    if (argc == 2 && strcmp(argv[0], "--bits") == 0) {
        char *end;
        errno = 0;
        /* long long: a 32-bit long (armhf) would call 4294969344 "not a number"
         * instead of letting the daemon say which sizes are allowed. */
        long long bits = strtoll(argv[1], &end, 10);
        if (errno || *end || end == argv[1]) {
            fprintf(stderr, "tlsboxctl: --bits: '%s' is not a number\n", argv[1]);
            return CTL_EXIT_USAGE;
        }
        snprintf(body, sizeof body, "{\"bits\":%lld}", bits);
    } else if (argc != 0) {
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl dh generate [--bits 2048|3072|4096]\n");
        return CTL_EXIT_USAGE;
    }
    return ctl_show(c, "POST", "dh/generate", body, dh_show_generate);
}

/* The whole of @p path (at most 64 KiB) as a string, or NULL (message printed). */
static char *dh_read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "tlsboxctl: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 65536, n;
    char *buf = malloc(cap + 1);
    n = buf ? fread(buf, 1, cap + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!buf || bad || n > cap) {
        fprintf(stderr, "tlsboxctl: %s: %s\n", path,
                bad ? "read error" : "larger than 64 KiB: not DH parameters");
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    return buf;
}

static void dh_show_import(struct ctl *c, json_t *j)
{
    (void)c;
    printf("imported %lld-bit DH parameters; mode is now import\n",
           (long long)json_integer_value(json_object_get(j, "bits")));
}

static int cmd_dh_import(struct ctl *c, int argc, char **argv)
{
    if (argc != 1) {
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl dh import FILE\n");
        return CTL_EXIT_USAGE;
    }
    char *pem = dh_read_file(argv[0]);
    if (!pem)
        return CTL_EXIT_IO;
    json_t *body = json_pack("{s:s}", "pem", pem);
    free(pem);
    if (!body) {
        fprintf(stderr, "tlsboxctl: %s: not text (PEM expected)\n", argv[0]);
        return CTL_EXIT_IO;
    }
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    int rc = ctl_show(c, "POST", "dh/import", text, dh_show_import);
    free(text);
    return rc;
}

static void dh_show_mode(struct ctl *c, json_t *j)
{
    (void)c;
    printf("mode: %s\n", json_string_value(json_object_get(j, "mode")));
}

static int cmd_dh_mode(struct ctl *c, int argc, char **argv)
{
    if (argc != 1) {
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl dh mode rfc7919|generated|import\n");
        return CTL_EXIT_USAGE;
    }
    json_t *body = json_pack("{s:s}", "mode", argv[0]);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    int rc = ctl_show(c, "PUT", "dh/mode", text, dh_show_mode);
    free(text);
    return rc;
}

const struct ctl_command ctl_dh_commands[] = {
    {"dh", "status", "", "DH parameters: mode, what is served, generation progress", cmd_dh_status},
    {"dh", "generate", "[--bits N]", "generate new DH parameters (a job at idle priority)",
     cmd_dh_generate},
    {"dh", "import", "FILE", "serve DH parameters from a PEM (openssl dhparam)", cmd_dh_import},
    {"dh", "mode", "MODE", "rfc7919 (default), generated or import", cmd_dh_mode},
    {NULL, NULL, NULL, NULL, NULL}};
