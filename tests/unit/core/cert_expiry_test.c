/* The threshold a certificate's end has reached (core/cert_expiry.c): the
 * smallest of core.cert_warn_days with fewer whole days left, 0 once
 * expired, -1 for none; in whatever order the list is written; only
 * thresholds under a third of the certificate's lifetime. */
#include "core/cert_expiry.h"
#include "tests/tap.h"

#define DAY 86400

int main(void)
{
    const int64_t now = 1796472000;
    const char *list = "14,7,3,1";
    is_int(cert_expiry_threshold(now + 30 * DAY, now, list, 0), -1, "30 days left: none");
    is_int(cert_expiry_threshold(now + 14 * DAY, now, list, 0), -1,
           "exactly 14 days left: none yet");
    is_int(cert_expiry_threshold(now + 14 * DAY - 1, now, list, 0), 14, "13 days and more: 14");
    is_int(cert_expiry_threshold(now + 5 * DAY, now, list, 0), 7, "5 days: 7");
    is_int(cert_expiry_threshold(now + 2 * DAY + 5, now, list, 0), 3, "2 days: 3");
    is_int(cert_expiry_threshold(now + 3600, now, list, 0), 1, "an hour: 1");
    is_int(cert_expiry_threshold(now, now, list, 0), 0, "at not_after: expired (0)");
    is_int(cert_expiry_threshold(now - DAY, now, list, 0), 0, "a day after: expired (0)");
    is_int(cert_expiry_threshold(now + 5 * DAY, now, "1,30,7", 0), 7, "the list in any order");
    is_int(cert_expiry_threshold(now + 5 * DAY, now, "", 0), -1, "an empty list: never");
    is_int(cert_expiry_threshold(now - 1, now, "", 0), 0,
           "but an expired certificate is still said");
    /* Only thresholds under a third of the lifetime (when renewals happen). */
    is_int(cert_expiry_threshold(now + 5 * DAY, now, list, 2), -1,
           "a 6-day certificate just issued (5 days left, a third is 2): none");
    is_int(cert_expiry_threshold(now + 12 * 3600, now, list, 2), 1,
           "half a day left, its renewal late: under 1");
    is_int(cert_expiry_threshold(now + 10 * DAY, now, list, 30), 14,
           "a 90-day certificate 10 days from its end (renewal due at 30): under 14");
    is_int(cert_expiry_threshold(now - 1, now, list, 2), 0, "expired: said, whatever its lifetime");
    return done_testing();
}
