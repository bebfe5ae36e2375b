/* The mock host's events (queued, delivered by the test), jobs (run at once)
 * and timers (on a virtual clock the test moves). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/events_name.h"
#include "mock.h"

struct sub {
    int64_t id;
    char *pattern;
    tlsbox_event_fn fn;
    void *arg;
};
struct event {
    char *name, *data;
    int from_plugin;
    int64_t max_sub_id; /* as the core: subscriptions made after the publish do not see it */
};
struct timer {
    int64_t id;
    char *name;
    uint64_t due, period;
    tlsbox_job_fn fn;
    void *arg;
};
/* What a job function sees as its handle. */
struct tlsbox_job {
    int cancelled;
};

static struct sub *subs;
static size_t nsubs;
static struct event *queue, *published;
static size_t nqueue, npublished;
static struct timer *timers;
static size_t ntimers;
static int64_t next_id = 1;
static int jobs_run;
static uint64_t now_ms;

/* ---- events --------------------------------------------------------------- */

static int matches(const char *pattern, const char *event)
{
    size_t n = strlen(pattern);
    if (n && pattern[n - 1] == '*')
        return strncmp(pattern, event, n - 1) == 0;
    return strcmp(pattern, event) == 0;
}

/* Whether subscription @p id is there still and takes @p event: then its
 * callback in *fn and *arg. */
static bool sub_for(int64_t id, const char *event, tlsbox_event_fn *fn, void **arg)
{
    bool found = false;
    pthread_mutex_lock(&tlsbox_mockp.lock);
    for (size_t i = 0; i < nsubs; i++)
        if (subs[i].id == id) {
            found = matches(subs[i].pattern, event);
            *fn = subs[i].fn;
            *arg = subs[i].arg;
            break;
        }
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return found;
}

int64_t tlsbox_mockp_event_subscribe(struct tlsbox_plugin *self, const char *event,
                                     tlsbox_event_fn fn, void *arg)
{
    (void)self;
    if (!fn || !events_name_ok(event, true))
        return -EINVAL;
    pthread_mutex_lock(&tlsbox_mockp.lock);
    subs = tlsbox_xrealloc(subs, (nsubs + 1) * sizeof *subs);
    int64_t id = next_id++;
    subs[nsubs++] = (struct sub){id, tlsbox_xstrdup(event), fn, arg};
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return id;
}

int tlsbox_mockp_event_unsubscribe(struct tlsbox_plugin *self, int64_t id)
{
    (void)self;
    int rc = -ENOENT;
    pthread_mutex_lock(&tlsbox_mockp.lock);
    for (size_t i = 0; i < nsubs; i++)
        if (subs[i].id == id) {
            free(subs[i].pattern);
            subs[i] = subs[--nsubs];
            rc = 0;
            break;
        }
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return rc;
}

static void push(struct event **list, size_t *n, const char *event, const char *data, int mine)
{
    *list = tlsbox_xrealloc(*list, (*n + 1) * sizeof **list);
    (*list)[(*n)++] = (struct event){tlsbox_xstrdup(event), data ? tlsbox_xstrdup(data) : NULL,
                                     mine, next_id - 1};
}

int tlsbox_mockp_event_publish(struct tlsbox_plugin *self, const char *event, const char *data)
{
    (void)self;
    if (!events_name_ok(event, false))
        return -EINVAL;
    pthread_mutex_lock(&tlsbox_mockp.lock);
    push(&queue, &nqueue, event, data, 1);
    push(&published, &npublished, event, data, 1);
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return 0;
}

int tlsbox_mock_publish(const char *event, const char *data)
{
    if (!events_name_ok(event, false))
        return -EINVAL;
    pthread_mutex_lock(&tlsbox_mockp.lock);
    push(&queue, &nqueue, event, data, 0);
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return 0;
}

int tlsbox_mock_events_run(void)
{
    int delivered = 0;
    for (;;) {
        pthread_mutex_lock(&tlsbox_mockp.lock);
        if (!nqueue) {
            pthread_mutex_unlock(&tlsbox_mockp.lock);
            return delivered;
        }
        struct event e = queue[0];
        memmove(queue, queue + 1, --nqueue * sizeof *queue);
        /* The subscriptions made before the publish (ids only grow), by id:
         * a callback runs without the lock (it may subscribe, publish or
         * unsubscribe), and one unsubscribed meanwhile is never called
         * again (host.h). */
        size_t n = 0;
        int64_t *ids = tlsbox_xmalloc((nsubs ? nsubs : 1) * sizeof *ids);
        for (size_t i = 0; i < nsubs; i++)
            if (subs[i].id <= e.max_sub_id)
                ids[n++] = subs[i].id;
        pthread_mutex_unlock(&tlsbox_mockp.lock);
        for (size_t i = 0; i < n; i++) {
            tlsbox_event_fn fn;
            void *arg;
            if (sub_for(ids[i], e.name, &fn, &arg)) {
                fn(arg, e.name, e.data);
                delivered++;
            }
        }
        free(ids);
        free(e.name);
        free(e.data);
    }
}

int tlsbox_mock_published(const char *event)
{
    int n = 0;
    pthread_mutex_lock(&tlsbox_mockp.lock);
    for (size_t i = 0; i < npublished; i++)
        n += strcmp(published[i].name, event) == 0;
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return n;
}

const char *tlsbox_mock_event_data(const char *event)
{
    const char *d = NULL;
    pthread_mutex_lock(&tlsbox_mockp.lock);
    for (size_t i = 0; i < npublished; i++)
        if (strcmp(published[i].name, event) == 0)
            d = published[i].data;
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return d;
}

/* ---- jobs ------------------------------------------------------------------- */

int64_t tlsbox_mockp_job_submit(struct tlsbox_plugin *self, const char *name, tlsbox_job_fn fn,
                                void *arg, void (*free_arg)(void *))
{
    (void)self, (void)name;
    if (!fn)
        return -EINVAL;
    struct tlsbox_job job = {0};
    fn(arg, &job);
    if (free_arg)
        free_arg(arg);
    pthread_mutex_lock(&tlsbox_mockp.lock);
    jobs_run++;
    int64_t id = next_id++;
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return id;
}

int tlsbox_mockp_job_cancel(struct tlsbox_plugin *self, int64_t id)
{
    (void)self, (void)id;
    return -ENOENT; /* every job has already run */
}

bool tlsbox_mockp_job_cancelled(struct tlsbox_job *job)
{
    return job && job->cancelled;
}

bool tlsbox_mockp_job_sleep(struct tlsbox_job *job, uint64_t ms)
{
    (void)ms; /* time is the test's: a job never waits */
    return tlsbox_mockp_job_cancelled(job);
}

int tlsbox_mock_jobs_run(void)
{
    return jobs_run;
}

/* ---- timers ----------------------------------------------------------------- */

/* The longest time the core takes (core/timers.c: TIMERS_MAX_MS). */
#define MOCK_TIMER_MAX_MS (366ULL * 24 * 3600 * 1000)

int64_t tlsbox_mockp_timer_add(struct tlsbox_plugin *self, const char *name, uint64_t first_ms,
                               uint64_t period_ms, uint64_t jitter_ms, tlsbox_job_fn fn, void *arg)
{
    (void)self; /* no jitter: tests want exact times */
    if (!fn || first_ms > MOCK_TIMER_MAX_MS || period_ms > MOCK_TIMER_MAX_MS ||
        jitter_ms > MOCK_TIMER_MAX_MS)
        return -EINVAL;
    pthread_mutex_lock(&tlsbox_mockp.lock);
    timers = tlsbox_xrealloc(timers, (ntimers + 1) * sizeof *timers);
    int64_t id = next_id++;
    timers[ntimers++] = (struct timer){
        id, tlsbox_xstrdup(name ? name : "timer"), now_ms + first_ms, period_ms, fn, arg};
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return id;
}

int tlsbox_mockp_timer_cancel(struct tlsbox_plugin *self, int64_t id)
{
    (void)self;
    int rc = -ENOENT;
    pthread_mutex_lock(&tlsbox_mockp.lock);
    for (size_t i = 0; i < ntimers; i++)
        if (timers[i].id == id) {
            free(timers[i].name);
            timers[i] = timers[--ntimers];
            rc = 0;
            break;
        }
    pthread_mutex_unlock(&tlsbox_mockp.lock);
    return rc;
}

int tlsbox_mock_timers(void)
{
    return (int)ntimers;
}

uint64_t tlsbox_mock_now(void)
{
    return now_ms;
}

/* The timer due first at or before @p until, or NULL.  tlsbox_mockp.lock held. */
static struct timer *next_due(uint64_t until)
{
    struct timer *t = NULL;
    for (size_t i = 0; i < ntimers; i++)
        if (timers[i].due <= until && (!t || timers[i].due < t->due))
            t = &timers[i];
    return t;
}

int tlsbox_mock_advance(uint64_t ms)
{
    uint64_t until = now_ms + ms;
    int fired = 0;
    for (;;) {
        pthread_mutex_lock(&tlsbox_mockp.lock);
        struct timer *t = next_due(until);
        if (!t) {
            now_ms = until;
            pthread_mutex_unlock(&tlsbox_mockp.lock);
            return fired;
        }
        now_ms = t->due;
        struct timer run = *t;
        if (t->period)
            t->due += t->period;
        else
            t->id = 0; /* a one-shot: removed below, after it ran */
        pthread_mutex_unlock(&tlsbox_mockp.lock);
        struct tlsbox_job job = {0};
        run.fn(run.arg, &job);
        fired++;
        jobs_run++;
        if (!run.period)
            tlsbox_mockp_timer_cancel(NULL, 0);
    }
}

void tlsbox_mockp_events_reset(void)
{
    for (size_t i = 0; i < nsubs; i++)
        free(subs[i].pattern);
    for (size_t i = 0; i < nqueue; i++) {
        free(queue[i].name);
        free(queue[i].data);
    }
    for (size_t i = 0; i < npublished; i++) {
        free(published[i].name);
        free(published[i].data);
    }
    for (size_t i = 0; i < ntimers; i++)
        free(timers[i].name);
    free(subs);
    free(queue);
    free(published);
    free(timers);
    subs = NULL;
    queue = published = NULL;
    timers = NULL;
    nsubs = nqueue = npublished = ntimers = 0;
    jobs_run = 0;
    now_ms = 0;
}
