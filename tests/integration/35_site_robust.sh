#!/bin/bash
# The site under stress it cannot avoid: running out of file descriptors
# must not make a worker spin on accept(), and it serves again afterwards;
# a refused request body does not turn the answer into a reset (lingering
# close), and the lingering is bounded in time (lingering_time, lingering_timeout).
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start --set site.workers=1
ok $? "tlsboxd serves the site"

# ---- out of file descriptors ------------------------------------------------------------
# Lower the running daemon's limit to a few above what it has open, then hold
# more connections than that.  The kernel completes them (backlog) and keeps
# the listener readable; a worker that retried accept() at once would burn a
# whole core for the 2 s window.
nfd=$(ls /proc/"$TB_PID"/fd | wc -l)
tb_as_daemon prlimit --pid "$TB_PID" --nofile=$((nfd + 8)):$((nfd + 8))
ok $? "open file limit lowered to $((nfd + 8)) ($nfd open)"
python3 - "$TB_PID" "$P_HTTP" <<'PY' >"$TB_TMP/emfile"
import os, socket, sys, time
pid, port = int(sys.argv[1]), int(sys.argv[2])
tck = os.sysconf("SC_CLK_TCK")
def cpu():
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / tck  # utime + stime
held = []
for i in range(40):
    held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
time.sleep(0.3)
c0, t0 = cpu(), time.monotonic()
time.sleep(2)
print("cpu=%.2f wall=%.2f" % (cpu() - c0, time.monotonic() - t0))
for s in held:
    s.close()
PY
out=$(cat "$TB_TMP/emfile")
cpu=$(echo "$out" | sed -n 's/^cpu=\([0-9.]*\).*/\1/p')
ok "$(echo "${cpu:-99} < 0.5" | bc -l | grep -q 1; echo $?)" \
    "no busy loop while out of descriptors ($out)"
like "$(cat "$TB_TMP/daemon.log")" "accept: Too many open files" "the shortage is logged"
n=$(grep -c "accept: Too many open files" "$TB_TMP/daemon.log")
ok "$([ "$n" -le 4 ]; echo $?)" "at most once a second ($n lines)"
sleep 0.5
code=$(curl -s --cacert "$CA" -o /dev/null -w '%{http_code}' --max-time 5 "$URL/sub/")
is "$code" 200 "serves again once the connections are closed"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$P_HTTP/")
like "$code" "^30[178]$" "the plain port answers again ($code)"

# ---- lingering close ------------------------------------------------------------------------
# A request body is never read: the site answers at once and closes.  Closing
# with the body still arriving would make the kernel send a reset that can
# destroy the answer before the client reads it; the site shuts down its
# side and discards input for a while instead.  No "Expect: 100-continue",
# so curl sends the whole body without waiting.
head -c 4194304 /dev/zero >"$TB_TMP/body"
C=(curl -s --cacert "$CA" --http1.1 -H 'Expect:' -o /dev/null -w '%{http_code}' --max-time 10)
bad=0
for i in 1 2 3 4 5; do
    code=$("${C[@]}" --data-binary @"$TB_TMP/body" "$URL/" 2>/dev/null)
    rc=$?
    [ "$code" = 405 ] && [ "$rc" = 0 ] || { bad=$((bad + 1)); diag "https try $i: status $code, curl exit $rc"; }
    code=$("${C[@]}" --data-binary @"$TB_TMP/body" -X GET "$URL/sub/" 2>/dev/null)
    rc=$?
    [ "$code" = 413 ] && [ "$rc" = 0 ] || { bad=$((bad + 1)); diag "https GET try $i: status $code, curl exit $rc"; }
    code=$("${C[@]}" --data-binary @"$TB_TMP/body" "http://127.0.0.1:$P_HTTP/" 2>/dev/null)
    rc=$?
    [ "$code" != 000 ] && [ "$rc" = 0 ] || { bad=$((bad + 1)); diag "plain try $i: status $code, curl exit $rc"; }
done
is "$bad" 0 "a 4 MB body refused: curl gets the answer, not a reset (15 tries)"
# The same from a slow uploader: the request, then a 32 KB body in four
# pieces, then read to the end.  The answer must end with a FIN (recv() returns 0),
# not with a reset because the body was still unread when the site closed.
out=$(python3 - "$P_HTTP" <<'PY'
import socket, sys, time
ok, resets = 0, 0
for i in range(20):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    body = b"x" * 32768
    got = b""
    try:
        s.sendall(b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: %d\r\n\r\n" % len(body))
        # The site answers meanwhile; the body comes late, in pieces, as
        # from a slow uploader.  A send after a reset fails.
        for k in range(4):
            time.sleep(0.03)
            s.sendall(body[k * 8192:(k + 1) * 8192])
        while True:
            d = s.recv(4096)
            if not d:
                break
            got += d
        if got.startswith(b"HTTP/1.1 "):
            ok += 1
    except (ConnectionResetError, BrokenPipeError):
        resets += 1
    s.close()
print("clean=%d resets=%d" % (ok, resets))
PY
)
is "$out" "clean=20 resets=0" "a refused 32 KB body: the answer ends with a FIN, not a reset (20 tries)"
# A lingering TLS connection frees what the session had: here the key that
# sealed the 16 KB answer's records, before the second request gets 413 and
# the connection lingers.  Leaked, that was 800 bytes a connection, 1.6 MB
# over the two measured rounds.  Under AddressSanitizer (whose quarantine
# holds freed memory) RSS says nothing; LeakSanitizer reports at the stop.
linger_tls_conns() {
    python3 - "$P_HTTPS" 1000 <<'PY'
import socket, ssl, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ctx.set_alpn_protocols(["http/1.1"])
req = (b"GET /f16k.txt HTTP/1.1\r\nHost: localhost\r\n\r\n"
       b"GET /sub/ HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\n\r\n")
answered = 0
for i in range(n):
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10),
                        server_hostname="localhost")
    s.sendall(req)
    got = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
    except (ssl.SSLError, OSError):
        pass
    answered += b"HTTP/1.1 200 " in got and b"HTTP/1.1 413 " in got
    s.close()
print("answered=%d" % answered)
PY
}
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$TB_PID/status"; }
out=$(linger_tls_conns) # warms the worker's allocator up
is "$out" "answered=1000" "1,000 TLS connections: a 16 KB answer, then a 413 and lingering close"
rss0=$(rss_kb)
out="$(linger_tls_conns) $(linger_tls_conns)"
is "$out" "answered=1000 answered=1000" "2,000 more of them"
rss1=$(rss_kb)
if grep -q libasan "/proc/$TB_PID/maps"; then
    diag "AddressSanitizer build: RSS not compared (LeakSanitizer reports at the stop)"
else
    # The leak this guards against was 1.6 MB per 2,000; allocator arenas
    # and the daemon's own work may move RSS by a few hundred kB.
    [ $((rss1 - rss0)) -lt 1024 ]
    ok $? "RSS grew by less than 1 MB over 2,000 lingering TLS connections ($rss0 kB, then $rss1 kB)"
fi
# The discarding is bounded, as nginx's lingering_time / lingering_timeout
# (set live here to 2 s and 1 s): a client that keeps sending is cut off after
# lingering_time, one that stops sending after lingering_timeout.
site_set site.lingering_time 2 && site_set site.lingering_timeout 1
ok $? "site.lingering_time=2, site.lingering_timeout=1 (live)"
# linger_client INTERVAL PAUSE: send a refused body in 4 KB pieces every
# INTERVAL s, pausing PAUSE s after the first 0.5 s; print when the site closed.
linger_client() {
    python3 - "$P_HTTP" "$1" "$2" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000000\r\n\r\n")
interval, pause = float(sys.argv[2]), float(sys.argv[3])
t0, sent, paused = time.monotonic(), 0, False
try:
    while time.monotonic() - t0 < 8:
        if pause and not paused and time.monotonic() - t0 > 0.5:
            paused = True
            time.sleep(pause)
        sent += s.send(b"x" * 4096)
        time.sleep(interval)
    print("still open after %d bytes" % sent)
except OSError as e:
    print("closed after %.1f s" % (time.monotonic() - t0))
PY
}
out=$(linger_client 0.001 0)
like "$out" "^closed after (1\.[5-9]|2\.|3\.[0-5])" "a fast sender is discarded for lingering_time, about 2 s ($out)"
out=$(linger_client 0.02 0)
like "$out" "^closed after (1\.[5-9]|2\.|3\.[0-5])" "a slow sender: the same ($out)"
# lingering_time 6 s: only lingering_timeout can end a 2.5 s pause early.
site_set site.lingering_time 6
out=$(linger_client 0.02 2.5)
like "$out" "^closed after (3\.[0-5])" "a sender that pauses 2.5 s is closed after lingering_timeout (1 s) ($out)"
is "$(curl -s --cacert "$CA" -o /dev/null -w '%{http_code}' "$URL/sub/")" 200 "still serving"

# ---- a client that half-closes after its requests ----------------------------------------
# printf 'GET ...' | nc -N, or any client that shuts its sending side after
# its last request: the server reads the requests and the end together (the
# client makes that certain by stopping the daemon while it sends).  A
# half-close ends the requests, not the answers (RFC 9112 section 9.6):
# each is answered in full, then the server closes.
hc() { timeout 60 python3 "$top_srcdir/plugins/site/tests/h2_streams.py" halfclose 127.0.0.1 "$@"; }
f16=$(sha256sum "$TB_TMP/www/f16k.txt" | cut -d' ' -f1)
big=$(sha256sum "$TB_TMP/www/big.bin" | cut -d' ' -f1)
out=$(hc "$P_HTTPS" "$TB_PID" tls fin /f16k.txt /big.bin)
is "$out" "status=200 bytes=16127 sha256=$f16
status=200 bytes=2097152 sha256=$big
answers=2 of 2 closed=yes" "TLS, a FIN right after two pipelined requests: both answered in full, then closed"
out=$(hc "$P_HTTPS" "$TB_PID" tls notify /big.bin /f16k.txt)
is "$out" "status=200 bytes=2097152 sha256=$big
status=200 bytes=16127 sha256=$f16
answers=2 of 2 closed=yes" "TLS, a close_notify right after two requests: the same"
out=$(hc "$P_HTTP" "$TB_PID" plain fin /f16k.txt /sub/)
like "$out" "^status=301 bytes=[0-9]+ sha256=[0-9a-f]+
status=301 bytes=[0-9]+ sha256=[0-9a-f]+
answers=2 of 2 closed=yes$" "plain HTTP, a FIN right after two requests: both redirects, then closed"
is "$(curl -s --cacert "$CA" -o /dev/null -w '%{http_code}' "$URL/sub/")" 200 "still serving"

tb_stop_daemon
ok $? "tlsboxd stops"
done_testing
