#!/bin/bash
# The loader against real .so files: refused plugins are named in one log
# line each and the daemon runs on; a failing start hook is survived; a
# plugin can be disabled by setting.
. "$(dirname "$0")/lib.sh"
tb_setup
maj=$(sed -n 's/^#define TLSBOX_ABI_MAJOR //p' "$top_srcdir/include/tlsbox/plugin.h")
min=$(sed -n 's/^#define TLSBOX_ABI_MINOR //p' "$top_srcdir/include/tlsbox/plugin.h")

dir="$TB_TMP/plugins"
mkdir -p "$dir"
cp "$top_builddir"/pdk/example/.libs/example.so "$dir/"
for p in bad_major newer_minor no_symbol fail_start; do
    cp "$top_builddir/tests/plugins/.libs/$p.so" "$dir/"
done
echo "not an ELF file" >"$dir/garbage.so"

TB_PLUGINS="$dir"
tb_start_daemon
ok $? "tlsboxd starts with broken plugins in its directory"
log=$(cat "$TB_TMP/daemon.log")
like "$log" "bad_major.so: refused: built for plugin ABI $((maj + 1))\.0, this tlsboxd has ABI $maj\.$min" \
    "wrong major: one line with the file, the found and the expected ABI"
is "$(grep -c 'bad_major.so' "$TB_TMP/daemon.log")" 1 "exactly one line about it"
like "$log" "newer_minor.so: refused: built for plugin ABI $maj\.$((min + 1)), newer than this tlsboxd's ABI $maj\.$min" \
    "newer minor refused with both versions"
like "$log" "no_symbol.so: refused: no symbol tlsbox_plugin_descriptor" "missing symbol refused"
like "$log" "garbage.so: refused: cannot load" "a non-ELF file refused"
like "$log" "plugin fail_start: start hook failed" "a failing start hook is reported"

out=$(tb_ctl plugins)
like "$out" "example .* running" "example runs"
like "$out" "fail_start .* failed .*start hook failed: fail_start\.path: cannot open /nonexistent: No such file or directory" \
    "fail_start is listed as failed, with the last error it logged as the reason"
is "$(curl -s --unix-socket "$TB_STATE/control.sock" http://x/api/v1/plugins |
    jq -r '.[] | select(.name == "fail_start") | .error')" \
    "start hook failed: fail_start.path: cannot open /nonexistent: No such file or directory" \
    "the API (the web UI's plugin list) gives the same reason"
like "$log" "plugin fail_start: start hook failed: fail_start\.path: cannot open /nonexistent" \
    "and so does the log line saying tlsboxd goes on without it"
like "$(tb_ctl status)" "plugin fail_start +failed: start hook failed: fail_start\.path: cannot open /nonexistent" \
    "and tlsboxctl status"
# A change to a plugin whose start failed is stored, the caller is told so,
# and the core starts the plugin again with it: a setting that kept it from
# starting is mended without a restart (from the web UI as well).
reason() { # the state and error GET plugins gives fail_start
    curl -s --unix-socket "$TB_STATE/control.sock" http://x/api/v1/plugins |
        jq -r '.[] | select(.name == "fail_start") | "\(.state) \(.error)"'
}
wait_reason() { tb_wait_says 10 "$1" reason; } # wait_reason TEXT
said=$(tb_ctl set fail_start.path "$TB_TMP/probe" 2>&1)
is "$?" 0 "tlsboxctl set of the failed plugin's setting: exit 0"
is "$said" "fail_start.path = $TB_TMP/probe (plugin fail_start is not running (start hook failed: fail_start.path: cannot open /nonexistent: No such file or directory): stored, tlsboxd starts it again with this now (tlsboxctl plugins says how that went))" \
    "and it says why the plugin is not running, and that it starts again with the value"
is "$(tb_ctl get fail_start.path)" "$TB_TMP/probe" "the value is stored"
want="failed start hook failed: fail_start.path: cannot open $TB_TMP/probe: No such file or directory"
is "$(wait_reason "$want")" "$want" "it was started again with the value, and failed again: the reason names it"
touch "$TB_TMP/probe"
kill -USR2 "$TB_PID"
is "$(wait_reason "running null")" "running null" "once the file is there, SIGUSR2 starts it: it runs"
is "$(grep -o 'plugin fail_start: starting again ([^)]*)\|plugin fail_start started' "$TB_TMP/daemon.log" |
    tr '\n' ';')" "plugin fail_start: starting again (its settings changed);plugin fail_start: starting again (SIGUSR2);plugin fail_start started;" \
    "the log says when and why it was started again, and that it started"
# The store changed behind its back (a restored backup) and reloaded: a
# failed plugin whose settings changed starts again with them.
tb_stop_daemon
sqlite3 "$TB_STATE/tlsbox.db" "UPDATE settings SET value = '$TB_TMP/gone' WHERE key = 'fail_start.path'"
tb_start_daemon
want="failed start hook failed: fail_start.path: cannot open $TB_TMP/gone: No such file or directory"
is "$(reason)" "$want" "started with a path that is not there: failed"
sqlite3 "$TB_STATE/tlsbox.db" "UPDATE settings SET value = '$TB_TMP/probe' WHERE key = 'fail_start.path'"
kill -HUP "$TB_PID"
is "$(wait_reason "running null")" "running null" "the path changed in the store and SIGHUP: it runs"
unlike "$out" "bad_major|newer_minor|no_symbol" "refused plugins are not listed"
curl -sf --unix-socket "$TB_STATE/control.sock" http://x/api/v1/example/hello >/dev/null
ok $? "the good plugin serves its API route"
tb_stop_daemon

tb_start_daemon --set core.plugins_disabled=example,fail_start
like "$(tb_ctl plugins)" "example .* disabled" "core.plugins_disabled disables a plugin"
code=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$TB_STATE/control.sock" \
    http://x/api/v1/example/hello)
is "$code" 404 "a disabled plugin registers no routes"
is "$(tb_ctl set example.greeting 'hi there' 2>&1)" \
    "example.greeting = hi there (plugin example is disabled (core.plugins_disabled): stored, it starts with this once it is enabled)" \
    "a change to a disabled plugin's setting says when it takes effect"
# Enabled while tlsboxd runs: each starts at once, as it would at start-up.
rm -f "$TB_TMP/probe"
tb_ctl set core.plugins_disabled '' >/dev/null
want="failed start hook failed: fail_start.path: cannot open $TB_TMP/probe: No such file or directory"
is "$(wait_reason "$want")" "$want" "fail_start enabled: started, and failed with its reason"
like "$(tb_ctl plugins)" "example .* running" "example enabled: it runs"
is "$(curl -s --unix-socket "$TB_STATE/control.sock" http://x/api/v1/example/hello | jq -r .greeting)" \
    "hi there" "with its routes, and the greeting stored while it was disabled"
tb_ctl set core.plugins_disabled fail_start >/dev/null
is "$(wait_reason "disabled null")" "disabled null" "fail_start disabled after it failed: no old reason shown"
err=$(tb_ctl set core.plugins_disabled 'Bad Name' 2>&1)
ok $((! $?)) "an invalid plugin name in the list is refused"
like "$err" "core.plugins_disabled" "naming the key"
tb_stop_daemon
ok $? "stops cleanly"

# A configured list instead of the directory: only those files load.
tb_start_daemon --plugin "$dir/example.so" --set core.plugins_disabled=
out=$(tb_ctl plugins)
like "$out" "example .* running" "--plugin loads the listed plugin"
unlike "$out" "fail_start" "and nothing else from the directory"
tb_stop_daemon

# A job that an event callback submits while its plugin stops (late_job:
# the callback waits until the plugin's running job was cancelled) must not
# run after the plugin's fini hook.
mkdir -p "$TB_TMP/late"
cp "$top_builddir/tests/plugins/.libs/late_job.so" "$TB_TMP/late/"
tb_start_daemon --plugin "$TB_TMP/late/late_job.so"
ok $? "tlsboxd starts with late_job"
# The plugin's stop takes about 2 s by design (its callback waits for the
# cancel), and a sanitizer build's exit adds its leak scan.
tb_stop_daemon TERM 10
ok $? "and stops (within 10 s)"
is "$TB_EXIT" 0 "with exit status 0"
is "$(grep -c 'late job ran after fini' "$TB_TMP/daemon.log")" 0 \
    "no job of a stopped plugin runs after its fini hook"

# The control socket answers while plugins still start: status says so,
# and says ready once the last start hook has returned.
mkdir -p "$TB_TMP/slow"
cp "$top_builddir/tests/plugins/.libs/slow_start.so" "$TB_TMP/slow/"
rm -f "$TB_TMP/slow/go"
TLSBOX_TEST_SLOW_START="$TB_TMP/slow/go" TB_START_ANSWERS=1 \
    tb_start_daemon --plugin "$TB_TMP/slow/slow_start.so"
ok $? "tlsboxd answers while slow_start's start hook waits"
is "$(tb_ctl --json status | jq -r .ready)" false "status: not ready yet"
like "$(tb_ctl status)" "starting: the plugins are not all started yet" \
    "tlsboxctl status says it is still starting"
: >"$TB_TMP/slow/go"
r=false
for _ in $(seq 1 100); do
    r=$(tb_ctl --json status | jq -r .ready)
    [ "$r" = true ] && break
    sleep 0.1
done
is "$r" true "ready once the start hook returned"
unlike "$(tb_ctl status)" "starting" "and tlsboxctl status no longer says starting"
tb_stop_daemon
ok $? "and stops"

done_testing
