/* In-process publish/subscribe: a FIFO of copied events drained by one
 * dispatcher thread.
 *
 * Unsubscribe must guarantee that the callback is not running when it
 * returns (a plugin frees its state right after), so each subscription
 * carries an in-flight flag set by the dispatcher around the call; an
 * unsubscriber on another thread waits on a condition variable until it
 * drops.  Called from the callback itself, unsubscribe only marks the
 * subscription and the dispatcher frees it after the call returns. */
#include "core/events.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/events_name.h"
#include "core/log.h"
#include "core/xalloc.h"

/* Publishing never blocks, so the queue is bounded instead: a flood (a bug
 * somewhere) costs dropped events and a warning, not the machine's memory. */
#define EVENTS_QUEUE_MAX 8192

struct event {
    struct event *next;
    uint64_t seq;
    int64_t max_sub_id; /* subscriptions made after the publish do not see it */
    char *name;
    char *data;
};

struct subscription {
    struct subscription *next;
    int64_t id;
    struct tlsbox_plugin *owner;
    char *pattern; /* without the trailing '*' when prefix */
    size_t pattern_len;
    bool prefix;
    tlsbox_event_fn fn;
    void *arg;
    bool in_flight; /* the dispatcher is calling fn right now */
    bool removed;   /* unsubscribed: skipped; the unsubscriber frees it */
    bool orphaned;  /* unsubscribed from its own callback: the dispatcher frees it */
};

static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_work = PTHREAD_COND_INITIALIZER; /* queue grew or stop */
static pthread_cond_t ev_idle = PTHREAD_COND_INITIALIZER; /* a call ended / an event done */
static struct event *ev_head, *ev_tail;
static int ev_queued;
static uint64_t ev_published, ev_delivered; /* sequence numbers */
static struct subscription *ev_subs;
static int64_t ev_next_id = 1;
static bool ev_running, ev_stopping, ev_stopped;
static pthread_t ev_thread;
static bool ev_warned_full;

static bool events_on_dispatcher(void)
{
    return ev_running && pthread_equal(pthread_self(), ev_thread);
}

static bool sub_matches(const struct subscription *s, const char *name)
{
    if (s->prefix)
        return strncmp(name, s->pattern, s->pattern_len) == 0;
    return strcmp(name, s->pattern) == 0;
}

static void sub_unlink_free(struct subscription *s)
{
    for (struct subscription **pp = &ev_subs; *pp; pp = &(*pp)->next) {
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    }
    free(s->pattern);
    free(s);
}

/* Call every matching subscription; ev_lock held on entry and exit, dropped
 * around each callback so callbacks may call back into events_*. */
static void events_deliver(struct event *e)
{
    struct subscription *s = ev_subs;
    while (s) {
        if (s->removed || s->id > e->max_sub_id || !sub_matches(s, e->name)) {
            s = s->next;
            continue;
        }
        s->in_flight = true;
        pthread_mutex_unlock(&ev_lock);
        s->fn(s->arg, e->name, e->data);
        pthread_mutex_lock(&ev_lock);
        s->in_flight = false;
        /* s stayed linked while in flight, so s->next is valid now. */
        struct subscription *next = s->next;
        if (s->orphaned)
            sub_unlink_free(s);
        pthread_cond_broadcast(&ev_idle);
        s = next;
    }
}

static void *events_main(void *unused)
{
    pthread_mutex_lock(&ev_lock);
    for (;;) {
        while (!ev_head && !ev_stopping)
            pthread_cond_wait(&ev_work, &ev_lock);
        if (!ev_head)
            break; /* stopping and drained */
        struct event *e = ev_head;
        ev_head = e->next;
        if (!ev_head)
            ev_tail = NULL;
        ev_queued--;
        events_deliver(e);
        ev_delivered = e->seq;
        pthread_cond_broadcast(&ev_idle);
        free(e->name);
        free(e->data);
        free(e);
    }
    pthread_mutex_unlock(&ev_lock);
    return NULL;
}

int events_start(void)
{
    int rc = 0;
    pthread_mutex_lock(&ev_lock);
    if (ev_running) {
        rc = -EALREADY;
        goto out;
    }
    ev_stopping = false;
    ev_stopped = false;
    rc = -pthread_create(&ev_thread, NULL, events_main, NULL);
    if (rc < 0) {
        log_err("events: cannot start the dispatcher thread: %s", strerror(-rc));
        goto out;
    }
    pthread_setname_np(ev_thread, "tlsbox-events");
    ev_running = true;
out:
    pthread_mutex_unlock(&ev_lock);
    return rc;
}

void events_stop(void)
{
    pthread_mutex_lock(&ev_lock);
    if (!ev_running || events_on_dispatcher()) {
        pthread_mutex_unlock(&ev_lock);
        return;
    }
    ev_stopping = true;
    pthread_cond_broadcast(&ev_work);
    pthread_mutex_unlock(&ev_lock);
    pthread_join(ev_thread, NULL);

    pthread_mutex_lock(&ev_lock);
    ev_running = false;
    ev_stopped = true;
    /* Whatever is still subscribed belongs to the core; nothing can call it now. */
    struct subscription *s = ev_subs;
    while (s) {
        struct subscription *next = s->next;
        if (!s->removed) /* a removed one belongs to a waiting unsubscriber */
            sub_unlink_free(s);
        s = next;
    }
    pthread_mutex_unlock(&ev_lock);
}

int64_t events_subscribe(struct tlsbox_plugin *owner, const char *event, tlsbox_event_fn fn,
                         void *arg)
{
    if (!fn || !events_name_ok(event, true))
        return -EINVAL;
    struct subscription *s = xcalloc(1, sizeof(*s));
    size_t n = strlen(event);
    s->prefix = event[n - 1] == '*';
    s->pattern = xstrndup(event, s->prefix ? n - 1 : n);
    s->pattern_len = strlen(s->pattern);
    s->owner = owner;
    s->fn = fn;
    s->arg = arg;

    pthread_mutex_lock(&ev_lock);
    s->id = ev_next_id++;
    /* Append so callbacks run in subscription order. */
    struct subscription **pp = &ev_subs;
    while (*pp)
        pp = &(*pp)->next;
    *pp = s;
    int64_t id = s->id;
    pthread_mutex_unlock(&ev_lock);
    return id;
}

/* Mark @p s removed, wait until the dispatcher is not calling it, free it.
 * From the dispatcher (a callback unsubscribing), a subscription in flight
 * is the one being called: leave it to the dispatcher.  ev_lock held. */
static void events_remove_locked(struct subscription *s)
{
    s->removed = true;
    if (s->in_flight && events_on_dispatcher()) {
        s->orphaned = true;
        return;
    }
    while (s->in_flight)
        pthread_cond_wait(&ev_idle, &ev_lock);
    sub_unlink_free(s);
}

/* Subscription @p id, when @p any_owner or it is @p owner's. */
static int unsubscribe(int64_t id, bool any_owner, const struct tlsbox_plugin *owner)
{
    int rc = -ENOENT;
    pthread_mutex_lock(&ev_lock);
    for (struct subscription *s = ev_subs; s; s = s->next) {
        if (s->id == id && !s->removed && (any_owner || s->owner == owner)) {
            events_remove_locked(s);
            rc = 0;
            break;
        }
    }
    pthread_mutex_unlock(&ev_lock);
    return rc;
}

int events_unsubscribe(int64_t id)
{
    return unsubscribe(id, true, NULL);
}

int events_unsubscribe_of(const struct tlsbox_plugin *owner, int64_t id)
{
    return unsubscribe(id, false, owner);
}

void events_unsubscribe_owner(struct tlsbox_plugin *owner)
{
    pthread_mutex_lock(&ev_lock);
    struct subscription *s = ev_subs;
    while (s) {
        if (s->owner == owner && !s->removed) {
            events_remove_locked(s);
            s = ev_subs; /* the list may have changed while we waited */
            continue;
        }
        s = s->next;
    }
    pthread_mutex_unlock(&ev_lock);
}

int events_publish(const char *event, const char *data)
{
    if (!events_name_ok(event, false))
        return -EINVAL;
    int rc = 0;
    pthread_mutex_lock(&ev_lock);
    if (ev_stopping || ev_stopped) {
        rc = -ESHUTDOWN;
        goto out;
    }
    if (ev_queued >= EVENTS_QUEUE_MAX) {
        if (!ev_warned_full)
            log_warn("events: queue full (%d events), dropping \"%s\"", ev_queued, event);
        ev_warned_full = true;
        rc = -EAGAIN;
        goto out;
    }
    ev_warned_full = false;
    struct event *e = xmalloc(sizeof(*e));
    e->next = NULL;
    e->seq = ++ev_published;
    e->max_sub_id = ev_next_id - 1;
    e->name = xstrdup(event);
    e->data = data ? xstrdup(data) : NULL;
    if (ev_tail)
        ev_tail->next = e;
    else
        ev_head = e;
    ev_tail = e;
    ev_queued++;
    pthread_cond_signal(&ev_work);
out:
    pthread_mutex_unlock(&ev_lock);
    return rc;
}

void events_flush(void)
{
    pthread_mutex_lock(&ev_lock);
    /* Without a dispatcher (or from it) waiting would never end. */
    if (ev_running && !events_on_dispatcher()) {
        uint64_t target = ev_published;
        while (ev_delivered < target && ev_running)
            pthread_cond_wait(&ev_idle, &ev_lock);
    }
    pthread_mutex_unlock(&ev_lock);
}
