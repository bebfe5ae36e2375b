/* tlsboxctl admin setup-url | passwd | totp-off: first run, password reset
 * and two-factor recovery of the web UI. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli/ctl.h"
#include "core/xalloc.h"

static int cmd_setup_url(struct ctl *c, int argc, char **argv)
{
    if (argc != 0) {
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl admin setup-url\n");
        return CTL_EXIT_USAGE;
    }
    json_t *j = NULL;
    int rc = ctl_call(c, "POST", "admin/setup-token", "{}", &j);
    if (rc == CTL_EXIT_OK) {
        if (c->json)
            ctl_print_json(c, j);
        else
            printf("%s\n(valid for %lld s, once)\n", json_string_value(json_object_get(j, "url")),
                   (long long)json_integer_value(json_object_get(j, "expires_in")));
    }
    json_decref(j);
    return rc;
}

/* The terminal's settings while echo is off, for the signal handler. */
static struct termios tty_saved;
static const int tty_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define N_TTY_SIGNALS (sizeof tty_signals / sizeof *tty_signals)

/* Ctrl-C at the prompt: give the terminal its echo back, then die of the
 * signal as before (a shell would otherwise be left typing blind). */
static void restore_tty_and_die(int sig)
{
    tcsetattr(STDIN_FILENO, TCSAFLUSH, &tty_saved);
    ssize_t w = write(STDERR_FILENO, "\n", 1);
    (void)w;
    signal(sig, SIG_DFL);
    raise(sig);
}

/* One line from stdin, without echo when it is a terminal.  Caller wipes. */
static char *read_password(const char *prompt)
{
    struct termios noecho;
    struct sigaction sa = {.sa_handler = restore_tty_and_die}, old_sa[N_TTY_SIGNALS];
    int tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &tty_saved) == 0;
    if (tty) {
        fprintf(stderr, "%s", prompt);
        sigemptyset(&sa.sa_mask);
        for (size_t i = 0; i < N_TTY_SIGNALS; i++)
            sigaction(tty_signals[i], &sa, &old_sa[i]);
        noecho = tty_saved;
        noecho.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &noecho);
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (tty) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &tty_saved);
        for (size_t i = 0; i < N_TTY_SIGNALS; i++)
            sigaction(tty_signals[i], &old_sa[i], NULL);
        fprintf(stderr, "\n");
    }
    if (n <= 0) {
        free(line);
        return NULL;
    }
    line[strcspn(line, "\r\n")] = '\0';
    return line;
}

static int cmd_passwd(struct ctl *c, int argc, char **argv)
{
    if (argc > 1) {
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl admin passwd [USER] (password on stdin)\n");
        return CTL_EXIT_USAGE;
    }
    const char *user = argc == 1 ? argv[0] : "admin";
    char *pw = read_password("new password: ");
    if (!pw) {
        fprintf(stderr, "tlsboxctl: no password given on stdin\n");
        return CTL_EXIT_USAGE;
    }
    json_t *req = json_pack("{s:s,s:s}", "user", user, "password", pw);
    wipe_free_str(pw);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    int rc = ctl_call(c, "PUT", "admin/password", body, NULL);
    wipe_free_str(body);
    if (rc == CTL_EXIT_OK)
        printf("password of %s set; their sessions ended\n", user);
    return rc;
}

/* The way back in for a user whose authenticator app is lost: root on the
 * box turns two-factor login off; the user turns it on again, with a new
 * secret, from the account page. */
static int cmd_totp_off(struct ctl *c, int argc, char **argv)
{
    if (argc > 1) {
        fprintf(stderr, "tlsboxctl: usage: tlsboxctl admin totp-off [USER]\n");
        return CTL_EXIT_USAGE;
    }
    const char *user = argc == 1 ? argv[0] : "admin";
    json_t *req = json_pack("{s:s}", "user", user);
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    json_t *j = NULL;
    int rc = ctl_call(c, "POST", "admin/totp/off", body, &j);
    free(body);
    if (rc == CTL_EXIT_OK) {
        if (c->json)
            ctl_print_json(c, j);
        else
            printf("two-factor login of %s is off: the password alone logs in; turn it on again "
                   "from the web UI's account page\n",
                   user);
    }
    json_decref(j);
    return rc;
}

const struct ctl_command ctl_admin_commands[] = {
    {"admin", "setup-url", "", "print the one-time first-run URL of the web UI", cmd_setup_url},
    {"admin", "passwd", "[USER]", "set a web UI password (read from stdin; default user admin)",
     cmd_passwd},
    {"admin", "totp-off", "[USER]",
     "turn two-factor login off for a user who lost the app (default user admin)", cmd_totp_off},
    {NULL, NULL, NULL, NULL, NULL}};
