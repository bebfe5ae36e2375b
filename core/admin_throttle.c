#include "core/admin_throttle.h"

#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "core/settings.h"
#include "core/xalloc.h"

#define SLOTS 256
#define FREE_FAILURES 3
#define MAX_BACKOFF_S 60
/* An IPv6 /56 key may fail this many times what one /64 may before it
 * backs off or locks, a /48 key THROTTLE_SCALE_48 times: a few hosts of a
 * home or office share them (see admin_throttle.h).  An IPv4 /24 as much
 * as a /48: each is the longest prefix routed between networks, so the
 * block one site or hosting customer holds, and a /24 is shared more
 * often than a /48 (NAT pools, a provider's many customers), so not less. */
#define THROTTLE_SCALE_56 4
#define THROTTLE_SCALE_48 16
#define THROTTLE_SCALE_24 16

/* Times in milliseconds of CLOCK_MONOTONIC: a backoff of "1 s" must not
 * end at the next wall-clock second tick. */
struct slot {
    char key[96]; /* "" for a free slot */
    int failures;
    int pending; /* attempts between throttle_begin and throttle_end */
    int64_t next_allowed;
    int64_t locked_until;
    int64_t last;
    int scale; /* 1, or THROTTLE_SCALE_56/48/24 for an aggregate key */
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
    int s = (int)((until - now + 999) / 1000);
    return s < 1 ? 1 : s;
}

/* The backoff after @p failures (below the lockout): none for the first
 * two, then 2, 4, 8, ... seconds, at most MAX_BACKOFF_S. */
static int backoff_s(int failures)
{
    if (failures < FREE_FAILURES)
        return 0;
    int shift = failures - FREE_FAILURES + 1;
    return shift > 5 ? MAX_BACKOFF_S : 1 << shift;
}

/* The keys of IPv4 address @p a (network order): the address and its /24. */
static int ipv4_keys(const unsigned char a[4], char *keys[THROTTLE_ADDR_KEYS])
{
    keys[0] = xasprintf("addr:%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
    keys[1] = xasprintf("addr:%u.%u.%u.0/24", a[0], a[1], a[2]);
    return 2;
}

int throttle_addr_keys(const char *source, char *keys[THROTTLE_ADDR_KEYS])
{
    static const int prefixes[THROTTLE_ADDR_KEYS] = {64, 56, 48};
    struct in6_addr a;
    unsigned char v4[4];
    char net[INET6_ADDRSTRLEN];
    if (inet_pton(AF_INET, source, v4) == 1)
        return ipv4_keys(v4, keys);
    /* Not an address ("unknown"): one key, as given. */
    if (inet_pton(AF_INET6, source, &a) != 1) {
        keys[0] = xasprintf("addr:%s", source);
        return 1;
    }
    /* An IPv4 address in IPv6 form is that IPv4 client: cut to its "/64",
     * it would share one key with every IPv4 client. */
    if (IN6_IS_ADDR_V4MAPPED(&a))
        return ipv4_keys(a.s6_addr + 12, keys);
    for (int i = 0; i < THROTTLE_ADDR_KEYS; i++) {
        memset(a.s6_addr + prefixes[i] / 8, 0, 16 - prefixes[i] / 8);
        inet_ntop(AF_INET6, &a, net, sizeof net);
        keys[i] = xasprintf("addr:%s/%d", net, prefixes[i]);
    }
    return THROTTLE_ADDR_KEYS;
}

/* How many failures of one address's key @p key stands for: 1, or more
 * for an IPv6 /56 or /48 or an IPv4 /24 key of throttle_addr_keys. */
static int key_scale(const char *key)
{
    static const struct {
        const char suffix[4];
        int scale;
    } scales[] = {
        {"/56", THROTTLE_SCALE_56}, {"/48", THROTTLE_SCALE_48}, {"/24", THROTTLE_SCALE_24}};
    size_t len = strlen(key);
    if (strncmp(key, "addr:", 5) != 0 || len < 3)
        return 1;
    for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++)
        if (strcmp(key + len - 3, scales[i].suffix) == 0)
            return scales[i].scale;
    return 1;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct slot slots[SLOTS];

/* A lockout served starts a fresh count.  Under lock. */
static void expire(struct slot *s, int64_t now)
{
    if (s->locked_until && s->locked_until <= now) {
        s->locked_until = 0;
        s->failures = 0;
    }
}

/* Forgetting a slot must not lose an attempt in flight, nor lift a lock of
 * a name: else filling the table with failures for other names from other
 * addresses would unlock a user.  Among the rest, the least harmful first
 * (a lower rank): one that restricts nothing, then an address's backoff or
 * lock, then a name's backoff.  Under lock. */
enum { RANK_FREE, RANK_ADDR, RANK_NAME_BACKOFF, RANK_KEEP };
static int evict_rank(const struct slot *s, int64_t now)
{
    if (s->pending)
        return RANK_KEEP;
    if (s->locked_until <= now && s->next_allowed <= now)
        return RANK_FREE;
    if (strncmp(s->key, "addr:", 5) == 0)
        return RANK_ADDR;
    return s->locked_until > now ? RANK_KEEP : RANK_NAME_BACKOFF;
}

/* When @p s lets its key try again. */
static int64_t restricted_until(const struct slot *s)
{
    return s->locked_until > s->next_allowed ? s->locked_until : s->next_allowed;
}

/* Would @p s rather be forgotten than @p than (NULL: anything is)?  Of two
 * that restrict nothing, the one with fewer failures, least recently used
 * among equals (a flood of single failures pushes out its own slots
 * first); of two restrictions, the one nearer its end.  Under lock. */
static int rather_evict(const struct slot *s, const struct slot *than, int64_t now)
{
    int rank = evict_rank(s, now);
    if (rank == RANK_KEEP || !than)
        return rank != RANK_KEEP;
    int other = evict_rank(than, now);
    if (rank != other)
        return rank < other;
    if (rank != RANK_FREE)
        return restricted_until(s) < restricted_until(than);
    return s->failures < than->failures || (s->failures == than->failures && s->last < than->last);
}

/* The slot of @p key; or (create) a free one, else the one least harmful
 * to forget (rather_evict); NULL when there is none.  Under lock. */
static struct slot *find(const char *key, int create, int64_t now)
{
    struct slot *free_slot = NULL, *victim = NULL;
    for (int i = 0; i < SLOTS; i++) {
        struct slot *s = &slots[i];
        if (strcmp(s->key, key) == 0)
            return s;
        if (!s->key[0]) {
            if (!free_slot)
                free_slot = s;
        } else if (rather_evict(s, victim, now))
            victim = s;
    }
    if (free_slot)
        victim = free_slot;
    if (!create || !victim)
        return NULL;
    memset(victim, 0, sizeof *victim);
    snprintf(victim->key, sizeof victim->key, "%s", key);
    victim->last = now;
    victim->scale = key_scale(key);
    return victim;
}

/* When a slot is next evictable, for retry_after on a full table (of
 * attempts in flight and names' locks).  Under lock. */
static int seconds_until_room(int64_t now)
{
    int64_t soonest = INT64_MAX;
    for (int i = 0; i < SLOTS; i++) {
        const struct slot *s = &slots[i];
        /* An attempt in flight ends within a PBKDF2 run: about a second. */
        int64_t t = s->pending ? now + 1000 : now;
        if (s->locked_until > t)
            t = s->locked_until;
        if (s->next_allowed > t)
            t = s->next_allowed;
        if (t < soonest)
            soonest = t;
    }
    return seconds_until(soonest, now);
}

/* May @p s try now?  0, or -EPERM / -EAGAIN with *retry_after.  Under lock. */
static int slot_allows(struct slot *s, int64_t now, int *retry_after)
{
    expire(s, now);
    if (s->locked_until > now) {
        *retry_after = seconds_until(s->locked_until, now);
        return -EPERM;
    }
    if (s->next_allowed > now) {
        *retry_after = seconds_until(s->next_allowed, now);
        return -EAGAIN;
    }
    /* Were the attempts in flight to fail, this one would have to wait:
     * beyond the free failures one attempt at a time, as if serial. */
    if (s->pending && s->failures + s->pending >= FREE_FAILURES * s->scale) {
        *retry_after = backoff_s((s->failures + s->pending) / s->scale);
        return -EAGAIN;
    }
    return 0;
}

int throttle_begin(const char *const keys[], int n, int *retry_after)
{
    int64_t now = now_ms();
    int rc = 0, i;
    *retry_after = 0;
    pthread_mutex_lock(&lock);
    for (i = 0; i < n; i++) {
        struct slot *s = find(keys[i], 0, now);
        int ra = 0, r = s ? slot_allows(s, now, &ra) : 0;
        if (r == -EPERM || (r && !rc))
            rc = r;
        if (ra > *retry_after)
            *retry_after = ra;
    }
    for (i = 0; rc == 0 && i < n; i++) {
        struct slot *s = find(keys[i], 1, now);
        if (!s) {
            rc = -EBUSY;
            *retry_after = seconds_until_room(now);
            break;
        }
        s->pending++;
        s->last = now;
    }
    /* All or none: a full table takes back what this call reserved. */
    while (rc == -EBUSY && i-- > 0)
        find(keys[i], 0, now)->pending--;
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Count a failure on @p s; 1 when it locks the key.  Under lock. */
static int slot_fail(struct slot *s, int64_t now)
{
    int lock_after = (int)settings_get_int("admin.lockout_after", 10);
    expire(s, now);
    s->failures++;
    if (s->failures >= lock_after * s->scale) {
        s->locked_until = now + 1000 * settings_get_int("admin.lockout_seconds", 900);
        s->next_allowed = 0;
        return 1;
    }
    if (s->failures >= FREE_FAILURES * s->scale)
        s->next_allowed = now + 1000 * (int64_t)backoff_s(s->failures / s->scale);
    return 0;
}

/* Forget @p s's failures, backoff and lock; an attempt still in flight
 * keeps the key.  Under lock. */
static void slot_clear(struct slot *s, const char *key, int64_t now)
{
    int pending = s->pending;
    memset(s, 0, sizeof *s);
    if (pending) {
        snprintf(s->key, sizeof s->key, "%s", key);
        s->pending = pending;
        s->last = now;
        s->scale = key_scale(key);
    }
}

unsigned throttle_end(const char *const keys[], int n, enum throttle_outcome outcome)
{
    int64_t now = now_ms();
    unsigned locked = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n; i++) {
        /* The reservation keeps the slot; create is only a safeguard. */
        struct slot *s = find(keys[i], outcome == THROTTLE_FAILED, now);
        if (!s)
            continue;
        if (s->pending > 0)
            s->pending--;
        s->last = now;
        if (outcome == THROTTLE_FAILED && slot_fail(s, now))
            locked |= 1u << i;
        if (outcome == THROTTLE_SUCCEEDED)
            slot_clear(s, keys[i], now);
    }
    pthread_mutex_unlock(&lock);
    return locked;
}

void throttle_forget(const char *key)
{
    int64_t now = now_ms();
    pthread_mutex_lock(&lock);
    struct slot *s = find(key, 0, now);
    if (s)
        slot_clear(s, key, now);
    pthread_mutex_unlock(&lock);
}
