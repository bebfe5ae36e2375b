/* Login throttling: failures counted per key ("addr:127.0.0.1",
 * "user:admin"); after a few, each attempt must wait longer (backoff), and
 * after admin.lockout_after the key is locked for admin.lockout_seconds.
 * An attempt is reserved before the password is checked and counted while
 * in flight, so parallel attempts get no more checks than serial ones.
 * In memory (a restart forgets), bounded table; any thread. */
#ifndef TLSBOX_CORE_ADMIN_THROTTLE_H
#define TLSBOX_CORE_ADMIN_THROTTLE_H

enum throttle_outcome {
    THROTTLE_ABORTED,   /* not checked (server error): counts nothing */
    THROTTLE_FAILED,    /* wrong user name or password */
    THROTTLE_SUCCEEDED, /* logged in: forget the keys' failures */
};

/* The throttle key of client address @p source (text, as peer_address
 * gives it): "addr:192.0.2.7", but an IPv6 address counts by its /64
 * ("addr:2001:db8:1:2::/64"), the block one host or one LAN gets, so that
 * rotating through it gives no more attempts.  Caller frees. */
char *throttle_addr_key(const char *source);

/* Reserve one attempt for each of the @p n keys, all or none.  0 when they
 * may try now; else *retry_after seconds and -EPERM (a key is locked),
 * -EAGAIN (a key backs off, or attempts in flight would make it back off
 * if they failed) or -EBUSY (no room in the table: every slot holds a lock,
 * a backoff or an attempt in flight, and none of them may be forgotten). */
int throttle_begin(const char *const keys[], int n, int *retry_after);
/* End the attempt throttle_begin reserved for the same @p keys.  Returns
 * the keys this failure just locked, bit i for keys[i]. */
unsigned throttle_end(const char *const keys[], int n, enum throttle_outcome outcome);

#endif
