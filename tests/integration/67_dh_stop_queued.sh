#!/bin/bash
# A stop while a DH generation is still queued behind another job (one
# maintenance thread, busy with a bench run): the generation never started,
# and its run must not stay "running" after the clean stop; it is recorded
# "interrupted", as a stop mid-way is, and the next start runs it again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dh_lib.sh"
tb_setup
[ -e "$TB_PLUGINS/dhparam.so" ] || bail "no dhparam plugin built in $TB_PLUGINS"
[ -e "$TB_PLUGINS/bench.so" ] || bail "no bench plugin built in $TB_PLUGINS"
mkdir -p "$TB_TMP/www"
echo hello >"$TB_TMP/www/index.html"
START=(--set dhparam.bits=4096 --set core.maintenance_threads=1 --set site.root="$TB_TMP/www")
dh_start "${START[@]}"
ok $? "tlsboxd with one maintenance thread"
db() { sqlite3 "file:$TB_STATE/tlsbox.db?mode=ro" "$1"; }
bench_running() {
    curl -s --unix-socket "$TB_STATE/control.sock" http://tlsbox/api/v1/bench/status | jq -r .running
}

# The one maintenance thread runs a 30 s bench run.
timeout 60 "$TB_TLSBOXCTL" --state-dir "$TB_STATE" bench run -s h1 -d 30 -c 1 \
    --url "https://localhost:$DH_PORT/index.html" >/dev/null 2>&1 &
bench=$!
is "$(tb_wait_says 10 true bench_running)" true "a bench run holds the maintenance thread"
tb_ctl dh generate >/dev/null
is "$(dh_status '["generation"]["stage"]')" "queued" "the generation waits in the queue"
sleep 0.5
is "$(dh_status '["generation"]["stage"]')" "queued" "and still does half a second later"

tb_stop_daemon
ok $? "the daemon stops within 5 s"
wait "$bench" 2>/dev/null
is "$(db "SELECT state || ' ' || attempts FROM dhparam_runs")" "interrupted 1" \
    "the queued run is recorded as interrupted, not left running"
like "$(cat "$TB_TMP/daemon.log")" "interrupted before it started; it starts again at the next start" \
    "the log says so"

tb_start_daemon --set site.https_port="$DH_PORT" --set site.http_port="$DH_HTTP" "${START[@]}"
ok $? "daemon restarts"
is "$(tb_wait_says 10 "generating 2" db "SELECT stage || ' ' || attempts FROM dhparam_runs")" \
    "generating 2" \
    "the interrupted generation runs again after the restart (attempt 2)"
tb_stop_daemon
ok $? "stops"
done_testing
