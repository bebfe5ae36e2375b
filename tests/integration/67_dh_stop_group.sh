#!/bin/bash
# A stop signalled to tlsboxd's whole process group -- Ctrl-C on a
# tlsboxd --foreground in a terminal sends SIGINT to every process of the
# foreground group, kill -- -PGID a SIGTERM -- while a DH generation runs:
# the generator child must not die of that signal first (the run would be recorded "failed", with an
# ERROR, and never run again).  It is in a process group of its own, so only
# tlsboxd gets the signal; tlsboxd kills it and records the run
# "interrupted", which the next start runs again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dh_lib.sh"
tb_setup
[ -e "$TB_PLUGINS/dhparam.so" ] || bail "no dhparam plugin built in $TB_PLUGINS"
command -v setsid >/dev/null || bail "setsid is not installed"

# tlsboxd leads a process group of its own, as in a terminal: setsid execs
# (it is no group leader here), so $! is still the daemon's pid.
printf '#!/bin/sh\nexec setsid "%s" "$@"\n' "$TB_TLSBOXD" >"$TB_TMP/tlsboxd-setsid"
chmod +x "$TB_TMP/tlsboxd-setsid"
TB_TLSBOXD="$TB_TMP/tlsboxd-setsid"
dh_start --set dhparam.bits=4096
ok $? "tlsboxd with an RSA certificate and a DHE policy, leading its process group"
is "$(ps -o pgid= -p "$TB_PID" | tr -d ' ')" "$TB_PID" "tlsboxd leads its process group"
db() { sqlite3 "file:$TB_STATE/tlsbox.db?mode=ro" "$1"; }

tb_ctl dh generate >/dev/null
pid=""
for i in $(seq 1 100); do
    pid=$(dh_status '["generation"]["pid"]' 2>/dev/null)
    [ -n "$pid" ] && [ "$pid" != None ] && [ "$pid" != 0 ] && break
    sleep 0.1
done
# Frozen so it cannot finish first; a signal sent to it now is acted on at
# SIGCONT, which follows at once (as systemd sends SIGCONT after SIGTERM).
kill -STOP "$pid"
ok $? "generator $pid frozen"
[ "$(ps -o pgid= -p "$pid" | tr -d ' ')" != "$TB_PID" ]
ok $? "the generator is not in tlsboxd's process group"
# SIGTERM: a background job of this script ignores SIGINT (no job control),
# and the generator would inherit that; in a terminal Ctrl-C does the same.
kill -TERM -- "-$TB_PID"
kill -CONT "$pid" 2>/dev/null
tb_stop_daemon TERM
ok $? "SIGTERM to the process group stops tlsboxd within 5 s"
is "$TB_EXIT" 0 "exit status 0"
kill -0 "$pid" 2>/dev/null
is "$?" 1 "the generator process is gone"
is "$(db "SELECT state || ' ' || attempts || ' ' || coalesce(error, '') FROM dhparam_runs")" \
    "interrupted 1 " "the run is recorded as interrupted, not failed"
unlike "$(cat "$TB_TMP/daemon.log")" "died of signal" "no generation failure logged"
done_testing
