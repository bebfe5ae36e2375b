#!/bin/bash
# A restart asked for through the API (the web UI's Restart button,
# tlsboxctl restart).  Under systemd (NOTIFY_SOCKET set; here this test
# plays systemd's part with a notify socket of its own) tlsboxd answers
# 202, stops cleanly and exits 75, which its unit starts again
# (RestartForceExitStatus=75; the package check does it with systemd
# itself).  Started otherwise, it refuses, says why, and runs on.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www

# 1. Not under systemd: refused, nothing stops.
site_start
ok $? "tlsboxd serves (no NOTIFY_SOCKET)"
pid=$TB_PID
out=$(tb_ctl restart 2>&1)
is "$?" 1 "tlsboxctl restart: exit 1 (refused)"
is "$out" "tlsboxctl: tlsboxd was not started by systemd (tlsbox.service), which would start it again: restart it the way it was started (it has given up the rights it started with, so it cannot do it itself)" \
    "and it says why, and what to do"
is "$(site_api POST restart '{}' | jq -r .error)" \
    "tlsboxd was not started by systemd (tlsbox.service), which would start it again: restart it the way it was started (it has given up the rights it started with, so it cannot do it itself)" \
    "the API (the web UI's button) gives the same reason"
sleep 0.5 # what a restart would have taken (its 0.3 s grace), had it happened
kill -0 "$pid"
ok $? "tlsboxd runs on"
is "$(tb_ctl --json status | jq -r .pid)" "$pid" "the same process answers"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM audit WHERE target = 'restart'")" 0 \
    "a refused restart is not in the audit log"
tb_stop_daemon
ok $? "stops"

# 2. Under "systemd": a notify socket this test reads, as systemd would.
notify="$TB_TMP/notify.sock"
timeout 120 python3 - "$notify" "$TB_TMP/notified" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as out:
    while True:
        out.write(s.recv(4096).decode() + "\n")
PY
listener=$!
for i in $(seq 1 50); do [ -S "$notify" ] && break; sleep 0.1; done
chmod 0666 "$notify" # tlsboxd sends from the tlsbox user
NOTIFY_SOCKET="$notify" site_start
ok $? "tlsboxd serves, started with NOTIFY_SOCKET"
pid=$TB_PID
is "$(grep -c '^READY=1$' "$TB_TMP/notified")" 1 "it told the notify socket READY=1"
is "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" "$URL/f16k.txt")" 200 "the site serves"
out=$(tb_ctl restart 2>&1)
is "$?" 0 "tlsboxctl restart: exit 0"
is "$out" "tlsboxd stops now; systemd starts it again in about 2 s (tlsboxctl status then shows its new pid)" \
    "and it says what happens"
for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
wait "$pid" 2>/dev/null
is "$?" 75 "tlsboxd stopped by itself within 10 s, with exit status 75 (the unit's RestartForceExitStatus)"
TB_PID=""
log=$(cat "$TB_TMP/daemon.log")
like "$log" "restart asked for by control: stopping; systemd starts tlsboxd again" \
    "the log says who asked"
like "$log" "stopping for the restart asked for" "and why it stops"
like "$log" "plugin site stopped" "the plugins were stopped as for SIGTERM"
like "$log" "stopped; exit status 75: systemd starts tlsboxd again" "and that it ends with 75"
is "$(grep -c '^STOPPING=1$' "$TB_TMP/notified")" 1 "it told the notify socket STOPPING=1"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT actor, action, target FROM audit WHERE target = 'restart'")" \
    "control|POST restart|restart" "the audit log records the restart and who asked"
# What systemd does next: start it again.
NOTIFY_SOCKET="$notify" tb_start_daemon
ok $? "started again, it runs"
new=$(tb_ctl --json status | jq -r .pid)
[ "$new" != "$pid" ]
ok $? "a new process ($new, was $pid)"
tb_wait_port "$P_HTTPS"
is "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$CA" "$URL/f16k.txt")" 200 "and serves the site again"
tb_stop_daemon
ok $? "a SIGTERM from outside stops it"
is "$TB_EXIT" 0 "with exit status 0, not 75"
kill "$listener" 2>/dev/null
wait "$listener" 2>/dev/null
done_testing
