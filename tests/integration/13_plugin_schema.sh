#!/bin/bash
# Plugins' own tables (ABI 1.1) with the real daemon and real .so files: the
# example's migration is applied once; a plugin whose migration fails is
# marked failed with one log line, its tables are not in the store and the
# daemon serves on; a store newer than a plugin refuses that plugin only; a
# plugin built against the 1.0 kit (no migrations field) still runs.
. "$(dirname "$0")/lib.sh"
tb_setup
db="$TB_STATE/tlsbox.db"

dir="$TB_TMP/plugins"
mkdir -p "$dir"
cp "$top_builddir"/pdk/example/.libs/example.so "$dir/"
cp "$top_builddir"/tests/plugins/.libs/abi10.so "$dir/"
TB_PLUGINS="$dir"

tb_start_daemon
ok $? "tlsboxd starts with example and a 1.0 plugin"
is "$(sqlite3 "$db" "SELECT plugin || '=' || version FROM plugin_schema ORDER BY plugin")" \
    "example=1" "only the example has a schema version: 1"
is "$(sqlite3 "$db" "SELECT name FROM sqlite_master WHERE name LIKE 'example%'")" \
    "example_greetings" "its table is in the store"
out=$(tb_ctl plugins)
like "$out" "abi10 +1 +1\.0 +running" "the 1.0 plugin runs, listed with ABI 1.0"
is "$(tb_ctl get abi10.word)" "old" "its settings table is read"
# Its descriptor ends before .apply_settings (kit 1.2): the core must not read it.
tb_ctl set abi10.word new >/dev/null
ok $? "a live change of its setting is accepted (no .apply_settings read past its end)"
is "$(tb_ctl get abi10.word)" "new" "and stored"
tb_ctl set abi10.word old >/dev/null
tb_stop_daemon
schema0=$(sqlite3 "$db" .schema)
rows0=$(sqlite3 "$db" "SELECT plugin, version, applied_at FROM plugin_schema")

# Restart with a plugin whose second step fails.
cp "$top_builddir"/tests/plugins/.libs/bad_schema.so "$dir/"
tb_start_daemon
ok $? "tlsboxd starts with a plugin whose migration fails"
lines=$(grep 'bad_schema' "$TB_TMP/daemon.log" | grep -v 'loaded plugin')
is "$(printf '%s\n' "$lines" | grep -c .)" 1 "one log line about the failure"
like "$lines" "plugin bad_schema: migration 0002_typo failed: .*no such table: bad_schema_itemz" \
    "it names the plugin, the migration and SQLite's message"
like "$(tb_ctl plugins)" "bad_schema .* failed .*migration 0002_typo failed" \
    "the plugin is listed as failed, with why"
is "$(curl -s --unix-socket "$TB_STATE/control.sock" http://x/api/v1/example/hello |
    jq -r .greeting)" "hello" "the daemon serves on: the example answers"
is "$(sqlite3 "$db" .schema)" "$schema0" "no table, index or trigger of it in the store"
is "$(sqlite3 "$db" "SELECT plugin, version, applied_at FROM plugin_schema")" "$rows0" \
    "plugin_schema unchanged, row for row"
is "$(sqlite3 "$db" "SELECT count(*) FROM sqlite_master WHERE name LIKE 'bad_schema%'")" 0 \
    "not even the table of its first (good) step"
# Disabled, it shows disabled (its failure no longer matters); enabled
# again, its migrations are tried again first (here failing again).
state() { # the state and error GET plugins gives bad_schema
    curl -s --unix-socket "$TB_STATE/control.sock" http://x/api/v1/plugins |
        jq -r '.[] | select(.name == "bad_schema") | "\(.state) \(.error)"'
}
tb_ctl set core.plugins_disabled bad_schema >/dev/null
is "$(tb_wait_says 10 "disabled null" state)" "disabled null" \
    "disabled while failed: shown disabled, with no old reason"
tb_ctl set core.plugins_disabled '' >/dev/null
for i in $(seq 1 100); do
    st=$(state)
    [ "${st%% *}" = failed ] && break
    sleep 0.1
done
like "$st" "^failed plugin bad_schema: migration 0002_typo failed: .*no such table: bad_schema_itemz" \
    "enabled again: its migrations are tried again, and fail again, saying why"
is "$(grep -c 'plugin bad_schema: migration 0002_typo failed' "$TB_TMP/daemon.log")" 2 \
    "a second log line for the second try"
is "$(sqlite3 "$db" .schema)" "$schema0" "and still no table of it in the store"
tb_stop_daemon
tb_start_daemon --set core.plugins_disabled=bad_schema
is "$(state)" "disabled null" "started with it disabled: shown disabled, not failed"
tb_stop_daemon
rm "$dir/bad_schema.so"

# A store written by a newer example (its tables at version 7): example is
# refused, the rest runs, the store keeps its version.
sqlite3 "$db" "UPDATE plugin_schema SET version = 7 WHERE plugin = 'example'"
tb_start_daemon
ok $? "tlsboxd starts on a store newer than one of its plugins"
like "$(cat "$TB_TMP/daemon.log")" \
    "plugin example: refused: the store has schema version 7 of its tables, this plugin knows 1" \
    "the refusal names the plugin and both versions"
out=$(tb_ctl plugins)
like "$out" "example .* failed .*refused" "example is listed as failed"
like "$out" "abi10 .* running" "the other plugin runs"
code=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$TB_STATE/control.sock" \
    http://x/api/v1/example/hello)
is "$code" 404 "the refused plugin registered no route"
is "$(tb_ctl get abi10.word)" "old" "the daemon serves the others"
tb_stop_daemon
is "$(sqlite3 "$db" "SELECT version FROM plugin_schema WHERE plugin = 'example'")" 7 \
    "the store still records version 7"

done_testing
