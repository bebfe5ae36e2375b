/* tlsboxctl: command-line client of tlsboxd's control socket. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <curl/curl.h>

#include "cli/ctl.h"
#include "core/xalloc.h"

static const struct ctl_command *const tables[] = {
    ctl_core_commands, ctl_tls_commands,  ctl_acme_commands,  ctl_admin_commands,
    ctl_dh_commands,   ctl_ocsp_commands, ctl_bench_commands, ctl_backup_commands};

/* The packaged service's socket (systemd RuntimeDirectory=tlsbox). */
#define RUN_SOCKET RUNSTATEDIR "/tlsbox/control.sock"

/* The socket to use: --socket, else --state-dir's, else the service's under
 * /run when it is there (or there but not ours to see: say so later), else
 * the default state directory's. */
static char *socket_path(const char *sock, const char *state_dir)
{
    struct stat st;
    if (sock)
        return xstrdup(sock);
    if (!state_dir && (lstat(RUN_SOCKET, &st) == 0 || errno == EACCES))
        return xstrdup(RUN_SOCKET);
    return xasprintf("%s/control.sock", state_dir ? state_dir : LOCALSTATEDIR "/lib/tlsbox");
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tlsboxctl [--state-dir DIR | --socket PATH] [--json] COMMAND [ARGS]\n\n"
            "The daemon is reached at %s when that exists (the packaged\n"
            "service), else at DIR/control.sock (DIR: %s).\n\ncommands:\n",
            RUN_SOCKET, LOCALSTATEDIR "/lib/tlsbox");
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
        for (const struct ctl_command *c = tables[t]; c->name; c++) {
            char head[128];
            snprintf(head, sizeof head, "%s%s%s %s", c->name, c->sub ? " " : "",
                     c->sub ? c->sub : "", c->usage ? c->usage : "");
            fprintf(f, "  %-36s %s\n", head, c->help ? c->help : "");
        }
    fprintf(f, "\nexit codes: 0 ok, 1 refused by tlsboxd, 2 usage, 3 tlsboxd not running,\n"
               "4 local error (see tlsboxctl(1))\n");
}

/* @p rc, or CTL_EXIT_IO when what was printed did not all reach standard
 * output (a full disk under "tlsboxctl cert export NAME > chain.pem"): the
 * output is redirected, so stdio holds it until here, and a script must
 * not take a truncated file for a whole one. */
static int flush_stdout(int rc)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return rc;
    fprintf(stderr, "tlsboxctl: standard output: %s; what was printed is not all there\n",
            errno ? strerror(errno) : "write error");
    return rc == CTL_EXIT_OK ? CTL_EXIT_IO : rc;
}

int main(int argc, char **argv)
{
    struct ctl c = {0};
    const char *sock = NULL;
    static const struct option longopts[] = {{"state-dir", required_argument, NULL, 's'},
                                             {"socket", required_argument, NULL, 'S'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    int opt;
    /* "+" stops at the first non-option: the rest belongs to the command. */
    while ((opt = getopt_long(argc, argv, "+s:S:jh", longopts, NULL)) != -1) {
        switch (opt) {
        case 's':
            c.state_dir = optarg;
            break;
        case 'S':
            sock = optarg;
            break;
        case 'j':
            c.json = 1;
            break;
        case 'h':
            usage(stdout);
            return flush_stdout(CTL_EXIT_OK);
        default:
            usage(stderr);
            return CTL_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return CTL_EXIT_USAGE;
    }
    const char *name = argv[optind];
    const char *sub = optind + 1 < argc ? argv[optind + 1] : NULL;
    const struct ctl_command *match = NULL;
    int known_name = 0;
    for (size_t t = 0; t < sizeof tables / sizeof *tables && !match; t++)
        for (const struct ctl_command *cmd = tables[t]; cmd->name; cmd++) {
            if (strcmp(cmd->name, name) != 0)
                continue;
            known_name = 1;
            if (!cmd->sub || (sub && strcmp(cmd->sub, sub) == 0)) {
                match = cmd;
                break;
            }
        }
    if (!match) {
        if (known_name)
            fprintf(stderr, "tlsboxctl: %s: unknown or missing subcommand%s%s\n", name,
                    sub ? " " : "", sub ? sub : "");
        else
            fprintf(stderr, "tlsboxctl: unknown command '%s'\n", name);
        usage(stderr);
        return CTL_EXIT_USAGE;
    }
    c.socket_path = socket_path(sock, c.state_dir);
    if (!c.state_dir)
        c.state_dir = LOCALSTATEDIR "/lib/tlsbox";
    /* Imports carry private keys through JSON: wipe what jansson frees. */
    xalloc_json_wiping();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int skip = match->sub ? 2 : 1;
    int rc = match->run(&c, argc - optind - skip, argv + optind + skip);
    curl_global_cleanup();
    free(c.socket_path);
    return flush_stdout(rc);
}
