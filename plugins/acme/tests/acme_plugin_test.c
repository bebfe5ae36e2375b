/* The ACME plugin's glue against the kit's mock host: its tables, settings,
 * routes, http-01 answers, API, timers, certificates read through the host. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* The glue is included so its static functions are reachable. */
#include "plugins/acme/acme.c"
#include "plugins/acme/acme_answer.c"
#include "plugins/acme/acme_api.c"
#include "plugins/acme/acme_run.c"
#include "plugins/acme/acme_certs.c"
#include "plugins/acme/acme_schema.c"
#include "tests/tap.h"

#include <tlsbox/mock_host.h>

/* The reply body of an API call, or NULL; *status set. */
static char *call(const char *method, const char *path, const char *body, int *status)
{
    char *reply = NULL;
    *status = tlsbox_mock_api(method, path, body, &reply);
    return reply;
}

static void test_api_and_http(struct acme *a)
{
    int status;
    char *r = call("GET", "acme/status", NULL, &status);
    like(r, "\"idle\"", "no domains: idle, not an error");
    free(r);

    /* http-01 answers. */
    acme_chal_put(a, "tok123", "tok123.thumb");
    struct tlsbox_http_reply hr = {0};
    is_int(tlsbox_mock_http("GET", "/.well-known/acme-challenge/tok123", &hr), 0,
           "known token answered");
    is_int(hr.status, 200, "200");
    ok(hr.body && hr.body_len == strlen("tok123.thumb") && memcmp(hr.body, "tok123.thumb", 12) == 0,
       "body is the key authorization");
    free(hr.body);
    memset(&hr, 0, sizeof(hr));
    tlsbox_mock_http("GET", "/.well-known/acme-challenge/tok12", &hr);
    is_int(hr.status, 404, "prefix of a token is not a match");
    free(hr.body);
    memset(&hr, 0, sizeof(hr));
    is_int(tlsbox_mock_http("POST", "/.well-known/acme-challenge/tok123", &hr), -ENOENT,
           "POST is not ours");
    acme_chal_del(a, "tok123");
    memset(&hr, 0, sizeof(hr));
    tlsbox_mock_http("GET", "/.well-known/acme-challenge/tok123", &hr);
    is_int(hr.status, 404, "withdrawn token: 404");
    free(hr.body);

    /* API input checks. */
    free(call("POST", "acme/renew", "[1]", &status));
    is_int(status, 400, "renew: non-object body refused");
    r = call("POST", "acme/renew", "{\"force\":\"yes\"}", &status);
    is_int(status, 400, "renew: force must be boolean");
    like(r, "force", "message names the field");
    free(r);
    /* No domains: ACME is off, and a renewal is refused rather than queued. */
    int jobs = tlsbox_mock_jobs_run();
    r = call("POST", "acme/renew", "{\"force\":true}", &status);
    is_int(status, 409, "renew with ACME off refused");
    like(r, "ACME is off (acme.domains is empty)", "and names the setting that turns it on");
    is_int(tlsbox_mock_jobs_run(), jobs, "and no check was queued");
    free(r);
    free(call("POST", "acme/revoke", "{}", &status));
    is_int(status, 400, "revoke without a name refused");
    is_int(tlsbox_mock_set("domains", "a.test,b.test"), 0, "acme.domains set");
    free(call("POST", "acme/revoke", "{\"name\":\"other.test\"}", &status));
    is_int(status, 404, "revoke of a certificate not ours refused");
}

/* Its own tables, made by its migration under the store rule, and the
 * certificates it reads through the host, not through SQL. */
/*
 * A DNS server that takes each request and never answers it: it closes the
 * connection (as when the answer is lost), or with @p hold keeps it open (a
 * server that hangs).  It writes 'A' to @p out for an UPDATE adding a record
 * (class IN) and 'D' for one deleting it (class NONE).  Returns its pid, or
 * -1; its address in @p server.
 */
static pid_t dns_mute_start(char server[32], int out, bool hold)
{
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t slen = sizeof(sin);
    if (ls < 0 || bind(ls, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(ls, 8) < 0 ||
        getsockname(ls, (struct sockaddr *)&sin, &slen) < 0) {
        if (ls >= 0)
            close(ls);
        return -1;
    }
    snprintf(server, 32, "127.0.0.1:%u", ntohs(sin.sin_port));
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        alarm(20);
        for (;;) {
            int fd = accept(ls, NULL, NULL);
            unsigned char m[1024];
            size_t len = 0;
            ssize_t n;
            while (fd >= 0 && len < sizeof(m) && (n = read(fd, m + len, sizeof(m) - len)) > 0) {
                len += (size_t)n;
                if (len >= 2 && len >= 2 + (size_t)(m[0] << 8 | m[1]))
                    break;
            }
            /* After the length and the header: the zone, its type and class,
             * then the RR's name, type and class. */
            size_t i = 2 + 12;
            for (int names = 0; names < 2 && i < len; names++) {
                while (i < len && m[i])
                    i += (size_t)m[i] + 1;
                i += 1 + (names == 0 ? 4 : 2);
            }
            char what = i + 2 <= len ? (m[i + 1] == 1 ? 'A' : m[i + 1] == 254 ? 'D' : '?') : '?';
            if (write(out, &what, 1) != 1)
                _exit(1);
            if (fd >= 0 && !hold)
                close(fd);
        }
    }
    close(ls);
    return pid;
}

/* An UPDATE whose answer is lost may have been applied: withdrawn all the same. */
static void test_dns_answer_lost(struct acme *a)
{
    char server[32];
    int p[2];
    if (!ok(pipe(p) == 0, "a pipe for the mute DNS server"))
        return;
    pid_t pid = dns_mute_start(server, p[1], false);
    close(p[1]);
    if (!ok(pid > 0, "a DNS server that never answers started")) {
        close(p[0]);
        return;
    }
    is_int(tlsbox_mock_set("dns_server", server), 0, "dns_server: the mute one");
    is_int(tlsbox_mock_set("dns_alias", "acme.example.test"), 0, "dns_alias: no CNAME question");
    char *why = NULL;
    is_int(acme_answer_put(a, "dns-01", "a.test", "tok.thumb", &why), -ECONNRESET,
           "its answer lost, the dns-01 put fails");
    like(why,
         "_acme-challenge.acme.example.test at 127.0.0.1:", "  naming the record and the server");
    like(why, ": the server closed the connection before answering", "  and what went wrong");
    free(why);
    acme_answer_del(a, "dns-01", "a.test", "tok.thumb");
    char got[3] = "";
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    for (size_t n = 0; n < 2 && poll(&pfd, 1, 5000) > 0;)
        if (read(p[0], got + n, 1) == 1)
            n++;
        else
            break;
    is_str(got, "AD", "the record, which the server may have added, is deleted");

    /* Deleted where it went, even when acme.dns_server changed meanwhile. */
    char other[32];
    int q[2];
    pid_t pid2 = -1;
    if (ok(pipe(q) == 0, "a pipe for a second DNS server")) {
        pid2 = dns_mute_start(other, q[1], false);
        close(q[1]);
    }
    if (ok(pid2 > 0, "a second DNS server started")) {
        why = NULL;
        is_int(acme_answer_put(a, "dns-01", "b.test", "tok3.thumb", &why), -ECONNRESET,
               "a put on the first server");
        free(why);
        is_int(tlsbox_mock_set("dns_server", other), 0, "then dns_server: the second one");
        acme_answer_del(a, "dns-01", "b.test", "tok3.thumb");
        char got1[3] = "", got2[3] = "";
        struct pollfd pf[2] = {{.fd = p[0], .events = POLLIN}, {.fd = q[0], .events = POLLIN}};
        for (size_t n1 = 0, n2 = 0; n1 + n2 < 2 && poll(pf, 2, 3000) > 0;) {
            if ((pf[0].revents & POLLIN) && n1 < 2 && read(p[0], got1 + n1, 1) == 1)
                n1++;
            if ((pf[1].revents & POLLIN) && n2 < 2 && read(q[0], got2 + n2, 1) == 1)
                n2++;
        }
        is_str(got1, "AD", "  the first server is asked to delete what it was given");
        is_str(got2, "", "  the second, which never had it, is not asked");
        kill(pid2, SIGKILL);
        waitpid(pid2, NULL, 0);
        close(q[0]);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(p[0]);
    is_int(tlsbox_mock_set("dns_alias", ""), 0, "dns_alias back");
    is_int(tlsbox_mock_set("dns_server", "127.0.0.1:5353"), 0, "dns_server back");
}

static uint64_t ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* While the daemon stops (it waits), a hung server holds a withdrawal briefly. */
static void test_dns_del_stopping(struct acme *a)
{
    char server[32];
    int p[2];
    if (!ok(pipe(p) == 0, "a pipe for the hung DNS server"))
        return;
    pid_t pid = dns_mute_start(server, p[1], true);
    close(p[1]);
    if (!ok(pid > 0, "a DNS server that takes connections and hangs started")) {
        close(p[0]);
        return;
    }
    is_int(tlsbox_mock_set("dns_server", server), 0, "dns_server: the hung one");
    char *value = dns_value("tok2.thumb");
    struct dns_settings d;
    dns_settings_load(a, &d);
    dns_put_remember(a, "c.test", value, "_acme-challenge.c.example.test", &d, 0);
    dns_settings_free(&d);
    free(value);
    atomic_store(&a->stopping, true);
    uint64_t t0 = ms_now();
    acme_answer_del(a, "dns-01", "c.test", "tok2.thumb");
    uint64_t took = ms_now() - t0;
    atomic_store(&a->stopping, false);
    /* Not a timing test: 2 s is the limit, 10 s the default it replaces. */
    ok(took < 6000, "stopping, the delete gives up in 2 s, not 10 (took %llu ms)",
       (unsigned long long)took);
    char got = 0;
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    ok(poll(&pfd, 1, 5000) > 0 && read(p[0], &got, 1) == 1 && got == 'D',
       "  after asking the server to delete the record");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(p[0]);
    is_int(tlsbox_mock_set("dns_server", "127.0.0.1:5353"), 0, "dns_server back");
}

struct put_args {
    struct acme *a;
    int ret;
    char *why;
};

static void *put_thread(void *arg)
{
    struct put_args *pa = arg;
    pa->ret = acme_answer_put(pa->a, "dns-01", "e.test", "tok4.thumb", &pa->why);
    return NULL;
}

/* A stop while a put waits for a hung server: the put gives up as briefly
 * as a withdrawal at a stop, and as a stop, not as a failed challenge. */
static void test_dns_put_stopping(struct acme *a)
{
    char server[32];
    int p[2];
    if (!ok(pipe(p) == 0, "a pipe for the hung DNS server"))
        return;
    pid_t pid = dns_mute_start(server, p[1], true);
    close(p[1]);
    if (!ok(pid > 0, "a DNS server that takes connections and hangs started")) {
        close(p[0]);
        return;
    }
    is_int(tlsbox_mock_set("dns_server", server), 0, "dns_server: the hung one");
    is_int(tlsbox_mock_set("dns_alias", "acme.example.test"), 0, "dns_alias: no CNAME question");
    struct put_args pa = {.a = a};
    pthread_t th;
    if (!ok(pthread_create(&th, NULL, put_thread, &pa) == 0, "a put in a thread of its own")) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        close(p[0]);
        return;
    }
    char got = 0;
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    ok(poll(&pfd, 1, 5000) > 0 && read(p[0], &got, 1) == 1 && got == 'A',
       "the server has the update and does not answer");
    uint64_t t0 = ms_now();
    atomic_store(&a->stopping, true);
    pthread_join(th, NULL);
    uint64_t took = ms_now() - t0;
    /* Not a timing test: 2 s is the limit, the 10 s default what it took. */
    ok(took < 6000, "stopping, the put in progress gives up in 2 s, not 10 (took %llu ms)",
       (unsigned long long)took);
    is_int(pa.ret, -ECANCELED, "  as cancelled (a stop), not as a failed challenge");
    like(pa.why,
         "_acme-challenge.acme.example.test at 127.0.0.1:", "  naming the record and server");
    like(pa.why, ": no answer in 2 s (stopping)", "  and how long it waited, and why");
    free(pa.why);
    acme_answer_del(a, "dns-01", "e.test", "tok4.thumb");
    ok(poll(&pfd, 1, 5000) > 0 && read(p[0], &got, 1) == 1 && got == 'D',
       "  the record, which the server may have added, is withdrawn");
    atomic_store(&a->stopping, false);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    close(p[0]);
    is_int(tlsbox_mock_set("dns_alias", ""), 0, "dns_alias back");
    is_int(tlsbox_mock_set("dns_server", "127.0.0.1:5353"), 0, "dns_server back");
}

static int64_t order_add(sqlite3 *db, int64_t account, const char *name, const char *status)
{
    struct acme_order_row o = {.account_id = account,
                               .cert_name = (char *)name,
                               .domains = (char *)"[\"a.test\"]",
                               .key_type = (char *)"ecdsa-p256",
                               .status = (char *)"new"};
    if (acme_store_order_insert(db, &o) < 0)
        return -1;
    if (status && acme_store_order_set_status(db, o.id, status) < 0)
        return -1;
    return o.id;
}

/* A renewal that keeps failing places a new order at every try (up to four a
 * day): the finished ones are pruned per name, the unfinished never. */
static void test_orders_kept(sqlite3 *db)
{
    int64_t account = 0;
    is_int(acme_store_account_put(db, "https://ca.invalid/dir", NULL, "not a key", &account), 0,
           "an account row for the orders");
    int64_t open = order_add(db, account, "a.test", NULL);
    ok(open > 0, "an unfinished order");
    is_int(order_add(db, account, "c.test", "done") > 0, 1, "a finished order of another name");
    int64_t first = 0;
    for (int i = 0; i < 60; i++) {
        int64_t id = order_add(db, account, "a.test", i % 2 ? "invalid" : "abandoned");
        if (i == 0)
            first = id;
        if (id < 0)
            break;
    }
    ok(order_add(db, account, "a.test", NULL) > open, "one more unfinished order");
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM acme_orders WHERE cert_name = 'a.test' "
                                 "AND status IN ('done','abandoned','invalid')"),
           20, "of 60 failed orders the newest 20 are kept");
    ok(tlsbox_mock_query_int("SELECT min(id) FROM acme_orders WHERE cert_name = 'a.test' AND "
                             "status = 'invalid'") > first + 39,
       "the oldest are the ones dropped");
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM acme_orders WHERE cert_name = 'a.test' "
                                 "AND status = 'new'"),
           2, "no unfinished order is dropped");
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM acme_orders WHERE cert_name = 'c.test'"), 1,
           "another name's orders are left alone");
}

static void test_store_and_certs(struct acme *a)
{
    is_int(tlsbox_mock_query_int("SELECT count(*) FROM sqlite_master WHERE name IN "
                                 "('acme_accounts','acme_orders','acme_events','acme_kv',"
                                 "'acme_dns_records')"),
           5, "its migrations made its five tables");
    sqlite3 *db = a->host->store_open(a->self);
    ok(db != NULL, "store_open");
    is_int(acme_store_kv_put(db, "ari:a.test", "{\"next\":1}"), 0, "a value written to acme_kv");
    char *v = NULL;
    is_int(acme_store_kv_get(db, "ari:a.test", &v), 0, "and read back");
    is_str(v, "{\"next\":1}", "same value");
    free(v);
    ok(sqlite3_exec(db, "DELETE FROM plugin_kv", NULL, NULL, NULL) == SQLITE_AUTH,
       "the core's plugin_kv is refused, as in the daemon");
    is_int(tlsbox_mock_log_count("refused to delete from plugin_kv"), 1, "with one log line");
    test_orders_kept(db);
    a->host->store_close(a->self, db);

    struct acme_cert_row row;
    is_int(acme_cert_get(a, "a.test", &row), -ENOENT, "no certificate yet: -ENOENT");
    tlsbox_mock_cert_add("a.test", "-----BEGIN CERTIFICATE-----\n",
                         "{\"name\":\"a.test\",\"sans\":[\"a.test\",\"b.test\"],\"status\":"
                         "\"active\",\"serial\":\"0a\",\"ari_id\":null,\"not_before\":100,"
                         "\"not_after\":200}");
    is_int(acme_cert_get(a, "a.test", &row), 0, "a certificate read through cert_get");
    is_str(row.sans, "[\"a.test\",\"b.test\"]", "its names");
    is_str(row.serial, "0a", "its serial");
    ok(row.ari_id == NULL, "no ARI id");
    ok(row.not_before == 100 && row.not_after == 200, "its validity");
    acme_cert_row_free(&row);
}

int main(void)
{
    const struct tlsbox_plugin_desc *d = &tlsbox_plugin_descriptor;
    is_str(d->name, "acme", "descriptor name");
    int nset = 0, secret_ok = 0;
    for (const struct tlsbox_setting_def *s = d->settings; s->key; s++) {
        nset++;
        if (strcmp(s->key, "eab_hmac") == 0 && (s->flags & TLSBOX_SETTING_SECRET))
            secret_ok = 1;
    }
    ok(nset >= 10, "declares its settings (%d)", nset);
    ok(secret_ok, "eab_hmac is SECRET");

    if (tlsbox_mock_setup(d) < 0) {
        ok(0, "mock host with acme's migrations applied");
        return done_testing();
    }
    void *state = NULL;
    is_int(d->init(tlsbox_mock_self(), &tlsbox_mock_host, &state), 0, "init");
    struct acme *a = state;
    is_int(d->start(state), 0, "start with no domains");
    ok(tlsbox_mock_jobs_run() >= 1, "a first check ran at start");
    is_int(tlsbox_mock_timers(), 1, "the periodic check is a timer");
    int jobs = tlsbox_mock_jobs_run();
    is_int(tlsbox_mock_advance((uint64_t)a->check_minutes * 60000), 1,
           "it fires once per check period");
    is_int(tlsbox_mock_jobs_run(), jobs + 1, "and runs the check");
    int st;
    char *r = call("GET", "acme/status", NULL, &st);
    is_int(st, 200, "acme/status answers");
    free(r);

    test_api_and_http(a);
    test_store_and_certs(a);

    struct acme_conf conf;
    ok(tlsbox_mock_set("domains", "1.2.3.256") != 0, "a broken IPv4 address is refused");
    ok(tlsbox_mock_set("domains", "a.test,10.0.0") != 0, "so is a short one among names");
    ok(tlsbox_mock_set("domains", "2001:db8:::1") != 0, "and broken IPv6 text");
    /* RFC 8738: addresses are identifiers too, kept as the SAN list says them. */
    is_int(tlsbox_mock_set("domains", "10.0.0.1,2001:db8:0:0::1"), 0, "IP addresses are taken");
    acme_conf_load(a, &conf);
    is_str(conf.domains[1], "2001:db8::1", "IPv6 in its canonical form (RFC 5952)");
    acme_conf_free(&conf);
    is_int(tlsbox_mock_set("domains", "a.test, b.test"), 0, "domains with a space after a comma");
    acme_conf_load(a, &conf);
    is_int(conf.ndomains, 2, "domains parsed");
    is_str(conf.domains[1], "b.test", "second domain trimmed");
    is_str(conf.directory, ACME_LE_PRODUCTION, "default directory is LE production");
    /* The mock has no site plugin: site.http_port reads as its default, 80. */
    is_str(conf.challenge, "http-01", "challenge auto: http-01 while the site has an HTTP port");
    ok(conf.challenge_fallback, "  and tls-alpn-01 when the CA offers no http-01");
    acme_conf_free(&conf);
    ok(tlsbox_mock_set("challenge", "dns-02") != 0, "challenge dns-02 is refused (no such)");
    is_int(tlsbox_mock_set("challenge", "tls-alpn-01"), 0, "challenge tls-alpn-01");
    acme_conf_load(a, &conf);
    ok(!strcmp(conf.challenge, "tls-alpn-01") && !conf.challenge_fallback,
       "  asked for by name: that one alone");
    acme_conf_free(&conf);
    char *why = NULL;
    unsigned char want[32], got[32];
    gnutls_hash_fast(GNUTLS_DIG_SHA256, "token.thumbprint", 16, want);
    is_int(acme_answer_put(a, "tls-alpn-01", "a.test", "token.thumbprint", &why), 0,
           "a tls-alpn-01 answer goes to the host");
    ok(tlsbox_mock_alpn_answer("a.test", got) && memcmp(got, want, 32) == 0,
       "  as the SHA-256 of the key authorization (RFC 8737 section 3)");
    acme_answer_del(a, "tls-alpn-01", "a.test", "token.thumbprint");
    is_int(tlsbox_mock_alpn_answers(), 0, "  and is withdrawn");
    is_int(acme_answer_put(a, "tls-alpn-01", "A_B", "t.t", &why), -EINVAL,
           "an identifier the host refuses fails the answer");
    free(why);
    is_int((int)acme_answer_types(a), ACME_CH_ALPN, "without acme.dns_*, tls-alpn-01 only");
    is_int(acme_answer_put(a, "dns-01", "a.test", "token.thumbprint", &why), -ENOTSUP,
           "dns-01 without its settings: -ENOTSUP");
    is_str(why,
           "dns-01 needs acme.dns_server, acme.dns_zone, acme.dns_tsig_key, acme.dns_tsig_secret",
           "  naming the four settings it needs");
    free(why);
    is_int(tlsbox_mock_set("dns_server", "127.0.0.1:5353"), 0, "dns_server set");
    is_int(tlsbox_mock_set("dns_zone", "example.test"), 0, "dns_zone set");
    is_int(tlsbox_mock_set("dns_tsig_key", "tlsbox-acme"), 0, "dns_tsig_key set");
    is_int(tlsbox_mock_set("dns_tsig_secret", "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"), 0,
           "dns_tsig_secret set");
    is_int((int)acme_answer_types(a), ACME_CH_ALPN | ACME_CH_DNS, "then dns-01 too");
    ok(tlsbox_mock_set("dns_server", "127.0.0.1 5353") != 0, "a server with a space is refused");
    ok(tlsbox_mock_set("dns_tsig_secret", "not base64!") != 0,
       "a secret that is not base64 is refused");
    /* Values the dns-01 client would refuse at every order are refused when set. */
    const char *const dns_bad[] = {"dns_tsig_secret",
                                   "abcde",
                                   "dns_tsig_secret",
                                   "Zm9v=",
                                   "dns_tsig_secret",
                                   "==",
                                   "dns_tsig_secret",
                                   "Zm9vYg=",
                                   "dns_server",
                                   "h.test:0",
                                   "dns_server",
                                   "h.test:65536",
                                   "dns_server",
                                   "cafe:0",
                                   "dns_server",
                                   "[::1]:99999",
                                   "dns_resolver",
                                   "127.0.0.1:0",
                                   "dns_tsig_key",
                                   "a..b",
                                   "dns_tsig_key",
                                   ".",
                                   "dns_tsig_key",
                                   ".key",
                                   NULL};
    for (size_t i = 0; dns_bad[i]; i += 2)
        ok(tlsbox_mock_set(dns_bad[i], dns_bad[i + 1]) != 0, "%s %s is refused", dns_bad[i],
           dns_bad[i + 1]);
    char label64[80];
    memset(label64, 'k', 64);
    label64[64] = '\0';
    ok(tlsbox_mock_set("dns_tsig_key", label64) != 0, "a key name with a 64-byte label is refused");
    const char *const dns_good[] = {"dns_tsig_secret",
                                    "Zm9vYg==",
                                    "dns_tsig_secret",
                                    "Zm9vYmE=",
                                    "dns_tsig_secret",
                                    "Zm9vYg",
                                    "dns_server",
                                    "h.test:65535",
                                    "dns_server",
                                    "10.0.0.53:053",
                                    "dns_server",
                                    "::1",
                                    "dns_server",
                                    "2001:db8::53",
                                    "dns_server",
                                    "[::1]:5353",
                                    "dns_resolver",
                                    "[2001:db8::53]",
                                    "dns_tsig_key",
                                    "Key_1.example.",
                                    "dns_tsig_key",
                                    "tlsbox-acme",
                                    "dns_server",
                                    "127.0.0.1:5353",
                                    "dns_resolver",
                                    "",
                                    "dns_tsig_secret",
                                    "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0",
                                    NULL};
    for (size_t i = 0; dns_good[i]; i += 2)
        is_int(tlsbox_mock_set(dns_good[i], dns_good[i + 1]), 0, "%s %s is taken", dns_good[i],
               dns_good[i + 1]);
    char *secret = tlsbox_xstrdup("");
    for (int i = 0; i < 128; i++) {
        char *longer = tlsbox_xasprintf("%sQUJD", secret);
        free(secret);
        secret = longer;
    }
    is_int(tlsbox_mock_set("dns_tsig_secret", secret), 0, "a secret of 384 bytes is taken");
    free(secret);
    is_int(tlsbox_mock_set("dns_tsig_secret", "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0"), 0,
           "dns_tsig_secret back");
    test_dns_answer_lost(a);
    test_dns_del_stopping(a);
    test_dns_put_stopping(a);
    is_int(tlsbox_mock_set("domains", "*.a.test,a.test"), 0, "a wildcard name is taken");
    ok(tlsbox_mock_set("domains", "*.*.a.test") != 0, "two wildcard labels are refused");
    ok(tlsbox_mock_set("domains", "a.*.test") != 0, "so is a wildcard inside a name");
    ok(tlsbox_mock_set("domains", "*.10.0.0.1") != 0, "and a wildcard address");
    is_int(tlsbox_mock_set("domains", "a.test, b.test"), 0, "domains back");
    is_int(tlsbox_mock_set("challenge", "auto"), 0, "challenge back to auto");

    ok(run_sans_match(
           "[\"b.test\",\"a.test\"]",
           &(struct acme_conf){.domains = (char *[]){"a.test", "b.test"}, .ndomains = 2}),
       "same names in another order match");
    ok(!run_sans_match(
           "[\"a.test\"]",
           &(struct acme_conf){.domains = (char *[]){"a.test", "b.test"}, .ndomains = 2}),
       "a missing name is a change");

    /* A CA that issues for other names than ordered: refused before the
     * host sees it, so the certificate serving stays. */
    is_int(tlsbox_mock_set("domains", "a.test,a.test, b.test"), 0, "a name listed twice");
    acme_conf_load(a, &conf);
    is_int((int)conf.ndomains, 2, "  is ordered once");
    ok(run_sans_match("[\"a.test\",\"b.test\"]", &conf),
       "  so a certificate for the two names matches (else: ordered again every check)");
    char *wrong = NULL;
    {
        gnutls_x509_crt_t crt;
        gnutls_privkey_t key;
        gnutls_pubkey_t pub;
        gnutls_datum_t pem = {0};
        gnutls_x509_crt_init(&crt);
        acme_key_generate("ecdsa-p256", &key);
        gnutls_pubkey_init(&pub);
        gnutls_pubkey_import_privkey(pub, key, 0, 0);
        gnutls_x509_crt_set_version(crt, 3);
        gnutls_x509_crt_set_serial(crt, "\x01", 1);
        gnutls_x509_crt_set_activation_time(crt, time(NULL));
        gnutls_x509_crt_set_expiration_time(crt, time(NULL) + 86400);
        gnutls_x509_crt_set_dn_by_oid(crt, GNUTLS_OID_X520_COMMON_NAME, 0, "a.test", 6);
        gnutls_x509_crt_set_subject_alt_name(crt, GNUTLS_SAN_DNSNAME, "a.test", 6,
                                             GNUTLS_FSAN_APPEND);
        gnutls_x509_crt_set_pubkey(crt, pub);
        gnutls_x509_crt_privkey_sign(crt, crt, key, GNUTLS_DIG_SHA256, 0);
        gnutls_x509_crt_export2(crt, GNUTLS_X509_FMT_PEM, &pem);
        wrong = tlsbox_xstrdup((const char *)pem.data);
        gnutls_free(pem.data);
        gnutls_pubkey_deinit(pub);
        gnutls_privkey_deinit(key);
        gnutls_x509_crt_deinit(crt);
    }
    struct acme_client cl = {.kid = "https://ca.test/acct/1"};
    struct run_cert rc = {.name = "a.test", .key_type = "ecdsa-p256"};
    struct acme_issued is = {.chain_pem = wrong, .order_url = "https://ca.test/order/7"};
    struct acme_err e = {0};
    int installs = tlsbox_mock_cert_installs();
    is_int(run_install(a, &conf, &cl, &rc, &is, &e), -EINVAL,
           "a certificate for a.test alone, ordered for a.test and b.test: refused");
    is_int(tlsbox_mock_cert_installs(), installs, "  and never installed");
    is_str(e.detail,
           "the certificate of order https://ca.test/order/7 was refused: it is for a.test, not "
           "for the names ordered (a.test, b.test); the certificate serving stays, and the order "
           "is abandoned: the next attempt places a new one",
           "  saying what it is for, and that the serving one stays");
    is_str(e.type, "tlsbox:names", "  as its own error type");
    acme_err_clear(&e);
    acme_conf_free(&conf);
    free(wrong);
    is_int(tlsbox_mock_set("domains", "a.test, b.test"), 0, "domains back");

    d->stop(state);
    d->fini(state);
    tlsbox_mock_teardown();
    return done_testing();
}
