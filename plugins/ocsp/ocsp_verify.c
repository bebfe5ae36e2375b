/* Verifying an OCSP response (see ocsp.h).  The response comes from the
 * network: every field is checked before anything is believed. */
#include <errno.h>
#include <stdio.h>
#include <stdbool.h>
#include <string.h>

#include <gnutls/ocsp.h>

#include "plugins/ocsp/ocsp.h"

/* The GnuTLS verify bits, in words. */
static const char *verify_why(unsigned v)
{
    if (v & GNUTLS_OCSP_VERIFY_SIGNER_NOT_FOUND)
        return "signed by neither the issuer nor a responder certificate the issuer signed";
    if (v & GNUTLS_OCSP_VERIFY_SIGNER_KEYUSAGE_ERROR)
        return "the responder certificate is not for OCSP signing (extended key usage)";
    if (v & GNUTLS_OCSP_VERIFY_UNTRUSTED_SIGNER)
        return "the responder certificate is not signed by the issuer";
    if (v & GNUTLS_OCSP_VERIFY_INSECURE_ALGORITHM)
        return "signed with an insecure algorithm";
    if (v & GNUTLS_OCSP_VERIFY_SIGNATURE_FAILURE)
        return "the signature does not verify (wrong key)";
    if (v & (GNUTLS_OCSP_VERIFY_CERT_NOT_ACTIVATED | GNUTLS_OCSP_VERIFY_CERT_EXPIRED))
        return "the responder certificate is outside its validity";
    return "the signature does not verify";
}

/* Index of the SingleResponse that answers for @p leaf, or -1. */
static int find_single(gnutls_ocsp_resp_t resp, gnutls_x509_crt_t leaf)
{
    for (unsigned i = 0; i < 64; i++) {
        int r = gnutls_ocsp_resp_get_single(resp, i, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                            NULL);
        if (r < 0)
            return -1;
        if (gnutls_ocsp_resp_check_crt(resp, i, leaf) == 0)
            return (int)i;
    }
    return -1;
}

/* Times: thisUpdate readable and not ahead of us, whatever the status.  A
 * GOOD (or UNKNOWN) answer is stapled and believed until its nextUpdate:
 * that must be present and ahead.  It may run past the leaf's expiry (RFC
 * 6960 does not forbid it, and a responder giving 7-day answers does so in
 * each certificate's last days): the staple is then kept only until the
 * leaf expires (ocsp_staple_until).  A REVOKED answer says something that
 * does not run out: RFC 6960 lets it leave nextUpdate out, and one past it
 * still tells that the certificate was revoked (refusing it would keep a
 * good staple).  Except a hold (certificateHold), which may be lifted: it
 * needs a current answer, as a GOOD one does and as the CRL path wants. */
static int check_times(const struct ocsp_answer *a, time_t now, char *err, size_t errlen)
{
    if (a->this_update == (time_t)-1)
        return ocsp_errf(err, errlen, "unreadable thisUpdate");
    if (a->this_update > now + OCSP_CLOCK_SKEW)
        return ocsp_errf(err, errlen, "thisUpdate is in the future (%lld s ahead)",
                         (long long)(a->this_update - now));
    /* A hold may be lifted since: believed only while current, as a CRL's. */
    bool hold =
        a->status == OCSP_STATUS_REVOKED && a->revocation_reason == OCSP_REASON_CERTIFICATE_HOLD;
    if (a->status == OCSP_STATUS_REVOKED && !hold)
        return 0;
    const char *held =
        hold ? " (it says the certificate is on hold, which may have been lifted)" : "";
    if (a->next_update == (time_t)-1)
        return ocsp_errf(err, errlen, "no nextUpdate: cannot tell how long the answer holds%s",
                         held);
    if (a->next_update <= a->this_update)
        return ocsp_errf(err, errlen, "nextUpdate is not after thisUpdate%s", held);
    if (a->next_update <= now)
        return ocsp_errf(err, errlen, "expired: nextUpdate was %lld s ago%s",
                         (long long)(now - a->next_update), held);
    return 0;
}

int ocsp_verify(const unsigned char *der, size_t len, gnutls_x509_crt_t leaf,
                gnutls_x509_crt_t issuer, time_t now, struct ocsp_answer *out, char *err,
                size_t errlen)
{
    gnutls_ocsp_resp_t resp = NULL;
    gnutls_datum_t d = {(unsigned char *)der, (unsigned)len};
    unsigned v = 0, status = 0;
    int rc, idx;

    if (gnutls_ocsp_resp_init(&resp) < 0)
        return -ENOMEM;
    if (!der || len == 0 || gnutls_ocsp_resp_import2(resp, &d, GNUTLS_X509_FMT_DER) < 0) {
        rc = ocsp_errf(err, errlen, "not an OCSP response (DER unreadable)");
        rc = -EBADMSG;
        goto out;
    }
    int rs = gnutls_ocsp_resp_get_status(resp);
    if (rs != GNUTLS_OCSP_RESP_SUCCESSFUL) {
        rc = ocsp_errf(err, errlen, "responder answered status %d (%s)", rs,
                       rs == GNUTLS_OCSP_RESP_TRYLATER           ? "tryLater"
                       : rs == GNUTLS_OCSP_RESP_UNAUTHORIZED     ? "unauthorized"
                       : rs == GNUTLS_OCSP_RESP_MALFORMEDREQUEST ? "malformedRequest"
                                                                 : "error");
        goto out;
    }
    /* verify_direct returns 0 even when the signature is bad: v says. */
    if (gnutls_ocsp_resp_verify_direct(resp, issuer, &v, 0) < 0 || v != 0) {
        rc = ocsp_errf(err, errlen, "%s", verify_why(v));
        goto out;
    }
    if ((idx = find_single(resp, leaf)) < 0) {
        rc = ocsp_errf(err, errlen,
                       "the response is for another certificate (CertID does not match)");
        goto out;
    }
    memset(out, 0, sizeof(*out));
    time_t revoked_at = (time_t)-1;
    unsigned reason = 0;
    if (gnutls_ocsp_resp_get_single(resp, (unsigned)idx, NULL, NULL, NULL, NULL, &status,
                                    &out->this_update, &out->next_update, &revoked_at,
                                    &reason) < 0) {
        rc = ocsp_errf(err, errlen, "unreadable SingleResponse");
        goto out;
    }
    out->produced_at = gnutls_ocsp_resp_get_produced(resp);
    out->status = status == GNUTLS_OCSP_CERT_GOOD      ? OCSP_STATUS_GOOD
                  : status == GNUTLS_OCSP_CERT_REVOKED ? OCSP_STATUS_REVOKED
                                                       : OCSP_STATUS_UNKNOWN;
    out->revoked_at = out->status == OCSP_STATUS_REVOKED ? revoked_at : 0;
    out->revocation_reason = (int)reason;
    rc = check_times(out, now, err, errlen);
out:
    gnutls_ocsp_resp_deinit(resp);
    return rc;
}
