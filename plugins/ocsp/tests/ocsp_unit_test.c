/* The ocsp plugin's building blocks against responses made by the real
 * `openssl ocsp` (fixtures made at test time in a temp dir; no key is
 * committed): verification, leaf reading, schedule arithmetic; and the
 * fetch against a loopback listener that never answers (cancel, timeout). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>

#include "plugins/ocsp/ocsp.h"
#include "plugins/ocsp/ocsp_plugin.h"
#include "plugins/ocsp/tests/ocsp_fixtures.h"
#include "tests/tap.h"

/* openssl: a root, an intermediate, leaves, a delegated responder, and
 * responses from `openssl ocsp` in non-server mode (-reqin/-respout). */
static const char fixtures[] =
    "set -e\n"
    "ec() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out $1.key; }\n"
    "ec root; ec inter; ec leaf; ec other; ec resp; ec noeku; ec rogue; ec must\n"
    "openssl req -x509 -new -key root.key -subj /CN=Root -days 30 -out root.pem "
    "  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign\n"
    "printf 'basicConstraints=critical,CA:TRUE\\nkeyUsage=critical,keyCertSign,cRLSign\\n' "
    ">ca.ext\n"
    "openssl req -new -key inter.key -subj /CN=Inter | openssl x509 -req -CA root.pem "
    "  -CAkey root.key -CAcreateserial -days 30 -extfile ca.ext -out inter.pem\n"
    "printf 'authorityInfoAccess=OCSP;URI:http://127.0.0.1:9/ocsp\\nbasicConstraints=CA:FALSE\\n' "
    "  >leaf.ext\n"
    "leaf() { openssl req -new -key $1.key -subj /CN=$1 | openssl x509 -req -CA inter.pem "
    "  -CAkey inter.key -CAcreateserial -days $2 -extfile $3 -out $1.pem; }\n"
    "leaf leaf 20 leaf.ext; leaf other 20 leaf.ext\n"
    "cp leaf.ext must.ext; echo 'tlsfeature=status_request' >>must.ext; leaf must 20 must.ext\n"
    "printf 'extendedKeyUsage=OCSPSigning\\n' >resp.ext; leaf resp 20 resp.ext\n"
    "printf 'extendedKeyUsage=serverAuth\\n' >noeku.ext; leaf noeku 20 noeku.ext\n"
    "openssl req -x509 -new -key rogue.key -subj /CN=Inter -days 30 -out rogue.pem\n"
    "openssl req -x509 -new -key leaf.key -subj /CN=short -days 5 -out short.pem\n"
    "openssl req -x509 -new -key leaf.key -subj /CN=ldapfirst -days 30 -out ldapfirst.pem "
    "  -addext 'authorityInfoAccess=OCSP;URI:ldap://ldap.example/ocsp,"
    "OCSP;URI:http://127.0.0.1:9/ocsp'\n"
    "s() { openssl x509 -in $1 -noout -serial | cut -d= -f2; }\n"
    "exp() { date -u -d \"$(openssl x509 -in $1 -noout -enddate | cut -d= -f2)\" +%y%m%d%H%M%SZ; "
    "}\n"
    "printf 'V\\t%s\\t\\t%s\\tunknown\\t/CN=leaf\\n' $(exp leaf.pem) $(s leaf.pem) >good.idx\n"
    "printf 'R\\t%s\\t250101000000Z,keyCompromise\\t%s\\tunknown\\t/CN=leaf\\n' $(exp leaf.pem) "
    "  $(s leaf.pem) >revoked.idx\n"
    "printf "
    "'R\\t%s\\t250101000000Z,certificateHold,holdInstructionReject\\t%s\\tunknown\\t/CN=leaf\\n' "
    "  $(exp leaf.pem) $(s leaf.pem) >hold.idx\n"
    "openssl ocsp -issuer inter.pem -cert leaf.pem -no_nonce -reqout leaf.req\n"
    "openssl ocsp -issuer inter.pem -cert other.pem -no_nonce -reqout other.req\n"
    "r() { openssl ocsp -index $1 -CA inter.pem -rsigner $2.pem -rkey $3.key -reqin $4 "
    "  -respout $5 $6; }\n"
    "r good.idx inter inter leaf.req good.der '-ndays 1'\n"
    "r revoked.idx inter inter leaf.req revoked.der '-ndays 1'\n"
    "r good.idx resp resp leaf.req delegated.der '-ndays 1'\n"
    "r good.idx noeku noeku leaf.req noeku.der '-ndays 1'\n"
    "r good.idx rogue rogue leaf.req wrongkey.der '-ndays 1'\n"
    "r good.idx inter inter other.req othercert.der '-ndays 1'\n"
    "r good.idx inter inter leaf.req nonext.der ''\n"
    "r good.idx inter inter leaf.req pastexpiry.der '-ndays 25'\n"
    "r revoked.idx inter inter leaf.req revoked_nonext.der ''\n"
    "r revoked.idx inter inter leaf.req revoked_pastexpiry.der '-ndays 25'\n"
    "r hold.idx inter inter leaf.req hold.der '-ndays 1'\n"
    "r hold.idx inter inter leaf.req hold_nonext.der ''\n"
    "r good.idx inter inter leaf.req unknownidx.der '-ndays 1' || true\n";

static gnutls_x509_crt_t leaf, inter;

/* Verify response file @p name; its return code, *a and the reason. */
static int verify(const char *name, struct ocsp_answer *a, char *err, size_t errlen)
{
    gnutls_datum_t d = fx_slurp(name);
    err[0] = 0;
    int rc = ocsp_verify(d.data, d.size, leaf, inter, time(NULL), a, err, errlen);
    gnutls_free(d.data);
    return rc;
}

static void refused(const char *file, const char *why, const char *want)
{
    struct ocsp_answer a;
    char err[256];
    int rc = verify(file, &a, err, sizeof(err));
    ok(rc < 0 && strstr(err, want) != NULL, "%s refused: %s", why, err);
}

static void test_verify(void)
{
    struct ocsp_answer a;
    char err[256];
    time_t now = time(NULL);
    int rc = verify("good.der", &a, err, sizeof(err));
    ok(rc == 0 && a.status == OCSP_STATUS_GOOD, "issuer-signed good response accepted (%s)", err);
    ok(a.this_update <= now && a.this_update > now - 120, "thisUpdate is now");
    ok(a.next_update - a.this_update == 86400, "nextUpdate one day later (-ndays 1)");
    rc = verify("delegated.der", &a, err, sizeof(err));
    ok(rc == 0 && a.status == OCSP_STATUS_GOOD,
       "delegated responder with the OCSP-signing EKU accepted (%s)", err);
    rc = verify("revoked.der", &a, err, sizeof(err));
    ok(rc == 0 && a.status == OCSP_STATUS_REVOKED, "revoked response read as REVOKED (%s)", err);
    ok(a.revoked_at == 1735689600, "revocation time read (%lld)", (long long)a.revoked_at);
    refused("noeku.der", "responder certificate without the OCSP-signing EKU", "OCSP signing");
    refused("wrongkey.der", "response signed by a key that is not the issuer's", "signed by");
    refused("othercert.der", "response for another certificate", "another certificate");
    refused("nonext.der", "response without nextUpdate", "no nextUpdate");
    /* Good for 25 days, the leaf for 20: a responder's long answer in the
     * certificate's last days.  Taken; the staple ends with the leaf. */
    rc = verify("pastexpiry.der", &a, err, sizeof(err));
    ok(rc == 0 && a.status == OCSP_STATUS_GOOD,
       "a good response whose nextUpdate outlives the certificate accepted (%s)", err);
    time_t not_after = gnutls_x509_crt_get_expiration_time(leaf);
    long long after = (long long)(a.next_update - not_after);
    ok(after >= 5 * 86400 - 60 && after <= 5 * 86400 + 60,
       "its nextUpdate is read as it is: 5 days after the leaf expires (%lld s)", after);
    is_int((long long)ocsp_staple_until(a.this_update, a.next_update, not_after, 3600),
           (long long)not_after, "and its staple is served until the leaf expires, not after");
    gnutls_datum_t d = fx_slurp("good.der");
    rc = ocsp_verify(d.data, d.size, leaf, inter, now + 2 * 86400, &a, err, sizeof(err));
    ok(rc < 0 && strstr(err, "expired"), "the same response two days later: %s", err);
    rc = ocsp_verify(d.data, d.size / 2, leaf, inter, now, &a, err, sizeof(err));
    ok(rc == -EBADMSG, "a truncated response: %s", err);
    gnutls_free(d.data);
    unsigned char try_later[] = {0x30, 0x03, 0x0a, 0x01, 0x03};
    rc = ocsp_verify(try_later, sizeof(try_later), leaf, inter, now, &a, err, sizeof(err));
    ok(rc < 0 && strstr(err, "tryLater"), "tryLater: %s", err);
}

/* A REVOKED answer is final: what would refuse a GOOD one for its
 * nextUpdate (absent, past, after the leaf expires) must not hide it.
 * Only a thisUpdate ahead of our clock is refused. */
static void test_verify_revoked(void)
{
    struct ocsp_answer a;
    char err[256];
    time_t now = time(NULL);
    int rc = verify("revoked_nonext.der", &a, err, sizeof(err));
    ok(rc == 0 && a.status == OCSP_STATUS_REVOKED, "REVOKED without nextUpdate accepted (%s)", err);
    is_int((long long)a.next_update, -1, "and read as no nextUpdate (-1)");
    ok(a.this_update <= now && a.this_update > now - 120, "its thisUpdate is now");
    rc = verify("revoked_pastexpiry.der", &a, err, sizeof(err));
    ok(rc == 0 && a.status == OCSP_STATUS_REVOKED,
       "REVOKED whose nextUpdate outlives the certificate accepted (%s)", err);
    gnutls_datum_t d = fx_slurp("revoked.der");
    err[0] = 0;
    rc = ocsp_verify(d.data, d.size, leaf, inter, now + 2 * 86400, &a, err, sizeof(err));
    ok(rc == 0 && a.status == OCSP_STATUS_REVOKED,
       "the same REVOKED answer two days later, past its nextUpdate, accepted (%s)", err);
    rc = ocsp_verify(d.data, d.size, leaf, inter, now - OCSP_CLOCK_SKEW - 60, &a, err, sizeof(err));
    ok(rc < 0 && strstr(err, "thisUpdate is in the future"),
       "a REVOKED answer from beyond the clock skew refused: %s", err);
    gnutls_free(d.data);

    /* On hold: lifted maybe, so only a current answer says so. */
    rc = verify("hold.der", &a, err, sizeof(err));
    ok(rc == 0 && a.status == OCSP_STATUS_REVOKED &&
           a.revocation_reason == OCSP_REASON_CERTIFICATE_HOLD,
       "a current answer with the certificate on hold is REVOKED, reason 6 (%s)", err);
    rc = verify("hold_nonext.der", &a, err, sizeof(err));
    ok(rc < 0 && strstr(err, "no nextUpdate") && strstr(err, "on hold"),
       "on hold without nextUpdate refused: %s", err);
    d = fx_slurp("hold.der");
    err[0] = 0;
    rc = ocsp_verify(d.data, d.size, leaf, inter, now + 2 * 86400, &a, err, sizeof(err));
    ok(rc < 0 && strstr(err, "expired") && strstr(err, "may have been lifted"),
       "on hold, past its nextUpdate, refused: %s", err);
    gnutls_free(d.data);
}

static void test_leaf(void)
{
    char *url = ocsp_responder_url(leaf);
    ok(url && strcmp(url, "http://127.0.0.1:9/ocsp") == 0, "responder URL read (%s)",
       url ? url : "none");
    free(url);
    gnutls_x509_crt_t r = fx_crt("root.pem"), m = fx_crt("must.pem"), s = fx_crt("short.pem");
    ok(ocsp_responder_url(r) == NULL, "no AIA: no URL");
    /* A responder libcurl may not ask (ldap) listed first: the next one is. */
    gnutls_x509_crt_t l = fx_crt("ldapfirst.pem");
    url = ocsp_responder_url(l);
    ok(url && strcmp(url, "http://127.0.0.1:9/ocsp") == 0,
       "an ldap OCSP URL first: the http one after it is read (%s)", url ? url : "none");
    free(url);
    gnutls_x509_crt_deinit(l);
    ok(!ocsp_must_staple(leaf) && ocsp_must_staple(m), "must-staple (TLS feature 5) detected");
    ok(!ocsp_short_lived(leaf) && ocsp_short_lived(s), "5-day certificate is short-lived");
    gnutls_datum_t req = {NULL, 0};
    gnutls_datum_t want = fx_slurp("leaf.req");
    ok(ocsp_request_build(leaf, inter, &req) == 0 && req.size == want.size &&
           memcmp(req.data, want.data, req.size) == 0,
       "request is byte for byte what openssl ocsp -no_nonce builds");
    gnutls_free(req.data);
    gnutls_free(want.data);
    gnutls_x509_crt_deinit(r);
    gnutls_x509_crt_deinit(m);
    gnutls_x509_crt_deinit(s);
}

static void test_schedule(void)
{
    /* Four days of validity, one hour margin. */
    time_t t = 1000000, n = t + 4 * 86400;
    ok(ocsp_serve_until(t, n, 3600) == n - 3600, "served until an hour before nextUpdate");
    ok(ocsp_serve_until(t, t + 60, 3600) == t + 45, "60 s validity: a quarter margin");
    is_int((long long)ocsp_staple_until(t, n, n - 86400, 3600), (long long)(n - 86400),
           "a leaf expiring a day before nextUpdate: served until it expires");
    is_int((long long)ocsp_staple_until(t, n, n - 1800, 3600), (long long)(n - 3600),
           "a leaf expiring within the margin: the margin comes first");
    is_int((long long)ocsp_staple_until(t, n, (time_t)-1, 3600), (long long)(n - 3600),
           "an unknown expiry: as ocsp_serve_until");
    ok(ocsp_refresh_at(t, n, n - 3600, t, 60, 0) == t + 2 * 86400, "refresh at half, no jitter");
    ok(ocsp_refresh_at(t, n, n - 3600, t, 60, 1000) == t + 2 * 86400 + 4 * 8640,
       "full jitter adds a tenth of the validity");
    ok(ocsp_refresh_at(t, t + 60, t + 45, t, 1, 1000) == t + 36,
       "60 s validity: refresh at 30..36");
    ok(ocsp_refresh_at(t, n, n - 3600, n, 0, 0) == n + 1, "never in the past");
    /* A private CA's answer valid for 600 days: a tenth of it times 1000
     * is past 2^32, which wrapped with a 32-bit time_t (armhf: refresh at
     * day 310 instead of 360). */
    time_t n600 = t + 600 * 86400;
    is_int((long long)ocsp_refresh_at(t, n600, n600 - 3600, t, 60, 1000),
           (long long)t + 360 * 86400, "600 days of validity, full jitter: refresh at day 360");
    /* An answer fetched past its half-life (an old cached one): the next
     * ask waits min_gap instead of coming back every second. */
    ok(ocsp_refresh_at(t, n, n - 3600, t + 3 * 86400, 60, 0) == t + 3 * 86400 + 60,
       "an answer past its half-life: refreshed min_gap later, not at once");
    ok(ocsp_refresh_at(t, n, n - 3600, n - 3630, 60, 0) == n - 3601,
       "but still before it leaves the bundle");
    ok(ocsp_backoff(1, 60, 3600) == 60 && ocsp_backoff(2, 60, 3600) == 120 &&
           ocsp_backoff(20, 60, 3600) == 3600,
       "backoff 60, 120, ... capped at 3600");
}

/* An answer (or CRL) older than the one held is refused, naming both
 * times; the same one again, or a newer one, is not. */
static void test_not_older(void)
{
    char err[256] = "";
    time_t held = 1796547600; /* 2026-12-06T09:00:00Z */
    int rc = ocsp_check_not_older("answer", held - 3600, held, err, sizeof(err));
    ok(rc == -EINVAL && strcmp(err, "the answer (thisUpdate 2026-12-06T08:00:00Z) is older than "
                                    "the one already held (thisUpdate 2026-12-06T09:00:00Z): a "
                                    "replayed or cached old answer does not replace a newer "
                                    "one") == 0,
       "an answer an hour older than the one held is refused: %s", err);
    rc = ocsp_check_not_older("CRL", held - 1, held, err, sizeof(err));
    ok(rc == -EINVAL && strncmp(err, "the CRL (thisUpdate", 19) == 0,
       "a CRL a second older is refused: %s", err);
    is_int(ocsp_check_not_older("answer", held, held, err, sizeof(err)), 0,
           "the same thisUpdate again is taken (a cache giving the same answer)");
    is_int(ocsp_check_not_older("answer", held + 1, held, err, sizeof(err)), 0,
           "a newer one is taken");
    is_int(ocsp_check_not_older("answer", held - 86400, 0, err, sizeof(err)), 0,
           "anything is taken when none is held yet");
}

static void *cancel_later(void *arg)
{
    usleep(300 * 1000);
    atomic_store((atomic_bool *)arg, true);
    return NULL;
}

/* A listener whose backlog takes the connection and never answers: the
 * silent responder of an outage. */
static void test_fetch(void)
{
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof(sa);
    if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(l, 8) != 0 ||
        getsockname(l, (struct sockaddr *)&sa, &sl) != 0) {
        ok(0, "loopback listener");
        return;
    }
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%u/", (unsigned)ntohs(sa.sin_port));
    unsigned char der[] = {0x30, 0x00};
    gnutls_datum_t req = {der, sizeof(der)};
    atomic_bool cancel = false;
    struct ocsp_conf conf = {.timeout_s = 60, .max_bytes = 65536, .cancel = &cancel};
    struct ocsp_body body;
    char err[256] = "";

    pthread_t t;
    pthread_create(&t, NULL, cancel_later, &cancel);
    int r = ocsp_fetch(&conf, url, &req, &body, err, sizeof(err));
    pthread_join(t, NULL);
    is_int(r, -ECANCELED, "a stop cancels a fetch that waits on a silent responder");
    ok(strstr(err, "cancelled (stopping)") && strstr(err, url), "the error says so: %s", err);
    ok(body.data == NULL && body.len == 0, "and leaves no body");

    r = ocsp_fetch(&conf, url, &req, &body, err, sizeof(err));
    is_int(r, -ECANCELED, "a fetch started while stopping gives up at once too");

    conf.cancel = NULL;
    conf.timeout_s = 1;
    r = ocsp_fetch(&conf, url, &req, &body, err, sizeof(err));
    is_int(r, -ETIMEDOUT, "without a stop, the silent responder times out");
    ok(strstr(err, "did not answer within 1 s") != NULL, "the error says so: %s", err);
    close(l);
}

int main(void)
{
    if (!ok(fx_make(fixtures) == 0, "fixtures made with openssl"))
        return done_testing();
    leaf = fx_crt("leaf.pem");
    inter = fx_crt("inter.pem");
    test_verify();
    test_verify_revoked();
    test_leaf();
    test_schedule();
    test_not_older();
    test_fetch();
    gnutls_x509_crt_deinit(leaf);
    gnutls_x509_crt_deinit(inter);
    return done_testing();
}
