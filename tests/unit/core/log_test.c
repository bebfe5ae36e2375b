/* log: what reaches stderr for messages carrying control bytes (a login
 * name, a URL from a client): one line, CR/LF folded, other controls as
 * \xHH, UTF-8 and tabs kept, long lines cut without a half escape. */
#include "core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"

/* Log one message with stderr sent to a file; return what was written. */
static char *logged(const char *prefix, const char *arg)
{
    char path[] = "/tmp/tlsbox-log-test.XXXXXX";
    int fd = mkstemp(path), saved = dup(STDERR_FILENO);
    static char out[4096];
    ssize_t n;
    unlink(path);
    dup2(fd, STDERR_FILENO);
    log_msg("test", TLSBOX_LOG_WARN, "%s%s", prefix, arg);
    dup2(saved, STDERR_FILENO);
    close(saved);
    n = pread(fd, out, sizeof(out) - 1, 0);
    close(fd);
    out[n > 0 ? n : 0] = '\0';
    return out;
}

/* The message part: what follows "test: ". */
static const char *msg_of(const char *line)
{
    const char *p = strstr(line, "test: ");
    return p ? p + 6 : "";
}

int main(void)
{
    char *l;
    unsetenv("JOURNAL_STREAM");

    l = logged("login failed for ", "\"\x1b[31mroot\x1b[0m\"");
    is_str(msg_of(l), "login failed for \"\\x1b[31mroot\\x1b[0m\"\n",
           "an ESC sequence in a value is written as \\x1b");
    l = logged("", "a\r\nWARN forged: line");
    is_str(msg_of(l), "a  WARN forged: line\n", "CR LF folded to spaces: one line");
    l = logged("", "tab\there, bell\a, del\x7f, nul-free");
    is_str(msg_of(l), "tab\there, bell\\x07, del\\x7f, nul-free\n",
           "tab kept; BEL and DEL escaped");
    l = logged("", "caf\xc3\xa9 \xe2\x9c\x93");
    is_str(msg_of(l), "caf\xc3\xa9 \xe2\x9c\x93\n", "UTF-8 kept as it is");
    ok(strchr(l, '\n') == l + strlen(l) - 1, "exactly one newline, at the end");

    /* A message of control bytes longer than the line: cut at the limit,
     * never in the middle of an escape, and still one line. */
    char big[3000];
    memset(big, 0x1b, sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    l = logged("", big);
    size_t n = strlen(l);
    ok(n <= 2048 && l[n - 1] == '\n', "a long line is cut to 2048 bytes with its newline (%zu)", n);
    const char *m = msg_of(l);
    size_t mn = strlen(m) - 1;
    ok(mn % 4 == 0 && mn > 0, "only whole escapes (%zu bytes of them)", mn);
    ok(strncmp(m + mn - 4, "\\x1b", 4) == 0, "the last one is whole");

    char buf[16];
    is_int((int)log_fold_controls(buf, 0, 6, "\x01\x02", 2), 4,
           "room for one escape of two: 4 bytes");
    is_int((int)log_fold_controls(buf, 0, 3, "\x01", 1), 0, "no room for an escape: nothing");
    return done_testing();
}
