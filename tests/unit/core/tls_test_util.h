/* Helpers shared by the tls_*_test.c unit tests: a temp dir removed at exit,
 * shell commands run in it (certtool/openssl make fixtures at test time; no
 * key is ever committed), and a fresh migrated store. */
#ifndef TLSBOX_TESTS_TLS_TEST_UTIL_H
#define TLSBOX_TESTS_TLS_TEST_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/store.h"
#include "core/xalloc.h"

static char tt_dir[] = "/tmp/tlsbox-tls-test-XXXXXX";

static void tt_cleanup(void)
{
    char *cmd = xasprintf("rm -rf '%s'", tt_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", tt_dir);
    free(cmd);
}

static const char *tt_tmpdir(void)
{
    if (!mkdtemp(tt_dir)) {
        perror("mkdtemp");
        exit(1);
    }
    atexit(tt_cleanup);
    return tt_dir;
}

/* Run a shell command in the temp dir; its exit status. */
static int tt_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static int tt_sh(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *c = xvasprintf(fmt, ap);
    va_end(ap);
    char *cmd = xasprintf("cd '%s' && { %s\n} >>sh.log 2>&1", tt_dir, c);
    int st = system(cmd);
    free(cmd);
    free(c);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Contents of a file in the temp dir (caller frees), or NULL. */
__attribute__((unused)) static char *tt_slurp(const char *name)
{
    char *path = xasprintf("%s/%s", tt_dir, name);
    FILE *f = fopen(path, "rb");
    free(path);
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0, cap = 0, n;
    char tmp[4096];
    while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0) {
        if (len + n + 1 > cap) {
            cap = (len + n + 1) * 2;
            buf = xrealloc(buf, cap);
        }
        memcpy(buf + len, tmp, n);
        len += n;
    }
    fclose(f);
    if (!buf)
        buf = xstrdup("");
    else
        buf[len] = 0;
    return buf;
}

/* A new migrated store file @p name in the temp dir. */
__attribute__((unused)) static sqlite3 *tt_store(const char *name)
{
    char *path = xasprintf("%s/%s", tt_dir, name);
    sqlite3 *db = NULL;
    char *err = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK ||
        store_migrate(db, store_migrations, store_migrations_count, &err) < 0) {
        fprintf(stderr, "store %s: %s\n", path, err ? err : sqlite3_errmsg(db));
        exit(1);
    }
    free(path);
    return db;
}

__attribute__((unused)) static long long tt_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    long long v = -999;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

#endif
