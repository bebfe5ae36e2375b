/*
 * TLS 1.3 application data records sealed here instead of by
 * gnutls_record_send(), with the keys and the sequence number GnuTLS holds
 * (gnutls_record_get_state, as kernel TLS set-up does) and written straight
 * into the connection's ciphertext buffer.  GnuTLS encrypts into a buffer of
 * its own that it allocates per record and then hands to our push function,
 * which copies it: for a 16 KB record that is a malloc, a free and a 16 KB
 * copy, about a tenth of what serving a small file over h2 costs here.
 *
 * GnuTLS stays the record layer of the connection; this only adds records
 * to its stream, so every record must carry the sequence number GnuTLS would
 * have given it, and GnuTLS must count it:
 *  - the sequence number is read from GnuTLS before each record and written
 *    back after it (gnutls_record_set_state), on the connection's worker,
 *    with no other GnuTLS call in between: a nonce is never used twice;
 *  - a KeyUpdate from the peer may ask for ours, which GnuTLS sends before
 *    its next application data record: when the peer's keys change, the next
 *    record goes through gnutls_record_send() (which sends the KeyUpdate);
 *  - GnuTLS updates its own keys after 2^24 records; records sealed here
 *    skip that count, so we ask for a KeyUpdate ourselves (REKEY_AFTER);
 *  - the largest record the peer accepts (record_size_limit) is learnt from
 *    what gnutls_record_send() took of a full chunk: until then every
 *    record goes through GnuTLS.
 * Only TLS 1.3 with AES-GCM or ChaCha20-Poly1305: TLS 1.2 (explicit nonces,
 * other record formats) always goes through GnuTLS.
 */
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>

#include "site.h"

/* Records per key before we update it: under the 2^24.5 that RFC 8446 5.5
 * allows AES-GCM, and before GnuTLS's own count (2^24) would. */
#define REKEY_AFTER (UINT64_C(1) << 23)

static uint64_t rekey_after = REKEY_AFTER;

/* The write key a connection seals with, made on its first record.  The
 * cipher is the session's, fixed at the handshake. */
struct site_rec_key {
    gnutls_aead_cipher_hd_t aead;
    uint8_t len;
    uint8_t key[32]; /* to notice that GnuTLS changed keys (KeyUpdate) */
};

void site_rec_set_rekey_after(uint64_t records)
{
    rekey_after = records ? records : REKEY_AFTER;
}

static void key_free(struct site_rec *r)
{
    if (!r->k)
        return;
    if (r->k->aead)
        gnutls_aead_cipher_deinit(r->k->aead);
    gnutls_memset(r->k, 0, sizeof(*r->k));
    free(r->k);
    r->k = NULL;
}

/* The peer's write IV (our read IV): it changes exactly when the peer's
 * keys do, i.e. after a KeyUpdate from the peer. */
static bool peer_iv(gnutls_session_t s, uint8_t iv[12])
{
    gnutls_datum_t d;
    if (gnutls_record_get_state(s, 1, NULL, &d, NULL, NULL) < 0 || d.size != 12)
        return false;
    memcpy(iv, d.data, 12);
    return true;
}

void site_rec_start(struct site_rec *r, gnutls_session_t s)
{
    gnutls_cipher_algorithm_t alg = gnutls_cipher_get(s);

    if (gnutls_protocol_get_version(s) != GNUTLS_TLS1_3)
        return;
    if (alg != GNUTLS_CIPHER_AES_128_GCM && alg != GNUTLS_CIPHER_AES_256_GCM &&
        alg != GNUTLS_CIPHER_CHACHA20_POLY1305)
        return;
    if (!peer_iv(s, r->peer_iv))
        return;
    r->own = true;
}

void site_rec_free(struct site_rec *r)
{
    key_free(r);
}

static uint64_t seq_get(const uint8_t seq[8])
{
    uint64_t sq = 0;
    for (int i = 0; i < 8; i++)
        sq = sq << 8 | seq[i];
    return sq;
}

int site_rec_wanted(struct site_rec *r, gnutls_session_t s)
{
    uint8_t iv[12], seq[8];

    if (!r->own || !r->max)
        return 0;
    if (!peer_iv(s, iv)) {
        r->own = false;
        return 0;
    }
    if (memcmp(iv, r->peer_iv, 12) != 0) {
        /* The peer updated its keys and may have asked for ours: GnuTLS
         * sends our KeyUpdate before its next record. */
        memcpy(r->peer_iv, iv, 12);
        r->via_gnutls = true;
    }
    if (r->via_gnutls)
        return 0;
    int e = gnutls_record_get_state(s, 0, NULL, NULL, NULL, seq);
    if (e < 0)
        return e;
    if (seq_get(seq) >= rekey_after) {
        /* Pushes the KeyUpdate (our push never says EAGAIN), then GnuTLS
         * switches to the next keys, whose sequence starts at 0.  Here, not
         * in site_rec_seal: the push may move the buffer the record goes to. */
        e = gnutls_session_key_update(s, 0);
        if (e < 0)
            return e;
    }
    return 1;
}

void site_rec_sent_by_gnutls(struct site_rec *r, size_t asked, size_t took)
{
    r->via_gnutls = false;
    /* A full chunk tells the peer's limit: all of it, or as much as fits. */
    if (took < asked || asked >= SITE_REC_PLAIN_MAX)
        r->max = (uint16_t)(took < SITE_REC_PLAIN_MAX ? took : SITE_REC_PLAIN_MAX);
}

/* Our key: GnuTLS's current write key, with its AEAD handle. */
static int key_get(struct site_rec *r, gnutls_session_t s, const gnutls_datum_t *key)
{
    if (r->k && r->k->len == key->size && memcmp(r->k->key, key->data, key->size) == 0)
        return 0;
    if (key->size > sizeof(r->k->key))
        return GNUTLS_E_INTERNAL_ERROR;
    key_free(r);
    r->k = site_xcalloc(1, sizeof(*r->k));
    int e = gnutls_aead_cipher_init(&r->k->aead, gnutls_cipher_get(s), key);
    if (e < 0) {
        r->k->aead = NULL;
        key_free(r);
        return e;
    }
    r->k->len = (uint8_t)key->size;
    memcpy(r->k->key, key->data, key->size);
    return 0;
}

ssize_t site_rec_seal(struct site_rec *r, gnutls_session_t s, void *p, size_t n, bool spare,
                      uint8_t *dst)
{
    static const uint8_t inner_type = 0x17; /* application_data (RFC 8446 5.2) */
    gnutls_datum_t iv, key;
    uint8_t seq[8], nonce[12];
    uint64_t sq;
    size_t clen;
    int e;

    if (n == 0 || n > r->max)
        return GNUTLS_E_INVALID_REQUEST;
    e = gnutls_record_get_state(s, 0, NULL, &iv, &key, seq);
    if (e < 0)
        return e;
    sq = seq_get(seq);
    if (sq >= rekey_after) /* site_rec_wanted updates the key first */
        return GNUTLS_E_INTERNAL_ERROR;
    if (iv.size != sizeof(nonce))
        return GNUTLS_E_INTERNAL_ERROR;
    e = key_get(r, s, &key);
    if (e < 0)
        return e;

    /* The per-record nonce: the write IV XOR the 64-bit sequence number,
     * left-padded (RFC 8446 5.3). */
    memcpy(nonce, iv.data, sizeof(nonce));
    for (int i = 0; i < 8; i++)
        nonce[4 + i] ^= seq[i];
    /* The header, which is also the additional data (RFC 8446 5.2). */
    size_t rec_len = n + 1 + SITE_REC_TAG;
    dst[0] = 0x17;
    dst[1] = 0x03;
    dst[2] = 0x03;
    dst[3] = (uint8_t)(rec_len >> 8);
    dst[4] = (uint8_t)rec_len;
    clen = rec_len;
    if (spare) {
        /* One contiguous plaintext, the inner type borrowed from the byte
         * after it: gnutls_aead_cipher_encrypt() takes the cipher's one-pass
         * AEAD code (on x86-64 AES-GCM, AES-CTR and GHASH stitched), where
         * the scattered gnutls_aead_cipher_encryptv() runs AES-CTR and then
         * GHASH over the ciphertext, about 7% slower for a 16 KB record. */
        uint8_t *q = p, saved = q[n];
        q[n] = inner_type;
        e = gnutls_aead_cipher_encrypt(r->k->aead, nonce, sizeof(nonce), dst, 5, SITE_REC_TAG, q,
                                       n + 1, dst + 5, &clen);
        q[n] = saved;
    } else {
        giovec_t auth = {dst, 5};
        giovec_t in[2] = {{(void *)p, n}, {(void *)&inner_type, 1}};
        e = gnutls_aead_cipher_encryptv(r->k->aead, nonce, sizeof(nonce), &auth, 1, SITE_REC_TAG,
                                        in, 2, dst + 5, &clen);
    }
    if (e < 0)
        return e;
    if (clen != rec_len)
        return GNUTLS_E_INTERNAL_ERROR;
    sq++;
    for (int i = 7; i >= 0; i--, sq >>= 8)
        seq[i] = (uint8_t)sq;
    e = gnutls_record_set_state(s, 0, seq);
    if (e < 0)
        return e;
    return (ssize_t)n;
}
