/* The QR encoder, checked the way a phone would: every code is drawn as an
 * image and read back by a real decoder (zbarimg, from zbar-tools), which
 * must return exactly the bytes put in.  Inputs fill each version 1-40 to
 * its level-M capacity (ISO/IEC 18004 table 7), so each version's block
 * layout, alignment and version patterns are exercised, plus the capacity
 * edges, an otpauth URI like the account page shows, and UTF-8. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/qr_encode.h"
#include "tests/tap.h"

/* Byte capacity at level M of versions 1..40 (ISO/IEC 18004 table 7). */
static const int capacity[41] = {0,    14,   26,   42,   62,   84,   106,  122,  152,  180,  213,
                                 251,  287,  331,  362,  412,  450,  504,  560,  624,  666,  711,
                                 779,  857,  911,  997,  1059, 1125, 1190, 1264, 1370, 1452, 1538,
                                 1628, 1722, 1809, 1911, 1989, 2099, 2213, 2331};

static char dir[] = "/tmp/qr_test.XXXXXX";

/* Draw @p qr as a PGM, 3 pixels per module and a 4-module quiet zone; run
 * zbarimg on it; return what it read (caller frees) or NULL. */
static char *scan(const struct qr_code *qr, size_t *got_len)
{
    const int px = 3, quiet = 4, side = (qr->size + 2 * quiet) * px;
    char path[64], cmd[192];
    snprintf(path, sizeof path, "%s/code.pgm", dir);
    FILE *f = fopen(path, "wb");
    if (!f)
        return NULL;
    fprintf(f, "P5\n%d %d\n255\n", side, side);
    for (int y = 0; y < side; y++)
        for (int x = 0; x < side; x++)
            fputc(qr_dark(qr, x / px - quiet, y / px - quiet) ? 0 : 255, f);
    fclose(f);
    /* --raw: the data alone; -Sdisable -Sqrcode.enable: QR only, so a
     * stray barcode reading cannot pass. */
    snprintf(cmd, sizeof cmd, "zbarimg -q --raw -Sdisable -Sqrcode.enable %s 2>%s/stderr", path,
             dir);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 8192, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n - 1, p)) > 0)
        n += r;
    int status = pclose(p);
    if (status != 0) {
        free(buf);
        return NULL;
    }
    if (n > 0 && buf[n - 1] == '\n') /* zbarimg ends each symbol with one */
        n--;
    buf[n] = '\0';
    *got_len = n;
    return buf;
}

/* Encode @p text, scan it back, compare; @p want_version 0: any. */
static void round_trip(const char *text, size_t len, int want_version, const char *what)
{
    struct qr_code qr;
    int rc = qr_encode(text, len, &qr);
    if (rc < 0) {
        ok(0, "%s: qr_encode failed (%d)", what, rc);
        return;
    }
    size_t got_len = 0;
    char *got = scan(&qr, &got_len);
    int same = got && got_len == len && memcmp(got, text, len) == 0;
    ok(same && (!want_version || qr.version == want_version) && qr.size == 17 + 4 * qr.version,
       "%s: version %d (%dx%d, mask %d) scans back as the %zu bytes put in", what, qr.version,
       qr.size, qr.size, qr.mask, len);
    if (!same)
        diag("zbarimg read %zu bytes: %.60s", got ? got_len : 0, got ? got : "(nothing)");
    free(got);
    qr_free(&qr);
}

/* Printable ASCII that is not all one character (so masks and blocks
 * differ from version to version). */
static char *filler(size_t len, unsigned seed)
{
    static const char set[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
                              "-._~:/?#[]@!$&'()*+,;=%";
    char *s = malloc(len + 1);
    for (size_t i = 0; i < len; i++) {
        seed = seed * 1103515245u + 12345u;
        s[i] = set[(seed >> 16) % (sizeof set - 1)];
    }
    s[len] = '\0';
    return s;
}

static void test_every_version(void)
{
    for (int v = 1; v <= 40; v++) {
        char *s = filler((size_t)capacity[v], (unsigned)v);
        char what[64];
        snprintf(what, sizeof what, "%d bytes (version %d full)", capacity[v], v);
        round_trip(s, (size_t)capacity[v], v, what);
        free(s);
    }
}

static void test_edges(void)
{
    struct qr_code qr;
    char *s = filler(QR_MAX_BYTES + 1, 7);
    int bad = 0;
    for (int v = 1; v < 40; v++) {
        if (qr_encode(s, (size_t)capacity[v] + 1, &qr) < 0 || qr.version != v + 1)
            bad++;
        qr_free(&qr);
    }
    is_int(bad, 0, "one byte over each version's capacity takes the next version");
    is_int(qr_encode(s, QR_MAX_BYTES + 1, &qr), -EMSGSIZE,
           "%d bytes are refused (-EMSGSIZE): more than version 40 holds", QR_MAX_BYTES + 1);
    ok(qr.modules == NULL && qr.size == 0, "and nothing is left to free");
    free(s);
    round_trip("", 0, 1, "empty input");
    round_trip("x", 1, 1, "one byte");
}

static void test_uris(void)
{
    const char *uri = "otpauth://totp/tlsbox:admin%40box.example?secret="
                      "JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP&issuer=tlsbox&algorithm=SHA1&"
                      "digits=6&period=30";
    round_trip(uri, strlen(uri), 0, "an otpauth URI as the account page makes");
    const char *utf8 = "Grüße aus Köln, ½ €";
    round_trip(utf8, strlen(utf8), 0, "UTF-8 text (marked by an ECI header)");
}

static void test_svg_path(void)
{
    struct qr_code qr;
    qr_encode("tlsbox", 6, &qr);
    char *path = qr_svg_path(&qr);
    /* Re-draw the path's rectangles and compare with the modules. */
    int size = qr.size, bad = 0, x, y, w, w2, n;
    unsigned char *drawn = calloc((size_t)size * (size_t)size, 1);
    for (const char *p = path; *p; p += n) {
        if (sscanf(p, "M%d %dh%dv1h-%dz%n", &x, &y, &w, &w2, &n) != 4 || w != w2 || x < 0 ||
            y < 0 || x + w > size || y >= size) {
            bad++;
            break;
        }
        for (int i = 0; i < w; i++)
            drawn[y * size + x + i]++;
    }
    for (y = 0; y < size; y++)
        for (x = 0; x < size; x++)
            bad += drawn[y * size + x] != (qr_dark(&qr, x, y) ? 1 : 0);
    is_int(bad, 0, "the SVG path covers exactly the dark modules, each once");
    ok(!qr_dark(&qr, -1, 0) && !qr_dark(&qr, 0, size), "outside the code is light");
    ok(qr_dark(&qr, 0, 0) && qr_dark(&qr, 6, 6) && !qr_dark(&qr, 1, 1) && qr_dark(&qr, 2, 2),
       "the top-left finder is where a scanner looks for it");
    free(drawn);
    free(path);
    qr_free(&qr);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        ok(0, "cannot make a temporary directory");
        return done_testing();
    }
    test_every_version();
    test_edges();
    test_uris();
    test_svg_path();
    char path[64];
    snprintf(path, sizeof path, "%s/code.pgm", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/stderr", dir);
    unlink(path);
    rmdir(dir);
    return done_testing();
}
