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
 *
 * AES-GCM itself is the largest cost of serving a file here.  On x86-64,
 * when the build has intel-ipsec-mb (Debian's libipsec-mb, amd64 only) and
 * the CPU has AES-NI, records are sealed with it rather than with GnuTLS's
 * AEAD: for a 16 KB record it took 0.7 us where GnuTLS 3.7.9 took 4.4 on a
 * Zen 5 core (VAES, AVX-512), and 2.6 us on the same core with its SSE code.
 * GnuTLS keeps the handshake, the keys, decryption and ChaCha20-Poly1305.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/crypto.h>
#ifdef HAVE_IPSEC_MB
#include <intel-ipsec-mb.h>
#endif

#include "site.h"

/* Records per key before we update it: under the 2^24.5 that RFC 8446 5.5
 * allows AES-GCM, and before GnuTLS's own count (2^24) would. */
#define REKEY_AFTER (UINT64_C(1) << 23)

static uint64_t rekey_after = REKEY_AFTER;

/* The write key a connection seals with, made on its first record and
 * dropped while the connection is idle.  The cipher is the session's, fixed
 * at the handshake. */
struct site_rec_key {
#ifdef HAVE_IPSEC_MB
    struct gcm_key_data gcm; /* AES-GCM through intel-ipsec-mb: round keys, GHASH powers */
    bool imb;                /* gcm is in use, not aead */
#endif
    gnutls_aead_cipher_hd_t aead;
    uint8_t len;
    uint8_t key[32]; /* to notice that GnuTLS changed keys (KeyUpdate) */
};

void site_rec_set_rekey_after(uint64_t records)
{
    rekey_after = records ? records : REKEY_AFTER;
}

#ifdef HAVE_IPSEC_MB
/* One manager for the process: after imb_setup() only its function pointers
 * are read, which any thread may do at once (the GCM calls keep their state
 * in the caller's context). */
static IMB_MGR *imb;
static IMB_ARCH imb_arch;
static bool imb_off; /* tests: GnuTLS for every key made from now on */
static pthread_once_t imb_once = PTHREAD_ONCE_INIT;

static void imb_setup(void)
{
    IMB_MGR *m = alloc_mb_mgr(0);
    if (!m)
        return;
    init_mb_mgr_auto(m, &imb_arch);
    /* Without AES-NI (IMB_ARCH_NOAESNI) it was not measured: GnuTLS keeps it. */
    if (imb_get_errno(m) != 0 || imb_arch < IMB_ARCH_SSE) {
        free_mb_mgr(m);
        return;
    }
    imb = m;
}

static bool imb_ready(void)
{
    pthread_once(&imb_once, imb_setup);
    return imb != NULL;
}
#endif

void site_rec_set_fast_aes(bool on)
{
#ifdef HAVE_IPSEC_MB
    imb_off = !on;
#else
    (void)on;
#endif
}

const char *site_rec_aes_impl(void)
{
#ifdef HAVE_IPSEC_MB
    if (!imb_off && imb_ready())
        return imb_arch == IMB_ARCH_AVX512 ? "intel-ipsec-mb (AVX-512)"
               : imb_arch == IMB_ARCH_AVX2 ? "intel-ipsec-mb (AVX2)"
               : imb_arch == IMB_ARCH_AVX  ? "intel-ipsec-mb (AVX)"
                                           : "intel-ipsec-mb (SSE)";
#endif
    return "GnuTLS";
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
    /* Aligned for intel-ipsec-mb's key data; a multiple of it in size. */
    size_t sz = (sizeof(*r->k) + 63) & ~(size_t)63;
    r->k = aligned_alloc(64, sz);
    if (!r->k)
        return GNUTLS_E_MEMORY_ERROR;
    memset(r->k, 0, sizeof(*r->k));
    r->k->len = (uint8_t)key->size;
    memcpy(r->k->key, key->data, key->size);
#ifdef HAVE_IPSEC_MB
    gnutls_cipher_algorithm_t alg = gnutls_cipher_get(s);
    if (!imb_off && imb_ready() &&
        (alg == GNUTLS_CIPHER_AES_128_GCM || alg == GNUTLS_CIPHER_AES_256_GCM) &&
        key->size == (alg == GNUTLS_CIPHER_AES_128_GCM ? 16u : 32u)) {
        if (key->size == 16)
            IMB_AES128_GCM_PRE(imb, key->data, &r->k->gcm);
        else
            IMB_AES256_GCM_PRE(imb, key->data, &r->k->gcm);
        r->k->imb = true;
        return 0;
    }
#endif
    int e = gnutls_aead_cipher_init(&r->k->aead, gnutls_cipher_get(s), key);
    if (e < 0) {
        r->k->aead = NULL;
        key_free(r);
        return e;
    }
    return 0;
}

#ifdef HAVE_IPSEC_MB
/* seal() with intel-ipsec-mb: the same record, byte for byte, as GnuTLS's
 * AEAD makes (the record test checks it against a GnuTLS client).  The tag
 * goes right after the ciphertext. */
static void imb_seal(struct site_rec_key *k, const uint8_t nonce[12], uint8_t *dst, uint8_t *p,
                     size_t n, bool spare, uint8_t inner_type)
{
    struct gcm_context_data ctx;
    uint8_t *tag = dst + 5 + n + 1;
    bool k128 = k->len == 16;

    if (spare) {
        uint8_t saved = p[n];
        p[n] = inner_type;
        if (k128)
            IMB_AES128_GCM_ENC(imb, &k->gcm, &ctx, dst + 5, p, n + 1, nonce, dst, 5, tag,
                               SITE_REC_TAG);
        else
            IMB_AES256_GCM_ENC(imb, &k->gcm, &ctx, dst + 5, p, n + 1, nonce, dst, 5, tag,
                               SITE_REC_TAG);
        p[n] = saved;
    } else if (k128) {
        IMB_AES128_GCM_INIT(imb, &k->gcm, &ctx, nonce, dst, 5);
        IMB_AES128_GCM_ENC_UPDATE(imb, &k->gcm, &ctx, dst + 5, p, n);
        IMB_AES128_GCM_ENC_UPDATE(imb, &k->gcm, &ctx, dst + 5 + n, &inner_type, 1);
        IMB_AES128_GCM_ENC_FINALIZE(imb, &k->gcm, &ctx, tag, SITE_REC_TAG);
    } else {
        IMB_AES256_GCM_INIT(imb, &k->gcm, &ctx, nonce, dst, 5);
        IMB_AES256_GCM_ENC_UPDATE(imb, &k->gcm, &ctx, dst + 5, p, n);
        IMB_AES256_GCM_ENC_UPDATE(imb, &k->gcm, &ctx, dst + 5 + n, &inner_type, 1);
        IMB_AES256_GCM_ENC_FINALIZE(imb, &k->gcm, &ctx, tag, SITE_REC_TAG);
    }
    /* The context holds a block of key stream. */
    gnutls_memset(&ctx, 0, sizeof(ctx));
}
#endif

/* Encrypt the record whose header is at dst[0..4]: its plaintext @p p
 * (n bytes) and inner type, then the tag, into dst + 5 on.  *clen: the
 * record's length after the header. */
static int seal(struct site_rec_key *k, const uint8_t nonce[12], uint8_t *dst, void *p, size_t n,
                bool spare, size_t *clen)
{
    static const uint8_t inner_type = 0x17; /* application_data (RFC 8446 5.2) */
    int e;

#ifdef HAVE_IPSEC_MB
    if (k->imb) {
        imb_seal(k, nonce, dst, p, n, spare, inner_type);
        return 0;
    }
#endif
    if (spare) {
        /* One contiguous plaintext, the inner type borrowed from the byte
         * after it: gnutls_aead_cipher_encrypt() takes the cipher's one-pass
         * AEAD code (on x86-64 AES-GCM, AES-CTR and GHASH stitched), where
         * the scattered gnutls_aead_cipher_encryptv() runs AES-CTR and then
         * GHASH over the ciphertext, about 7% slower for a 16 KB record. */
        uint8_t *q = p, saved = q[n];
        q[n] = inner_type;
        e = gnutls_aead_cipher_encrypt(k->aead, nonce, 12, dst, 5, SITE_REC_TAG, q, n + 1, dst + 5,
                                       clen);
        q[n] = saved;
    } else {
        giovec_t auth = {dst, 5};
        giovec_t in[2] = {{(void *)p, n}, {(void *)&inner_type, 1}};
        e = gnutls_aead_cipher_encryptv(k->aead, nonce, 12, &auth, 1, SITE_REC_TAG, in, 2, dst + 5,
                                        clen);
    }
    return e;
}

ssize_t site_rec_seal(struct site_rec *r, gnutls_session_t s, void *p, size_t n, bool spare,
                      uint8_t *dst)
{
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
    e = seal(r->k, nonce, dst, p, n, spare, &clen);
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
