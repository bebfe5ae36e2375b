/* Live metrics over Server-Sent Events: every second one "metrics" event
 * with every metric (counters, gauges, histograms); the page derives rates,
 * ratios and percentiles.  The admin server runs a thread per connection,
 * so the reader may sleep; it wakes every 100 ms to notice a stop, and ends
 * the stream when the session ends (logout, expiry).  Its ticks do not count
 * as use of the session: a dashboard left open idles out like any page.
 *
 * Ticks follow CLOCK_MONOTONIC, a period after the last event: a Raspberry
 * Pi has no RTC and NTP steps its wall clock after boot, which on a
 * wall-clock schedule stalled the stream (a step back) or sent an event for
 * every second stepped over at once (a step forward).  Each event carries
 * the wall clock "t" to show and the monotonic "mono" to take rates over. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "core/admin.h"
#include "core/admin_auth.h"
#include "core/api_mhd.h"
#include "core/metrics.h"
#include "core/xalloc.h"

#define LIVE_PERIOD_MS 1000
#define LIVE_POLL_MS 100

static atomic_int live_stopping;

struct live {
    char cookie[ADMIN_TOKEN_HEX];
    char *pending; /* event text not yet handed to MHD */
    size_t len, off;
    int64_t next_ms;
};

static int64_t now_ms(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void live_free(void *cls)
{
    struct live *l = cls;
    free(l->pending);
    free(l);
}

/* Sleep until @p l's next tick: 0, or -1 when the server is stopping. */
static int wait_tick(struct live *l)
{
    for (;;) {
        if (atomic_load(&live_stopping))
            return -1;
        int64_t left = l->next_ms - now_ms(CLOCK_MONOTONIC);
        if (left <= 0)
            return 0;
        struct timespec ts = {0, (left < LIVE_POLL_MS ? left : LIVE_POLL_MS) * 1000000L};
        nanosleep(&ts, NULL);
    }
}

static ssize_t live_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct live *l = cls;
    if (l->off == l->len) {
        if (wait_tick(l) < 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
        struct admin_session s;
        /* A tick is not a request: an open dashboard alone must let the
         * session idle out (admin.session_idle), then the stream ends. */
        if (admin_session_alive(l->cookie, &s) < 0)
            return MHD_CONTENT_READER_END_OF_STREAM;
        int64_t mono = now_ms(CLOCK_MONOTONIC);
        l->next_ms = mono + LIVE_PERIOD_MS;
        json_t *m = metrics_json();
        char *data = json_dumps(m, JSON_COMPACT);
        json_decref(m);
        free(l->pending);
        l->pending =
            xasprintf("event: metrics\ndata: {\"t\":%lld,\"mono\":%lld,\"m\":%s}\n\n",
                      (long long)now_ms(CLOCK_REALTIME), (long long)mono, data ? data : "{}");
        free(data);
        l->len = strlen(l->pending);
        l->off = 0;
    }
    size_t n = l->len - l->off < max ? l->len - l->off : max;
    memcpy(buf, l->pending + l->off, n);
    l->off += n;
    return (ssize_t)n;
}

enum MHD_Result admin_live_serve(struct MHD_Connection *conn, const char *cookie)
{
    struct live *l = xcalloc(1, sizeof *l);
    snprintf(l->cookie, sizeof l->cookie, "%s", cookie);
    l->next_ms = now_ms(CLOCK_MONOTONIC);
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, live_read, l, live_free);
    if (!r) {
        live_free(l);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    api_mhd_security_headers(r);
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

void admin_live_stop(void)
{
    atomic_store(&live_stopping, 1);
}
