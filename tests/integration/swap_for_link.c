/* LD_PRELOAD for tests: another process of the directory's owner swaps a
 * name for a symbolic link at the last moment.  The name is $SWAP_AT; the
 * link leads to $SWAP_TO; it happens once:
 * - before chown() of that name, or before an open() of it read-only
 *   without following links (how one changes a file through itself);
 * - after a mkdir() that made it (before the program opens what it made).
 * The name is first moved aside to NAME.aside.  This puts the link, every
 * time, where a real attacker racing the program lands it only now and
 * then. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void swap(const char *path)
{
    static int done;
    const char *name = getenv("SWAP_AT"), *to = getenv("SWAP_TO");
    if (done || !name || !to || strcmp(name, path) != 0)
        return;
    done = 1;
    char aside[4096];
    snprintf(aside, sizeof aside, "%s.aside", path);
    int (*real_rename)(const char *, const char *) =
        (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
    if (real_rename(path, aside) == 0 && symlink(to, path) < 0) {
        /* the test then finds no link, and says so */
    }
}

int chown(const char *path, uid_t uid, gid_t gid)
{
    int (*real)(const char *, uid_t, gid_t) =
        (int (*)(const char *, uid_t, gid_t))dlsym(RTLD_NEXT, "chown");
    swap(path);
    return real(path, uid, gid);
}

int mkdir(const char *path, mode_t mode)
{
    int (*real)(const char *, mode_t) = (int (*)(const char *, mode_t))dlsym(RTLD_NEXT, "mkdir");
    int r = real(path, mode);
    if (r == 0)
        swap(path);
    return r;
}

static int opened(const char *sym, const char *path, int flags, mode_t mode)
{
    int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, sym);
    if ((flags & O_ACCMODE) == O_RDONLY && (flags & O_NOFOLLOW) && !(flags & O_CREAT))
        swap(path);
    return real(path, flags, mode);
}

int open(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;
    va_end(ap);
    return opened("open", path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    mode_t mode = (flags & O_CREAT) ? (mode_t)va_arg(ap, int) : 0;
    va_end(ap);
    return opened("open64", path, flags, mode);
}
