#!/bin/bash
# Clients that ask for a large static file (Chart.js, 200 KB, no login
# needed) and then read it a few bytes at a time keep their answers under
# way: each read is progress, so libmicrohttpd's 60 s timeout never closes
# them.  Four clients at their 16 connections each held all 64 of the admin
# port, and an admin could not log in.  Now an answer to a request without a
# session that has run ADMIN_ANON_ANSWER_S (10 s) may be closed for a new
# connection: a new client logs in and gets its pages while the attack goes
# on, the attacker's oldest connections are the ones reset for it, logged-in
# live streams are never closed, and the daemon's threads stay bounded.
# Real sockets from loopback addresses 127.0.0.2-8.
. "$(dirname "$0")/lib.sh"
tb_setup

CHART=/usr/share/javascript/chart.js/chart.min.js
ANON_ANSWER_S=10 # ADMIN_ANON_ANSWER_S in core/admin.h
tb_start_daemon --set admin.pbkdf2_iterations=10000 \
    --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" ||
    bail "daemon did not start"
echo 'admins password is long' | tb_ctl admin passwd admin >/dev/null || bail "creating admin"
threads() { awk '/^Threads:/ { print $2 }' "/proc/$TB_PID/status"; }
base_threads=$(threads)

# ---- the attack: 64 slow readers of Chart.js ------------------------------
# 16 connections from each of 127.0.0.2-5, opened one after another.  Each
# sets a small receive buffer and a 1400-byte MSS (an Ethernet link's)
# before it connects: on loopback's 64 KB MSS the kernel takes all of
# Chart.js into the server's send buffer at once and the answer is done;
# at 1400 it takes about 32 KB, and the rest waits on the reader.  Each
# reads its answer's head (checks it is a 200), then 256 raw bytes a second
# and never decrypts them.  It writes how many it holds, then which
# connections (indexes in opening order) the server has reset, checked from
# each socket's own TCP state, for at most 120 s; and "complete" if any
# answer ever ended (it must not: 200 KB at 256 B/s takes 13 minutes).
cat >"$TB_TMP/slow.py" <<'PY'
import os, socket, ssl, struct, sys, time
port, path, ready, closed_file = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
held = []
for i in range(64):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1400)
    s.bind(("127.0.0.%d" % (2 + i // 16), 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", port))
    t = ctx.wrap_socket(s)
    t.sendall(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path.encode())
    if not t.recv(4096).startswith(b"HTTP/1.1 200 "):
        sys.exit("connection %d: no 200" % i)
    # The rest raw: the TLS records as they come, never decrypted.
    raw = socket.socket(fileno=os.dup(t.fileno()))
    raw.setblocking(False)
    held.append((t, raw))
open(ready, "w").write("%d\n" % len(held))

def state(raw):  # tcpi_state: 1 established, 7 closed (reset)
    return struct.unpack("B", raw.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1))[0]

closed, reported, end = set(), None, time.time() + 120
while time.time() < end:
    for i, (t, raw) in enumerate(held):
        if i in closed:
            continue
        if state(raw) != 1:
            closed.add(i)
            continue
        try:
            if raw.recv(256) == b"":
                closed.add(i)
                open(closed_file + ".complete", "w").write("%d\n" % i)
        except BlockingIOError:
            pass
        except OSError:
            closed.add(i)
    if closed != reported:
        with open(closed_file + ".new", "w") as f:
            f.write(" ".join(str(i) for i in sorted(closed)) + "\n")
        os.rename(closed_file + ".new", closed_file)
        reported = set(closed)
    time.sleep(1)
PY
: >"$TB_TMP/closed"
tb_bg python3 "$TB_TMP/slow.py" "$TB_ADMIN_PORT" /vendor/chart.js/chart.min.js \
    "$TB_TMP/held" "$TB_TMP/closed" </dev/null
attacker=$TB_BG_PID
tb_wait_file "$TB_TMP/held" "$attacker"
is "$(cat "$TB_TMP/held" 2>/dev/null)" 64 "64 slow readers from 127.0.0.2-5 are being answered"
# The server holds the rest of each answer: its send queue is full, and
# Chart.js is far larger than what the kernel took.
full_queues() {
    ss -Htn state established "sport = :$TB_ADMIN_PORT" | awk '$2 > 16384' | wc -l
}
is "$(tb_wait_says 10 64 full_queues)" 64 "the server's send queue is full on all 64"
held_threads=$(($(threads) - base_threads))
ok $((held_threads >= 64 && held_threads <= 80 ? 0 : 1)) \
    "a thread for each, no more ($held_threads more than before the attack)"
# Past the deadline from the last answer's start (they started before the
# holder wrote its file): every attack answer may now be closed.
sleep $((ANON_ANSWER_S + 1))

# ---- new clients log in during the attack ---------------------------------
# One connection each: log in, get the page, the session, Chart.js, then
# the live metrics stream, which it keeps reading (its event count in a
# file) for at most 120 s.  Statuses in $TB_TMP/admin.FROM, bodies next to
# it.
cat >"$TB_TMP/admin.py" <<'PY'
import http.client, os, ssl, sys, time
src, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
codes, cookie = [], ""
try:
    c = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=ctx,
                                    source_address=(src, 0))
    def ask(method, url, name, body=None):
        global cookie
        h = {"Content-Type": "application/json", "Cookie": cookie}
        c.request(method, url, body=body, headers=h)
        r = c.getresponse()
        codes.append(str(r.status))
        if r.getheader("Set-Cookie", "").startswith("__Host-tlsbox="):
            cookie = r.getheader("Set-Cookie").split(";")[0]
        if url == "/api/v1/live":
            return r
        open("%s.%s" % (out, name), "wb").write(r.read())
    ask("POST", "/api/v1/session/login", "login",
        b'{"user":"admin","password":"admins password is long"}')
    ask("GET", "/", "index")
    ask("GET", "/api/v1/session", "session")
    ask("GET", "/vendor/chart.js/chart.min.js", "chart")
    live = ask("GET", "/api/v1/live", "live")
except (OSError, http.client.HTTPException):
    live = None
codes += ["000"] * (5 - len(codes))
open(out, "w").write(" ".join(codes) + "\n")
events, end = 0, time.time() + 120
while live and time.time() < end:
    line = live.readline()
    if not line:
        break
    if line.startswith(b"data: "):
        events += 1
        open(out + ".events.new", "w").write("%d\n" % events)
        os.rename(out + ".events.new", out + ".events")
PY
ADMINS=""
admin() { # FROM: log in from FROM (not in $(...): it stays)
    tb_bg python3 "$TB_TMP/admin.py" "$1" "$TB_ADMIN_PORT" "$TB_TMP/admin.$1" </dev/null
    ADMINS="$ADMINS $TB_BG_PID"
    tb_wait_file "$TB_TMP/admin.$1" "$TB_BG_PID"
}
# wait_closed N: until the attacker has seen N of its connections reset (<= 10 s).
wait_closed() {
    for _ in $(seq 1 100); do
        [ "$(wc -w <"$TB_TMP/closed")" -ge "$1" ] && return
        sleep 0.1
    done
}
events() { cat "$TB_TMP/admin.$1.events" 2>/dev/null || echo 0; }
# wait_events FROM N: until FROM's live stream has sent N events (<= 10 s).
wait_events() {
    for _ in $(seq 1 100); do
        [ "$(events "$1")" -ge "$2" ] && return
        sleep 0.1
    done
}

admin 127.0.0.6
is "$(cat "$TB_TMP/admin.127.0.0.6")" "200 200 200 200 200" \
    "during the attack a new client logs in, gets the page, its session, Chart.js and the live stream"
cmp -s "$TB_TMP/admin.127.0.0.6.index" "$top_srcdir/webui/index.html"
ok $? "the page is webui/index.html"
cmp -s "$TB_TMP/admin.127.0.0.6.chart" "$CHART"
ok $? "Chart.js is all there ($(wc -c <"$TB_TMP/admin.127.0.0.6.chart" 2>/dev/null) of $(wc -c <"$CHART") bytes)"
like "$(cat "$TB_TMP/admin.127.0.0.6.session" 2>/dev/null)" '^\{"state":"ok","user":"admin","csrf":"[0-9a-f]+"\}$' \
    "the session is admin's"
wait_closed 1
is "$(cat "$TB_TMP/closed")" "0" "the connection reset for it is the attacker's oldest"
like "$(grep 'admin: all 64 admin connections held' "$TB_TMP/daemon.log")" \
    'closed the one from 127\.0\.0\.2, answering 1[0-9] s without a session, for a new one from 127\.0\.0\.6' \
    "the log says so"

admin 127.0.0.7
is "$(cat "$TB_TMP/admin.127.0.0.7")" "200 200 200 200 200" "a second new client too"
wait_closed 2
is "$(cat "$TB_TMP/closed")" "0 1" "for it the attacker's next oldest is reset"
# A third: the two live streams are the youngest answers and have a
# session, so the attacker's next connection goes, not a stream.
wait_events 127.0.0.6 1
wait_events 127.0.0.7 1
admin 127.0.0.8
is "$(cat "$TB_TMP/admin.127.0.0.8")" "200 200 200 200 200" "a third"
wait_closed 3
is "$(cat "$TB_TMP/closed")" "0 1 2" "for it the next one of the attacker's, not a live stream"
n6=$(events 127.0.0.6) n7=$(events 127.0.0.7)
wait_events 127.0.0.6 $((n6 + 2))
wait_events 127.0.0.7 $((n7 + 2))
ok $(($(events 127.0.0.6) >= n6 + 2 && $(events 127.0.0.7) >= n7 + 2 ? 0 : 1)) \
    "both earlier live streams still send events ($n6 -> $(events 127.0.0.6), $n7 -> $(events 127.0.0.7))"
is "$(cat "$TB_TMP/closed")" "0 1 2" "the other 61 slow readers are still open"
is "$(cat "$TB_TMP/closed.complete" 2>/dev/null)" "" "and none of them got its whole answer"
held_threads=$(($(threads) - base_threads))
ok $((held_threads >= 64 && held_threads <= 80 ? 0 : 1)) \
    "the daemon's threads stay bounded ($held_threads more than before the attack)"

# shellcheck disable=SC2086
kill $ADMINS "$attacker" 2>/dev/null
for p in $ADMINS "$attacker"; do wait "$p" 2>/dev/null; done
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
