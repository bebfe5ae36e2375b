/* In-process publish/subscribe.  One dispatcher thread delivers events in
 * publish order; publishing never blocks and never runs a callback. */
#ifndef TLSBOX_CORE_EVENTS_H
#define TLSBOX_CORE_EVENTS_H

#include <stdint.h>

#include <tlsbox/host.h>

int events_start(void);
/* Deliver what is queued, then stop the thread. */
void events_stop(void);
/* See host.h event_subscribe.  @p owner is only used to remove a plugin's subscriptions. */
int64_t events_subscribe(struct tlsbox_plugin *owner, const char *event, tlsbox_event_fn fn,
                         void *arg);
/* After return the callback is not running (unless called from itself) and never runs again. */
int events_unsubscribe(int64_t id);
/* events_unsubscribe for a plugin (host->event_unsubscribe): only its own
 * subscriptions; another owner's id is -ENOENT. */
int events_unsubscribe_of(const struct tlsbox_plugin *owner, int64_t id);
void events_unsubscribe_owner(struct tlsbox_plugin *owner);
/* Copy and queue.  Any thread.  Before events_start, events are queued. */
int events_publish(const char *event, const char *data);
/* Wait until everything published before the call was delivered (tests, shutdown). */
void events_flush(void);

#endif
