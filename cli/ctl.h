/* tlsboxctl internals: the command table and the control-socket client. */
#ifndef TLSBOX_CLI_CTL_H
#define TLSBOX_CLI_CTL_H

#include <time.h>

#include <jansson.h>

/* Exit codes (documented in doc/tlsboxctl.1). */
enum ctl_exit {
    CTL_EXIT_OK = 0,
    CTL_EXIT_REFUSED = 1,     /* the daemon refused or failed the request */
    CTL_EXIT_USAGE = 2,       /* bad command line */
    CTL_EXIT_NOT_RUNNING = 3, /* no daemon on the control socket */
    CTL_EXIT_IO = 4,          /* local error: unreadable file, broken reply */
};

struct ctl {
    const char *state_dir; /* --state-dir, default /var/lib/tlsbox */
    char *socket_path;     /* --socket, /run/tlsbox/control.sock or <state_dir>/control.sock */
    int json;              /* --json: print raw JSON replies */
};

/* One command: "tlsboxctl <name> [<sub>] args...".  sub NULL = no subcommand. */
struct ctl_command {
    const char *name;
    const char *sub;
    const char *usage; /* arguments after name/sub, for the help text */
    const char *help;  /* one line */
    /* argv[0] is the first argument after name (and sub); returns an enum ctl_exit. */
    int (*run)(struct ctl *c, int argc, char **argv);
};

/*
 * One request to /api/v1/<path> on the control socket.  @p body is JSON text
 * or NULL.  On a reply, *status is the HTTP status and *reply the parsed JSON
 * (caller json_decref's; NULL when the body was not JSON).  Returns CTL_EXIT_OK
 * when an answer came (whatever its status), CTL_EXIT_NOT_RUNNING (message
 * printed) when nothing listens, CTL_EXIT_USAGE (message printed) for a PUT
 * or POST without a body (an argument that is not UTF-8) or a @p path over
 * 8192 bytes (nothing sent), CTL_EXIT_IO
 * otherwise.
 */
int ctl_request(struct ctl *c, const char *method, const char *path, const char *body, long *status,
                json_t **reply);

/*
 * ctl_request, then: on status >= 400 print "tlsboxctl: <error from reply>" to
 * stderr and return CTL_EXIT_REFUSED; on success keep *reply (may be NULL if
 * the caller does not want it) and return CTL_EXIT_OK.
 */
int ctl_call(struct ctl *c, const char *method, const char *path, const char *body, json_t **reply);

/* How a command shows a successful reply when --json is not given. */
typedef void (*ctl_show_fn)(struct ctl *c, json_t *reply);

/*
 * ctl_call, then print the reply: as JSON with --json, else through @p show
 * (NULL: as JSON too).  Returns ctl_call's exit code.
 */
int ctl_show(struct ctl *c, const char *method, const char *path, const char *body,
             ctl_show_fn show);

/* "<prefix>/<segment percent-encoded><suffix>", caller frees. */
char *ctl_path(const char *prefix, const char *segment, const char *suffix);

/* Print @p j: as JSON when c->json, else compactly readable. */
void ctl_print_json(struct ctl *c, json_t *j);

/* Percent-encode one path segment (caller frees). */
char *ctl_escape(const char *s);

/* @p s as a positive number (an id, a version): digits only, no sign or
 * space, within range; else 0 (cli/ctl_http.c). */
long long ctl_positive(const char *s);

/* @t as "YYYY-MM-DD HH:MM:SS" (UTC) in @buf; returns @buf (cli/ctl_time.c). */
const char *ctl_utc(time_t t, char *buf, size_t n);

/* One "  LABEL  YYYY-MM-DD HH:MM:SS UTC (in 2h05m)" line of a status listing
 * ("5m02s ago" when past); "-" when @v is not an integer (Unix time). */
void ctl_print_when(const char *label, json_t *v);

/* Command tables, each ended by an entry with name NULL. */
extern const struct ctl_command ctl_core_commands[];
extern const struct ctl_command ctl_tls_commands[];    /* cert, policy (cli/cmd_tls.c) */
extern const struct ctl_command ctl_acme_commands[];   /* acme (cli/cmd_acme.c) */
extern const struct ctl_command ctl_admin_commands[];  /* admin (cli/cmd_admin.c) */
extern const struct ctl_command ctl_dh_commands[];     /* dh (cli/cmd_dh.c) */
extern const struct ctl_command ctl_ocsp_commands[];   /* ocsp (cli/cmd_ocsp.c) */
extern const struct ctl_command ctl_bench_commands[];  /* bench (cli/cmd_bench.c) */
extern const struct ctl_command ctl_backup_commands[]; /* backup, restore (cli/cmd_backup.c) */

#endif
