/* Loader: a good plugin loads (its migrations applied when a store is open);
 * wrong major, newer minor and a missing symbol are refused with a message
 * naming the file and both versions. */
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
    plugins_stop_all();
    store_close();
    char *cmd = xasprintf("rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        diag("could not remove %s", tmp);
    free(cmd);
    free(state);
    return done_testing();
}
