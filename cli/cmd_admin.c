/* tlsboxctl admin setup-url | passwd: first run and password reset of the web UI. */
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

/* One line from stdin, without echo when it is a terminal.  Caller wipes. */
static char *read_password(const char *prompt)
{
    struct termios old, noecho;
    int tty = isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &old) == 0;
    if (tty) {
        fprintf(stderr, "%s", prompt);
        noecho = old;
        noecho.c_lflag &= ~(tcflag_t)ECHO;
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &noecho);
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, stdin);
    if (tty) {
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
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

const struct ctl_command ctl_admin_commands[] = {
    {"admin", "setup-url", "", "print the one-time first-run URL of the web UI", cmd_setup_url},
    {"admin", "passwd", "[USER]", "set a web UI password (read from stdin; default user admin)",
     cmd_passwd},
    {NULL, NULL, NULL, NULL, NULL}};
