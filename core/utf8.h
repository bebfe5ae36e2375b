/* UTF-8 the way JSON needs it.  jansson refuses a string that is not valid
 * UTF-8 (json_string() and json_pack() return NULL), so text cut to a
 * length must be cut between characters, and text from outside (a user name,
 * a URL path, an old store row) needs a fallback that is always valid. */
#ifndef TLSBOX_CORE_UTF8_H
#define TLSBOX_CORE_UTF8_H

#include <stddef.h>

/*
 * Length to keep of the @p len bytes at @p s so that it is at most @p max
 * bytes and does not end inside a multi-byte character: @p len when it fits,
 * else @p max moved back to the start of the character it would split.
 */
size_t utf8_clip(const char *s, size_t len, size_t max);

/*
 * A copy of the @p len bytes at @p s that is valid UTF-8 (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF): each byte that does
 * not start a valid character becomes U+FFFD.  Caller frees; never NULL.
 */
char *utf8_sanitize(const char *s, size_t len);

/* The offset of the first byte at @p s that does not begin a valid UTF-8
 * character (RFC 3629, as utf8_sanitize judges), or @p len when all
 * @p len bytes are valid. */
size_t utf8_invalid_at(const char *s, size_t len);

#endif
