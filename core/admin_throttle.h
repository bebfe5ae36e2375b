/* Login throttling: failures counted per key ("addr:127.0.0.1",
 * "user:admin"); after a few, each attempt must wait longer (backoff), and
 * after admin.lockout_after the key is locked for admin.lockout_seconds.
 * In memory (a restart forgets), bounded table; any thread. */
#ifndef TLSBOX_CORE_ADMIN_THROTTLE_H
#define TLSBOX_CORE_ADMIN_THROTTLE_H

/* 0 when @p key may try now; -EAGAIN (backoff) or -EPERM (locked) with
 * *retry_after seconds. */
int throttle_check(const char *key, int *retry_after);
/* Count a failure; returns 1 when it just locked the key, else 0. */
int throttle_fail(const char *key);
/* Forget @p key's failures (successful login). */
void throttle_clear(const char *key);

#endif
