/* The notify plugin's pure parts: the signature against RFC 4231's HMAC-
 * SHA256 vectors, the origin that logs and the API show instead of the
 * webhook URL (its path, query and user:password may be its key), and the
 * e-mail made from a delivery: its headers, that nothing an event carries
 * can add a header, CRLF line ends.  And on the mock host: stopped with a
 * retry waiting, the stop hook cancels its timer and the store keeps the
 * delivery, which the next start sends again. */
#include <stdlib.h>
#include <string.h>

#include <tlsbox/mock_host.h>
#include <tlsbox/plugin.h>

#include "plugins/notify/notify.h"
#include "tests/tap.h"

extern const struct tlsbox_plugin_desc tlsbox_plugin_descriptor;

static void origin(const char *url, const char *want)
{
    char *o = notify_url_origin(url);
    is_str(o, want, "origin of %s", url);
    free(o);
}

/* The subject of the mail for delivery body @p body. */
static void subject_is(const char *body, const char *want, const char *what)
{
    char *subject = NULL;
    free(notify_mail_message(body, "f@x", "t@x", 0, &subject));
    is_str(subject, want, "%s", what);
    free(subject);
}

/* "status tries kept" of the only delivery ("kept": its body is). */
static int64_t row_is(const char *status, int tries)
{
    char sql[200];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM notify_deliveries WHERE status = '%s' AND tries = %d AND "
             "body IS NOT NULL",
             status, tries);
    return tlsbox_mock_query_int(sql);
}

/* Init and start notify on the mock; its state, or NULL. */
static void *start(const struct tlsbox_plugin_desc *d)
{
    void *state = NULL;
    if (d->init(tlsbox_mock_self(), &tlsbox_mock_host, &state) != 0 || d->start(state) != 0)
        return NULL;
    tlsbox_mock_started(state);
    return state;
}

static void stop(const struct tlsbox_plugin_desc *d, void *state)
{
    tlsbox_mock_stopped();
    if (d->stop)
        d->stop(state);
    d->fini(state);
}

static void test_stop_keeps_pending(void)
{
    const struct tlsbox_plugin_desc *d = &tlsbox_plugin_descriptor;
    if (tlsbox_mock_setup(d) < 0) {
        ok(0, "mock host with notify's migrations applied");
        return;
    }
    /* Nothing listens on port 9 of loopback: each try is refused at once. */
    tlsbox_mock_set("url", "http://127.0.0.1:9/hook");
    tlsbox_mock_set("retry_seconds", "60");
    void *state = start(d);
    ok(state != NULL, "notify starts");
    is_int(tlsbox_mock_api("POST", "notify/test", "{}", NULL), 202, "a test delivery is queued");
    is_int(tlsbox_mock_timers(), 1, "its first try failed: a retry timer waits");
    is_int((int)row_is("retrying", 1), 1, "the store says retrying after 1 try, its body kept");
    ok(d->stop != NULL, "notify has a stop hook");
    stop(d, state);
    /* The core cancels a plugin's timers after its stop hook too; the hook
     * must not count on that (a timer set meanwhile would outlive fini). */
    is_int(tlsbox_mock_timers(), 0, "the stop hook cancelled the retry timer");
    is_int((int)row_is("retrying", 1), 1, "the delivery is still pending in the store");
    /* The mock keeps the first start's routes and subscriptions (the core
     * drops them after stop): only the step of start that resumes. */
    int jobs = tlsbox_mock_jobs_run();
    state = NULL;
    is_int(d->init(tlsbox_mock_self(), &tlsbox_mock_host, &state), 0, "notify inits again");
    notify_resume(state);
    is_int(tlsbox_mock_jobs_run(), jobs + 1, "the start sends the pending delivery again");
    is_int((int)row_is("retrying", 2), 1, "its tries counted on: 2");
    is_int(tlsbox_mock_timers(), 1, "and the next retry waits");
    stop(d, state);
    tlsbox_mock_teardown();
}

int main(void)
{
    char *s = notify_signature("Jefe", "what do ya want for nothing?", 28);
    is_str(s, "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
           "RFC 4231 test case 2");
    free(s);
    s = notify_signature("key", "", 0);
    is_str(s, "sha256=5d5d139563c95b5967b9bd9a8c9b233a9dedb45072794cd232dc1b74832607d0",
           "an empty body is signed too");
    free(s);

    origin("https://hooks.example.com/services/T0/B0/XXXX", "https://hooks.example.com");
    origin("http://127.0.0.1:8080/hook?token=abc", "http://127.0.0.1:8080");
    origin("https://user:pass@example.com:8443/x#frag", "https://example.com:8443");
    origin("https://[::1]:9000/p", "https://[::1]:9000");
    origin("http://example.com", "http://example.com");
    origin("not a url", "?");
    origin("smtp://127.0.0.1:587", "smtp://127.0.0.1:587");

    /* 2026-12-05 12:00:00 UTC, a Saturday. */
    const char *body = "{\"event\":\"acme.failed\",\"data\":{\"name\":\"www\",\"step\":"
                       "\"order\\r\\nBcc: evil@example.test\",\"attempt\":3},\"host\":\"box\","
                       "\"at\":\"2026-12-05T12:00:00Z\",\"id\":42}";
    char *subject = NULL;
    char *m = notify_mail_message(body, "box@example.test", "a@example.test,b@example.test",
                                  1796472000, &subject);
    is_str(subject,
           "[tlsbox box] Certificate renewal failed for www at step order  Bcc: "
           "evil@example.test",
           "the subject names the box, the certificate and the step");
    ok(strstr(m, "Date: Sat, 05 Dec 2026 12:00:00 +0000\r\n") != NULL, "an RFC 5322 date");
    ok(strstr(m, "From: tlsbox <box@example.test>\r\nTo: a@example.test,b@example.test\r\n") !=
           NULL,
       "From and To");
    ok(strstr(m, "Message-ID: <tlsbox.42.1796472000@box>\r\n") != NULL, "a Message-ID of the box");
    ok(strstr(m, "\nBcc:") == NULL && strstr(m, "\rBcc:") == NULL,
       "a line break in an event's value adds no header (no Bcc:)");
    int bare = 0;
    for (const char *p = m; *p; p++)
        bare += *p == '\n' && (p == m || p[-1] != '\r');
    is_int(bare, 0, "every line ends in CRLF");
    ok(strstr(m, "\r\n\r\nCertificate renewal failed for www") != NULL &&
           strstr(m, "  attempt: 3\r\n") != NULL && strstr(m, "Event: acme.failed\r\n") != NULL,
       "the body: what happened, the event, each detail on its line");
    free(m);
    free(subject);
    m = notify_mail_message("{\"event\":\"notify.test\",\"data\":{},\"host\":\"K\xc3\xb6ln\","
                            "\"id\":1}",
                            "f@x", "t@x", 0, &subject);
    ok(strstr(m, "Subject: =?UTF-8?B?W3Rsc2JveCBLw7Zsbl0gVGVzdCBtZXNzYWdl?=\r\n") != NULL,
       "a subject that is not ASCII is one RFC 2047 encoded word");
    free(m);
    free(subject);
    subject_is("{\"event\":\"cert.expiring\",\"data\":{\"name\":\"shop\",\"days_left\":4,"
               "\"threshold\":7,\"expired\":false},\"host\":\"box\"}",
               "[tlsbox box] Certificate shop expires in 4 days", "cert.expiring: the days left");
    subject_is("{\"event\":\"cert.expiring\",\"data\":{\"name\":\"shop\",\"days_left\":0,"
               "\"threshold\":1,\"expired\":false},\"host\":\"box\"}",
               "[tlsbox box] Certificate shop expires within a day", "less than a day left");
    subject_is("{\"event\":\"cert.expiring\",\"data\":{\"name\":\"shop\",\"days_left\":0,"
               "\"threshold\":0,\"expired\":true},\"host\":\"box\"}",
               "[tlsbox box] Certificate shop has EXPIRED", "and once it has expired");
    test_stop_keeps_pending();
    return done_testing();
}
