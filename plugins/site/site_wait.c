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
 * A request waits at most batch_wait_us plus the kernel's timer slack (50 us
 * by default) more than it would have: nothing next to a network's latency,
 * and only while the worker is busy.
 */
#include <errno.h>
#include <time.h>

#include "site.h"

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
    /* Several connections had something at once: take the next ones in a batch. */
    sw->batching = batch_us > 0 && n >= 2;
    return n;
}
