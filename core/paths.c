#include "core/paths.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char plugindir[PATH_MAX];
static char datadir[PATH_MAX];
static char pkgdatadir[PATH_MAX + 16]; /* datadir + "/tlsbox" always fits */

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* @p configured relative to PREFIX, re-rooted at @p runtime_prefix if that exists. */
static void relocate(char *out, size_t n, const char *runtime_prefix, const char *configured)
{
    size_t plen = strlen(PREFIX);
    snprintf(out, n, "%s", configured);
    if (!runtime_prefix || strncmp(configured, PREFIX, plen) != 0)
        return;
    char candidate[PATH_MAX];
    if (snprintf(candidate, sizeof candidate, "%s%s", runtime_prefix, configured + plen) >=
        (int)sizeof candidate)
        return;
    if (is_dir(candidate))
        snprintf(out, n, "%s", candidate);
}

void paths_init(void)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *prefix = NULL;
    if (len > 0) {
        exe[len] = '\0';
        /* <prefix>/sbin/tlsboxd -> <prefix> */
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            slash = strrchr(exe, '/');
            if (slash && (strcmp(slash, "/sbin") == 0 || strcmp(slash, "/bin") == 0)) {
                *slash = '\0';
                prefix = exe;
            }
        }
    }
    relocate(plugindir, sizeof plugindir, prefix, PLUGINDIR);
    relocate(datadir, sizeof datadir, prefix, DATADIR);
}

const char *paths_plugindir(void)
{
    return plugindir[0] ? plugindir : PLUGINDIR;
}

const char *paths_datadir(void)
{
    return datadir[0] ? datadir : DATADIR;
}

void paths_set_pkgdatadir(const char *dir)
{
    snprintf(pkgdatadir, sizeof pkgdatadir, "%s", dir);
}

const char *paths_pkgdatadir(void)
{
    if (!pkgdatadir[0])
        snprintf(pkgdatadir, sizeof pkgdatadir, "%s/tlsbox", paths_datadir());
    return pkgdatadir;
}
