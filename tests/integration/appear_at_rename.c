/* LD_PRELOAD for tests: another process's file appears at a rename's
 * destination at the last moment.  When rename() or renameat2() is asked to
 * move something to the path in $APPEAR_AT_RENAME, a file holding
 * "appeared\n" is first created there, then the real call runs.  This puts,
 * every time, a file into the window between a program's check that its
 * destination is free and its rename, which a real second writer hits only
 * now and then. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void appear(const char *to)
{
    const char *path = getenv("APPEAR_AT_RENAME");
    if (!path || strcmp(path, to) != 0)
        return;
    int fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    if (write(fd, "appeared\n", 9) != 9) {
        /* the test then sees the wrong contents */
    }
    close(fd);
}

int rename(const char *from, const char *to)
{
    int (*real)(const char *, const char *) =
        (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
    appear(to);
    return real(from, to);
}

int renameat2(int fromdir, const char *from, int todir, const char *to, unsigned int flags)
{
    int (*real)(int, const char *, int, const char *, unsigned int) =
        (int (*)(int, const char *, int, const char *, unsigned int))dlsym(RTLD_NEXT, "renameat2");
    appear(to);
    return real(fromdir, from, todir, to, flags);
}
