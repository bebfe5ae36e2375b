/*
 * A worker's wait for events, with batching under load.
 *
 * A worker that sleeps in epoll_wait() is woken by the kernel for every
 * request that arrives while it sleeps, and the wake-up is paid by the
 * sender: its write() runs the wake and the inter-processor interrupt
 * before it returns.  Profiled with h2load --h1 -c 10 on this VM, that was
 * 11 us of the client's 76 per request against tlsbox, which sleeps about
 * half the time, and 5 against h2o, which is busy; the client was the
 * bottleneck, so the site served fewer requests per second while it used
 * less CPU per request.
 *
 * So, once a wait returns several events at once (several connections are
 * active), the worker takes the next batch without sleeping in epoll: it
 * polls, and if nothing is ready it sleeps site.batch_wait_us on a timer of
 * its own and polls again.  Requests that arrive meanwhile wake no one; the
 * worker takes them together.  The first poll that finds nothing after such
 * a sleep ends batching, and the worker blocks in epoll_wait() again, so an
 * idle worker or a single client (one event per wait) never pays the timer.
 * A request waits at most batch_wait_us (plus the timer's wake-up latency)
 * more than it would have: nothing next to a network's latency, and only
 * while the worker is busy.
 *
 * The sleep is as long as asked only with a small timer slack
 * (site_wait_thread_init).  With the kernel's default slack of 50 us for a
 * normal thread, a timer may fire anywhere in [30 us, 80 us], and on a core
 * with nothing else to do it fires at the end: a 30 us nanosleep() took
 * 109 us on average on the 2-core VM of doc/performance.md, 55 us with a
 * 1 us slack.  With 10 connections the client then waited for the worker
 * that slept: h2load --h1 -c 10 was busy 84-89% of the time against tlsbox
 * and 92-98% against h2o.  A thread's slack also lets the kernel fire its
 * timers together to save wake-ups; the worker's other timers are its
 * epoll_wait() timeouts, milliseconds to seconds apart, where that saves
 * next to nothing.
 *
 * A sleep pays only when it gathers two or more events: one event would
 * have cost one wake-up anyway, and the sleep costs the worker its own
 * timer wake-up.  Under h2 -m 10 a connection's event carries ten requests
 * and events come every 200 us, so sleeps gathered 0.7-1.3 events and
 * batching cost 3-4% more CPU per request; under h1 -c 10 they gathered 3.5.
 * So the waiter keeps a running average of what its sleeps gathered and
 * starts batching only while that is two or more; otherwise it still tries
 * one batch in PROBE_EVERY, so that it notices when the load changes.
 */
#include <errno.h>
#include <sys/prctl.h>
#include <time.h>

#include "site.h"

/* sw->gain is a running average (weight 1/8) of the events a batch sleep
 * gathered minus two, in sixteenths, each sleep counted up to GATHER_CAP
 * events: zero or more, sleeps pay.  A fresh waiter (0) starts batching. */
#define GAIN_ONE 16
#define GATHER_CAP 8
#define PROBE_EVERY 16

/* The worker's timer slack: its batch sleeps end when asked, not up to
 * 50 us later (above). */
#define WORKER_TIMER_SLACK_NS 1000

void site_wait_thread_init(void)
{
    /* Fails only on kernels older than 2.6.28; the sleeps are then longer. */
    (void)prctl(PR_SET_TIMERSLACK, (unsigned long)WORKER_TIMER_SLACK_NS, 0UL, 0UL, 0UL);
}

static void note_gathered(struct site_waiter *sw, int n)
{
    int got = (n < GATHER_CAP ? n : GATHER_CAP) - 2;
    sw->gain += (got * GAIN_ONE - sw->gain) / 8;
}

static void sleep_us(int us)
{
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000};
    /* EINTR only shortens the wait: the poll that follows sees what came */
    nanosleep(&ts, NULL);
}

int site_wait(struct site_waiter *sw, int ep, struct epoll_event *evs, int max, int timeout_ms,
              int batch_us)
{
    int n;

    if (batch_us > 0 && sw->batching) {
        n = epoll_wait(ep, evs, max, 0);
        if (n == 0) {
            sleep_us(batch_us);
            n = epoll_wait(ep, evs, max, 0);
            note_gathered(sw, n);
        }
        if (n > 0) {
            sw->polled++;
            return n;
        }
        if (n < 0)
            return n;
        sw->batching = false; /* quiet for a whole batch wait: sleep in epoll */
    }
    n = epoll_wait(ep, evs, max, timeout_ms);
    if (n > 0)
        sw->woken++;
    /* Several connections had something at once: take the next ones in a
     * batch, if sleeps have been gathering enough (or to find out again). */
    sw->batching = batch_us > 0 && n >= 2 && (sw->gain >= 0 || ++sw->probe % PROBE_EVERY == 0);
    return n;
}
