/* The kit's mock host delivers events as host.h says the core does: a
 * subscription removed (by another callback of the same delivery, or by its
 * own) is never called again, and event names the core refuses are refused
 * (-EINVAL) by subscribe and publish.  Before, the mock called every
 * subscription it had copied when the delivery began, so a plugin that
 * frees what a subscription uses when it unsubscribes it saw a call the
 * daemon never makes.  And, as in the core (core/events.c), a subscription
 * sees only the events published after it was made: the mock used to hand
 * a new subscription every event still queued.  Prints TAP. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tlsbox/mock_host.h>

#include "tests/tap.h"

static const struct tlsbox_plugin_desc t_desc = {
    .abi_major = TLSBOX_ABI_MAJOR, .abi_minor = TLSBOX_ABI_MINOR, .name = "me", .version = "1"};

static int64_t sub_a, sub_b, sub_self;
static int calls_a, calls_b, calls_self, calls_old, calls_new, calls_inner;
static char seen_new[64];

static void on_old(void *arg, const char *event, const char *data)
{
    (void)arg, (void)event, (void)data;
    calls_old++;
}

/* Records which events of "me.z" reached the subscription made late. */
static void on_new(void *arg, const char *event, const char *data)
{
    (void)arg, (void)event;
    calls_new++;
    snprintf(seen_new + strlen(seen_new), sizeof(seen_new) - strlen(seen_new), "%s;",
             data ? data : "-");
}

static void on_inner(void *arg, const char *event, const char *data)
{
    (void)arg, (void)event, (void)data;
    calls_inner++;
}

/* Subscribes from inside a delivery, once. */
static void on_subscriber(void *arg, const char *event, const char *data)
{
    (void)arg, (void)event, (void)data;
    static bool done;
    if (!done)
        tlsbox_mock_host.event_subscribe(tlsbox_mock_self(), "me.w", on_inner, NULL);
    done = true;
}

/* A subscription sees the events published after it was made, not those
 * already queued (core/events.c: max_sub_id). */
static void test_subscribed_late(const struct tlsbox_host *h, struct tlsbox_plugin *me)
{
    ok(h->event_subscribe(me, "me.z", on_old, NULL) > 0, "a subscription before the publish");
    tlsbox_mock_publish("me.z", "\"first\"");
    ok(h->event_subscribe(me, "me.z", on_new, NULL) > 0, "one after it, before the delivery");
    tlsbox_mock_publish("me.z", "\"second\"");
    is_int(tlsbox_mock_events_run(), 3, "three deliveries: two to the first, one to the second");
    is_int(calls_old, 2, "the first sees both events");
    is_int(calls_new, 1, "the second sees one");
    is_str(seen_new, "\"second\";", "the one published after it subscribed");

    h->event_subscribe(me, "me.w", on_subscriber, NULL);
    tlsbox_mock_publish("me.w", NULL);
    tlsbox_mock_events_run();
    is_int(calls_inner, 0, "one made during a delivery does not get that event");
    tlsbox_mock_publish("me.w", NULL);
    tlsbox_mock_events_run();
    is_int(calls_inner, 1, "but the next one");
}

/* A: drops B, as a plugin tearing down what B serves. */
static void on_a(void *arg, const char *event, const char *data)
{
    (void)arg, (void)event, (void)data;
    calls_a++;
    if (sub_b)
        tlsbox_mock_host.event_unsubscribe(tlsbox_mock_self(), sub_b);
    sub_b = 0;
}

static void on_b(void *arg, const char *event, const char *data)
{
    (void)arg, (void)event, (void)data;
    calls_b++;
}

/* Drops itself at its first call. */
static void on_self(void *arg, const char *event, const char *data)
{
    (void)arg, (void)event, (void)data;
    calls_self++;
    tlsbox_mock_host.event_unsubscribe(tlsbox_mock_self(), sub_self);
}

int main(void)
{
    const struct tlsbox_host *h = &tlsbox_mock_host;
    struct tlsbox_plugin *me = tlsbox_mock_self();
    if (tlsbox_mock_setup(&t_desc) != 0)
        return 1;
    sub_a = h->event_subscribe(me, "me.x", on_a, NULL);
    sub_b = h->event_subscribe(me, "me.*", on_b, NULL);
    ok(sub_a > 0 && sub_b > 0, "two subscriptions");
    tlsbox_mock_publish("me.x", NULL);
    is_int(tlsbox_mock_events_run(), 1, "one delivery: A's");
    is_int(calls_a * 10 + calls_b, 10, "B, unsubscribed by A in the same delivery, not called");
    tlsbox_mock_publish("me.x", NULL);
    tlsbox_mock_events_run();
    is_int(calls_a * 10 + calls_b, 20, "nor later");

    sub_self = h->event_subscribe(me, "me.y", on_self, NULL);
    tlsbox_mock_publish("me.y", NULL);
    tlsbox_mock_publish("me.y", NULL);
    is_int(tlsbox_mock_events_run(), 1, "a subscription that drops itself: one delivery");
    is_int(calls_self, 1, "called once");
    test_subscribed_late(h, me);

    /* The core's rules (core/events.c): 1..128 printable ASCII bytes, no
     * blank, '*' only as the last byte of a subscription. */
    static const char *const bad[] = {"", "me x", "me.x*y", "me.\t", "m\xc3\xa9.x"};
    int refused = 0;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t s = h->event_subscribe(me, bad[i], on_b, NULL);
        int p = h->event_publish(me, bad[i], NULL);
        if (s == -EINVAL && p == -EINVAL)
            refused++;
        else
            diag("  '%s': subscribe %lld, publish %d", bad[i], (long long)s, p);
    }
    is_int(refused, (int)(sizeof(bad) / sizeof(bad[0])), "names the core refuses are refused");
    ok(h->event_publish(me, "me.*", NULL) == -EINVAL, "a '*' is refused in a published name");
    char longname[130];
    for (size_t i = 0; i < sizeof(longname) - 1; i++)
        longname[i] = 'a';
    longname[sizeof(longname) - 1] = '\0';
    ok(h->event_publish(me, longname, NULL) == -EINVAL, "a name of 129 bytes is refused");
    longname[128] = '\0';
    ok(h->event_publish(me, longname, NULL) == 0, "one of 128 is taken");
    is_int(tlsbox_mock_published(longname), 1, "and recorded");
    tlsbox_mock_teardown();
    return done_testing();
}
