/*
 * Exact per-address connection counts (see site_ipcount.h).  The counts used
 * to be per bucket: two addresses whose hashes met shared one limit, and a
 * client could be refused for connections it never made.  Now a bucket holds
 * a list of addresses, each with its count; an address leaves the list when
 * its last connection closes, so the table holds at most one entry per open
 * connection.  A lock per stripe of buckets: workers accept and close on
 * their own threads.
 */
#include "site_ipcount.h"

#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <tlsbox/xalloc.h>

#define IPCOUNT_LOCKS 64

struct site_ipcount_entry {
    struct site_ipcount_entry *next;
    size_t bucket;
    int count;
    uint8_t len; /* 4 (IPv4) or 8 (an IPv6 /64) */
    uint8_t addr[8];
};

struct site_ipcount {
    pthread_mutex_t locks[IPCOUNT_LOCKS];
    struct site_ipcount_entry **buckets;
    size_t nbuckets;
    uint64_t key;
};

struct site_ipcount *site_ipcount_new(size_t nbuckets, uint64_t key)
{
    struct site_ipcount *t = tlsbox_xcalloc(1, sizeof(*t));
    t->nbuckets = nbuckets ? nbuckets : 1;
    t->buckets = tlsbox_xcalloc(t->nbuckets, sizeof(*t->buckets));
    t->key = key;
    for (int i = 0; i < IPCOUNT_LOCKS; i++)
        pthread_mutex_init(&t->locks[i], NULL);
    return t;
}

void site_ipcount_free(struct site_ipcount *t)
{
    if (!t)
        return;
    for (size_t b = 0; b < t->nbuckets; b++) {
        struct site_ipcount_entry *e = t->buckets[b], *next;
        for (; e; e = next) {
            next = e->next;
            free(e);
        }
    }
    for (int i = 0; i < IPCOUNT_LOCKS; i++)
        pthread_mutex_destroy(&t->locks[i]);
    free(t->buckets);
    free(t);
}

/* The bytes that name a client: IPv4, or the /64 of IPv6; false for
 * anything else. */
static bool client_key(const struct sockaddr_storage *ss, const uint8_t **p, uint8_t *n)
{
    if (ss->ss_family == AF_INET) {
        *p = (const uint8_t *)&((const struct sockaddr_in *)ss)->sin_addr;
        *n = 4;
        return true;
    }
    if (ss->ss_family != AF_INET6)
        return false;
    *p = (const uint8_t *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
    *n = 8;
    if (IN6_IS_ADDR_V4MAPPED((const struct in6_addr *)*p)) {
        *p += 12;
        *n = 4;
    }
    return true;
}

/* FNV-1a from the secret key, then mixed (the splitmix64 finaliser) so that
 * every bit of the key and the address reaches the bucket: the low bits of
 * a plain FNV product depend on the low bits alone. */
static size_t bucket_of(const struct site_ipcount *t, const uint8_t *p, uint8_t n)
{
    uint64_t h = t->key ^ 14695981039346656037u;
    for (uint8_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211u;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9u;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebu;
    h ^= h >> 31;
    return (size_t)(h % t->nbuckets);
}

static struct site_ipcount_entry *find(struct site_ipcount *t, size_t b, const uint8_t *p,
                                       uint8_t n)
{
    for (struct site_ipcount_entry *e = t->buckets[b]; e; e = e->next)
        if (e->len == n && memcmp(e->addr, p, n) == 0)
            return e;
    return NULL;
}

int site_ipcount_take(struct site_ipcount *t, const struct sockaddr_storage *ss, int max,
                      struct site_ipcount_entry **out)
{
    const uint8_t *p;
    uint8_t n;
    size_t b;
    struct site_ipcount_entry *e;
    int r = 0;

    *out = NULL;
    if (!client_key(ss, &p, &n))
        return 0;
    b = bucket_of(t, p, n);
    pthread_mutex_lock(&t->locks[b % IPCOUNT_LOCKS]);
    e = find(t, b, p, n);
    if ((e ? e->count : 0) >= max) {
        r = -EBUSY;
    } else {
        if (!e) {
            e = tlsbox_xcalloc(1, sizeof(*e));
            e->bucket = b;
            e->len = n;
            memcpy(e->addr, p, n);
            e->next = t->buckets[b];
            t->buckets[b] = e;
        }
        e->count++;
        *out = e;
    }
    pthread_mutex_unlock(&t->locks[b % IPCOUNT_LOCKS]);
    return r;
}

void site_ipcount_put(struct site_ipcount *t, struct site_ipcount_entry *e)
{
    pthread_mutex_t *lock;

    if (!e)
        return;
    lock = &t->locks[e->bucket % IPCOUNT_LOCKS];
    pthread_mutex_lock(lock);
    if (--e->count == 0) {
        struct site_ipcount_entry **pp = &t->buckets[e->bucket];
        while (*pp != e)
            pp = &(*pp)->next;
        *pp = e->next;
        free(e);
    }
    pthread_mutex_unlock(lock);
}
