/* Login throttling: failures counted per key ("addr:127.0.0.1",
 * "user:admin"); after a few, each attempt must wait longer (backoff), and
 * after admin.lockout_after the key is locked for admin.lockout_seconds.
 * An attempt is reserved before the password is checked and counted while
 * in flight, so parallel attempts get no more checks than serial ones.
 * In memory (a restart forgets), bounded table; any thread.
 *
 * Filling the table must not lock out other clients.  It holds 256 keys,
 * and a home gets an IPv6 /56, 256 /64s: failing from each of them filled
 * it with locks, and every login, anyone's, got 429 until they ended.  Two
 * defences:
 * - An IPv6 address counts under its /64, /56 and /48 at once, the /56
 *   with 4 and the /48 with 16 times the /64's free failures and lockout
 *   (a few hosts or LANs share them).  A /56 backs off and locks as one
 *   key in one slot, so its /64s pin few slots: a /64 needs 3 failures to
 *   hold a backoff, and the /56 allows 4 x admin.lockout_after in all.
 *   nginx's limit_req counts by whatever key it is given; a host's prefix
 *   is the key here, at three lengths, since one length does not fit both
 *   a home (/56) and a site (/48).
 * - An IPv4 address counts under its /24 as well, with 16 times its limits
 *   (as a /48: the block one site or hosting customer holds).  Else 256
 *   addresses of a /24, each within its own limits, gave 256 x
 *   admin.lockout_after guesses (at as many names) per lockout, and as
 *   many PBKDF2 runs, without one backoff.
 * - When the table is full anyway (addresses of many /24s), a new key forgets
 *   the entry least harmful to lose rather than refuse: one that restricts
 *   nothing, else the address backoff or lock that ends soonest, else a
 *   name's backoff.  Never a name's lock (the guard of a password against
 *   guessing from everywhere; a known user's count and lock are also in
 *   the store) nor an attempt in flight.  Forgetting an address's entry
 *   gives that address a fresh count; its names' counts still hold.
 *   Only a table of names' locks and attempts in flight answers -EBUSY. */
#ifndef TLSBOX_CORE_ADMIN_THROTTLE_H
#define TLSBOX_CORE_ADMIN_THROTTLE_H

enum throttle_outcome {
    THROTTLE_ABORTED,   /* not checked (server error): counts nothing */
    THROTTLE_FAILED,    /* wrong user name or password */
    THROTTLE_SUCCEEDED, /* logged in: forget the keys' failures */
};

/* The throttle keys of client address @p source (text, as peer_address
 * gives it) into @p keys (caller frees each); returns how many.  IPv4 (also
 * in IPv6 form, ::ffff:192.0.2.7): two, the address and its /24,
 * "addr:192.0.2.7", "addr:192.0.2.0/24".  IPv6: THROTTLE_ADDR_KEYS, its
 * /64 (the block one host or LAN gets, so that rotating through it gives
 * no more attempts), /56 and /48: "addr:2001:db8:1:2::/64",
 * "addr:2001:db8:1::/56", "addr:2001:db8:1::/48".  Not an address: one,
 * "addr:" and @p source. */
#define THROTTLE_ADDR_KEYS 3
int throttle_addr_keys(const char *source, char *keys[THROTTLE_ADDR_KEYS]);

/* Reserve one attempt for each of the @p n keys, all or none.  0 when they
 * may try now; else *retry_after seconds and -EPERM (a key is locked),
 * -EAGAIN (a key backs off, or attempts in flight would make it back off
 * if they failed) or -EBUSY (no room in the table: every slot holds a
 * name's lock or an attempt in flight). */
int throttle_begin(const char *const keys[], int n, int *retry_after);
/* End the attempt throttle_begin reserved for the same @p keys.  Returns
 * the keys this failure just locked, bit i for keys[i]. */
unsigned throttle_end(const char *const keys[], int n, enum throttle_outcome outcome);
/* Forget the failures, backoff and lock of @p key, as a success does (an
 * attempt in flight keeps its reservation): a new password, whose guesses
 * start from none. */
void throttle_forget(const char *key);

#endif
