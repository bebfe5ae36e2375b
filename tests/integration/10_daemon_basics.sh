#!/bin/bash
# The daemon on an empty state dir: permissions, status, plugins, settings
# round trip, refusal of bad values, clean SIGTERM.
. "$(dirname "$0")/lib.sh"
tb_setup
abi=$(sed -n 's/^#define TLSBOX_ABI_MAJOR //p' "$top_srcdir/include/tlsbox/plugin.h").$(sed -n \
    's/^#define TLSBOX_ABI_MINOR //p' "$top_srcdir/include/tlsbox/plugin.h")
like "$abi" '^1\.[1-9][0-9]*$' "the kit's ABI is 1.1 or a later 1.x ($abi)"

tb_ctl status >/dev/null 2>"$TB_TMP/err"
is "$?" 3 "tlsboxctl says 3 when no daemon runs"
like "$(cat "$TB_TMP/err")" "tlsboxd is not running" "and says so in words"

P1=$(tb_free_port)
P2=$(tb_free_port)
tb_start_daemon --set site.https_port="$P1" --set site.http_port="$P2"
ok $? "tlsboxd starts on an empty state dir"

is "$(stat -c %a "$TB_STATE")" 700 "state dir is 0700"
is "$(stat -c %a "$TB_STATE/tlsbox.db")" 600 "store is 0600"
is "$(stat -c %a "$TB_STATE/control.sock")" 600 "control socket is 0600"
for f in "$TB_STATE"/tlsbox.db-wal "$TB_STATE"/tlsbox.db-shm; do
    [ -e "$f" ] && is "$(stat -c %a "$f")" 600 "$(basename "$f") is 0600"
done
is "$(sqlite3 "$TB_STATE/tlsbox.db" 'PRAGMA journal_mode')" wal "store is in WAL mode"
nmig=$(ls "$top_srcdir"/db/migrations/[0-9][0-9][0-9][0-9]_*.sql | wc -l)
is "$(sqlite3 "$TB_STATE/tlsbox.db" 'PRAGMA user_version')" "$nmig" \
    "store at core schema $nmig (one version per file in db/migrations)"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT version FROM plugin_schema WHERE plugin='example'")" 1 \
    "the example plugin's one migration is recorded"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM example_greetings")" 0 \
    "and its table exists"

out=$(tb_ctl status)
ok $? "tlsboxctl status exits 0"
like "$out" "^tlsboxd [0-9.]+ \(plugin ABI ${abi//./\\.}\)" "status shows version and the kit's ABI"
like "$out" "plugin example +running" "status lists the example plugin as running"
like "$out" "store: $TB_STATE/tlsbox.db" "status names the store"
is "$(tb_ctl --json status | jq -r .pid)" "$TB_PID" "--json status gives the daemon's pid"
is "$(tb_ctl --json status | jq -r .ready)" true "and says it is ready (every plugin started)"
unlike "$(tb_ctl status)" "starting" "so tlsboxctl status does not say it is starting"
out=$(tb_ctl status --json 2>&1)
is "$?" 2 "--json after the command is a usage error (2), not ignored"
like "$out" "status takes no arguments, got '--json' \(options such as --json go before the command\)" \
    "and says where the option goes"

out=$(tb_ctl plugins)
like "$out" "example +1\.0 +${abi//./\\.} +running" "plugins lists example with the ABI it was built for"
like "$out" "^core " "plugins lists the core"

is "$(tb_ctl get example.greeting)" "hello" "get shows the declared default"
tb_ctl set example.greeting "good morning"
ok $? "set a valid value"
is "$(tb_ctl get example.greeting)" "good morning" "get returns the new value"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT value FROM settings WHERE key='example.greeting'")" \
    "good morning" "the value is in the store"
body=$(curl -s --unix-socket "$TB_STATE/control.sock" http://x/api/v1/example/hello)
like "$body" '"greeting":"good morning"' "the plugin's API route sees the new value"

before=$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM settings; SELECT count(*) FROM audit")
err=$(tb_ctl set example.greeting 'bad"value' 2>&1)
rc=$?
ok $((rc == 0)) "an invalid value is refused (exit $rc)"
is "$rc" 1 "refusal exit code is 1"
like "$err" "example.greeting" "the error names the key"
like "$err" 'bad\\"value' "the error names the value"
is "$(tb_ctl get example.greeting)" "good morning" "the old value is kept"
after=$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM settings; SELECT count(*) FROM audit")
is "$after" "$before" "nothing was written to the store"

err=$(tb_ctl set example.greeting $'caf\xe9' 2>&1)
is "$?" 2 "a value that is not UTF-8 (Latin-1 caf\\xe9) is a usage error (2)"
like "$err" "settings/example.greeting: a value given .* is not UTF-8 text" "and says so"
is "$(tb_ctl get example.greeting)" "good morning" "the old value is kept"

err=$(tb_ctl set core.maintenance_threads 99 2>&1)
ok $((! $?)) "an out-of-range int is refused"
like "$err" "range" "and the error gives the range"
err=$(tb_ctl set nosuch.key 1 2>&1)
is "$?" 1 "an unknown key is refused"
like "$err" "nosuch.key" "naming the key"
tb_ctl bogus >/dev/null 2>&1
is "$?" 2 "an unknown command is a usage error (2)"

metrics=$(curl -s --unix-socket "$TB_STATE/control.sock" http://x/metrics)
like "$metrics" "^# TYPE tlsbox_example_hellos_total counter" "Prometheus text has the plugin's metric"
like "$metrics" "tlsbox_example_hellos_total 1" "counted the one hello"
like "$(tb_ctl metrics)" "tlsbox_system_load1" "tlsboxctl metrics shows system metrics"

start=$(date +%s%N)
tb_stop_daemon
ok $? "SIGTERM stops the daemon"
ms=$((($(date +%s%N) - start) / 1000000))
ok $((ms >= 2000)) "it stopped within 2 s (${ms} ms)"
is "${TB_EXIT:-x}" 0 "exit status 0"
like "$(cat "$TB_TMP/daemon.log")" "plugin example stopped" "plugins were stopped"
ok $([ ! -e "$TB_STATE/control.sock" ]; echo $?) "the control socket was removed"

# A second start reuses the store: the setting survived.
tb_start_daemon --set site.https_port="$P1" --set site.http_port="$P2"
is "$(tb_ctl get example.greeting)" "good morning" "settings survive a restart"

# A second tlsboxd on the state of a running one stops before it opens the
# store: its --set must not change the running daemon's settings under it.
audit=$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM audit")
"$TB_TLSBOXD" --state-dir "$TB_STATE" --plugin-dir "$TB_PLUGINS" --foreground \
    --set example.greeting=intruder >"$TB_TMP/second.log" 2>&1
is "$?" 1 "a second tlsboxd on the same state dir exits 1"
like "$(cat "$TB_TMP/second.log")" "another tlsboxd is already running on $TB_STATE/control.sock" \
    "and says another one runs there"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT value FROM settings WHERE key='example.greeting'")" \
    "good morning" "its --set did not reach the store"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM audit")" "$audit" \
    "and nothing was audited"
is "$(tb_ctl get example.greeting)" "good morning" "the running daemon still serves its value"
tb_stop_daemon

# A store newer than this build is refused and left untouched.
sqlite3 "$TB_STATE/tlsbox.db" "PRAGMA user_version = 999"
sum=$(md5sum <"$TB_STATE/tlsbox.db")
"$TB_TLSBOXD" --state-dir "$TB_STATE" --plugin-dir "$TB_PLUGINS" --foreground >"$TB_TMP/newer.log" 2>&1
is "$?" 1 "a newer store makes tlsboxd exit 1"
like "$(cat "$TB_TMP/newer.log")" "newer" "and it says the store is newer"
is "$(md5sum <"$TB_STATE/tlsbox.db")" "$sum" "the store file is unchanged"

done_testing
