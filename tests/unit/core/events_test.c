/* events: ordering, off-thread delivery, prefixes, unsubscribe semantics. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "core/events.h"
#include "tests/tap.h"

#define N_ORDER 2000

static pthread_t main_thread;

struct rec {
    pthread_mutex_t lock;
    int n;
    int seq[N_ORDER];
    char names[16][64];
    int off_thread; /* count of callbacks not on the main thread */
};

static void on_order(void *arg, const char *event, const char *data)
{
    struct rec *r = arg;
    pthread_mutex_lock(&r->lock);
    if (r->n < N_ORDER)
        r->seq[r->n] = atoi(data);
    if (r->n < 16)
        snprintf(r->names[r->n], sizeof(r->names[0]), "%s", event);
    r->n++;
    if (!pthread_equal(pthread_self(), main_thread))
        r->off_thread++;
    pthread_mutex_unlock(&r->lock);
}

static void rec_init(struct rec *r)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->lock, NULL);
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static atomic_int null_seen;
static void on_null(void *arg, const char *event, const char *data)
{
    if (data == NULL)
        atomic_fetch_add(&null_seen, 1);
}

/* A slow callback, to unsubscribe while it runs. */
static atomic_int slow_running, slow_calls;
static void on_slow(void *arg, const char *event, const char *data)
{
    atomic_store(&slow_running, 1);
    atomic_fetch_add(&slow_calls, 1);
    usleep(200 * 1000);
    atomic_store(&slow_running, 0);
}

/* A callback that unsubscribes itself. */
static int64_t self_id;
static atomic_int self_calls;
static atomic_int self_unsub_rc = 1;
static void on_self(void *arg, const char *event, const char *data)
{
    atomic_fetch_add(&self_calls, 1);
    atomic_store(&self_unsub_rc, events_unsubscribe(self_id));
}

/* A callback that publishes: must not deadlock, delivered later in order. */
static void on_republish(void *arg, const char *event, const char *data)
{
    if (strcmp(event, "chain.a") == 0)
        events_publish("chain.b", "2");
}

int main(void)
{
    main_thread = pthread_self();
    struct rec order, prefix, exact, all, late, owned;

    /* Queued before the dispatcher exists. */
    rec_init(&order);
    int64_t id_order = events_subscribe(NULL, "order.tick", on_order, &order);
    ok(id_order > 0, "subscribe returns an id > 0");
    is_int(events_publish("order.tick", "0"), 0, "publish before start is queued");
    is_int(events_start(), 0, "events_start");
    is_int(events_start(), -EALREADY, "second events_start refused");

    /* Order and thread. */
    for (int i = 1; i < N_ORDER; i++) {
        char d[16];
        snprintf(d, sizeof(d), "%d", i);
        events_publish("order.tick", d);
    }
    events_flush();
    is_int(order.n, N_ORDER, "every event delivered after flush");
    int in_order = 1;
    for (int i = 0; i < N_ORDER; i++)
        if (order.seq[i] != i)
            in_order = 0;
    ok(in_order, "events delivered in publish order");
    is_int(order.off_thread, N_ORDER, "never delivered on the publishing thread");

    /* Prefix, exact, catch-all. */
    rec_init(&prefix);
    rec_init(&exact);
    rec_init(&all);
    int64_t id_prefix = events_subscribe(NULL, "cert.*", on_order, &prefix);
    int64_t id_exact = events_subscribe(NULL, "cert.changed", on_order, &exact);
    int64_t id_all = events_subscribe(NULL, "*", on_order, &all);
    events_publish("cert.changed", "1");
    events_publish("cert.expiring", "2");
    events_publish("certs", "3");
    events_publish("policy.changed", "4");
    events_flush();
    is_int(prefix.n, 2, "cert.* sees cert.changed and cert.expiring only");
    is_str(prefix.names[1], "cert.expiring", "prefix match in order");
    is_int(exact.n, 1, "exact subscription sees only its event");
    is_int(all.n, 4, "\"*\" sees everything");
    events_unsubscribe(id_prefix);
    events_unsubscribe(id_exact);
    events_unsubscribe(id_all);

    /* Data NULL is allowed and delivered as NULL. */
    int64_t id_null = events_subscribe(NULL, "nulldata", on_null, NULL);
    is_int(events_publish("nulldata", NULL), 0, "NULL data accepted");
    events_flush();
    is_int(atomic_load(&null_seen), 1, "callback got data NULL");
    events_unsubscribe(id_null);

    /* A subscription made after a publish does not see that event. */
    rec_init(&late);
    events_stop(); /* a stopped dispatcher cannot race with us */
    is_int(events_publish("late.x", "1"), -ESHUTDOWN, "publish after stop refused");
    is_int(events_start(), 0, "restart");
    events_publish("late.x", "1");
    events_subscribe(NULL, "late.x", on_order, &late);
    events_publish("late.x", "2");
    events_flush();
    is_int(late.n, 1, "only events published after subscribing are delivered");

    /* Bad names. */
    is_int(events_subscribe(NULL, "", on_order, &late), -EINVAL, "empty pattern refused");
    is_int(events_subscribe(NULL, "a*b", on_order, &late), -EINVAL, "'*' inside refused");
    is_int(events_subscribe(NULL, "a b", on_order, &late), -EINVAL, "space refused");
    is_int(events_subscribe(NULL, "x", NULL, NULL), -EINVAL, "NULL callback refused");
    is_int(events_publish("a.*", NULL), -EINVAL, "publishing a pattern refused");
    is_int(events_unsubscribe(999999), -ENOENT, "unknown id");

    /* Unsubscribe while the callback runs: waits for it to return. */
    int64_t id_slow = events_subscribe(NULL, "slow", on_slow, NULL);
    events_publish("slow", NULL);
    uint64_t t0 = now_ms();
    while (!atomic_load(&slow_running) && now_ms() - t0 < 2000)
        usleep(1000);
    ok(atomic_load(&slow_running), "slow callback is running");
    uint64_t t1 = now_ms();
    is_int(events_unsubscribe(id_slow), 0, "unsubscribe while running");
    ok(!atomic_load(&slow_running), "callback not running after unsubscribe returned");
    ok(now_ms() - t1 >= 50, "unsubscribe waited for the callback (%llu ms)",
       (unsigned long long)(now_ms() - t1));
    events_publish("slow", NULL);
    events_flush();
    is_int(atomic_load(&slow_calls), 1, "never called again after unsubscribe");

    /* Unsubscribe from its own callback: no deadlock, no further calls. */
    self_id = events_subscribe(NULL, "self", on_self, NULL);
    events_publish("self", NULL);
    events_publish("self", NULL);
    events_flush();
    is_int(atomic_load(&self_calls), 1, "self-unsubscribing callback ran once");
    is_int(atomic_load(&self_unsub_rc), 0, "unsubscribe from own callback returns 0");

    /* Publishing from a callback. */
    rec_init(&order);
    int64_t id_chain = events_subscribe(NULL, "chain.a", on_republish, NULL);
    int64_t id_chain_rec = events_subscribe(NULL, "chain.*", on_order, &order);
    events_publish("chain.a", "1");
    events_publish("chain.c", "3");
    events_flush();
    usleep(20 * 1000);
    events_flush(); /* chain.b was published by the dispatcher after the first flush began */
    is_int(order.n, 3, "event published from a callback delivered");
    is_str(order.names[0], "chain.a", "the first event first");
    ok(strcmp(order.names[1], "chain.b") == 0 || strcmp(order.names[2], "chain.b") == 0,
       "the republished event after the one that caused it");
    events_unsubscribe(id_chain);
    events_unsubscribe(id_chain_rec);

    /* Owner removal. */
    struct tlsbox_plugin *owner = (struct tlsbox_plugin *)(void *)&owned;
    rec_init(&owned);
    events_subscribe(owner, "own.a", on_order, &owned);
    events_subscribe(owner, "own.*", on_order, &owned);
    events_publish("own.a", "1");
    events_flush();
    is_int(owned.n, 2, "owner's two subscriptions called");
    events_unsubscribe_owner(owner);
    events_publish("own.a", "1");
    events_flush();
    is_int(owned.n, 2, "none after events_unsubscribe_owner");

    /* Stop delivers what is queued. */
    rec_init(&order);
    id_order = events_subscribe(NULL, "order.tick", on_order, &order);
    for (int i = 0; i < 100; i++)
        events_publish("order.tick", "1");
    events_stop();
    is_int(order.n, 100, "events_stop delivers the queue first");
    return done_testing();
}
