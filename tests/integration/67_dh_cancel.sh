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
# against a nice-0 loop) until it is frozen.
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
done_testing
