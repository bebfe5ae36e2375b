/* TLS 1.2 session cache (see tls_session_cache.h). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/tls_session_cache.h"
#include "core/xalloc.h"

#define KEY_MAX 64     /* session ids are at most 32 bytes */
#define DATA_MAX 16384 /* a packed session is far smaller */

struct entry {
    struct entry *hnext;       /* hash chain */
    struct entry *prev, *next; /* LRU list, head = most recent */
    unsigned char key[KEY_MAX];
    unsigned key_len;
    unsigned char *data;
    unsigned data_len;
    time_t stored;
};

struct tls_session_cache {
    pthread_mutex_t lock;
    struct entry **buckets;
    size_t nbuckets; /* power of two */
    size_t count, max;
    unsigned lifetime;
    struct entry *head, *tail;
};

struct tls_session_cache *tls_session_cache_new(size_t max_entries, unsigned lifetime_s)
{
    struct tls_session_cache *c = xcalloc(1, sizeof(*c));
    pthread_mutex_init(&c->lock, NULL);
    c->max = max_entries ? max_entries : 1;
    c->lifetime = lifetime_s;
    c->nbuckets = 16;
    while (c->nbuckets < c->max * 2)
        c->nbuckets *= 2;
    c->buckets = xcalloc(c->nbuckets, sizeof(*c->buckets));
    return c;
}

static void entry_free(struct entry *e)
{
    wipe_free(e->data, e->data_len);
    wipe_free(e, sizeof(*e));
}

void tls_session_cache_free(struct tls_session_cache *c)
{
    if (!c)
        return;
    for (struct entry *e = c->head, *n; e; e = n) {
        n = e->next;
        entry_free(e);
    }
    free(c->buckets);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

/* FNV-1a: session ids are random already; this only spreads them. */
static size_t hash(const unsigned char *k, unsigned n)
{
    uint64_t h = 1469598103934665603ULL;
    for (unsigned i = 0; i < n; i++)
        h = (h ^ k[i]) * 1099511628211ULL;
    return (size_t)h;
}

static struct entry **find(struct tls_session_cache *c, const unsigned char *k, unsigned n)
{
    struct entry **pp = &c->buckets[hash(k, n) & (c->nbuckets - 1)];
    for (; *pp; pp = &(*pp)->hnext)
        if ((*pp)->key_len == n && memcmp((*pp)->key, k, n) == 0)
            return pp;
    return pp;
}

static void lru_unlink(struct tls_session_cache *c, struct entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
}

static void lru_push(struct tls_session_cache *c, struct entry *e)
{
    e->next = c->head;
    e->prev = NULL;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (!c->tail)
        c->tail = e;
}

/* Unlink from both structures and free; caller holds the lock. */
static void drop(struct tls_session_cache *c, struct entry **pp)
{
    struct entry *e = *pp;
    *pp = e->hnext;
    lru_unlink(c, e);
    c->count--;
    entry_free(e);
}

int tls_session_cache_store(void *ptr, gnutls_datum_t key, gnutls_datum_t data)
{
    struct tls_session_cache *c = ptr;
    if (!c || key.size == 0 || key.size > KEY_MAX || data.size == 0 || data.size > DATA_MAX)
        return -EINVAL;
    struct entry *e = xcalloc(1, sizeof(*e));
    memcpy(e->key, key.data, key.size);
    e->key_len = key.size;
    e->data = xmalloc(data.size);
    memcpy(e->data, data.data, data.size);
    e->data_len = data.size;
    e->stored = time(NULL);

    pthread_mutex_lock(&c->lock);
    struct entry **pp = find(c, key.data, key.size);
    if (*pp)
        drop(c, pp);
    while (c->count >= c->max && c->tail)
        drop(c, find(c, c->tail->key, c->tail->key_len));
    pp = find(c, key.data, key.size);
    *pp = e;
    lru_push(c, e);
    c->count++;
    pthread_mutex_unlock(&c->lock);
    return 0;
}

gnutls_datum_t tls_session_cache_retrieve(void *ptr, gnutls_datum_t key)
{
    struct tls_session_cache *c = ptr;
    gnutls_datum_t out = {NULL, 0};
    if (!c || key.size == 0 || key.size > KEY_MAX)
        return out;
    pthread_mutex_lock(&c->lock);
    struct entry **pp = find(c, key.data, key.size);
    struct entry *e = *pp;
    if (e && c->lifetime && time(NULL) - e->stored > (time_t)c->lifetime) {
        drop(c, pp);
        e = NULL;
    }
    if (e) {
        /* GnuTLS frees what retrieve returns with gnutls_free. */
        out.data = gnutls_malloc(e->data_len);
        if (out.data) {
            memcpy(out.data, e->data, e->data_len);
            out.size = e->data_len;
        }
        lru_unlink(c, e);
        lru_push(c, e);
    }
    pthread_mutex_unlock(&c->lock);
    return out;
}

int tls_session_cache_remove(void *ptr, gnutls_datum_t key)
{
    struct tls_session_cache *c = ptr;
    if (!c || key.size == 0 || key.size > KEY_MAX)
        return -EINVAL;
    pthread_mutex_lock(&c->lock);
    struct entry **pp = find(c, key.data, key.size);
    bool found = *pp != NULL;
    if (found)
        drop(c, pp);
    pthread_mutex_unlock(&c->lock);
    return found ? 0 : -ENOENT;
}

size_t tls_session_cache_count(struct tls_session_cache *c)
{
    pthread_mutex_lock(&c->lock);
    size_t n = c->count;
    pthread_mutex_unlock(&c->lock);
    return n;
}

void tls_session_cache_attach(struct tls_session_cache *c, gnutls_session_t session)
{
    gnutls_db_set_ptr(session, c);
    gnutls_db_set_store_function(session, tls_session_cache_store);
    gnutls_db_set_retrieve_function(session, tls_session_cache_retrieve);
    gnutls_db_set_remove_function(session, tls_session_cache_remove);
}
