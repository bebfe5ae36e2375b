#include "core/log.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic int log_level = TLSBOX_LOG_INFO;

void log_set_level(enum tlsbox_log_level level)
{
    atomic_store(&log_level, (int)level);
}

enum tlsbox_log_level log_get_level(void)
{
    return (enum tlsbox_log_level)atomic_load(&log_level);
}

int log_level_parse(const char *s)
{
    static const struct {
        const char *name;
        enum tlsbox_log_level level;
    } names[] = {{"err", TLSBOX_LOG_ERR},   {"error", TLSBOX_LOG_ERR},
                 {"warn", TLSBOX_LOG_WARN}, {"warning", TLSBOX_LOG_WARN},
                 {"info", TLSBOX_LOG_INFO}, {"debug", TLSBOX_LOG_DEBUG}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (s && strcmp(s, names[i].name) == 0)
            return (int)names[i].level;
    return -EINVAL;
}

static const char *level_name(enum tlsbox_log_level level)
{
    switch (level) {
    case TLSBOX_LOG_ERR:
        return "ERROR";
    case TLSBOX_LOG_WARN:
        return "WARN";
    case TLSBOX_LOG_INFO:
        return "INFO";
    default:
        return "DEBUG";
    }
}

void log_vmsg(const char *who, enum tlsbox_log_level level, const char *fmt, va_list ap)
{
    if ((int)level > atomic_load(&log_level))
        return;
    static int journal = -1; /* benign race: every thread computes the same value */
    if (journal < 0)
        journal = getenv("JOURNAL_STREAM") != NULL;

    char line[2048];
    int n;
    if (journal) {
        n = snprintf(line, sizeof line, "<%d>%s: ", (int)level, who ? who : "core");
    } else {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        n = snprintf(line, sizeof line,
                     "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s %s: ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, level_name(level), who ? who : "core");
    }
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    char msg[sizeof line];
    int m = vsnprintf(msg, sizeof msg, fmt, ap);
    if (m > 0)
        len = log_fold_controls(line, len, sizeof line - 1, msg,
                                (size_t)m < sizeof msg ? (size_t)m : sizeof msg - 1);
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

size_t log_fold_controls(char *dst, size_t len, size_t cap, const char *src, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n && len < cap; i++) {
        unsigned char ch = (unsigned char)src[i];
        if (ch == '\n' || ch == '\r') {
            dst[len++] = ' '; /* one line per record, kept whole by journald */
        } else if ((ch < 0x20 && ch != '\t') || ch == 0x7f) {
            if (cap - len < 4)
                break; /* no half escape at the end */
            dst[len++] = '\\';
            dst[len++] = 'x';
            dst[len++] = hex[ch >> 4];
            dst[len++] = hex[ch & 15];
        } else {
            dst[len++] = (char)ch;
        }
    }
    return len;
}

void log_msg(const char *who, enum tlsbox_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vmsg(who, level, fmt, ap);
    va_end(ap);
}
