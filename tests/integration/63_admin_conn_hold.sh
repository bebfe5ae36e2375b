#!/bin/bash
# Clients that open connections to the admin port and send nothing (or a
# byte of a request head now and then, under the 60 s timeout) must not keep
# the admin UI from everyone else.  Four clients hold 16 connections each
# (each client's limit), 64 in all (the port's): a new client is still
# served, and the connection that has waited longest unanswered is the one
# closed for it.  A connection whose answer is under way (a live metrics
# stream) is never closed for that, even when it is the oldest.  Real
# curl and real sockets from loopback addresses 127.0.0.2-9.
. "$(dirname "$0")/lib.sh"
tb_setup

tb_start_daemon --set admin.pbkdf2_iterations=10000 \
    --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" ||
    bail "daemon did not start"
B="https://127.0.0.1:$TB_ADMIN_PORT"
J="$TB_TMP/jar"
echo 'admins password is long' | tb_ctl admin passwd admin >/dev/null || bail "creating admin"

status() { # FROM: the status of GET /api/v1/session from address FROM
    curl -sk --max-time 10 --interface "$1" -o /dev/null -w '%{http_code}' "$B/api/v1/session"
}

# ---- a live stream first: the oldest connection, but being answered -------
is "$(curl -sk -c "$J" --interface 127.0.0.9 -o /dev/null -w '%{http_code}' \
    -H 'Content-Type: application/json' -X POST "$B/api/v1/session/login" \
    -d '{"user":"admin","password":"admins password is long"}')" 200 "logged in from 127.0.0.9"
LIVE="$TB_TMP/live"
: >"$LIVE"
tb_bg curl -sk -N -b "$J" --interface 127.0.0.9 -o "$LIVE" "$B/api/v1/live"
live=$TB_BG_PID
events() { grep -c '^data: ' "$LIVE"; }
for _ in $(seq 1 100); do
    [ "$(events)" -ge 1 ] && break
    sleep 0.1
done
ok $(($(events) >= 1 ? 0 : 1)) "the live stream sends events"

# ---- 63 connections that send nothing -------------------------------------
# From 127.0.0.2-5, 16 each but the last (63 with the stream): the first 8
# plain TCP that never start TLS, the other 55 past their TLS handshake.
# Opened one after another, so the server takes them in that order.  The
# holder then writes which of them the server closed (indexes in opening
# order) to a file whenever that changes, for at most 120 s.
cat >"$TB_TMP/hold.py" <<'PY'
import os, select, socket, ssl, sys, time
port, ready, closed_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
held = []
for i in range(63):
    src = "127.0.0.%d" % (2 + i // 16)
    s = socket.create_connection(("127.0.0.1", port), 10, (src, 0))
    if i >= 8:
        s = ctx.wrap_socket(s)
    s.setblocking(False)
    held.append(s)
open(ready, "w").write("%d\n" % len(held))
closed, end = [], time.time() + 120
while time.time() < end:
    r, _, _ = select.select([s for i, s in enumerate(held) if i not in closed], [], [], 0.05)
    for s in r:
        try:
            data = s.recv(1)
        except (ssl.SSLWantReadError, BlockingIOError):
            continue
        except (OSError, ssl.SSLError):
            data = b""
        if not data:
            closed.append(held.index(s))
    if r:
        with open(closed_file + ".new", "w") as f:
            f.write(" ".join(str(i) for i in sorted(closed)) + "\n")
        os.rename(closed_file + ".new", closed_file)
PY
: >"$TB_TMP/closed"
tb_bg python3 "$TB_TMP/hold.py" "$TB_ADMIN_PORT" "$TB_TMP/held" "$TB_TMP/closed" </dev/null
holder=$TB_BG_PID
tb_wait_file "$TB_TMP/held" "$holder"
is "$(cat "$TB_TMP/held" 2>/dev/null)" 63 "63 connections from 127.0.0.2-5 are open"
# The server has taken every one of them when the listening socket's accept
# queue is empty (ss: Recv-Q of a listener).
for _ in $(seq 1 100); do
    [ "$(ss -Hltn "sport = :$TB_ADMIN_PORT" | awk '{ print $2 }' | head -1)" = 0 ] && break
    sleep 0.1
done
is "$(ss -Hltn "sport = :$TB_ADMIN_PORT" | awk '{ print $2 }' | head -1)" 0 \
    "the server has taken them all (its accept queue is empty)"
is "$(status 127.0.0.2)" 000 "127.0.0.2, at its 16 connections, is refused a 17th"
is "$(cat "$TB_TMP/closed")" "" "and that closed none of the held ones"

# wait_closed N: until the holder has seen N connections closed (<= 10 s).
wait_closed() {
    for _ in $(seq 1 100); do
        [ "$(wc -w <"$TB_TMP/closed")" -ge "$1" ] && return
        sleep 0.1
    done
}
# A new client that stays: asks GET /api/v1/session over TLS from FROM,
# writes the answer's status to a file, then keeps its connection open (so
# 64 stay held) until killed or 120 s.
cat >"$TB_TMP/newcomer.py" <<'PY'
import socket, ssl, sys, time
src, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
status = "000"
try:
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), 10, (src, 0)))
    s.sendall(b"GET /api/v1/session HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    status = s.recv(4096).split(b" ")[1].decode()
except (OSError, IndexError):
    pass
open(out, "w").write(status + "\n")
time.sleep(120)
PY
NEWCOMERS=""
# newcomer FROM: start one (not in a command substitution: that would wait
# for it to end); its status is then in $TB_TMP/newcomer.FROM.
newcomer() {
    local f="$TB_TMP/newcomer.$1"
    tb_bg python3 "$TB_TMP/newcomer.py" "$1" "$TB_ADMIN_PORT" "$f" </dev/null >/dev/null 2>&1
    NEWCOMERS="$NEWCOMERS $TB_BG_PID"
    tb_wait_file "$f" "$TB_BG_PID"
}
answer() { cat "$TB_TMP/newcomer.$1" 2>/dev/null || echo none; }
newcomer 127.0.0.6
is "$(answer 127.0.0.6)" 200 "with all 64 held, a new client is served"
wait_closed 1
is "$(cat "$TB_TMP/closed")" "0" "the connection closed for it is the oldest idle one, not the live stream"
newcomer 127.0.0.7
is "$(answer 127.0.0.7)" 200 "another new client is served"
wait_closed 2
is "$(cat "$TB_TMP/closed")" "0 1" "for it the next oldest is closed"
n0=$(events)
sleep 2.5
ok $(($(events) > n0 ? 0 : 1)) "the live stream still sends events ($n0, then $(events))"
kill -0 "$live" 2>/dev/null
ok $? "and is still open"
is "$(grep -c 'admin: all 64 admin connections held: closed the one from 127\.0\.0\.2, waiting [0-9]* s unanswered, for a new one from 127\.0\.0\.6' \
    "$TB_TMP/daemon.log")" 1 "the first close is logged, naming both clients"
is "$(grep -c 'admin: all 64 admin connections held' "$TB_TMP/daemon.log")" 1 \
    "the second, within 10 s, is not logged on its own line"

# 7 more new clients (127.0.1.1-7): they close the other 6 plain
# connections, then the oldest one past its TLS handshake (index 8).
codes=""
for i in $(seq 1 7); do
    newcomer "127.0.1.$i"
    codes="$codes $(answer "127.0.1.$i")"
    wait_closed $((2 + i))
done
is "$codes" " 200 200 200 200 200 200 200" "7 more new clients are served"
is "$(cat "$TB_TMP/closed")" "$(seq -s ' ' 0 8)" \
    "closing the 6 other plain connections, then the oldest one past its TLS handshake"
# And a real browser-like client, curl, from yet another address.
is "$(status 127.0.0.10)" 200 "curl from a new client is served too"
wait_closed 10
is "$(cat "$TB_TMP/closed")" "$(seq -s ' ' 0 9)" "closing the next oldest"
kill -0 "$live" 2>/dev/null
ok $? "the live stream is still open"

# shellcheck disable=SC2086
kill $NEWCOMERS 2>/dev/null
for p in $NEWCOMERS; do wait "$p" 2>/dev/null; done
kill "$holder" "$live" 2>/dev/null
wait "$holder" 2>/dev/null
wait "$live" 2>/dev/null
# Everything from 127.0.0.2-5 closed: those clients are served again (the
# server notices the closes in its connection threads: wait for that).
code=000
for _ in $(seq 1 100); do
    code=$(status 127.0.0.5)
    [ "$code" = 200 ] && break
    sleep 0.1
done
is "$code" 200 "once the holder is gone, 127.0.0.5 is served again"

tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
