/* MIME types by file extension: a small sorted table searched by bisection. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "site.h"

struct mime {
    const char *ext;
    const char *type;
};

/* Sorted by extension (strcmp order, lower case). */
static const struct mime mime_table[] = {
    {"7z", "application/x-7z-compressed"},
    {"avif", "image/avif"},
    {"bin", "application/octet-stream"},
    {"bmp", "image/bmp"},
    {"css", "text/css; charset=utf-8"},
    {"csv", "text/csv; charset=utf-8"},
    {"gif", "image/gif"},
    {"gz", "application/gzip"},
    {"htm", "text/html; charset=utf-8"},
    {"html", "text/html; charset=utf-8"},
    {"ico", "image/x-icon"},
    {"jpeg", "image/jpeg"},
    {"jpg", "image/jpeg"},
    {"js", "text/javascript; charset=utf-8"},
    {"json", "application/json"},
    {"map", "application/json"},
    {"md", "text/markdown; charset=utf-8"},
    {"mjs", "text/javascript; charset=utf-8"},
    {"mp3", "audio/mpeg"},
    {"mp4", "video/mp4"},
    {"oga", "audio/ogg"},
    {"ogg", "audio/ogg"},
    {"ogv", "video/ogg"},
    {"otf", "font/otf"},
    {"pdf", "application/pdf"},
    {"pem", "application/x-pem-file"},
    {"png", "image/png"},
    {"svg", "image/svg+xml"},
    {"tar", "application/x-tar"},
    {"ttf", "font/ttf"},
    {"txt", "text/plain; charset=utf-8"},
    {"wasm", "application/wasm"},
    {"wav", "audio/wav"},
    {"webm", "video/webm"},
    {"webmanifest", "application/manifest+json"},
    {"webp", "image/webp"},
    {"woff", "font/woff"},
    {"woff2", "font/woff2"},
    {"xml", "application/xml"},
    {"zip", "application/zip"},
};

static int mime_cmp(const void *key, const void *elem)
{
    return strcmp(key, ((const struct mime *)elem)->ext);
}

const char *site_mime_type(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash : path, '.');
    char ext[16];
    size_t n;
    const struct mime *m;

    if (!dot || !dot[1])
        return "application/octet-stream";
    n = strlen(dot + 1);
    if (n >= sizeof(ext))
        return "application/octet-stream";
    for (size_t i = 0; i <= n; i++) {
        char ch = dot[1 + i];
        ext[i] = (ch >= 'A' && ch <= 'Z') ? (char)(ch + 32) : ch;
    }
    m = bsearch(ext, mime_table, sizeof(mime_table) / sizeof(mime_table[0]), sizeof(mime_table[0]),
                mime_cmp);
    return m ? m->type : "application/octet-stream";
}
