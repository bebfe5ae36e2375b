/* Unit test of the example plugin against the kit's mock host: its table,
 * its setting, its API route, its timer, its metric and its log.  Prints TAP.
 *
 *   make check      (see the Makefile; or, in the tlsbox tree, make check)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tlsbox/mock_host.h>

extern const struct tlsbox_plugin_desc tlsbox_plugin_descriptor;

static int n, failed;

static void check(int pass, const char *what)
{
    printf("%sok %d - %s\n", pass ? "" : "not ", ++n, what);
    failed += !pass;
}

static void check_str(const char *got, const char *want, const char *what)
{
    int pass = got && strcmp(got, want) == 0;
    check(pass, what);
    if (!pass)
        printf("#   got '%s', want '%s'\n", got ? got : "(null)", want);
}

/* GET example/hello; returns the body (caller frees), status in *status. */
static char *hello(int *status)
{
    char *body = NULL;
    *status = tlsbox_mock_api("GET", "example/hello", NULL, &body);
    return body;
}

int main(void)
{
    const struct tlsbox_plugin_desc *d = &tlsbox_plugin_descriptor;
    void *state = NULL;
    int status;

    if (tlsbox_mock_setup(d) < 0) {
        printf("Bail out! the mock host could not apply the migrations\n");
        return 1;
    }
    check(tlsbox_mock_query_int("SELECT count(*) FROM example_greetings") == 0,
          "the migration made the table, empty");
    check(d->init(tlsbox_mock_self(), &tlsbox_mock_host, &state) == 0, "init");
    check(d->start(state) == 0, "start");
    check(tlsbox_mock_log_count("example plugin started") == 1, "it says it started");

    char *body = hello(&status);
    check(status == 200, "GET example/hello answers 200");
    check_str(body, "{\"greeting\":\"hello\",\"count\":1}", "with the default greeting");
    free(body);
    check(tlsbox_mock_query_int("SELECT count(*) FROM example_greetings WHERE text = 'hello'") == 1,
          "the greeting is in its table");

    check(tlsbox_mock_set("greeting", "good morning") == 0, "a valid greeting is taken");
    body = hello(&status);
    check_str(body, "{\"greeting\":\"good morning\",\"count\":2}", "and answered");
    free(body);
    check(tlsbox_mock_set("greeting", "<script>") < 0, "a greeting outside the pattern is refused");
    body = hello(&status);
    check_str(body, "{\"greeting\":\"good morning\",\"count\":3}", "the old value stays");
    free(body);

    for (int i = 0; i < 120; i++)
        free(hello(&status));
    check(tlsbox_mock_query_int("SELECT count(*) FROM example_greetings") == 123, "123 greetings");
    check(tlsbox_mock_advance(59999) == 0, "the prune timer has not fired before a minute");
    check(tlsbox_mock_advance(1) == 1, "it fires at one minute");
    check(tlsbox_mock_query_int("SELECT count(*) FROM example_greetings") == 100,
          "and keeps the newest 100");
    check(tlsbox_mock_query_int("SELECT min(id) FROM example_greetings") == 24,
          "the oldest 23 went");
    check(tlsbox_mock_log_count("pruned 23 old greetings") == 1, "it logs how many");
    check(tlsbox_mock_metric("tlsbox_example_hellos_total") == 123, "the metric counts 123");

    if (d->stop)
        d->stop(state);
    d->fini(state);
    tlsbox_mock_teardown();
    printf("1..%d\n", n);
    return failed ? 1 : 0;
}
