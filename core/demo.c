#include "core/demo.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/paths.h"
#include "core/plugin_loader.h"
#include "core/settings.h"
#include "core/xalloc.h"

char *demo_expand(const char *value, const char *state_dir, const char *datadir)
{
    static const char sd[] = "${state_dir}", dd[] = "${datadir}";
    char *out = xstrdup("");
    const char *p = value;
    while (*p) {
        const char *rep = NULL;
        size_t skip = 1;
        if (strncmp(p, sd, sizeof sd - 1) == 0) {
            rep = state_dir;
            skip = sizeof sd - 1;
        } else if (strncmp(p, dd, sizeof dd - 1) == 0) {
            rep = datadir;
            skip = sizeof dd - 1;
        }
        char *next = rep ? xasprintf("%s%s", out, rep) : xasprintf("%s%c", out, *p);
        free(out);
        out = next;
        p += skip;
    }
    return out;
}

/* Copy @p from into the new file @p name of directory @p dir. */
static int copy_file(const char *from, int dir, const char *name)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return -errno;
    int out = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    /* Public sample content: 0644 past tlsboxd's umask 077, readable by the
     * user a daemon started as root becomes. */
    if (out < 0 || fchmod(out, 0644) < 0) {
        int e = -errno;
        if (out >= 0)
            close(out);
        close(in);
        return e;
    }
    char buf[16384];
    ssize_t n;
    int rc = 0;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n)
            rc = -EIO;
    if (n < 0)
        rc = -errno;
    close(in);
    close(out);
    return rc;
}

/* Copy the regular files of @p from into the new directory @p to (open);
 * returns the number copied or a negative errno. */
static int copy_dir_files(const char *from, int to)
{
    DIR *d = opendir(from);
    if (!d)
        return -errno;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *src = xasprintf("%s/%s", from, e->d_name);
        struct stat sb;
        if (e->d_name[0] != '.' && stat(src, &sb) == 0 && S_ISREG(sb.st_mode) &&
            copy_file(src, to, e->d_name) == 0)
            n++;
        free(src);
    }
    closedir(d);
    return n;
}

/* A new state directory gets the installed sample site to serve. */
static void demo_sample_site(const char *state_dir)
{
    char *www = xasprintf("%s/www", state_dir);
    if (mkdir(www, 0755) == 0) {
        /* From here through the directory made, never by its name: after
         * the first start the state directory is the service user's, who
         * could put a link at "www" between the mkdir and a chmod or copy
         * by name, and have root change or fill the directory it names. */
        int dir = open(www, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat sb;
        if (dir < 0 || fstat(dir, &sb) < 0 || sb.st_uid != geteuid() ||
            fchmod(dir, 0755) < 0) { /* past umask 077 */
            log_warn("demo mode: %s was replaced as it was made; no sample site", www);
        } else {
            char *sample = xasprintf("%s/www", paths_pkgdatadir());
            int n = copy_dir_files(sample, dir);
            if (n > 0)
                log_info("demo mode: %d sample file%s from %s in %s", n, n == 1 ? "" : "s", sample,
                         www);
            else
                log_warn("demo mode: no sample site in %s (%s); %s stays empty", sample,
                         n < 0 ? strerror(-n) : "no files", www);
            free(sample);
        }
        if (dir >= 0)
            close(dir);
    }
    free(www);
}

/* The demo defaults of one plugin; returns how many were applied. */
static int demo_plugin(struct tlsbox_plugin *p, const char *state_dir)
{
    const struct tlsbox_setting_value *v =
        TLSBOX_DESC_HAS(p->desc, demo_settings) ? p->desc->demo_settings : NULL;
    int n = 0;
    for (; v && v->key; v++) {
        char *key = xasprintf("%s.%s", p->name, v->key);
        char *value = demo_expand(v->value ? v->value : "", state_dir, paths_pkgdatadir());
        char *err = NULL;
        if (settings_override_default(key, value, &err) < 0) {
            log_warn("demo mode: plugin %s: %s", p->name, err ? err : key);
        } else {
            log_info("demo mode: %s = %s", key, value);
            n++;
        }
        free(err);
        free(value);
        free(key);
    }
    return n;
}

int demo_apply(const char *state_dir)
{
    int n = 0;
    /* Settings that hold paths want them absolute. */
    char *abs = realpath(state_dir, NULL);
    const char *dir = abs ? abs : state_dir;
    demo_sample_site(dir);
    for (struct tlsbox_plugin *p = plugins_first(); p; p = p->next)
        n += demo_plugin(p, dir);
    free(abs);
    return n;
}
