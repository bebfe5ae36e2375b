/* Session ticket keys.
 *
 * GnuTLS 3.7.9 takes one 64-byte master key per session and derives the key
 * that actually encrypts tickets from it and a time step:
 * K(T) = SHA3-512(T || master), T = now / (3 * expire_time), accepting K(T)
 * and K(T - 1) (checked in tests/unit/core/tls_tickets_test.c).  So:
 *
 *  - the rotation period R of the policy (ticket_rotation_hours, default 12)
 *    is GnuTLS's step: each session gets expire_time = R / 3, the encrypting
 *    key changes every R hours, and a ticket from the previous period still
 *    resumes (a ticket lives R / 3 hours);
 *  - the master key is stored (table ticket_keys), so resumption survives a
 *    restart and the steps line up across restarts (T is absolute time);
 *  - the master itself is replaced every TLS_TICKET_MASTER_HOURS, which
 *    bounds what a stolen store reveals.  Tickets issued under the previous
 *    master still resume: a ClientHello hook (tls_bundle.c) finds the ticket,
 *    recognises the previous master's key name and gives the session that
 *    master instead (one key per session is all GnuTLS takes).  The two
 *    newest rows are kept, older ones deleted with secure_delete on.
 */
#ifndef TLSBOX_CORE_TLS_TICKETS_H
#define TLSBOX_CORE_TLS_TICKETS_H

#include <stdbool.h>
#include <time.h>

#include <sqlite3.h>

#define TLS_TICKET_KEY_SIZE 64
#define TLS_TICKET_MASTER_HOURS (7 * 24)

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

/*
 * The session ticket a ClientHello body (@p msg, @p n bytes, as a GnuTLS
 * handshake hook gets it) offers: the first pre_shared_key identity (TLS
 * 1.3) or the session_ticket extension (TLS 1.2).  0 with *ticket pointing
 * into @p msg, -ENOENT when there is none, -EINVAL when the message is short.
 */
int tls_tickets_in_client_hello(const unsigned char *msg, size_t n, const unsigned char **ticket,
                                size_t *len);

/*
 * Whether a ticket (at least 16 bytes: its key name first) was issued under
 * @p master in the time step of @p now or the one before, for sessions whose
 * expire_time is @p lifetime: how GnuTLS 3.7.9 names its keys (above).
 */
bool tls_tickets_issued_under(const unsigned char master[TLS_TICKET_KEY_SIZE], unsigned lifetime,
                              time_t now, const unsigned char *ticket, size_t len);

#endif
