/* Loader: a good plugin loads (its migrations applied when a store is open);
 * wrong major, newer minor and a missing symbol are refused with a message
 * naming the file and both versions.  A plugin disabled and enabled live
 * while another thread reads its state and error, as GET /plugins does:
 * under ThreadSanitizer, no data race (it exits non-zero on one). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/plugin_loader.h"
#include "core/plugin_schema.h"
#include "core/store.h"
#include "core/settings.h"
#include "core/xalloc.h"
#include "tests/tap.h"

static char *built(const char *rel)
{
    const char *b = getenv("top_builddir");
    return xasprintf("%s/%s", b ? b : ".", rel);
}

/* The reader: what api_core's plugin_json reads, until told to stop. */
static atomic_bool stop_reading;
static atomic_long reads;

static void *read_state(void *arg)
{
    struct tlsbox_plugin *p = arg;
    size_t len = 0;
    while (!atomic_load(&stop_reading)) {
        len += strlen(plugin_state_name(p->pstate));
        const char *e = p->error;
        len += e ? strlen(e) : 0;
        atomic_fetch_add(&reads, 1);
    }
    return (void *)len;
}

/* Disable and enable @p ex 20 times (core.plugins_disabled, then
 * plugins_follow_disabled, as the main thread does on SIGUSR2) while a
 * reader thread reads its state; returns how many rounds ended running. */
static int toggle_under_reader(struct tlsbox_plugin *ex)
{
    pthread_t t;
    char *err = NULL;
    int running = 0;
    if (pthread_create(&t, NULL, read_state, ex) != 0)
        return -1;
    for (int i = 0; i < 20; i++) {
        settings_set("core.plugins_disabled", "example", "test", &err);
        free(err);
        err = NULL;
        plugins_follow_disabled();
        settings_set("core.plugins_disabled", "", "test", &err);
        free(err);
        err = NULL;
        plugins_follow_disabled();
        running += ex->pstate == PLUGIN_STARTED;
    }
    atomic_store(&stop_reading, true);
    pthread_join(t, NULL);
    return running;
}

int main(void)
{
    char *err = NULL;
    struct tlsbox_plugin_desc d = {
        .abi_major = TLSBOX_ABI_MAJOR + 1, .abi_minor = 0, .size = sizeof d};
    ok(plugin_check_abi("/x/bad.so", &d, &err) < 0, "wrong major refused");
    like(err, "/x/bad.so", "message names the file");
    char *want = xasprintf("ABI %d.0", TLSBOX_ABI_MAJOR + 1);
    like(err, want, "message names the plugin's ABI");
    free(want);
    want = xasprintf("ABI %d.%d", TLSBOX_ABI_MAJOR, TLSBOX_ABI_MINOR);
    like(err, want, "message names the core's ABI");
    free(want);
    free(err);
    err = NULL;

    d.abi_major = TLSBOX_ABI_MAJOR;
    d.abi_minor = TLSBOX_ABI_MINOR + 1;
    ok(plugin_check_abi("/x/new.so", &d, &err) < 0, "newer minor refused");
    like(err, "newer than this tlsboxd", "message says newer");
    free(err);
    err = NULL;

    d.abi_minor = TLSBOX_ABI_MINOR;
    ok(plugin_check_abi("/x/ok.so", &d, &err) == 0, "same major and minor accepted");
    d.size = 8;
    ok(plugin_check_abi("/x/short.so", &d, &err) < 0, "truncated descriptor refused");
    free(err);

    settings_register("core", core_settings);
    char *p = built("tests/plugins/.libs/bad_major.so");
    ok(plugins_load_file(p) < 0, "bad_major.so is not loaded");
    free(p);
    p = built("tests/plugins/.libs/newer_minor.so");
    ok(plugins_load_file(p) < 0, "newer_minor.so is not loaded");
    free(p);
    p = built("tests/plugins/.libs/no_symbol.so");
    ok(plugins_load_file(p) < 0, "no_symbol.so is not loaded");
    free(p);
    p = built("tests/plugins/.libs/nonexistent.so");
    ok(plugins_load_file(p) < 0, "a missing file is refused");
    free(p);
    ok(plugins_first() == NULL, "nothing refused reached the plugin list");

    p = built("pdk/example/.libs/example.so");
    is_int(plugins_load_file(p), 0, "example.so loads");
    ok(plugins_load_file(p) < 0, "loading the same plugin twice is refused");
    free(p);
    struct tlsbox_plugin *ex = plugins_find("example");
    /* example has a migration (ABI 1.1): with no store open it cannot run. */
    ok(ex != NULL && ex->pstate == PLUGIN_FAILED, "without a store, example is marked failed");
    like(ex ? ex->error : NULL, "its tables need the store", "saying why");
    ok(settings_def("example.greeting") != NULL, "its settings table was registered");
    plugins_stop_all();
    ok(plugins_first() == NULL, "stop_all unloads every plugin");

    char tmp[] = "/tmp/tlsbox-loader-test-XXXXXX";
    ok(mkdtemp(tmp) != NULL, "temporary state dir");
    char *state = xasprintf("%s/state", tmp);
    is_int(store_init(state, &err), 0, "store opened");
    p = built("pdk/example/.libs/example.so");
    is_int(plugins_load_file(p), 0, "example.so loads with a store");
    free(p);
    ex = plugins_find("example");
    ok(ex != NULL && ex->pstate == PLUGIN_LOADED, "example is listed as loaded");
    is_int(plugin_schema_version(store_main(), "example"), 1, "its migration was applied");
    settings_load();
    is_int(plugins_start_all(), 0, "example starts");
    ok(ex->pstate == PLUGIN_STARTED, "example is running");
    is_int(toggle_under_reader(ex), 20, "disabled and enabled 20 times under a reader");
    ok(atomic_load(&reads) > 0, "the reader read its state (%ld times)", atomic_load(&reads));
    plugins_stop_all();
    store_close();
    char *cmd = xasprintf("rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        diag("could not remove %s", tmp);
    free(cmd);
    free(state);
    return done_testing();
}
