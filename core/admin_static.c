/* Static files of the admin UI: webui/ (installed under the relocatable data
 * directory, else the source tree for tests), Chart.js from Debian's
 * libjs-chart.js, and the page modules plugins ship next to their .so. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/admin.h"
#include "core/api_mhd.h"
#include "core/log.h"
#include "core/paths.h"
#include "core/plugin_loader.h"
#include "core/xalloc.h"

#define CHARTJS_DIR "/usr/share/javascript/chart.js"
#define CHARTJS_URL "/vendor/chart.js/"
#define PLUGIN_PAGE_URL "/ui/plugins/"

static char webui_dir[PATH_MAX];

void admin_static_init(void)
{
    /* Installed: <prefix>/share/tlsbox/webui; from the build tree the data
     * directory (--data-dir build-data) links webui/ to the sources. */
    snprintf(webui_dir, sizeof webui_dir, "%s/webui", paths_pkgdatadir());
    log_debug("admin: web UI from %s", webui_dir);
}

static const char *mime_type(const char *path)
{
    static const struct {
        const char *ext, *type;
    } types[] = {{".html", "text/html; charset=utf-8"},
                 {".js", "text/javascript; charset=utf-8"},
                 {".mjs", "text/javascript; charset=utf-8"},
                 {".css", "text/css; charset=utf-8"},
                 {".svg", "image/svg+xml"},
                 {".png", "image/png"},
                 {".ico", "image/x-icon"},
                 {".json", "application/json"},
                 {".txt", "text/plain; charset=utf-8"}};
    const char *dot = strrchr(path, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof *types; i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

/* Only plain relative paths: letters, digits, '.', '_', '-', '/', no "..",
 * no empty or hidden segments. */
static int safe_path(const char *p)
{
    if (!*p || *p == '/' || strstr(p, "//") || p[strlen(p) - 1] == '/')
        return 0;
    for (const char *s = p; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              strchr("._-/", *s)))
            return 0;
    for (const char *s = p; s; s = strchr(s, '/')) {
        if (*s == '/')
            s++;
        if (*s == '.')
            return 0;
    }
    return 1;
}

static enum MHD_Result send_file(struct MHD_Connection *conn, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0)
            close(fd);
        return api_mhd_error(conn, 404, "not found");
    }
    struct MHD_Response *r = MHD_create_response_from_fd64((uint64_t)st.st_size, fd);
    if (!r) {
        close(fd);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, mime_type(path));
    /* Revalidate every time: an upgrade must never leave a stale module. */
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    api_mhd_security_headers(r);
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

/* "<plugin .so without .so>.ui.js" of a started plugin, or NULL. */
char *admin_plugin_page_path(const char *name)
{
    struct tlsbox_plugin *p = plugins_find(name);
    if (!p || p->pstate != PLUGIN_STARTED || !p->path)
        return NULL;
    size_t n = strlen(p->path);
    if (n < 3 || strcmp(p->path + n - 3, ".so") != 0)
        return NULL;
    char *js = xasprintf("%.*s.ui.js", (int)(n - 3), p->path);
    if (access(js, R_OK) != 0) {
        free(js);
        return NULL;
    }
    return js;
}

enum MHD_Result admin_static_serve(struct MHD_Connection *conn, const char *url)
{
    const char *rel = url + 1;
    if (strcmp(url, "/") == 0)
        rel = "index.html";
    if (url[0] != '/' || !safe_path(rel))
        return api_mhd_error(conn, 404, "not found");
    char *path = NULL;
    if (strncmp(url, CHARTJS_URL, strlen(CHARTJS_URL)) == 0) {
        path = xasprintf("%s/%s", CHARTJS_DIR, url + strlen(CHARTJS_URL));
    } else if (strncmp(url, PLUGIN_PAGE_URL, strlen(PLUGIN_PAGE_URL)) == 0) {
        const char *file = url + strlen(PLUGIN_PAGE_URL);
        size_t n = strlen(file);
        if (n > 3 && strcmp(file + n - 3, ".js") == 0 && !strchr(file, '/')) {
            char *name = xstrndup(file, n - 3);
            path = admin_plugin_page_path(name);
            free(name);
        }
        if (!path)
            return api_mhd_error(conn, 404, "no page for that plugin");
    } else {
        path = xasprintf("%s/%s", webui_dir, rel);
    }
    enum MHD_Result r = send_file(conn, path);
    free(path);
    return r;
}
