/* Runs a libFuzzer target without libFuzzer: feeds every file of a corpus
 * directory to LLVMFuzzerTestOneInput and prints TAP, so `make check` (and
 * the ASan/UBSan build) exercises the committed corpus.
 * Usage: TARGET [CORPUS_DIR]; without one, $FUZZ_CORPUS, else (under make
 * check) $top_srcdir/tests/fuzz/corpus/NAME for a program named NAME_replay. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int read_file(const char *path, uint8_t **data, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -errno;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    int err = ferror(f) ? -EIO : 0;
    fclose(f);
    if (!buf)
        return -ENOMEM;
    if (err) {
        free(buf);
        return err;
    }
    /* An exact-size copy, so a read past the input is an ASan error. */
    *data = malloc(n ? n : 1);
    if (!*data) {
        free(buf);
        return -ENOMEM;
    }
    memcpy(*data, buf, n);
    free(buf);
    *size = n;
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : getenv("FUZZ_CORPUS");
    char defdir[4096];
    const char *top = getenv("top_srcdir");
    if (!dir && top) {
        const char *base = strrchr(argv[0], '/');
        base = base ? base + 1 : argv[0];
        size_t bl = strlen(base);
        /* libtool may prefix "lt-"; the suffix names the program kind. */
        if (strncmp(base, "lt-", 3) == 0) {
            base += 3;
            bl -= 3;
        }
        if (bl > 7 && strcmp(base + bl - 7, "_replay") == 0) {
            snprintf(defdir, sizeof(defdir), "%s/tests/fuzz/corpus/%.*s", top, (int)(bl - 7), base);
            dir = defdir;
        }
    }
    if (!dir) {
        fprintf(stderr, "usage: %s CORPUS_DIR (or FUZZ_CORPUS=DIR)\n", argv[0]);
        return 2;
    }
    DIR *d = opendir(dir);
    if (!d) {
        printf("not ok 1 - open corpus %s: %s\n1..1\n", dir, strerror(errno));
        return 1;
    }
    char **names = NULL;
    size_t nn = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char **nv = realloc(names, (nn + 1) * sizeof(*names));
        if (!nv || !(nv[nn] = strdup(de->d_name))) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        names = nv;
        nn++;
    }
    closedir(d);
    qsort(names, nn, sizeof(*names), name_cmp);

    int failed = 0, t = 0;
    for (size_t i = 0; i < nn; i++) {
        uint8_t *data = NULL;
        size_t size = 0;
        size_t plen = strlen(dir) + strlen(names[i]) + 2;
        char *path = malloc(plen);
        if (!path) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        snprintf(path, plen, "%s/%s", dir, names[i]);
        int rc = read_file(path, &data, &size);
        free(path);
        if (rc < 0) {
            printf("not ok %d - read %s: %s\n", ++t, names[i], strerror(-rc));
            failed++;
        } else {
            /* A crash ends the program: the test harness reports it. */
            LLVMFuzzerTestOneInput(data, size);
            printf("ok %d - %s (%zu bytes)\n", ++t, names[i], size);
        }
        free(data);
        free(names[i]);
    }
    free(names);
    if (t == 0) {
        printf("not ok 1 - corpus %s is empty\n", dir);
        t = 1;
        failed = 1;
    }
    printf("1..%d\n# %d inputs, %d failed\n", t, t, failed);
    return failed ? 1 : 0;
}
