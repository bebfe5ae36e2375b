#include "core/utf8.h"

#include <string.h>

#include "core/xalloc.h"

static int is_cont(unsigned char c)
{
    return (c & 0xc0) == 0x80;
}

/* Length (1-4) of the valid character at @p s, or 0 when it is not one. */
static size_t char_len(const unsigned char *s, size_t len)
{
    unsigned char c = s[0];
    unsigned char lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    size_t n;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4;
    else
        return 0;
    if (c == 0xe0)
        lo = 0xa0; /* overlong */
    else if (c == 0xed)
        hi = 0x9f; /* surrogates */
    else if (c == 0xf0)
        lo = 0x90; /* overlong */
    else if (c == 0xf4)
        hi = 0x8f; /* above U+10FFFF */
    if (len < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (!is_cont(s[i]))
            return 0;
    return n;
}

size_t utf8_clip(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    const unsigned char *u = (const unsigned char *)s;
    size_t n = max;
    /* s[n] is the first byte dropped: while it continues a character, that
     * character started earlier and must go too.  A character is at most 4
     * bytes; a longer run of continuation bytes is invalid anyway. */
    for (int k = 0; k < 3 && n > 0 && is_cont(u[n]); k++)
        n--;
    return is_cont(u[n]) ? max : n;
}

size_t utf8_invalid_at(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        size_t n = char_len(u + i, len - i);
        if (n == 0)
            return i;
        i += n;
    }
    return len;
}

char *utf8_sanitize(const char *s, size_t len)
{
    const unsigned char *u = (const unsigned char *)s;
    char *out = xmalloc(len * 3 + 1), *o = out;
    for (size_t i = 0; i < len;) {
        size_t n = char_len(u + i, len - i);
        if (n == 0) {
            memcpy(o, "\xef\xbf\xbd", 3); /* U+FFFD REPLACEMENT CHARACTER */
            o += 3;
            i++;
        } else {
            memcpy(o, s + i, n);
            o += n;
            i += n;
        }
    }
    *o = '\0';
    return out;
}
