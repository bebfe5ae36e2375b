#include "core/admin_throttle.h"

#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/settings.h"

#define SLOTS 256
#define FREE_FAILURES 3
#define MAX_BACKOFF_S 60

/* Times in milliseconds of CLOCK_MONOTONIC: a backoff of "1 s" must not
 * end at the next wall-clock second tick. */
struct slot {
    char key[96];
    int failures;
    int64_t next_allowed;
    int64_t locked_until;
    int64_t last;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whole seconds to wait until @p until, at least 1. */
static int seconds_until(int64_t until, int64_t now)
{
    return (int)((until - now + 999) / 1000);
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot slots[SLOTS];

/* The slot of @p key, or (create) the least recently used one.  Under lock. */
static struct slot *find(const char *key, int create)
{
    struct slot *oldest = &slots[0];
    for (int i = 0; i < SLOTS; i++) {
        if (strcmp(slots[i].key, key) == 0)
            return &slots[i];
        if (slots[i].last < oldest->last)
            oldest = &slots[i];
    }
    if (!create)
        return NULL;
    memset(oldest, 0, sizeof *oldest);
    snprintf(oldest->key, sizeof oldest->key, "%s", key);
    return oldest;
}

int throttle_check(const char *key, int *retry_after)
{
    int64_t now = now_ms();
    int rc = 0;
    pthread_mutex_lock(&lock);
    struct slot *s = find(key, 0);
    if (s && s->locked_until > now) {
        *retry_after = seconds_until(s->locked_until, now);
        rc = -EPERM;
    } else if (s && s->next_allowed > now) {
        *retry_after = seconds_until(s->next_allowed, now);
        rc = -EAGAIN;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

int throttle_fail(const char *key)
{
    int64_t now = now_ms();
    int lock_after = (int)settings_get_int("admin.lockout_after", 10);
    int locked = 0;
    pthread_mutex_lock(&lock);
    struct slot *s = find(key, 1);
    s->last = now;
    if (s->locked_until && s->locked_until <= now) {
        s->locked_until = 0; /* a lockout served starts a fresh count */
        s->failures = 0;
    }
    s->failures++;
    if (s->failures >= lock_after) {
        s->locked_until = now + 1000 * settings_get_int("admin.lockout_seconds", 900);
        s->next_allowed = 0;
        locked = 1;
    } else if (s->failures >= FREE_FAILURES) {
        /* 2, 4, 8, ... seconds, at most MAX_BACKOFF_S. */
        int shift = s->failures - FREE_FAILURES + 1;
        int wait = shift > 5 ? MAX_BACKOFF_S : 1 << shift;
        s->next_allowed = now + 1000 * (int64_t)(wait > MAX_BACKOFF_S ? MAX_BACKOFF_S : wait);
    }
    pthread_mutex_unlock(&lock);
    return locked;
}

void throttle_clear(const char *key)
{
    pthread_mutex_lock(&lock);
    struct slot *s = find(key, 0);
    if (s)
        memset(s, 0, sizeof *s);
    pthread_mutex_unlock(&lock);
}
