/* The metrics registry.
 *
 * Registration, lookup and rendering take metrics_lock; updates never do.
 * Every counter, gauge and histogram has METRICS_SLOTS cache-line-sized
 * slots; a thread picks one slot on its first update (round robin, kept in
 * a thread_local) and only does relaxed atomic adds on it, so the site
 * workers (one per core) never share a cache line.  A read sums the slots.
 *
 * Semantics:
 *  - counter: metrics_add with delta >= 0 (negative deltas are ignored);
 *    metrics_set is ignored.
 *  - gauge: value = base + sum(slots).  metrics_add adds to the thread's
 *    slot; metrics_set(v) stores base = v - sum(slots), so the gauge reads
 *    exactly v afterwards.  A gauge that is only ever set therefore costs one
 *    atomic store plus a read of the (zero) slots.  An add racing with a set
 *    lands either before or after it; both outcomes are a valid order.
 *  - histogram: per slot, non-cumulative bucket counts (the last one is +Inf)
 *    and the sum of observations as a double updated by compare-and-swap.
 *    NaN observations are dropped.  The count is the sum of the buckets, so
 *    _count always equals the +Inf bucket.
 *  - Updates on NULL (a failed registration) or of the wrong kind are no-ops.
 *
 * Names: see core/metrics_name.c (the kit's mock host checks them with the
 * same code).  The registry is keyed by the full string as given; series of
 * one family (same base name) share one type and one HELP (the first
 * registration's) and are rendered together. */
#include "core/metrics.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/metrics_name.h"
#include "core/xalloc.h"

#define METRICS_SLOTS 16
#define METRICS_CACHE_LINE 64

struct metrics_slot {
    _Atomic int64_t v;
    char pad[METRICS_CACHE_LINE - sizeof(int64_t)];
};

/* One histogram slot: nbuckets + 1 counts, then the sum's bits; padded to
 * whole cache lines by the allocation. */
struct metrics_hslot {
    _Atomic uint64_t sum_bits;
    _Atomic uint64_t counts[];
};

struct metrics_family;

struct tlsbox_metric {
    char *name;   /* full series name, the registry key */
    char *labels; /* inside the braces, or NULL */
    enum tlsbox_metric_type type;
    struct tlsbox_plugin *owner;
    struct metrics_family *family;
    struct tlsbox_metric *next_in_family;
    /* counter and gauge */
    _Atomic int64_t base; /* gauge: what metrics_set stored minus the slots then */
    struct metrics_slot *slots;
    /* histogram */
    double *bounds; /* upper bounds, ascending, finite */
    size_t nbounds;
    size_t hslot_size; /* bytes per histogram slot, a multiple of the cache line */
    unsigned char *hslots;
};

struct metrics_family {
    char *name;
    char *help;
    enum tlsbox_metric_type type;
    struct tlsbox_metric *first, *last;
    struct metrics_family *next;
};

static pthread_mutex_t metrics_lock = PTHREAD_MUTEX_INITIALIZER;
static struct metrics_family *metrics_families, *metrics_families_last;
static struct tlsbox_metric *metrics_retired; /* unlinked series, freed at exit */
static _Atomic unsigned metrics_next_slot;
static _Thread_local int metrics_tl_slot = -1;

static inline unsigned metrics_slot(void)
{
    if (metrics_tl_slot < 0)
        metrics_tl_slot =
            (int)(atomic_fetch_add_explicit(&metrics_next_slot, 1, memory_order_relaxed) %
                  METRICS_SLOTS);
    return (unsigned)metrics_tl_slot;
}

static void *aligned_zalloc(size_t n)
{
    void *p = NULL;
    n = (n + METRICS_CACHE_LINE - 1) / METRICS_CACHE_LINE * METRICS_CACHE_LINE;
    if (posix_memalign(&p, METRICS_CACHE_LINE, n) != 0)
        p = xmalloc(n); /* never reached in practice; alignment is only for speed */
    memset(p, 0, n);
    return p;
}

static struct metrics_family *family_find_locked(const char *name)
{
    for (struct metrics_family *f = metrics_families; f; f = f->next)
        if (strcmp(f->name, name) == 0)
            return f;
    return NULL;
}

static struct tlsbox_metric *series_find_locked(struct metrics_family *f, const char *full)
{
    for (struct tlsbox_metric *m = f ? f->first : NULL; m; m = m->next_in_family)
        if (strcmp(m->name, full) == 0)
            return m;
    return NULL;
}

struct tlsbox_metric *metrics_register(struct tlsbox_plugin *owner, const char *name,
                                       enum tlsbox_metric_type type, const char *help,
                                       const double *buckets, size_t nbuckets)
{
    char *fam_name = NULL, *labels = NULL, *why = NULL;
    struct tlsbox_metric *m = NULL;
    if (!metrics_name_check(name, type, &buckets, &nbuckets, &fam_name, &labels, &why)) {
        log_warn("%s", why);
        free(why);
        return NULL;
    }

    pthread_mutex_lock(&metrics_lock);
    struct metrics_family *f = family_find_locked(fam_name);
    if (f && f->type != type) {
        log_warn(METRICS_CLASH_FMT, name, f->name);
        goto unlock;
    }
    m = series_find_locked(f, name);
    if (m)
        goto unlock;
    if (!f) {
        f = xcalloc(1, sizeof(*f));
        f->name = fam_name;
        fam_name = NULL;
        f->type = type;
        if (metrics_families_last)
            metrics_families_last->next = f;
        else
            metrics_families = f;
        metrics_families_last = f;
    }
    if (!f->help && help && *help)
        f->help = xstrdup(help);

    m = xcalloc(1, sizeof(*m));
    m->name = xstrdup(name);
    m->labels = labels;
    labels = NULL;
    m->type = type;
    m->owner = owner;
    m->family = f;
    atomic_init(&m->base, 0);
    if (type == TLSBOX_METRIC_HISTOGRAM) {
        m->nbounds = nbuckets;
        m->bounds = xmalloc(nbuckets * sizeof(double));
        memcpy(m->bounds, buckets, nbuckets * sizeof(double));
        size_t sz = sizeof(struct metrics_hslot) + (nbuckets + 1) * sizeof(uint64_t);
        m->hslot_size = (sz + METRICS_CACHE_LINE - 1) / METRICS_CACHE_LINE * METRICS_CACHE_LINE;
        m->hslots = aligned_zalloc(m->hslot_size * METRICS_SLOTS);
    } else {
        m->slots = aligned_zalloc(sizeof(struct metrics_slot) * METRICS_SLOTS);
    }
    if (f->last)
        f->last->next_in_family = m;
    else
        f->first = m;
    f->last = m;
unlock:
    pthread_mutex_unlock(&metrics_lock);
    free(fam_name);
    free(labels);
    return m;
}

struct tlsbox_metric *metrics_find(const char *name)
{
    char *fam = NULL, *labels = NULL, *why = NULL;
    const double *no_buckets = NULL;
    size_t n = 0;
    struct tlsbox_metric *m = NULL;
    if (!metrics_name_check(name, TLSBOX_METRIC_COUNTER, &no_buckets, &n, &fam, &labels, &why)) {
        free(why);
        return NULL;
    }
    pthread_mutex_lock(&metrics_lock);
    m = series_find_locked(family_find_locked(fam), name);
    pthread_mutex_unlock(&metrics_lock);
    free(fam);
    free(labels);
    return m;
}

void metrics_retire(struct tlsbox_metric *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&metrics_lock);
    struct metrics_family *f = m->family;
    struct tlsbox_metric **pp = &f->first, *prev = NULL;
    while (*pp && *pp != m) {
        prev = *pp;
        pp = &(*pp)->next_in_family;
    }
    if (*pp) {
        *pp = m->next_in_family;
        if (f->last == m)
            f->last = prev;
        m->next_in_family = metrics_retired;
        metrics_retired = m;
    }
    pthread_mutex_unlock(&metrics_lock);
}

void metrics_retire_owned(struct tlsbox_plugin *owner, struct tlsbox_metric *m)
{
    /* The owner is set at registration and never changes. */
    if (m && owner && m->owner == owner)
        metrics_retire(m);
}

/* ---- updates (lock-free) --------------------------------------------- */

static int64_t slots_sum(const struct tlsbox_metric *m)
{
    int64_t s = 0;
    for (int i = 0; i < METRICS_SLOTS; i++)
        s += atomic_load_explicit(&m->slots[i].v, memory_order_relaxed);
    return s;
}

void metrics_add(struct tlsbox_metric *m, int64_t delta)
{
    if (!m || m->type == TLSBOX_METRIC_HISTOGRAM)
        return;
    if (m->type == TLSBOX_METRIC_COUNTER && delta < 0)
        return;
    atomic_fetch_add_explicit(&m->slots[metrics_slot()].v, delta, memory_order_relaxed);
}

void metrics_set(struct tlsbox_metric *m, int64_t value)
{
    if (!m || m->type != TLSBOX_METRIC_GAUGE)
        return;
    atomic_store_explicit(&m->base, value - slots_sum(m), memory_order_relaxed);
}

static struct metrics_hslot *hslot(const struct tlsbox_metric *m, unsigned i)
{
    return (struct metrics_hslot *)(m->hslots + (size_t)i * m->hslot_size);
}

static double bits_to_double(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof(d));
    return d;
}

static uint64_t double_to_bits(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof(b));
    return b;
}

void metrics_observe(struct tlsbox_metric *m, double value)
{
    if (!m || m->type != TLSBOX_METRIC_HISTOGRAM || isnan(value))
        return;
    size_t i = 0;
    while (i < m->nbounds && value > m->bounds[i])
        i++;
    struct metrics_hslot *s = hslot(m, metrics_slot());
    atomic_fetch_add_explicit(&s->counts[i], 1, memory_order_relaxed);
    uint64_t old = atomic_load_explicit(&s->sum_bits, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&s->sum_bits, &old,
                                                  double_to_bits(bits_to_double(old) + value),
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

/* ---- reads ------------------------------------------------------------ */

/* Non-cumulative counts per bucket (nbounds + 1 entries) summed over slots. */
static void hist_read(const struct tlsbox_metric *m, uint64_t *counts, double *sum)
{
    memset(counts, 0, (m->nbounds + 1) * sizeof(*counts));
    *sum = 0;
    for (unsigned s = 0; s < METRICS_SLOTS; s++) {
        struct metrics_hslot *h = hslot(m, s);
        for (size_t i = 0; i <= m->nbounds; i++)
            counts[i] += atomic_load_explicit(&h->counts[i], memory_order_relaxed);
        *sum += bits_to_double(atomic_load_explicit(&h->sum_bits, memory_order_relaxed));
    }
}

int64_t metrics_value(const struct tlsbox_metric *m)
{
    if (!m)
        return 0;
    if (m->type == TLSBOX_METRIC_HISTOGRAM) {
        uint64_t n = 0;
        for (unsigned s = 0; s < METRICS_SLOTS; s++)
            for (size_t i = 0; i <= m->nbounds; i++)
                n += atomic_load_explicit(&hslot(m, s)->counts[i], memory_order_relaxed);
        return (int64_t)n;
    }
    int64_t base =
        m->type == TLSBOX_METRIC_GAUGE ? atomic_load_explicit(&m->base, memory_order_relaxed) : 0;
    return base + slots_sum(m);
}

/* ---- rendering --------------------------------------------------------- */

struct strbuf {
    char *p;
    size_t len, cap;
};

static void sb_add(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct strbuf *b, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->p ? b->p + b->len : NULL, room, fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        if ((size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        b->cap = (b->cap + (size_t)n + 1) * 2;
        b->p = xrealloc(b->p, b->cap);
    }
}

/* Integers plainly, else the shortest "%g" text that reads back as @p d
 * (Go's ParseFloat on the scraper side reads either); Prometheus spells infinities
 * "+Inf"/"-Inf" and NaN "NaN". */
static void fmt_double(char *out, size_t n, double d)
{
    if (isnan(d)) {
        snprintf(out, n, "NaN");
        return;
    }
    if (isinf(d)) {
        snprintf(out, n, d > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (d == floor(d) && fabs(d) < 1e15) { /* "10", never "1e+01" */
        snprintf(out, n, "%.0f", d);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, d);
        if (strtod(out, NULL) == d)
            return;
    }
}

/* HELP text escapes backslash and newline. */
static void sb_add_help(struct strbuf *b, const char *help)
{
    for (const char *p = help; *p; p++) {
        if (*p == '\\')
            sb_add(b, "\\\\");
        else if (*p == '\n')
            sb_add(b, "\\n");
        else
            sb_add(b, "%c", *p);
    }
}

static const char *type_name(enum tlsbox_metric_type t)
{
    switch (t) {
    case TLSBOX_METRIC_COUNTER:
        return "counter";
    case TLSBOX_METRIC_GAUGE:
        return "gauge";
    default:
        return "histogram";
    }
}

static void render_histogram(struct strbuf *b, const struct tlsbox_metric *m)
{
    const char *fam = m->family->name;
    const char *lab = m->labels ? m->labels : "";
    const char *sep = m->labels ? "," : "";
    uint64_t *counts = xmalloc((m->nbounds + 1) * sizeof(*counts));
    double sum;
    char num[64];
    hist_read(m, counts, &sum);
    uint64_t cum = 0;
    for (size_t i = 0; i <= m->nbounds; i++) {
        cum += counts[i];
        fmt_double(num, sizeof(num), i < m->nbounds ? m->bounds[i] : INFINITY);
        sb_add(b, "%s_bucket{%s%sle=\"%s\"} %llu\n", fam, lab, sep, num, (unsigned long long)cum);
    }
    fmt_double(num, sizeof(num), sum);
    if (m->labels) {
        sb_add(b, "%s_sum{%s} %s\n", fam, lab, num);
        sb_add(b, "%s_count{%s} %llu\n", fam, lab, (unsigned long long)cum);
    } else {
        sb_add(b, "%s_sum %s\n", fam, num);
        sb_add(b, "%s_count %llu\n", fam, (unsigned long long)cum);
    }
    free(counts);
}

char *metrics_render_prometheus(void)
{
    struct strbuf b = {0};
    sb_add(&b, "%s", "");
    pthread_mutex_lock(&metrics_lock);
    for (struct metrics_family *f = metrics_families; f; f = f->next) {
        if (f->help) {
            sb_add(&b, "# HELP %s ", f->name);
            sb_add_help(&b, f->help);
            sb_add(&b, "\n");
        }
        sb_add(&b, "# TYPE %s %s\n", f->name, type_name(f->type));
        for (struct tlsbox_metric *m = f->first; m; m = m->next_in_family) {
            if (m->type == TLSBOX_METRIC_HISTOGRAM)
                render_histogram(&b, m);
            else
                sb_add(&b, "%s %lld\n", m->name, (long long)metrics_value(m));
        }
    }
    pthread_mutex_unlock(&metrics_lock);
    return b.p;
}

json_t *metrics_json(void)
{
    json_t *o = json_object();
    pthread_mutex_lock(&metrics_lock);
    for (struct metrics_family *f = metrics_families; f; f = f->next) {
        for (struct tlsbox_metric *m = f->first; m; m = m->next_in_family) {
            if (m->type != TLSBOX_METRIC_HISTOGRAM) {
                json_object_set_new(o, m->name, json_integer(metrics_value(m)));
                continue;
            }
            /* Buckets are cumulative like Prometheus' (finite bounds only;
             * "count" is the +Inf bucket). */
            uint64_t *counts = xmalloc((m->nbounds + 1) * sizeof(*counts));
            double sum;
            hist_read(m, counts, &sum);
            json_t *bk = json_array();
            uint64_t cum = 0;
            for (size_t i = 0; i < m->nbounds; i++) {
                cum += counts[i];
                json_array_append_new(bk, json_pack("[f,I]", m->bounds[i], (json_int_t)cum));
            }
            cum += counts[m->nbounds];
            json_object_set_new(o, m->name,
                                json_pack("{s:I,s:f,s:o}", "count", (json_int_t)cum, "sum",
                                          isfinite(sum) ? sum : 0.0, "buckets", bk));
            free(counts);
        }
    }
    pthread_mutex_unlock(&metrics_lock);
    return o;
}

static void series_free_list(struct tlsbox_metric *m)
{
    while (m) {
        struct tlsbox_metric *mnext = m->next_in_family;
        free(m->name);
        free(m->labels);
        free(m->slots);
        free(m->bounds);
        free(m->hslots);
        free(m);
        m = mnext;
    }
}

void metrics_free_all(void)
{
    pthread_mutex_lock(&metrics_lock);
    series_free_list(metrics_retired);
    metrics_retired = NULL;
    struct metrics_family *f = metrics_families;
    while (f) {
        struct metrics_family *fnext = f->next;
        series_free_list(f->first);
        free(f->name);
        free(f->help);
        free(f);
        f = fnext;
    }
    metrics_families = metrics_families_last = NULL;
    pthread_mutex_unlock(&metrics_lock);
}
