#!/bin/bash
# A generation cut short by a stop: the generator is a child process at idle
# priority (SCHED_IDLE, nice 19), not a thread of the daemon; a stop kills it
# at once, leaves no parameter row (the run is marked interrupted) and the
# served parameters unchanged; the next start runs it again (attempt 2).
# The test freezes the generator with SIGSTOP so it cannot finish first.
# GnuTLS makes 4096-bit parameters in about a second here, often less, so
# the few milliseconds between reading "generating" and the SIGSTOP are not
# enough on their own: the daemon is pinned to one CPU that a busy loop keeps
# busy, and the generator, at SCHED_IDLE, gets next to none of it (about 0.3%
# against a nice-0 loop) until it is frozen.  Last, dhparam.bits changed in
# generated mode: a generation of the new size at once, stopped when the
# size is set back to the one served; changed in rfc7919 mode: made at the
# switch back to generated; changed while the daemon is down (--set): made
# at the start, and a run of the old size cut short by the stop is not
# resumed.  Last, a store from before dhparam schema step 0002 (no
# 'cancelled' state) has its cancelled runs moved to it at the start.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dh_lib.sh"
tb_setup
[ -e "$TB_PLUGINS/dhparam.so" ] || bail "no dhparam plugin built in $TB_PLUGINS"

START=(--set dhparam.bits=4096)
TB_DAEMON_CPUS=$(($(nproc) - 1))
tb_bg taskset -c "$TB_DAEMON_CPUS" timeout 300 sh -c 'while :; do :; done'
dh_start "${START[@]}"
ok $? "tlsboxd with an RSA certificate and a DHE policy"
is "$(tb_ctl get dhparam.priority)" "idle" "generation priority defaults to idle"
db() { sqlite3 "file:$TB_STATE/tlsbox.db?mode=ro" "$1"; }
served_before=$(db "SELECT count(*) FROM tls_dh")
rows_before=$(dh_rows)

# Wait for the generator child; print its pid.
gen_pid() {
    local i p
    for i in $(seq 1 100); do
        p=$(dh_status '["generation"]["pid"]' 2>/dev/null)
        [ -n "$p" ] && [ "$(dh_status '["generation"]["stage"]')" = "generating" ] &&
            echo "$p" && return 0
        sleep 0.1
    done
    return 1
}

out=$(tb_ctl dh generate)
like "$out" "^generating 4096-bit parameters at idle priority" \
    "tlsboxctl dh generate (4096 bits, the setting; idle, the default priority)"
pid=$(gen_pid)
ok $? "status shows the generating stage and the generator's pid ($pid)"
kill -STOP "$pid"
ok $? "generator frozen (SIGSTOP) so the stop comes first"
is "$(ps -o ppid= -p "$pid" | tr -d ' ')" "$TB_PID" "the generator is a child process of tlsboxd"
is "$(ps -o cls= -p "$pid" | tr -d ' ')" "IDL" "at idle priority: scheduling class SCHED_IDLE"
# ps shows no nice value outside SCHED_OTHER: field 19 of /proc/PID/stat.
is "$(sed 's/.*) //' "/proc/$pid/stat" | cut -d' ' -f17)" "19" "and nice 19"
is "$(ls "/proc/$pid/task" | wc -l)" "1" "one thread: no site worker in it"
# The daemon blocks SIGTERM, SIGINT and SIGHUP (it reads them from a
# signalfd); the generator must not inherit that, or kill PID does nothing.
is "$(sed -n 's/^SigBlk:\t*//p' "/proc/$pid/status")" "0000000000000000" \
    "the generator blocks no signal (SIGTERM ends it)"
st=$(tb_ctl dh status)
like "$st" "generating: 4096 bits, stage generating, [0-9.]+ s elapsed \(request, attempt 1\)" \
    "tlsboxctl dh status shows the stage and the elapsed time"
is "$(dh_status '["generation"]["elapsed_seconds"] > 0')" "True" "elapsed time grows"

tb_stop_daemon
ok $? "the daemon stops within 5 s with a generation running"
kill -0 "$pid" 2>/dev/null
is "$?" "1" "the generator process is gone"
is "$(db "SELECT state || ' ' || attempts FROM dhparam_runs")" "interrupted 1" \
    "the run is recorded as interrupted"
is "$(db "SELECT count(*) FROM dhparam_params")" "0" "no parameter row, not even half of one"
is "$(db "SELECT count(*) FROM tls_dh")" "$served_before" "the served parameters are unchanged"
is "$(dh_rows)" "$rows_before" "the store's DH rows are as before the generation"

tb_start_daemon --set site.https_port="$DH_PORT" --set site.http_port="$DH_HTTP" "${START[@]}"
ok $? "daemon restarts"
pid2=$(gen_pid)
ok $? "the interrupted generation runs again after the restart ($pid2)"
kill -STOP "$pid2"
is "$(dh_status '["generation"]["attempts"]')" "2" "as attempt 2"
is "$(dh_status '["generation"]["bits"]')" "4096" "of the same 4096 bits"
is "$(dh_status '["generation"]["reason"]')" "request" "for the same reason"
is "$(ps -o cls= -p "$pid2" | tr -d ' ')" "IDL" "again at idle priority"
out=$(tb_ctl dh generate --bits 2048 2>&1)
like "$out" "a generation is running already" "a second generate is refused while one runs"
out=$(tb_ctl dh generate --bits 1024 2>&1)
like "$out" "bits must be 2048, 3072 or 4096, not 1024" "generate refuses 1024 bits"
tb_stop_daemon
ok $? "daemon stops again"
kill -0 "$pid2" 2>/dev/null
is "$?" "1" "the second generator is gone too"
is "$(db "SELECT state || ' ' || attempts FROM dhparam_runs")" "interrupted 2" \
    "one run, interrupted at attempt 2"
is "$(db "SELECT count(*) FROM dhparam_params")" "0" "still no parameter row"

# ---- dhparam.bits changed in generated mode: parameters of the new size are
# made at once while the old ones are served; set back to the size served,
# that generation stops (killed, recorded as cancelled, not resumed later).
sqlite3 "$TB_STATE/tlsbox.db" "UPDATE dhparam_runs SET state = 'failed' WHERE state = 'interrupted'"
tb_start_daemon --set site.https_port="$DH_PORT" --set site.http_port="$DH_HTTP" \
    --set dhparam.mode=generated --set dhparam.bits=2048 --set dhparam.priority=normal
ok $? "daemon restarts in mode generated, 2048 bits, normal priority"
dh_groups X25519,SECP256R1
ok $? "policy: no FFDHE group, so TLS 1.2 DHE uses the parameters"
dh_wait_served source generated 120
ok $? "the first generated parameters are served"
is "$(dh_status '["served"]["bits"]')" "2048" "of 2048 bits"
fp1=$(dh_status '["served"]["fingerprint"]')
params0=$(db "SELECT count(*) FROM dhparam_params")
tb_ctl set dhparam.priority idle >/dev/null && tb_ctl set dhparam.bits 3072 >/dev/null
ok $? "dhparam.priority idle, then dhparam.bits 3072"
pid3=$(gen_pid)
ok $? "a generation starts at once, not at the next rotation ($pid3)"
[ -n "$pid3" ] && kill -STOP "$pid3"
is "$(dh_status '["generation"]["bits"]') $(dh_status '["generation"]["reason"]')" "3072 bits" \
    "of 3072 bits, for the size change"
is "$(ps -o cls= -p "$pid3" | tr -d ' ')" "IDL" "at idle priority"
is "$(dh_status '["served"]["fingerprint"]')" "$fp1" "meanwhile the 2048-bit parameters are served"
is "$(dh_tls12_bits)" "2048" "and a TLS 1.2 DHE handshake gets DH 2048 bits"

tb_ctl set dhparam.bits 2048 >/dev/null
ok $? "dhparam.bits set back to 2048, the size served"
dh_wait_status '["generation"]' "" 10
is "$(dh_status '["generation"]')" "" "the 3072-bit generation stops"
kill -0 "$pid3" 2>/dev/null
is "$?" "1" "its generator process is gone"
is "$(db "SELECT bits || ' ' || reason || ' ' || state || ': ' || error FROM dhparam_runs
    ORDER BY id DESC LIMIT 1")" "3072 bits cancelled: cancelled: dhparam.bits is now 2048" \
    "the run is recorded as cancelled by the size change (not interrupted: no resume)"
is "$(db "SELECT count(*) FROM dhparam_runs WHERE state = 'failed'")" "1" \
    "no run is recorded as failed but the one marked so by hand above"
is "$(dh_status '["last_run"]["state"]') $(dh_status '["last_run"]["outcome"]')" \
    "cancelled cancelled" "dh/status: state and outcome cancelled"
is "$(tb_ctl --json metrics | python3 -c 'import json,sys
print(json.load(sys.stdin).get("tlsbox_dh_generations_total{result=\"failed\"}"))')" "0" \
    "the failed-generations metric does not count it"
is "$(dh_status '["last_run"]["cancelled_because"]')" "dhparam.bits is now 2048" \
    "dh/status says why it was cancelled"
like "$(tb_ctl dh status)" \
    "^last run: +3072 bits, cancelled \(dhparam.bits is now 2048\), [0-9-]+ [0-9:]+ UTC \(bits\)" \
    "tlsboxctl dh status shows the run as cancelled, with the reason"
unlike "$(tb_ctl dh status)" "failed" "and does not call it failed"
is "$(db "SELECT count(*) FROM dhparam_params")" "$params0" "no new parameter row"
is "$(dh_status '["served"]["fingerprint"]')" "$fp1" "the 2048-bit parameters are still served"

# The busy loop ends, and the generation runs at normal priority: make
# check runs two tests at once, and at idle priority a 3072-bit run would
# wait on whatever the other test puts on this CPU (idle priority was
# checked above).
kill "$TB_BG_PID"
tb_ctl set dhparam.priority normal >/dev/null && tb_ctl set dhparam.bits 3072 >/dev/null
ok $? "dhparam.priority normal, and dhparam.bits 3072 again"
dh_wait_served bits 3072 120
is "$(dh_status '["served"]["bits"]')" "3072" "3072-bit parameters are served once generated"
is "$(db "SELECT bits || ' ' || reason || ' ' || state FROM dhparam_runs ORDER BY id DESC LIMIT 1")" \
    "3072 bits done" "made by a run for the size change"
unlike "$(dh_status '["served"]["fingerprint"]')" "^$fp1\$" "they replace the 2048-bit ones"
is "$(dh_tls12_bits)" "3072" "a new TLS 1.2 DHE handshake gets DH 3072 bits"

# ---- dhparam.bits changed while the mode is rfc7919: nothing is made then,
# and the switch back into generated mode makes that size at once (not the
# old generated parameters until the next rotation).  Source and size
# together: ffdhe2048, served in mode rfc7919, is of 2048 bits too.
served() {
    tb_ctl --json dh status | python3 -c 'import json,sys; s=json.load(sys.stdin)["served"]
print(s["source"], s["bits"])'
}
served_wait() { # "SOURCE BITS", for at most 60 s
    local i
    for i in $(seq 1 600); do
        [ "$(served)" = "$1" ] && return 0
        sleep 0.1
    done
    return 1
}
tb_ctl set dhparam.priority normal >/dev/null && tb_ctl dh mode rfc7919 >/dev/null &&
    dh_wait_served source rfc7919 10
ok $? "mode rfc7919: the RFC 7919 group is served"
runs0=$(db "SELECT count(*) FROM dhparam_runs")
tb_ctl set dhparam.bits 2048 >/dev/null
ok $? "dhparam.bits 2048 in mode rfc7919"
tb_ctl dh mode generated >/dev/null
ok $? "mode generated again"
served_wait "generated 2048"
is "$(served)" "generated 2048" \
    "2048-bit generated parameters are served, not the 3072-bit ones made before"
is "$(db "SELECT count(*) || ': ' || group_concat(bits || ' ' || reason || ' ' || state) FROM
    dhparam_runs WHERE id > $runs0")" "1: 2048 bits done" "made by one run, for the size change"
is "$(dh_tls12_bits)" "2048" "a TLS 1.2 DHE handshake gets DH 2048 bits"

# ---- a stop during a size change's generation, then a start with another
# dhparam.bits: the old size is not resumed (recorded as cancelled), the
# generator is gone, and the start makes the size set.
tb_bg taskset -c "$TB_DAEMON_CPUS" timeout 300 sh -c 'while :; do :; done'
busy=$TB_BG_PID
tb_ctl set dhparam.priority idle >/dev/null && tb_ctl set dhparam.bits 4096 >/dev/null
ok $? "dhparam.priority idle, dhparam.bits 4096"
pid4=$(gen_pid)
ok $? "a 4096-bit generation starts ($pid4)"
[ -n "$pid4" ] && kill -STOP "$pid4"
is "$(ps -o ppid= -p "$pid4" | tr -d ' ')" "$TB_PID" "its generator is a child of tlsboxd"
tb_stop_daemon
ok $? "the daemon stops during it"
is "$(ps -o pid= -p "$pid4" | tr -d ' ')" "" "the generator process is gone (no orphan)"
run4=$(db "SELECT id FROM dhparam_runs WHERE bits = 4096 ORDER BY id DESC LIMIT 1")
is "$(db "SELECT reason || ' ' || state || ' ' || attempts FROM dhparam_runs WHERE id = $run4")" \
    "bits interrupted 1" "the 4096-bit run is recorded as interrupted"
kill "$busy"
tb_start_daemon --set site.https_port="$DH_PORT" --set site.http_port="$DH_HTTP" \
    --set dhparam.bits=3072 --set dhparam.priority=normal
ok $? "daemon starts with --set dhparam.bits=3072"
served_wait "generated 3072"
is "$(served)" "generated 3072" \
    "3072-bit generated parameters are made at the start and served"
is "$(db "SELECT state || ' ' || attempts || ': ' || error FROM dhparam_runs WHERE id = $run4")" \
    "cancelled 1: cancelled: dhparam.bits is now 3072" \
    "the 4096-bit run is not resumed: recorded as cancelled by the size change"
is "$(db "SELECT count(*) || ': ' || group_concat(bits || ' ' || reason || ' ' || state) FROM
    dhparam_runs WHERE id > $run4")" "1: 3072 bits done" "one run after it, of 3072 bits"
is "$(dh_tls12_bits)" "3072" "a TLS 1.2 DHE handshake gets DH 3072 bits"

# ---- dhparam.bits given at start with no run left over: the parameters
# served are of another size, so that size is made at once.
tb_stop_daemon
ok $? "daemon stops"
tb_start_daemon --set site.https_port="$DH_PORT" --set site.http_port="$DH_HTTP" \
    --set dhparam.bits=2048
ok $? "daemon starts with --set dhparam.bits=2048 (3072 served)"
served_wait "generated 2048"
is "$(served)" "generated 2048" "2048-bit generated parameters are made at the start and served"
is "$(db "SELECT bits || ' ' || reason || ' ' || state FROM dhparam_runs ORDER BY id DESC LIMIT 1")" \
    "2048 bits done" "by a run for the size change"

# ---- dhparam.bits changed in the store behind the daemon (sqlite3, a
# restored backup), then SIGHUP: made at once, as tlsboxctl set would.
runs0=$(db "SELECT count(*) FROM dhparam_runs")
sqlite3 "$TB_STATE/tlsbox.db" "UPDATE settings SET value = '3072' WHERE key = 'dhparam.bits'"
kill -HUP "$TB_PID"
served_wait "generated 3072"
is "$(served)" "generated 3072" "after SIGHUP 3072-bit parameters are made and served"
is "$(db "SELECT count(*) || ': ' || group_concat(bits || ' ' || reason || ' ' || state) FROM
    dhparam_runs WHERE id > $runs0")" "1: 3072 bits done" "by one run for the size change"
is "$(dh_tls12_bits)" "3072" "a TLS 1.2 DHE handshake gets DH 3072 bits"
tb_stop_daemon
ok $? "daemon stops"

# ---- a store written before dhparam's schema step 0002, whose table had
# no 'cancelled' state: the runs above as that version stored them (a size
# change's stop as 'failed', its error starting "cancelled: "), a real
# failure, and a cancelled run last.  The start moves the cancelled ones to
# 'cancelled' and keeps every other value; the failure stays a failure.
sqlite3 "$TB_STATE/tlsbox.db" <<'SQL'
BEGIN;
CREATE TABLE dhparam_runs_old (
 id INTEGER PRIMARY KEY AUTOINCREMENT,
 bits INTEGER NOT NULL,
 reason TEXT NOT NULL,
 state TEXT NOT NULL CHECK (state IN ('running', 'interrupted', 'done', 'failed')),
 stage TEXT NOT NULL,
 attempts INTEGER NOT NULL,
 requested_at INTEGER NOT NULL,
 started_at INTEGER NOT NULL,
 finished_at INTEGER,
 params_id INTEGER REFERENCES dhparam_params(id),
 error TEXT);
INSERT INTO dhparam_runs_old SELECT id, bits, reason, replace(state, 'cancelled', 'failed'),
    replace(stage, 'cancelled', 'failed'), attempts, requested_at, started_at, finished_at,
    params_id, error FROM dhparam_runs;
INSERT INTO dhparam_runs_old (bits, reason, state, stage, attempts, requested_at, started_at,
    finished_at, error) VALUES
    (4096, 'rotate', 'failed', 'failed', 1, 1700000000, 1700000000, 1700000100,
     'the generator process failed (exit 1)'),
    (4096, 'bits', 'failed', 'failed', 2, 1700000200, 1700000300, 1700000400,
     'cancelled: dhparam.bits is now 2048');
DROP TABLE dhparam_runs;
ALTER TABLE dhparam_runs_old RENAME TO dhparam_runs;
UPDATE plugin_schema SET version = 1 WHERE plugin = 'dhparam';
COMMIT;
SQL
ok $? "the store is turned back into one at dhparam schema 1, with two more runs"
old_runs() {
    db "SELECT id, bits, reason, attempts, requested_at, started_at, finished_at, params_id, error
        FROM dhparam_runs ORDER BY id" | sha256sum
}
runs_before=$(old_runs)
nruns=$(db "SELECT count(*) FROM dhparam_runs")
last=$(db "SELECT max(id) FROM dhparam_runs")
is "$(db "SELECT count(*) FROM dhparam_runs WHERE state = 'failed'")" "5" \
    "5 runs stored as failed: 3 stopped by a size change, 1 real failure, 1 marked by hand"
tb_start_daemon --set site.https_port="$DH_PORT" --set site.http_port="$DH_HTTP"
ok $? "the daemon starts on it"
is "$(db "SELECT version FROM plugin_schema WHERE plugin = 'dhparam'")" "2" \
    "dhparam's tables are at its schema version 2"
is "$(db "SELECT group_concat(state || ' ' || stage || ': ' || coalesce(error, '-'), '; ') FROM
    (SELECT * FROM dhparam_runs WHERE state NOT IN ('done', 'interrupted') ORDER BY id)")" \
    "failed interrupted: -; cancelled cancelled: cancelled: dhparam.bits is now 2048; cancelled cancelled: cancelled: dhparam.bits is now 3072; failed failed: the generator process failed (exit 1); cancelled cancelled: cancelled: dhparam.bits is now 2048" \
    "the runs stopped by a size change are cancelled, the others failed still failed"
is "$(db "SELECT count(*) FROM dhparam_runs"; old_runs)" "$nruns
$runs_before" "every run kept, each other value unchanged"
is "$(db "SELECT seq FROM sqlite_sequence WHERE name = 'dhparam_runs'")" "$last" \
    "the next run gets a new id"
is "$(dh_status '["last_run"]["id"]') $(dh_status '["last_run"]["state"]') \
$(dh_status '["last_run"]["outcome"]')" "$last cancelled cancelled" \
    "dh/status: the last run is cancelled, outcome cancelled"
is "$(dh_status '["last_run"]["cancelled_because"]')" "dhparam.bits is now 2048" \
    "dh/status says why"
like "$(tb_ctl dh status)" "^last run: +4096 bits, cancelled \(dhparam.bits is now 2048\), " \
    "tlsboxctl dh status shows it as cancelled, with the reason"
tb_stop_daemon
ok $? "daemon stops"
done_testing
