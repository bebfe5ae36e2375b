/* Client families tried against a candidate policy with real GnuTLS
 * handshakes over a socket pair in this process (see tls_probe.h). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/tls_probe.h"
#include "core/xalloc.h"

/* A handshake needs a handful of flights; far more rounds means a bug. */
#define PROBE_MAX_ROUNDS 64

/* Signature algorithms, as each generation of clients offers them. */
#define SIG_TLS13                                                                                  \
    "+SIGN-ECDSA-SECP256R1-SHA256:+SIGN-ECDSA-SHA256:+SIGN-RSA-PSS-RSAE-SHA256:+SIGN-RSA-SHA256:"  \
    "+SIGN-ECDSA-SECP384R1-SHA384:+SIGN-ECDSA-SHA384:+SIGN-RSA-PSS-RSAE-SHA384:+SIGN-RSA-SHA384:"  \
    "+SIGN-RSA-PSS-RSAE-SHA512:+SIGN-RSA-SHA512"
#define SIG_TLS12                                                                                  \
    "+SIGN-ECDSA-SHA256:+SIGN-ECDSA-SECP256R1-SHA256:+SIGN-RSA-SHA256:+SIGN-ECDSA-SHA384:"         \
    "+SIGN-ECDSA-SECP384R1-SHA384:+SIGN-RSA-SHA384:+SIGN-RSA-SHA512:+SIGN-ECDSA-SHA1:"             \
    "+SIGN-RSA-SHA1"
#define TAIL ":+COMP-NULL:+CTYPE-X509"

struct family {
    const char *name;    /* short, stable: tests and the page key on it */
    const char *clients; /* who stands behind it */
    const char *offers;  /* what the priority string below offers, in words */
    const char *prio;    /* a GnuTLS client priority string offering that */
};

/* What each client generation offers, after its published ClientHello
 * (Qualys SSL Labs' client list, Mozilla's Server Side TLS notes). */
static const struct family families[] = {
    {"modern-browsers", "Chrome, Edge, Firefox, Safari (current)",
     "TLS 1.3 and 1.2; AES-GCM, ChaCha20-Poly1305, AES-CBC; X25519, P-256, P-384",
     "NONE:+VERS-TLS1.3:+VERS-TLS1.2:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:+AES-128-CBC:"
     "+AES-256-CBC:+AEAD:+SHA1:+ECDHE-ECDSA:+ECDHE-RSA:+RSA:+GROUP-X25519:+GROUP-SECP256R1:"
     "+GROUP-SECP384R1:" SIG_TLS13 TAIL},
    {"android-7", "Android 7-9, curl with OpenSSL 1.1.0",
     "TLS 1.2 (no 1.3); AES-GCM, ChaCha20-Poly1305, AES-CBC; ECDHE; X25519, P-256, P-384",
     "NONE:+VERS-TLS1.2:+VERS-TLS1.1:+VERS-TLS1.0:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:"
     "+AES-128-CBC:+AES-256-CBC:+AEAD:+SHA1:+ECDHE-ECDSA:+ECDHE-RSA:+RSA:+GROUP-X25519:"
     "+GROUP-SECP256R1:+GROUP-SECP384R1:" SIG_TLS12 TAIL},
    {"android-4.4-ie11", "Android 4.4, Internet Explorer 11 on Windows 7",
     "TLS 1.2; AES-GCM, AES-CBC; ECDHE, DHE, RSA; P-256, P-384 (no X25519, no PSS)",
     "NONE:+VERS-TLS1.2:+VERS-TLS1.1:+VERS-TLS1.0:+AES-128-GCM:+AES-256-GCM:+AES-128-CBC:"
     "+AES-256-CBC:+AEAD:+SHA256:+SHA384:+SHA1:+ECDHE-ECDSA:+ECDHE-RSA:+DHE-RSA:+RSA:"
     "+GROUP-SECP256R1:+GROUP-SECP384R1:" SIG_TLS12 TAIL},
    {"java-8", "Java 8 (before 8u261)",
     "TLS 1.2; AES-GCM, AES-CBC; ECDHE, DHE; P-256, P-384, P-521 (no X25519, no ChaCha20)",
     "NONE:+VERS-TLS1.2:+VERS-TLS1.1:+VERS-TLS1.0:+AES-128-GCM:+AES-256-GCM:+AES-128-CBC:"
     "+AES-256-CBC:+AEAD:+SHA256:+SHA384:+SHA1:+ECDHE-ECDSA:+ECDHE-RSA:+DHE-RSA:+RSA:"
     "+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1:+GROUP-FFDHE2048:" SIG_TLS12 TAIL},
    {"openssl-1.0.2", "curl and others with OpenSSL 1.0.2 (CentOS 7, Debian 8)",
     "TLS 1.2; ECDHE-RSA/ECDSA with AES-GCM or AES-CBC; P-256, P-384, P-521 (no X25519)",
     "NONE:+VERS-TLS1.2:+VERS-TLS1.1:+VERS-TLS1.0:+AES-256-GCM:+AES-128-GCM:+AES-256-CBC:"
     "+AES-128-CBC:+AEAD:+SHA384:+SHA256:+SHA1:+ECDHE-ECDSA:+ECDHE-RSA:+DHE-RSA:+RSA:"
     "+GROUP-SECP256R1:+GROUP-SECP384R1:+GROUP-SECP521R1:" SIG_TLS12 TAIL},
    {"tls1.0-only", "Windows XP/Vista-era clients, IE 8-10, Android 2.3-4.3, Java 6",
     "TLS 1.0 only; AES-CBC with SHA-1; RSA, ECDHE-RSA, DHE-RSA; P-256",
     "NONE:+VERS-TLS1.0:+AES-128-CBC:+AES-256-CBC:+SHA1:+ECDHE-ECDSA:+ECDHE-RSA:+DHE-RSA:+RSA:"
     "+GROUP-SECP256R1:+GROUP-SECP384R1:" SIG_TLS12 TAIL},
};

static void set_name(json_t *o, const char *key, const char *name)
{
    json_object_set_new(o, key, name ? json_string(name) : json_null());
}

/* What the server session settled on after a completed handshake. */
static void describe(json_t *o, gnutls_session_t s)
{
    gnutls_protocol_t v = gnutls_protocol_get_version(s);
    set_name(o, "protocol", gnutls_protocol_get_name(v));
    set_name(o, "cipher", gnutls_cipher_get_name(gnutls_cipher_get(s)));
    /* TLS 1.3 has no key exchange algorithm of its own (GnuTLS makes one up). */
    set_name(o, "kx", v == GNUTLS_TLS1_3 ? NULL : gnutls_kx_get_name(gnutls_kx_get(s)));
    gnutls_group_t g = gnutls_group_get(s);
    set_name(o, "group", g ? gnutls_group_get_name(g) : NULL);
    int sig = gnutls_sign_algorithm_get(s);
    set_name(o, "sigalg", sig > 0 ? gnutls_sign_get_name((gnutls_sign_algorithm_t)sig) : NULL);
}

/*
 * Drive both ends until both are done or one fails.  0 when done; else the
 * failing GnuTLS code with *side set, after sending that side's alert.
 */
static int handshake_pair(gnutls_session_t c, gnutls_session_t s, const char **side)
{
    int rc = GNUTLS_E_AGAIN, rs = GNUTLS_E_AGAIN;
    for (int round = 0; round < PROBE_MAX_ROUNDS; round++) {
        if (rc != 0)
            rc = gnutls_handshake(c);
        if (rc < 0 && gnutls_error_is_fatal(rc)) {
            *side = "client";
            gnutls_alert_send_appropriate(c, rc);
            return rc;
        }
        if (rs != 0)
            rs = gnutls_handshake(s);
        if (rs < 0 && gnutls_error_is_fatal(rs)) {
            *side = "server";
            gnutls_alert_send_appropriate(s, rs);
            return rs;
        }
        if (rc == 0 && rs == 0)
            return 0;
    }
    *side = "both";
    return GNUTLS_E_TIMEDOUT;
}

/* One family against the server; its result object, or NULL on a setup failure. */
static json_t *probe_one(const struct family *f, gnutls_priority_t server_prio,
                         gnutls_certificate_credentials_t server_cred,
                         gnutls_certificate_credentials_t client_cred, char **err)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
        *err = xasprintf("client probe: socketpair: %s", strerror(errno));
        return NULL;
    }
    gnutls_session_t c = NULL, s = NULL;
    const char *epos = NULL, *side = "client";
    int r = gnutls_init(&c, GNUTLS_CLIENT | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL);
    if (r >= 0)
        r = gnutls_priority_set_direct(c, f->prio, &epos);
    if (r >= 0)
        r = gnutls_credentials_set(c, GNUTLS_CRD_CERTIFICATE, client_cred);
    if (r >= 0) {
        side = "server";
        r = gnutls_init(&s, GNUTLS_SERVER | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL | GNUTLS_NO_TICKETS);
    }
    if (r >= 0)
        r = gnutls_priority_set(s, server_prio);
    if (r >= 0)
        r = gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, server_cred);
    if (r >= 0) {
        gnutls_transport_set_int(c, sv[0]);
        gnutls_transport_set_int(s, sv[1]);
        r = handshake_pair(c, s, &side);
    }
    json_t *o = json_pack("{s:s, s:s, s:s, s:b}", "family", f->name, "clients", f->clients,
                          "offers", f->offers, "ok", r == 0);
    if (r == 0) {
        describe(o, s);
    } else {
        json_object_set_new(o, "error", json_string(gnutls_strerror(r)));
        set_name(o, "error_code", gnutls_strerror_name(r));
        json_object_set_new(o, "side", json_string(side));
    }
    if (c)
        gnutls_deinit(c);
    if (s)
        gnutls_deinit(s);
    close(sv[0]);
    close(sv[1]);
    return o;
}

json_t *tls_probe_families(const char *server_prio, gnutls_certificate_credentials_t cred,
                           char **err)
{
    *err = NULL;
    gnutls_priority_t prio = NULL;
    gnutls_certificate_credentials_t none = NULL;
    int r = gnutls_priority_init(&prio, server_prio, NULL);
    if (r < 0) {
        *err = xasprintf("client probe: server priority string: %s", gnutls_strerror(r));
        return NULL;
    }
    if ((r = gnutls_certificate_allocate_credentials(&none)) < 0) {
        *err = xasprintf("client probe: %s", gnutls_strerror(r));
        gnutls_priority_deinit(prio);
        return NULL;
    }
    json_t *out = json_array();
    for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
        json_t *o = probe_one(&families[i], prio, cred, none, err);
        if (!o) {
            json_decref(out);
            out = NULL;
            break;
        }
        json_array_append_new(out, o);
    }
    gnutls_certificate_free_credentials(none);
    gnutls_priority_deinit(prio);
    return out;
}

int tls_probe_any(const char *server_prio, gnutls_certificate_credentials_t cred, char **err)
{
    /* One version each: GnuTLS does not fall back to TLS 1.2 when TLS 1.3
     * is agreed and then finds nothing (a P-256 key under SECURE256). */
#define ANY_TLS(v, groups)                                                                         \
    {                                                                                              \
        v, "any client", "everything GnuTLS has",                                                  \
            "NORMAL:-VERS-ALL:+VERS-" v                                                            \
            ":+CIPHER-ALL:+MAC-ALL:+KX-ALL:+GROUP-ALL:+SIGN-ALL" groups TAIL                       \
    }
    /* Each twice: a client naming FFDHE groups gets no TLS 1.2 DHE suite
     * from a server without one of them (RFC 7919 section 4), and an older
     * client names none. */
#define NO_FFDHE                                                                                   \
    ":-GROUP-FFDHE2048:-GROUP-FFDHE3072:-GROUP-FFDHE4096:-GROUP-FFDHE6144:-GROUP-FFDHE8192"
    static const struct family any[] = {ANY_TLS("TLS1.3", ""),       ANY_TLS("TLS1.2", ""),
                                        ANY_TLS("TLS1.2", NO_FFDHE), ANY_TLS("TLS1.1", ""),
                                        ANY_TLS("TLS1.1", NO_FFDHE), ANY_TLS("TLS1.0", ""),
                                        ANY_TLS("TLS1.0", NO_FFDHE)};
    static const gnutls_protocol_t vers[] = {GNUTLS_TLS1_3, GNUTLS_TLS1_2, GNUTLS_TLS1_2,
                                             GNUTLS_TLS1_1, GNUTLS_TLS1_1, GNUTLS_TLS1_0,
                                             GNUTLS_TLS1_0};
#undef NO_FFDHE
#undef ANY_TLS
    *err = NULL;
    gnutls_priority_t prio = NULL;
    gnutls_certificate_credentials_t none = NULL;
    int r = gnutls_priority_init(&prio, server_prio, NULL);
    if (r < 0) {
        *err = xasprintf("client probe: server priority string: %s", gnutls_strerror(r));
        return -EINVAL;
    }
    if ((r = gnutls_certificate_allocate_credentials(&none)) < 0) {
        *err = xasprintf("client probe: %s", gnutls_strerror(r));
        gnutls_priority_deinit(prio);
        return -ENOMEM;
    }
    int rc = -EINVAL;
    char *why = NULL;
    const unsigned *pl;
    int npl = gnutls_priority_protocol_list(prio, &pl);
    for (size_t i = 0; i < sizeof(any) / sizeof(any[0]) && rc == -EINVAL; i++) {
        bool served = false;
        for (int k = 0; k < npl; k++)
            served = served || pl[k] == (unsigned)vers[i];
        if (!served)
            continue;
        json_t *o = probe_one(&any[i], prio, cred, none, err);
        if (!o) {
            rc = -EIO;
        } else if (json_is_true(json_object_get(o, "ok"))) {
            rc = 0;
        } else if (!why) {
            /* The reason of the newest version the server speaks. */
            why = xasprintf("%s: %s (%s side)", any[i].name,
                            json_string_value(json_object_get(o, "error")),
                            json_string_value(json_object_get(o, "side")));
        }
        json_decref(o);
    }
    if (rc == -EINVAL)
        *err = why ? why : xstrdup("no TLS version is agreed");
    else
        free(why);
    gnutls_certificate_free_credentials(none);
    gnutls_priority_deinit(prio);
    return rc;
}
