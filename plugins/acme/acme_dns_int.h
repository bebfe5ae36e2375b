/*
 * What the three files of the dns-01 client share; not for use outside them.
 *
 *   acme_dns_wire.c  domain names in wire form, writing and reading messages,
 *                    walking an answer, RCODE names
 *   acme_dns_tsig.c  TSIG (RFC 8945): the key, signing a request, verifying
 *                    an answer
 *   acme_dns.c       the server, the transport, and the public calls of
 *                    acme_dns.h
 *
 * Threading: like acme_dns.h, no globals and no state between calls; every
 * function here only touches what it is handed.
 *
 * Errors: a function that takes `char **why` sets *why to a malloc'd message
 * (owned by the caller, free()) exactly when it returns a negative errno, and
 * leaves it untouched otherwise.  The message never names a secret.
 */
#ifndef TLSBOX_PLUGINS_ACME_DNS_INT_H
#define TLSBOX_PLUGINS_ACME_DNS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugins/acme/acme_dns.h"

#define DNS_NAME_MAX 255
#define DNS_TYPE_TSIG 250
/* Far above any real key (tsig-keygen -a hmac-sha512 makes 64 bytes). */
#define TSIG_SECRET_MAX 512
#define TSIG_MAC_MAX 64

/* ---- acme_dns_wire.c: names ---------------------------------------------- */

/*
 * Whether the wire names @p a (@p alen bytes) and @p b (@p blen bytes) are
 * equal, ignoring ASCII case.  Both are borrowed.
 */
bool acme_dns_name_eq(const unsigned char *a, size_t alen, const unsigned char *b, size_t blen);

/* Lowercase the ASCII letters of the wire name @p w (@p len bytes) in place. */
void acme_dns_name_lower(unsigned char *w, size_t len);

/*
 * Whether the wire name @p name (@p len bytes) is the wire name @p zone
 * (@p zlen bytes) or a name below it, at a label boundary, ignoring ASCII
 * case.  Both are borrowed.
 */
bool acme_dns_name_under(const unsigned char *name, size_t len, const unsigned char *zone,
                         size_t zlen);

/* ---- acme_dns_wire.c: writing messages ------------------------------------- */

/*
 * A message being written: @p len bytes at @p p, room for @p cap.  Start
 * from {0}; the writers grow @p p (aborting when out of memory, so they
 * cannot fail) and the owner free()s it.
 */
struct dns_w {
    unsigned char *p;
    size_t len, cap;
};

/* Append @p n bytes of @p data (borrowed; nothing when @p n is 0). */
void acme_dns_w_put(struct dns_w *w, const void *data, size_t n);
/* Append @p v in network byte order: 2, 4 or 6 bytes (the TSIG time). */
void acme_dns_w_u16(struct dns_w *w, unsigned v);
void acme_dns_w_u32(struct dns_w *w, uint32_t v);
void acme_dns_w_u48(struct dns_w *w, uint64_t v);
/* Append the wire name @p name (@p len bytes, at most DNS_NAME_MAX), lowercased. */
void acme_dns_w_name_lower(struct dns_w *w, const unsigned char *name, size_t len);
/*
 * Append a 12-byte header: ID @p id, opcode @p opcode and no flag (so RD=0),
 * then the counts of the first three sections; the fourth count is 0
 * (acme_dns_tsig_sign() counts its RR there).
 */
void acme_dns_w_header(struct dns_w *w, uint16_t id, unsigned opcode, uint16_t count1,
                       uint16_t count2, uint16_t count3);

/* The 16-bit network-order number at @p p (2 bytes, unchecked). */
uint16_t acme_dns_get_u16(const unsigned char *p);
/* Store @p v as a 16-bit network-order number at @p p (2 bytes, unchecked). */
void acme_dns_set_u16(unsigned char *p, unsigned v);

/* ---- acme_dns_wire.c: reading messages ------------------------------------- */

/*
 * A bounds-checked reader of the @p len bytes at @p m (borrowed), at offset
 * @p pos.  Every read checks the length and fails with -EPROTO when the
 * bytes are not there; after a failure @p pos is not meaningful.
 */
struct dns_r {
    const unsigned char *m;
    size_t len, pos;
};

/* Read a 48-bit network-order number (the TSIG time) into *v: 0 or -EPROTO. */
int acme_dns_r_u48(struct dns_r *r, uint64_t *v);

/* One resource record, as acme_dns_answer_walk() hands it over. */
struct dns_rr {
    unsigned char owner[DNS_NAME_MAX];
    size_t owner_len;
    uint16_t type, rclass;
    uint32_t ttl;
    const unsigned char *rdata;
    uint16_t rdlen;
    size_t start;             /* offset of the RR in the message */
    const unsigned char *msg; /* the whole message, which names in rdata point into */
    size_t msg_len;
};

/*
 * Expand the domain name that is the whole rdata of @p rr (a CNAME's; its
 * compression pointers may point anywhere in rr->msg) into @p out,
 * uncompressed.  Returns 0, or -EPROTO when the name is malformed or does
 * not end where the rdata does.
 */
int acme_dns_rdata_name(const struct dns_rr *rr, unsigned char out[DNS_NAME_MAX], size_t *out_len);

/*
 * The wire name @p w (@p len bytes) as text into @p out: labels joined by
 * dots, no trailing dot ("." for the root).  Returns 0, -EINVAL for a label
 * that text without escapes cannot carry (a dot, a backslash, a space or a
 * byte outside printable ASCII), or -ENOSPC when @p cap is too small.
 */
int acme_dns_name_text(const unsigned char *w, size_t len, char *out, size_t cap);

/* ---- acme_dns_wire.c: answers ---------------------------------------------- */

/* The TSIG RR of an answer (RFC 8945 4.2), pointing into the message. */
struct tsig_rr {
    unsigned char name[DNS_NAME_MAX], alg[DNS_NAME_MAX];
    size_t name_len, alg_len;
    uint16_t rclass;
    uint64_t time_signed;
    uint16_t fudge, mac_len, orig_id, error, other_len;
    const unsigned char *mac, *other;
};

/* An answer as acme_dns_answer_walk() found it; points into the message. */
struct dns_answer {
    const unsigned char *m;
    size_t len;
    uint16_t id, flags, counts[4];
    bool has_tsig;
    size_t tsig_at; /* offset of the TSIG RR: the signed part ends there */
    struct tsig_rr tsig;
};

/*
 * Called by acme_dns_answer_walk() for each RR after the question, with the
 * section it is in (1 answer or prerequisite, 2 authority or update, 3
 * additional); @p rr and what it points to are valid for the call only.
 */
typedef void dns_rr_fn(void *arg, unsigned section, const struct dns_rr *rr);

/* The RCODE of the header (the 4 low bits; a TSIG error is in a->tsig.error). */
unsigned acme_dns_answer_rcode(const struct dns_answer *a);

/*
 * Check the structure of the whole answer @p m (@p len bytes, borrowed: *a
 * points into it afterwards), fill *a, find its TSIG RR (which must be the
 * last RR, RFC 8945 5.1), and hand every RR after the question, in order,
 * to @p fn (NULL for none) with @p arg and its section.  Returns 0, or
 * -EPROTO with *why saying where the answer is malformed (then *a is only
 * partly filled).  Neither the ID, the opcode nor the RCODE is checked here.
 */
int acme_dns_answer_walk(struct dns_answer *a, const unsigned char *m, size_t len, dns_rr_fn *fn,
                         void *arg, char **why);

/*
 * The name of an RCODE or TSIG error ("NOERROR", "REFUSED", "BADKEY", ...),
 * or "RCODE n" for one without a name; malloc'd, the caller free()s it.
 */
char *acme_dns_rcode_text(unsigned rcode);

/*
 * For an answer whose RCODE is not NOERROR: sets *why to the RCODE's name
 * and returns -EACCES for REFUSED and NOTAUTH, -EREMOTEIO for any other.
 */
int acme_dns_rcode_error(unsigned rcode, char **why);

/*
 * Whether *a is an answer (QR) to our message: ID @p id and opcode
 * @p opcode.  Returns 0, or -EPROTO with *why set.
 */
int acme_dns_answer_matches(const struct dns_answer *a, uint16_t id, unsigned opcode, char **why);

/* ---- acme_dns_tsig.c ------------------------------------------------------- */

/* An algorithm: its name, its MAC and the MAC's length (opaque here). */
struct tsig_alg;

/* A TSIG key ready to sign with; holds the decoded secret, so wipe it. */
struct tsig_key {
    const struct tsig_alg *alg;
    unsigned char name[DNS_NAME_MAX], alg_name[DNS_NAME_MAX]; /* canonical wire form */
    size_t name_len, alg_name_len;
    unsigned char secret[TSIG_SECRET_MAX];
    size_t secret_len;
};

/*
 * Decode the key of @p c (key_name, key_alg, key_secret; borrowed) into
 * @p k.  Returns 0, or -EINVAL with *why set (an unknown algorithm, a key
 * name that is not a domain name, a secret that is not base64 of at most
 * TSIG_SECRET_MAX bytes).  Either way, *k may hold secret bytes: the caller
 * passes it to acme_dns_tsig_key_wipe() once done.
 */
int acme_dns_tsig_key_load(const struct acme_dns_conf *c, struct tsig_key *k, char **why);

/* Wipe the secret in @p k (all of the buffer, whatever was loaded). */
void acme_dns_tsig_key_wipe(struct tsig_key *k);

/*
 * Sign the message in @p msg with @p k (RFC 8945 4.3.3), signed now with a
 * fudge of 300 s: append the TSIG RR and count it in ARCOUNT.  The MAC also
 * goes to @p mac (TSIG_MAC_MAX bytes of room), for acme_dns_tsig_verify() to
 * check the answer with.  Returns 0, or -EIO with *why set when the MAC
 * cannot be computed (then @p msg is as it was).
 */
int acme_dns_tsig_sign(const struct tsig_key *k, struct dns_w *msg, unsigned char *mac, char **why);

/*
 * For an answer whose TSIG RR carries an error (a->tsig.error not 0): the
 * server did not accept our signature, so the answer cannot be verified.
 * Sets *why to the RCODE and the TSIG error by name (with the clock skew the
 * server reported, for BADTIME) and returns -EACCES.
 */
int acme_dns_tsig_error(const struct dns_answer *a, char **why);

/*
 * Verify the TSIG RR of the answer *a, which must have one (a->has_tsig),
 * against @p k and the MAC of our request @p req_mac (k's MAC length), and
 * check its time against this host's clock within its fudge.  Returns 0, or
 * -EPROTO (another key or algorithm, a MAC of another length or that does
 * not verify, a time out of bounds) or -EIO (the MAC cannot be computed)
 * with *why set.
 */
int acme_dns_tsig_verify(const struct tsig_key *k, const unsigned char *req_mac,
                         const struct dns_answer *a, char **why);

#endif
