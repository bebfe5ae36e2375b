/* Metric series names, types and buckets (see core/metrics_name.h).
 *
 * Names: [a-zA-Z_:][a-zA-Z0-9_:]* optionally followed by
 * {label="value",...}; label names [a-zA-Z_][a-zA-Z0-9_]* not starting with
 * "__"; values escape \\, \" and \n.  A histogram may not have the label
 * "le" (the renderer adds it). */
#include "core/metrics_name.h"

#include <math.h>
#include <string.h>

#include "core/xalloc.h"

#define METRICS_NAME_MAX 512
#define METRICS_BUCKETS_MAX 64

static const double metrics_default_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                 0.1,    0.25,  0.5,    1,     2.5,  5,     10};

static bool name_start(char c, bool colon)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}

static bool name_char(char c, bool colon)
{
    return name_start(c, colon) || (c >= '0' && c <= '9');
}

/* Length of the family name at the start of @p full (0: none). */
static size_t family_len(const char *full)
{
    size_t i = 0;
    if (!name_start(full[0], true))
        return 0;
    while (full[++i] && name_char(full[i], true))
        ;
    return i;
}

/* Whether @p full from @p i (just past the '{') to its last byte, '}', is a
 * label set. */
static bool labels_ok(const char *full, size_t i, size_t n, bool histogram)
{
    for (;;) {
        /* label name */
        size_t ln = i;
        if (i >= n || !name_start(full[i], false))
            return false;
        while (i < n && name_char(full[i], false))
            i++;
        if (i - ln >= 2 && full[ln] == '_' && full[ln + 1] == '_')
            return false;
        if (histogram && i - ln == 2 && strncmp(full + ln, "le", 2) == 0)
            return false;
        if (i + 1 >= n || full[i] != '=' || full[i + 1] != '"')
            return false;
        i += 2;
        /* label value */
        while (i < n && full[i] != '"') {
            if (full[i] == '\\') {
                if (i + 1 >= n || !strchr("\\\"n", full[i + 1]))
                    return false;
                i++;
            } else if ((unsigned char)full[i] < ' ') {
                return false;
            }
            i++;
        }
        if (i >= n)
            return false;
        i++; /* closing quote */
        if (i == n - 1)
            return true; /* at the closing brace */
        if (full[i] != ',')
            return false;
        i++;
    }
}

/* Split @p full into its family name and label text; false on a bad name. */
static bool parse_name(const char *full, bool histogram, char **family, char **labels)
{
    size_t n = strlen(full), fam = family_len(full);
    if (n == 0 || n > METRICS_NAME_MAX || fam == 0)
        return false;
    if (fam < n &&
        (full[fam] != '{' || full[n - 1] != '}' || !labels_ok(full, fam + 1, n, histogram)))
        return false;
    *family = xstrndup(full, fam);
    *labels = fam < n ? xstrndup(full + fam + 1, n - 2 - fam) : NULL;
    return true;
}

static bool buckets_ok(const double *b, size_t n)
{
    if (n == 0 || n > METRICS_BUCKETS_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(b[i]) || (i > 0 && b[i] <= b[i - 1]))
            return false;
    }
    return true;
}

bool metrics_name_check(const char *name, enum tlsbox_metric_type type, const double **buckets,
                        size_t *nbuckets, char **family, char **labels, char **why)
{
    *family = *labels = *why = NULL;
    if (!name || (int)type < 0 || type >= TLSBOX_METRIC_TYPE_MAX) {
        *why = tlsbox_xasprintf("metrics: bad registration of \"%s\"", name ? name : "(null)");
        return false;
    }
    if (!parse_name(name, type == TLSBOX_METRIC_HISTOGRAM, family, labels)) {
        *why = tlsbox_xasprintf("metrics: \"%s\" is not a valid series name", name);
        return false;
    }
    if (type != TLSBOX_METRIC_HISTOGRAM)
        return true;
    if (!*buckets) {
        *buckets = metrics_default_buckets;
        *nbuckets = sizeof(metrics_default_buckets) / sizeof(metrics_default_buckets[0]);
    }
    if (buckets_ok(*buckets, *nbuckets))
        return true;
    *why = tlsbox_xasprintf("metrics: \"%s\": buckets must be 1..%d finite ascending bounds", name,
                            METRICS_BUCKETS_MAX);
    free(*family);
    free(*labels);
    *family = *labels = NULL;
    return false;
}
