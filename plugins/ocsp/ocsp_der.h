/* A small DER reader for what the ocsp plugin reads by hand (a CRL, whose
 * entries GnuTLS would decode into a tree of about 3 KB each: 300 MB for a
 * 100,000-entry CRL on a Raspberry Pi).  Every element is checked to fit in
 * its container; nothing is copied or allocated.  Pure; any thread. */
#ifndef TLSBOX_PLUGINS_OCSP_DER_H
#define TLSBOX_PLUGINS_OCSP_DER_H

#include <stddef.h>
#include <stdint.h>

/* One element: its tag, where it starts (tag byte) and its content. */
struct der {
    unsigned tag;
    const unsigned char *tlv;
    const unsigned char *val;
    size_t len;
};

#define DER_INTEGER 0x02
#define DER_BIT_STRING 0x03
#define DER_OCTET_STRING 0x04
#define DER_OID 0x06
#define DER_ENUMERATED 0x0a
#define DER_UTC_TIME 0x17
#define DER_GENERALIZED_TIME 0x18
#define DER_SEQUENCE 0x30
#define DER_BOOLEAN 0x01

/* Read the element at *p (before @p end) into @p d and move *p past it.
 * 0, or -1 when it is cut short, its length is indefinite or longer than
 * four bytes, or it does not fit before @p end. */
int der_next(const unsigned char **p, const unsigned char *end, struct der *d);
/* The end of element @p d's encoding (its tag plus header plus content). */
static inline const unsigned char *der_end(const struct der *d)
{
    return d->val + d->len;
}
/* A UTCTime (years 1950-2049) or GeneralizedTime in UTC ("Z", whole
 * seconds) as seconds since 1970, in 64 bits.  0, or -1 for another form. */
int der_time(const struct der *d, int64_t *out);
/* An OBJECT IDENTIFIER as dotted text ("2.5.29.28") into @p out (@p n
 * bytes).  0, or -1 when malformed or too long. */
int der_oid_text(const struct der *d, char *out, size_t n);

#endif
