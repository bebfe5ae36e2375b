/* The ECDSA curves a TLS client lists in its ClientHello (see tls_hello.h). */
#include "core/tls_hello.h"

#include <errno.h>
#include <stdbool.h>

#define EXT_SUPPORTED_GROUPS 10

/* What this thread's last ClientHello listed, and for which session. */
static _Thread_local struct {
    gnutls_session_t session;
    bool listed;
    unsigned curves;
} noted;

unsigned tls_hello_curve_bit(gnutls_ecc_curve_t curve)
{
    switch (curve) {
    case GNUTLS_ECC_CURVE_SECP256R1:
        return TLS_CURVE_P256;
    case GNUTLS_ECC_CURVE_SECP384R1:
        return TLS_CURVE_P384;
    case GNUTLS_ECC_CURVE_SECP521R1:
        return TLS_CURVE_P521;
    default:
        return 0;
    }
}

struct groups {
    bool seen, bad;
    unsigned curves;
};

static int on_extension(void *ctx, unsigned tls_id, const unsigned char *data, unsigned size)
{
    struct groups *g = ctx;
    if (tls_id != EXT_SUPPORTED_GROUPS)
        return 0;
    /* NamedGroup named_group_list<2..2^16-1> (RFC 8446 section 4.2.7) */
    if (size < 2 || ((unsigned)data[0] << 8 | data[1]) != size - 2 || (size & 1)) {
        g->bad = true;
        return GNUTLS_E_UNEXPECTED_PACKET_LENGTH;
    }
    g->seen = true;
    for (unsigned i = 2; i + 1 < size; i += 2) {
        unsigned id = (unsigned)data[i] << 8 | data[i + 1];
        g->curves |= id == 23   ? TLS_CURVE_P256
                     : id == 24 ? TLS_CURVE_P384
                     : id == 25 ? TLS_CURVE_P521
                                : 0;
    }
    return 0;
}

int tls_hello_groups(const unsigned char *msg, size_t n, unsigned *curves)
{
    struct groups g = {false, false, 0};
    gnutls_datum_t d = {(unsigned char *)msg, (unsigned)n};
    *curves = 0;
    if (n > 0xffffff)
        return -EINVAL;
    int r = gnutls_ext_raw_parse(&g, on_extension, &d, GNUTLS_EXT_RAW_FLAG_TLS_CLIENT_HELLO);
    if (g.bad || (r < 0 && r != GNUTLS_E_REQUESTED_DATA_NOT_AVAILABLE))
        return -EINVAL;
    if (!g.seen)
        return -ENOENT;
    *curves = g.curves;
    return 0;
}

int tls_hello_note(gnutls_session_t session, unsigned htype, unsigned when, unsigned incoming,
                   const gnutls_datum_t *msg)
{
    (void)htype, (void)when;
    if (!incoming || !msg)
        return 0;
    noted.session = session;
    noted.listed = tls_hello_groups(msg->data, msg->size, &noted.curves) == 0;
    return 0;
}

int tls_hello_curves(gnutls_session_t session, unsigned *curves)
{
    *curves = 0;
    if (noted.session != session || !noted.listed ||
        gnutls_protocol_get_version(session) != GNUTLS_TLS1_2)
        return -ENOENT;
    *curves = noted.curves;
    return 0;
}
