/*
 * Open connections per client address, for site.max_connections_per_ip:
 * an IPv4 address, or the /64 of an IPv6 one (a host gets a whole /64; an
 * IPv4-mapped address counts as its IPv4 address).  Each address has its
 * own exact count; the hash that spreads them over buckets only decides
 * where one is looked for, so two addresses that share a bucket never
 * share a limit.
 */
#ifndef TLSBOX_SITE_IPCOUNT_H
#define TLSBOX_SITE_IPCOUNT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct site_ipcount;
struct site_ipcount_entry;

/* A table of @p nbuckets buckets (at least 1), its hash keyed with @p key:
 * a key the clients do not know, so that none picks addresses that make one
 * bucket's list long.  Freed with site_ipcount_free (which also frees the
 * entries still counted). */
struct site_ipcount *site_ipcount_new(size_t nbuckets, uint64_t key);
void site_ipcount_free(struct site_ipcount *t);

/* Count one connection from @p ss, unless the address already has @p max:
 * 0 and *out set to its entry (NULL for an address family that is not
 * counted: give that NULL back all the same), or -EBUSY and nothing
 * counted.  Any thread. */
int site_ipcount_take(struct site_ipcount *t, const struct sockaddr_storage *ss, int max,
                      struct site_ipcount_entry **out);

/* Uncount a connection counted by site_ipcount_take (@p e may be NULL).
 * Any thread. */
void site_ipcount_put(struct site_ipcount *t, struct site_ipcount_entry *e);

#endif
