/* The TLS 1.2 session cache (session ids; tickets need none): bounded, in
 * memory only, LRU, entries wiped when evicted or removed (they hold master
 * secrets).  One mutex: entries are small and the critical sections short. */
#ifndef TLSBOX_CORE_TLS_SESSION_CACHE_H
#define TLSBOX_CORE_TLS_SESSION_CACHE_H

#include <stddef.h>
#include <time.h>

#include <gnutls/gnutls.h>

struct tls_session_cache;

/* @p max_entries >= 1; entries older than @p lifetime_s are not returned. */
struct tls_session_cache *tls_session_cache_new(size_t max_entries, unsigned lifetime_s);
void tls_session_cache_free(struct tls_session_cache *c);
/* Attach to a server session (gnutls_db_set_* with @p c as the pointer). */
void tls_session_cache_attach(struct tls_session_cache *c, gnutls_session_t session);
size_t tls_session_cache_count(struct tls_session_cache *c);

/* The gnutls_db_* callbacks, exposed for tests. */
int tls_session_cache_store(void *ptr, gnutls_datum_t key, gnutls_datum_t data);
gnutls_datum_t tls_session_cache_retrieve(void *ptr, gnutls_datum_t key);
int tls_session_cache_remove(void *ptr, gnutls_datum_t key);

#endif
