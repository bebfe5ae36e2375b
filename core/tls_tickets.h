/* Session ticket master keys in the store (table ticket_keys).
 *
 * The newest key encrypts new tickets; the one before it is still accepted
 * until the next rotation, so a ticket issued just before a rotation resumes
 * for one more period.  Keys live in the store so that resumption survives a
 * restart; at most two rows are kept, older ones are deleted with
 * secure_delete on. */
#ifndef TLSBOX_CORE_TLS_TICKETS_H
#define TLSBOX_CORE_TLS_TICKETS_H

#include <stdbool.h>
#include <time.h>

#include <sqlite3.h>

#define TLS_TICKET_KEY_SIZE 64

struct tls_ticket_keys {
    unsigned char current[TLS_TICKET_KEY_SIZE];
    unsigned char previous[TLS_TICKET_KEY_SIZE];
    bool have_previous;
    time_t current_created;
};

/* The two newest keys.  0, -ENOENT (no key stored), -EIO. */
int tls_tickets_load(sqlite3 *db, struct tls_ticket_keys *k);

/*
 * Add a new key when none exists or the newest is at least @p period_s old
 * (or @p force), and keep only the two newest.  *rotated tells whether a key
 * was added.  0 or -EIO with *err.
 */
int tls_tickets_rotate(sqlite3 *db, time_t now, unsigned period_s, bool force, bool *rotated,
                       char **err);

/* Overwrite the key material. */
void tls_tickets_wipe(struct tls_ticket_keys *k);

#endif
