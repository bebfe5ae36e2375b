#!/bin/bash
# File descriptors under attack.  HTTP/2 clients that never open their
# window (SETTINGS_INITIAL_WINDOW_SIZE=0) ask for files above the cache size:
# the site must not hold a descriptor per stalled stream (it held 12,138 in
# one worker), nor per stream of a client that opens its window one byte at a
# time (8 per connection, for as long as it trickled), a PING or a window
# opened a byte at a time must not keep a stalled or idle connection alive, and
# running out of descriptors answers 503 + Retry-After (never 404) while the
# control socket and the store keep working.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
head -c 409600 /dev/urandom >"$TB_TMP/www/f400k.bin"
sum=$(sha256sum <"$TB_TMP/www/f400k.bin")
# A limit the flood would exceed (12,000 streams) if each held a descriptor.
ulimit -n 4096
site_start --set site.workers=1
ok $? "tlsboxd serves the site"
H2S="$top_srcdir/plugins/site/tests/h2_streams.py"
nfds() { ls /proc/"$TB_PID"/fd 2>/dev/null | wc -l; }
# wait_conns N: wait (bounded, 8 s) until the site holds N connections; prints how many it holds.
wait_conns() {
    local i n=0
    for i in $(seq 1 80); do
        n=$(site_metric tlsbox_site_connections_open)
        [ "$n" -ge "$1" ] && break
        sleep 0.1
    done
    echo "$n"
}
# wait_closed: wait (bounded, 15 s) until the site holds no connection; prints how many it holds.
wait_closed() {
    local i n=0
    for i in $(seq 1 150); do
        n=$(site_metric tlsbox_site_connections_open)
        [ "$n" -eq 0 ] && break
        sleep 0.1
    done
    echo "$n"
}
# max_fds: the most descriptors the daemon held in 6 samples over 3 s.
max_fds() {
    local i n max=0
    for i in 1 2 3 4 5 6; do
        n=$(nfds)
        [ "$n" -gt "$max" ] && max=$n
        sleep 0.5
    done
    echo "$max"
}

# ---- zero-window flood: h2load -c 120 -m 100 -w 0 -W 0 on a 400 KB file ------------------------
conns=120
base=$(nfds)
timeout -s INT 20 h2load -c $conns -m 100 -w 0 -W 0 -n 12000 "$URL/f400k.bin" \
    >"$TB_TMP/h2load.out" 2>&1 &
h2pid=$!
# Wait (bounded) until every connection is in, then sample the descriptors.
is "$(wait_conns $conns)" $conns "the attack holds $conns connections"
max=$(max_fds)
limit=$((base + conns + conns * 8))
diag "descriptors: $base before, at most $max under the attack (budget 8 x $conns conns + sockets + base = $limit)"
ok "$([ "$max" -lt "$limit" ]; echo $?)" "descriptors stay below budget x connections ($max < $limit)"
ok "$([ "$max" -lt $((base + conns + 40)) ]; echo $?)" \
    "stalled streams hold no file at all ($max < $base + $conns sockets + 40)"
got=$(curl -s --cacert "$CA" --http2 --max-time 10 "$URL/f400k.bin" | sha256sum)
is "$got" "$sum" "a new HTTP/2 client gets the whole file meanwhile"
code=$(curl -s --cacert "$CA" --http1.1 -o /dev/null -w '%{http_code}' --max-time 10 "$URL/f400k.bin")
is "$code" 200 "a new HTTP/1.1 client gets 200 meanwhile"
tb_ctl status >/dev/null
ok $? "the control socket answers meanwhile"
tb_ctl set site.access_log off >/dev/null && v=$(tb_ctl get site.access_log)
is "$v" "off" "the store takes a setting meanwhile"
kill -INT $h2pid 2>/dev/null
wait $h2pid 2>/dev/null
# The flood's connections are closed first: counted with the next run's,
# they made "20 connections" true before its clients were in.
is "$(wait_closed)" 0 "the flood's $conns connections are closed once its client stops"

# ---- one-byte windows: h2load -w 1 (2^1 - 1 bytes per stream) ----------------------------------
# Each stream's window opens one byte at a time (h2load grants a byte back
# as it takes one), so no stream ever sits at a zero window when it is
# answered.  Files used to stay open from the answer to the end of the body:
# 8 per connection, for as long as the client kept trickling.  Now a stream
# whose window is spent closes its file until the next WINDOW_UPDATE.
conns=20
base=$(nfds)
timeout -s INT 15 h2load -c $conns -m 8 -w 1 -W 30 -n $((conns * 8)) "$URL/f400k.bin" \
    >"$TB_TMP/h2load1.out" 2>&1 &
h2pid=$!
is "$(wait_conns $conns)" $conns "the trickle holds $conns connections"
sleep 1
max=$(max_fds)
diag "descriptors: $base before, at most $max with $conns x 8 one-byte-window streams"
ok "$([ "$max" -lt $((base + conns + 20)) ]; echo $?)" \
    "one-byte-window streams hold no file between bytes ($max < $base + $conns sockets + 20)"
got=$(curl -s --cacert "$CA" --http2 --max-time 10 "$URL/f400k.bin" | sha256sum)
is "$got" "$sum" "a new HTTP/2 client gets the whole file meanwhile"
kill -INT $h2pid 2>/dev/null
wait $h2pid 2>/dev/null

# ---- a PING is no progress -----------------------------------------------------------------------
# Lowered live: the send timeout counts only DATA progress, the idle timeout
# only requests, so a client pinging every 0.5 s is cut off all the same.
site_set site.send_timeout 2 && site_set site.idle_timeout 2
ok $? "send_timeout and idle_timeout lowered to 2 s (live)"
out=$(python3 "$H2S" pinger 127.0.0.1 "$P_HTTPS" /f400k.bin 0.5 12)
like "$out" "^closed_after=[2-5]\." "a zero-window stream kept busy with PINGs is closed ($out)"
out=$(python3 "$H2S" pinger 127.0.0.1 "$P_HTTPS" - 0.5 12)
like "$out" "^closed_after=[2-5]\." "an idle connection kept busy with PINGs is closed ($out)"
# Nor is a trickle: a response must move 4 KB per send_timeout.  A client
# that opened its window one byte per 0.5 s kept its connection for ever.
out=$(python3 "$H2S" trickle 127.0.0.1 "$P_HTTPS" /f400k.bin 1 0.5 12)
like "$out" "^closed_after=[2-5]\.[0-9] bytes=[0-9]{1,3}$" \
    "a stream whose window opens a byte every 0.5 s is closed ($out)"
out=$(python3 "$H2S" trickle 127.0.0.1 "$P_HTTPS" /f400k.bin 16384 0.25 30)
like "$out" "^done_after=[0-9.]+ bytes=409600$" \
    "a client that opens 16 KB every 0.25 s gets the whole 400 KB file past the 2 s timeout ($out)"
tb_ctl set site.send_timeout 30 >/dev/null && tb_ctl set site.idle_timeout 60 >/dev/null

# ---- one client cannot take every slot -------------------------------------------------------
site_set site.max_connections_per_ip 10
ok $? "site.max_connections_per_ip=10 (live)"
out=$(python3 - "$P_HTTPS" <<'PY'
import socket, ssl, sys, time
port = int(sys.argv[1])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ctx.set_alpn_protocols(["h2"])
def conn(src):
    s = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(src, 0))
    try:
        return ctx.wrap_socket(s, server_hostname="localhost")
    except OSError:
        return None
held = [conn("127.0.0.1") for i in range(15)]
up = sum(1 for c in held if c is not None)
other = conn("127.0.0.2")
# Each address is counted on its own: 127.0.0.2 gets in whatever bucket the
# hash (keyed afresh at each start) puts it in.  When counts were kept per
# bucket it shared 127.0.0.1's limit in about 1 start in 16,384, and any
# address did under a hash known in advance: 127.0.142.243 under the old
# unkeyed one (FNV-1a of the address, mod 16384), which a client could pick.
twin = conn("127.0.142.243")
print("from 127.0.0.1: %d of 15 up; from 127.0.0.2: %s; from 127.0.142.243: %s"
      % (up, "up" if other else "refused", "up" if twin else "refused"))
PY
)
is "$out" "from 127.0.0.1: 10 of 15 up; from 127.0.0.2: up; from 127.0.142.243: up" \
    "15 connections from one address: 10 taken, 5 closed; other addresses still get in, each with its own count"
site_set site.max_connections_per_ip 256

# ---- out of descriptors: 503 + Retry-After, not 404 -----------------------------------------
# One keep-alive TLS connection is opened, then the daemon's limit is lowered
# to what it holds and the gaps below it filled with plain connections:
# opening the file fails with EMFILE.
# As the daemon's user (prlimit on it), its descriptors listed here (as root:
# a process that dropped root is not dumpable).
out=$(tb_as_daemon /usr/bin/python3 - "$TB_PID" "$P_HTTPS" "$P_HTTP" "$(ls /proc/"$TB_PID"/fd | tr '\n' ,)" <<'PY'
import os, resource, socket, ssl, sys, time
pid, port, plain = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ctx.set_alpn_protocols(["http/1.1"])
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5), server_hostname="localhost")
def ask(path):
    s.sendall(b"GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n" % path)
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(65536)
        if not d:
            return "closed", ""
        head += d
    lines = head.split(b"\r\n\r\n")[0].decode().split("\r\n")
    ra = [l.split(":", 1)[1].strip() for l in lines if l.lower().startswith("retry-after:")]
    return lines[0], ra[0] if ra else "-"
old = resource.prlimit(pid, resource.RLIMIT_NOFILE)
fds = [int(f) for f in sys.argv[4].split(",") if f] + [max(int(f) for f in sys.argv[4].split(",") if f) + 1]
top = max(fds) + 1
resource.prlimit(pid, resource.RLIMIT_NOFILE, (top, old[1]))
held = []
try:
    for i in range(top - len(fds) + 20):  # the gaps below the limit, and more
        held.append(socket.create_connection(("127.0.0.1", plain), timeout=5))
    time.sleep(0.5)
    status, ra = ask(b"/f400k.bin")
    print("%s retry-after=%s" % (status, ra))
finally:
    resource.prlimit(pid, resource.RLIMIT_NOFILE, old)
    for h in held:
        h.close()
PY
)
is "$out" "HTTP/1.1 503 Service Unavailable retry-after=1" "out of descriptors: 503 with Retry-After, not 404"
sleep 0.3
is "$(curl -s --cacert "$CA" --max-time 10 "$URL/f400k.bin" | sha256sum)" "$sum" \
    "serves the file again once descriptors are back"

tb_stop_daemon
ok $? "tlsboxd stops"
done_testing
