#!/bin/bash
# The process around the daemon, as a user meets it: the core.log_level
# setting takes effect when it is changed (tlsboxctl set, or the store edited
# and SIGHUP), not only at the next start, while core.api_max_body and
# core.metrics_history_period say they need a restart; a --control-socket path that
# names a file is refused, not deleted; Ctrl-C at tlsboxctl's password
# prompt gives the terminal its echo back.
. "$(dirname "$0")/lib.sh"
tb_setup
P1=$(tb_free_port)
P2=$(tb_free_port)
# No --log-level: the setting decides.
export TB_LOG_LEVEL=

# A plain-HTTP request to the admin port (HTTPS only) makes libmicrohttpd log
# a debug line: a debug message on demand.
plain_to_admin() {
    (
        exec 3<>"/dev/tcp/127.0.0.1/$TB_ADMIN_PORT" || exit 1
        printf 'GET / HTTP/1.0\r\n\r\n' >&3
        timeout 5 cat <&3 >/dev/null
    ) 2>/dev/null
}
# Debug lines in the daemon log after line $1.
debug_lines() { tail -n +"$(($1 + 1))" "$TB_TMP/daemon.log" | grep -c ' DEBUG '; }
# Probe until a debug line shows up after line $1 (5 s at most).
wait_debug() {
    local i
    for i in $(seq 1 50); do
        [ -n "${2:-}" ] && kill -HUP "$TB_PID"
        plain_to_admin
        [ "$(debug_lines "$1")" -gt 0 ] && return 0
        sleep 0.1
    done
    return 1
}

tb_start_daemon --set site.https_port="$P1" --set site.http_port="$P2" ||
    bail "daemon did not start"
plain_to_admin
is "$(debug_lines 0)" 0 "at the default level (info) no debug line is logged"

mark=$(wc -l <"$TB_TMP/daemon.log")
out=$(tb_ctl --json set core.log_level debug)
is "$?" 0 "tlsboxctl set core.log_level debug exits 0"
like "$out" '"restart_needed": false' "and says no restart is needed"
wait_debug "$mark"
ok $? "so debug lines are logged from then on, without a restart"

# core.api_max_body is read when the API servers start: a change says so.
is "$(tb_ctl set core.api_max_body 2048)" \
    "core.api_max_body = 2048 (takes effect when tlsboxd restarts)" \
    "tlsboxctl set core.api_max_body says it takes effect at the restart"
is "$(tb_ctl set core.metrics_history_period 120)" \
    "core.metrics_history_period = 120 (takes effect when tlsboxd restarts)" \
    "so does core.metrics_history_period"

# Back to info, then the store edited by hand: SIGHUP reloads it.
tb_stop_daemon
sqlite3 "$TB_STATE/tlsbox.db" "UPDATE settings SET value='info' WHERE key='core.log_level'"
tb_start_daemon --set site.https_port="$P1" --set site.http_port="$P2" ||
    bail "daemon did not restart"
sqlite3 "$TB_STATE/tlsbox.db" "UPDATE settings SET value='debug' WHERE key='core.log_level'"
mark=$(wc -l <"$TB_TMP/daemon.log")
wait_debug "$mark" hup
ok $? "core.log_level debug written to the store is applied on SIGHUP"
tb_stop_daemon
ok $? "SIGTERM stops the daemon"

# --control-socket naming a file (here a copy of the store, holding its
# keys): tlsboxd stops and the file stays.
cp "$TB_STATE/tlsbox.db" "$TB_TMP/keys.db"
sum=$(md5sum <"$TB_TMP/keys.db")
# (timeout: should it start and serve on that path instead, stop it.)
timeout 30 "$TB_TLSBOXD" --state-dir "$TB_STATE" --plugin-dir "$TB_PLUGINS" --foreground \
    --control-socket "$TB_TMP/keys.db" >"$TB_TMP/sockfile.log" 2>&1
is "$?" 1 "--control-socket naming a regular file: exit 1"
like "$(cat "$TB_TMP/sockfile.log")" "control socket $TB_TMP/keys.db: something that is not a socket is there" \
    "the error names the path"
is "$(md5sum <"$TB_TMP/keys.db" 2>&1)" "$sum" "and the file is still there, unchanged"

# tlsboxctl admin passwd on a terminal (a pty here): echo is off at the
# prompt; Ctrl-C (SIGINT) there must leave the terminal echoing again.
tty=$(python3 - "$TB_TLSBOXCTL" <<'PY'
import os, select, signal, subprocess, sys, termios
m, s = os.openpty()
p = subprocess.Popen([sys.argv[1], "--socket", "/nonexistent/control.sock", "admin", "passwd"],
                     stdin=s, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
got = b""
while b"new password: " not in got and select.select([p.stderr], [], [], 10)[0]:
    chunk = os.read(p.stderr.fileno(), 256)
    if not chunk:
        break
    got += chunk
echo = lambda: "on" if termios.tcgetattr(s)[3] & termios.ECHO else "off"
for _ in range(100):  # the prompt is written just before echo goes off
    if echo() == "off":
        break
    select.select([], [], [], 0.05)
at_prompt = echo()
p.send_signal(signal.SIGINT)
p.wait(timeout=10)
print("prompt" if b"new password: " in got else "no prompt", at_prompt, p.returncode, echo())
PY
)
is "$tty" "prompt off -2 on" \
    "at the password prompt echo is off; after Ctrl-C tlsboxctl dies of SIGINT and echo is on"

done_testing
