/*
 * The ocsp plugin's building blocks that need no host: reading a leaf
 * (responder URL, must-staple, lifetime), building a request, verifying a
 * response, and the schedule arithmetic.  Used by the plugin, its unit test
 * and the fuzz target (tests/fuzz/ocsp_fuzz.c).
 */
#ifndef TLSBOX_PLUGINS_OCSP_H
#define TLSBOX_PLUGINS_OCSP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

/* Certificates valid this long or less are not worth an OCSP request. */
#define OCSP_SHORT_LIVED_SECONDS (7 * 86400)
/* The path of the OCSP URL the core's internal CA writes into its leaves
 * (TLS_CA_OCSP_PATH in core/tls_ca_ocsp.h: keep them equal). */
#define OCSP_INTERNAL_PATH "/.well-known/tlsbox-ocsp"
/* A response may come from a clock this far ahead of ours. */
#define OCSP_CLOCK_SKEW 300

/* What a verified response says about the certificate. */
enum ocsp_cert_status {
    OCSP_STATUS_GOOD,
    OCSP_STATUS_REVOKED,
    OCSP_STATUS_UNKNOWN,
    OCSP_STATUS_MAX
};

/* CRLReason certificateHold (RFC 5280 5.3.1): the one revocation that
 * may be undone. */
#define OCSP_REASON_CERTIFICATE_HOLD 6

struct ocsp_answer {
    enum ocsp_cert_status status;
    /* next_update is (time_t)-1 when the answer has none (REVOKED only). */
    time_t produced_at, this_update, next_update;
    time_t revoked_at; /* REVOKED only */
    int revocation_reason;
};

/*
 * The first OCSP responder URL in @p leaf's AIA extension (caller frees), or
 * NULL when it names none (normal: Let's Encrypt since 2025).
 */
char *ocsp_responder_url(gnutls_x509_crt_t leaf);
/* True when @p leaf carries the TLS feature "status_request" (must-staple). */
bool ocsp_must_staple(gnutls_x509_crt_t leaf);
/* True when @p leaf's validity is OCSP_SHORT_LIVED_SECONDS or less. */
bool ocsp_short_lived(gnutls_x509_crt_t leaf);

/* A DER OCSPRequest for @p leaf issued by @p issuer (SHA-1 CertID, as every
 * responder understands).  0 with out->data (gnutls_free) or a negative errno. */
int ocsp_request_build(gnutls_x509_crt_t leaf, gnutls_x509_crt_t issuer, gnutls_datum_t *out);

/*
 * Verify a DER OCSPResponse for @p leaf at @p now: status successful; signed
 * by @p issuer or by a responder certificate that @p issuer signed for
 * OCSP signing (EKU); a SingleResponse whose CertID matches @p leaf;
 * thisUpdate not in the future (beyond OCSP_CLOCK_SKEW); unless the status
 * is REVOKED (final: nextUpdate may be absent or past), nextUpdate present,
 * after thisUpdate and after @p now.  A nextUpdate after the leaf's expiry
 * is accepted (see ocsp_staple_until).
 * Returns 0 with @p out filled (good, revoked or unknown), or -EINVAL /
 * -EBADMSG with a reason in @p err (@p errlen bytes).
 */
int ocsp_verify(const unsigned char *der, size_t len, gnutls_x509_crt_t leaf,
                gnutls_x509_crt_t issuer, time_t now, struct ocsp_answer *out, char *err,
                size_t errlen);

/*
 * The first http(s) CRL distribution point URL in @p leaf (caller frees), or
 * NULL when it names none (or only points limited to some reasons).  What
 * Let's Encrypt's leaves carry since OCSP ended there (2025).
 */
char *ocsp_crl_url(gnutls_x509_crt_t leaf);

/*
 * Check a CRL (DER, or PEM) fetched from @p url for @p leaf issued by
 * @p issuer at @p now: issued and signed by @p issuer (a CA allowed to sign
 * CRLs); every critical extension understood; complete and for @p url (no
 * delta CRL; an issuing distribution point, when present, names @p url and
 * limits neither reasons nor issuers); thisUpdate not in the future (beyond
 * OCSP_CLOCK_SKEW).  Returns 0 with @p out filled: GOOD when @p leaf's
 * serial is not listed and nextUpdate is present and after @p now; REVOKED
 * with revoked_at and revocation_reason (-1: none given) when it is listed,
 * whatever the nextUpdate (a revocation is final), except on hold
 * (OCSP_REASON_CERTIFICATE_HOLD: it may be lifted), which needs nextUpdate
 * present and after @p now as GOOD does (produced_at = thisUpdate); or
 * -EINVAL / -EBADMSG with a reason in @p err (@p errlen bytes).
 */
int ocsp_crl_check(const unsigned char *data, size_t len, const char *url, gnutls_x509_crt_t leaf,
                   gnutls_x509_crt_t issuer, time_t now, struct ocsp_answer *out, char *err,
                   size_t errlen);

/* The part of ocsp_crl_check that reads the Issuing Distribution Point
 * extension's value (DER, @p len bytes): 0 when a CRL carrying it covers
 * every certificate whose distribution point is @p url, else -EINVAL with a
 * reason.  Exposed for the fuzz target. */
int ocsp_crl_idp_check(const unsigned char *der, size_t len, const char *url, char *err,
                       size_t errlen);

/*
 * Refuse a GOOD @p what ("answer" or "CRL") whose thisUpdate @p this_update
 * is before @p held, the thisUpdate of the answer or CRL accepted last for
 * the same certificate (0: none yet).  An older one, still within its
 * validity, is what a replay or a stale cache in front of the responder or
 * CRL server hands out: believed, it would make a certificate seen revoked
 * good again, or re-staple an answer that a newer one replaced.  The same
 * thisUpdate is fine (the same answer again).  0, or -EINVAL with a reason
 * in @p err.
 */
int ocsp_check_not_older(const char *what, time_t this_update, time_t held, char *err,
                         size_t errlen);

/* Schedule: a staple leaves the bundle at nextUpdate minus
 * min(@p margin, a quarter of thisUpdate..nextUpdate). */
time_t ocsp_serve_until(time_t this_update, time_t next_update, time_t margin);
/* ocsp_serve_until, but never after @p not_after, the leaf's expiry
 * ((time_t)-1: unknown): an answer may hold longer than its certificate,
 * a staple must not.  No margin before not_after: a client checks the
 * leaf's expiry itself. */
time_t ocsp_staple_until(time_t this_update, time_t next_update, time_t not_after, time_t margin);
/* Refresh at half of thisUpdate..nextUpdate plus @p jitter_permille / 1000 of
 * a tenth of it, but not before @p now + @p min_gap: an answer already past
 * its half-life (a responder or its cache handing out an old one) would
 * otherwise be asked for again at once, and the same old answer would come
 * back every second.  Never after serve_until - 1 and never before @p now + 1. */
time_t ocsp_refresh_at(time_t this_update, time_t next_update, time_t serve_until, time_t now,
                       time_t min_gap, unsigned jitter_permille);
/* Retry delay after @p failures failures in a row: min doubling to max. */
time_t ocsp_backoff(unsigned failures, time_t min, time_t max);

const char *ocsp_status_name(enum ocsp_cert_status s);

/* Write a reason into @p err (@p errlen bytes) and return -EINVAL: how the
 * checks above refuse. */
__attribute__((format(printf, 3, 4))) int ocsp_errf(char *err, size_t errlen, const char *fmt, ...);

#endif
