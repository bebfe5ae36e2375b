/* Certificate expiry, watched by the core: a gauge per active certificate
 * (tlsbox_cert_not_after_timestamp_seconds{name="..."}, for alerting), and
 * the event "cert.expiring" when a certificate comes within one of
 * core.cert_warn_days of its end, past the point where it is renewed (a
 * third of its lifetime left; never the internal LAN leaf, which the core
 * renews itself), or has expired: once per
 * threshold and certificate (remembered in the store across restarts; a
 * renewal starts over).  Data: {"name","not_after","days_left",
 * "threshold","source","expired"}.  The notify plugin sends it on. */
#ifndef TLSBOX_CORE_CERT_EXPIRY_H
#define TLSBOX_CORE_CERT_EXPIRY_H

#include <stdint.h>

/* The threshold (days) that @p not_after has reached at @p now, from the
 * comma-separated @p list: the smallest T with fewer than T whole days
 * left; 0 once expired (not_after <= now); -1 for none.  With @p below > 0,
 * only thresholds under @p below days count: a third of the certificate's
 * lifetime, when the acme plugin (or certbot) renews it, so that a 6-day
 * certificate is not announced at each issuance but when its renewal is
 * late.  Pure. */
int cert_expiry_threshold(int64_t not_after, int64_t now, const char *list, int64_t below);

/* Check now, then hourly and whenever a certificate or core.cert_warn_days
 * changes (on a maintenance thread).  Main thread, after tls_start. */
void cert_expiry_start(void);
/* Main thread, before the threads stop. */
void cert_expiry_stop(void);

#endif
