/* Logging to stderr in a journald-friendly form: "<N>who: message" when
 * stderr is the journal (JOURNAL_STREAM set), "LEVEL who: message" with a
 * timestamp otherwise.  Thread-safe; one write() per line. */
#ifndef TLSBOX_CORE_LOG_H
#define TLSBOX_CORE_LOG_H

#include <stdarg.h>
#include <stddef.h>

#include <tlsbox/host.h>

/* Set the highest level written (TLSBOX_LOG_*).  Main thread, before threads start. */
void log_set_level(enum tlsbox_log_level level);
enum tlsbox_log_level log_get_level(void);
/* Parse "err", "warn", "info", "debug"; returns -EINVAL for anything else. */
int log_level_parse(const char *s);

void log_msg(const char *who, enum tlsbox_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void log_vmsg(const char *who, enum tlsbox_log_level level, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Append the @p n bytes of @p src to @p dst (which holds @p len bytes, room
 * for @p cap) as one safe log line: CR and LF become spaces, other control
 * bytes (but tab) and DEL become "\xHH", so a value from a client (a login
 * name, a URL) cannot move a terminal's cursor or forge a line.  Stops at
 * @p cap without cutting an escape.  Returns the new length.  Pure. */
size_t log_fold_controls(char *dst, size_t len, size_t cap, const char *src, size_t n);

#define log_err(...) log_msg("core", TLSBOX_LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_msg("core", TLSBOX_LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg("core", TLSBOX_LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg("core", TLSBOX_LOG_DEBUG, __VA_ARGS__)

#endif
