/*
 * The crypto ceiling of this machine, per core (the calling thread, pinned
 * off the site workers when it can be):
 *  - signatures/s: ECDSA P-256, RSA-2048 (PSS, as TLS 1.3 signs), Ed25519;
 *  - key exchanges/s: X25519, P-256, ffdhe2048, measured as the server's
 *    CPU time of TLS 1.3 PSK-(EC)DHE handshakes in memory (no certificate,
 *    so each one costs one key exchange plus the small key-schedule work);
 *  - AES-128-GCM and ChaCha20-Poly1305 throughput on 16 KiB records;
 * and from those the most full handshakes/s one core can do for each
 * signature and group: 1 / (1/signatures + 1/key exchanges).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/abstract.h>
#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>

#include "plugins/bench/bench.h"
#include "plugins/bench/bench_pin.h"
#include "plugins/bench/bench_util.h"

static const struct {
    const char *name;
    gnutls_pk_algorithm_t pk;
    unsigned bits;
    gnutls_sign_algorithm_t sign;
} sig_algs[] = {
    {"ecdsa-p256", GNUTLS_PK_ECDSA, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_SECP256R1),
     GNUTLS_SIGN_ECDSA_SECP256R1_SHA256},
    {"rsa-2048", GNUTLS_PK_RSA, 2048, GNUTLS_SIGN_RSA_PSS_RSAE_SHA256},
    {"ed25519", GNUTLS_PK_EDDSA_ED25519, GNUTLS_CURVE_TO_BITS(GNUTLS_ECC_CURVE_ED25519),
     GNUTLS_SIGN_EDDSA_ED25519},
};

static const struct {
    const char *name, *prio;
} kx_groups[] = {
    {"x25519", "GROUP-X25519"},
    {"p256", "GROUP-SECP256R1"},
    {"ffdhe2048", "GROUP-FFDHE2048"},
};

static const struct {
    const char *name;
    gnutls_cipher_algorithm_t c;
} ciphers[] = {
    {"aes-128-gcm", GNUTLS_CIPHER_AES_128_GCM},
    {"chacha20-poly1305", GNUTLS_CIPHER_CHACHA20_POLY1305},
};

/* Signatures per second of one algorithm; < 0 on error. */
static double measure_sign(struct bench_order *ord, int i, long ms)
{
    gnutls_privkey_t key;
    if (gnutls_privkey_init(&key) < 0)
        return -1;
    if (gnutls_privkey_generate2(key, sig_algs[i].pk, sig_algs[i].bits, 0, NULL, 0) < 0) {
        gnutls_privkey_deinit(key);
        return -1;
    }
    unsigned char msg[128];
    memset(msg, 0x5a, sizeof(msg));
    gnutls_datum_t data = {msg, sizeof(msg)};
    long n = 0;
    double t0 = bench_thread_cpu_s(), t = 0;
    do {
        gnutls_datum_t sig;
        if (gnutls_privkey_sign_data2(key, sig_algs[i].sign, 0, &data, &sig) < 0) {
            n = -1;
            break;
        }
        gnutls_free(sig.data);
        n++;
        t = bench_thread_cpu_s() - t0;
    } while (t * 1000 < (double)ms && !bench_job_cancelled(ord));
    gnutls_privkey_deinit(key);
    return n > 0 && t > 0 ? (double)n / t : -1;
}

/* In-memory transport between the two sessions of a handshake pair. */
struct pipe_buf {
    unsigned char data[65536];
    size_t len;
};

struct mem_end {
    struct pipe_buf *in, *out;
    gnutls_session_t s;
};

static ssize_t mem_push(gnutls_transport_ptr_t p, const void *data, size_t len)
{
    struct mem_end *e = p;
    if (len > sizeof(e->out->data) - e->out->len)
        len = sizeof(e->out->data) - e->out->len;
    memcpy(e->out->data + e->out->len, data, len);
    e->out->len += len;
    return (ssize_t)len;
}

static ssize_t mem_pull(gnutls_transport_ptr_t p, void *data, size_t len)
{
    struct mem_end *e = p;
    if (e->in->len == 0) {
        gnutls_transport_set_errno(e->s, EAGAIN);
        return -1;
    }
    if (len > e->in->len)
        len = e->in->len;
    memcpy(data, e->in->data, len);
    memmove(e->in->data, e->in->data + len, e->in->len - len);
    e->in->len -= len;
    return (ssize_t)len;
}

static int psk_server_key(gnutls_session_t s, const char *user, gnutls_datum_t *key)
{
    (void)s;
    (void)user;
    key->data = gnutls_malloc(32);
    if (!key->data)
        return -1;
    memset(key->data, 0x42, 32);
    key->size = 32;
    return 0;
}

/* One PSK-(EC)DHE handshake; adds the server's CPU seconds to *server_s. */
static int kx_once(const char *prio, gnutls_psk_client_credentials_t cc,
                   gnutls_psk_server_credentials_t sc, double *server_s)
{
    struct pipe_buf *c2s = tlsbox_xcalloc(1, sizeof(*c2s)), *s2c = tlsbox_xcalloc(1, sizeof(*s2c));
    struct mem_end ce = {.in = s2c, .out = c2s}, se = {.in = c2s, .out = s2c};
    int ret = -EIO, rc = 1, rs = 1;
    gnutls_init(&ce.s, GNUTLS_CLIENT | GNUTLS_NONBLOCK);
    gnutls_init(&se.s, GNUTLS_SERVER | GNUTLS_NONBLOCK);
    struct mem_end *ends[2] = {&ce, &se};
    for (int k = 0; k < 2; k++) {
        gnutls_priority_set_direct(ends[k]->s, prio, NULL);
        gnutls_transport_set_ptr(ends[k]->s, ends[k]);
        gnutls_transport_set_push_function(ends[k]->s, mem_push);
        gnutls_transport_set_pull_function(ends[k]->s, mem_pull);
    }
    gnutls_credentials_set(ce.s, GNUTLS_CRD_PSK, cc);
    gnutls_credentials_set(se.s, GNUTLS_CRD_PSK, sc);
    for (int round = 0; round < 20 && (rc != 0 || rs != 0); round++) {
        if (rc != 0)
            rc = gnutls_handshake(ce.s);
        if (rs != 0) {
            double t0 = bench_thread_cpu_s();
            rs = gnutls_handshake(se.s);
            *server_s += bench_thread_cpu_s() - t0;
        }
        if ((rc < 0 && gnutls_error_is_fatal(rc)) || (rs < 0 && gnutls_error_is_fatal(rs)))
            break;
    }
    if (rc == 0 && rs == 0)
        ret = 0;
    gnutls_deinit(ce.s);
    gnutls_deinit(se.s);
    free(c2s);
    free(s2c);
    return ret;
}

/* Key exchanges per second (server side) for one group; < 0 on error. */
static double measure_kx(struct bench_order *ord, int i, long ms)
{
    char *prio = bench_xasprintf("NORMAL:-VERS-ALL:+VERS-TLS1.3:-KX-ALL:+ECDHE-PSK:+DHE-PSK:"
                                 "-GROUP-ALL:+%s",
                                 kx_groups[i].prio);
    gnutls_psk_client_credentials_t cc;
    gnutls_psk_server_credentials_t sc;
    unsigned char k[32];
    memset(k, 0x42, sizeof(k));
    gnutls_datum_t key = {k, sizeof(k)};
    gnutls_psk_allocate_client_credentials(&cc);
    gnutls_psk_allocate_server_credentials(&sc);
    gnutls_psk_set_client_credentials(cc, "bench", &key, GNUTLS_PSK_KEY_RAW);
    gnutls_psk_set_server_credentials_function(sc, psk_server_key);
    double server_s = 0, wall0 = bench_thread_cpu_s();
    long n = 0;
    while ((bench_thread_cpu_s() - wall0) * 1000 < (double)ms * 2 && !bench_job_cancelled(ord)) {
        if (kx_once(prio, cc, sc, &server_s) < 0) {
            n = -1;
            break;
        }
        n++;
    }
    gnutls_psk_free_client_credentials(cc);
    gnutls_psk_free_server_credentials(sc);
    free(prio);
    return n > 0 && server_s > 0 ? (double)n / server_s : -1;
}

/* AEAD encryption MB/s on 16 KiB records; < 0 on error. */
static double measure_aead(struct bench_order *ord, int i, long ms)
{
    unsigned char keyb[32], iv[12], *buf = tlsbox_xmalloc(16384 + 16),
                                    *out = tlsbox_xmalloc(16400 + 16);
    memset(keyb, 7, sizeof(keyb));
    memset(iv, 1, sizeof(iv));
    memset(buf, 0xaa, 16384);
    gnutls_datum_t key = {keyb, (unsigned)gnutls_cipher_get_key_size(ciphers[i].c)};
    gnutls_aead_cipher_hd_t h;
    double mbs = -1;
    if (gnutls_aead_cipher_init(&h, ciphers[i].c, &key) == 0) {
        long n = 0;
        double t0 = bench_thread_cpu_s(), t = 0;
        do {
            size_t outlen = 16400 + 16;
            iv[0] = (unsigned char)n;
            if (gnutls_aead_cipher_encrypt(h, iv, sizeof(iv), NULL, 0, 16, buf, 16384, out,
                                           &outlen) < 0)
                break;
            n++;
            t = bench_thread_cpu_s() - t0;
        } while (t * 1000 < (double)ms && !bench_job_cancelled(ord));
        if (t > 0)
            mbs = (double)n * 16384 / t / 1e6;
        gnutls_aead_cipher_deinit(h);
    }
    free(buf);
    free(out);
    return mbs;
}

static json_t *num_or_null(double v)
{
    return v > 0 ? json_real(v) : json_null();
}

/* handshakes_per_core: {"ecdsa-p256+x25519": n, ...}. */
static json_t *combine(json_t *sign, json_t *kx)
{
    json_t *hs = json_object();
    const char *sk, *kk;
    json_t *sv, *kv;
    json_object_foreach(sign, sk, sv)
    {
        json_object_foreach(kx, kk, kv)
        {
            double s = json_number_value(sv), k = json_number_value(kv);
            char *name = bench_xasprintf("%s+%s", sk, kk);
            json_object_set_new(hs, name, num_or_null(s > 0 && k > 0 ? 1 / (1 / s + 1 / k) : 0));
            free(name);
        }
    }
    return hs;
}

json_t *bench_ceiling_measure(struct bench_order *ord, long ms)
{
    struct bench *b = ord->b;
    if (ms <= 0)
        ms = 300;
    struct bench_pin pin;
    bench_pin_begin(&pin, BENCH_PIN_SITE);
    json_t *sign = json_object(), *kx = json_object(), *aead = json_object();
    int steps = 8, step = 0;
    for (size_t i = 0; i < sizeof(sig_algs) / sizeof(sig_algs[0]); i++) {
        bench_job_set_phase(b, sig_algs[i].name, ++step, steps);
        json_object_set_new(sign, sig_algs[i].name, num_or_null(measure_sign(ord, (int)i, ms)));
    }
    for (size_t i = 0; i < sizeof(kx_groups) / sizeof(kx_groups[0]); i++) {
        bench_job_set_phase(b, kx_groups[i].name, ++step, steps);
        json_object_set_new(kx, kx_groups[i].name, num_or_null(measure_kx(ord, (int)i, ms)));
    }
    for (size_t i = 0; i < sizeof(ciphers) / sizeof(ciphers[0]); i++) {
        bench_job_set_phase(b, ciphers[i].name, ++step, steps);
        json_object_set_new(aead, ciphers[i].name, num_or_null(measure_aead(ord, (int)i, ms)));
    }
    json_t *res = json_pack("{s:o,s:o,s:o,s:o,s:o}", "signatures_per_s", sign,
                            "key_exchanges_per_s", kx, "aead_mb_per_s", aead, "handshakes_per_core",
                            combine(sign, kx), "pinning", bench_pin_json(&pin));
    bench_pin_end(&pin);
    if (bench_job_cancelled(ord)) {
        json_decref(res);
        return NULL;
    }
    return res;
}

double bench_ceiling_handshakes(json_t *ceiling, const char *sign, const char *group)
{
    const char *s = strstr(sign, "ECDSA")     ? "ecdsa-p256"
                    : strstr(sign, "RSA")     ? "rsa-2048"
                    : strstr(sign, "Ed25519") ? "ed25519"
                                              : NULL;
    const char *g = strcmp(group, "X25519") == 0      ? "x25519"
                    : strcmp(group, "SECP256R1") == 0 ? "p256"
                    : strcmp(group, "FFDHE2048") == 0 ? "ffdhe2048"
                                                      : NULL;
    if (!s || !g)
        return 0;
    char name[64];
    snprintf(name, sizeof(name), "%s+%s", s, g);
    return json_number_value(
        json_object_get(json_object_get(ceiling, "handshakes_per_core"), name));
}
