#!/bin/bash
# The site's limits: a slowloris client is cut by the header timeout, 200 h2
# streams on one connection are capped at the advertised 100, an oversized
# h2 header list (request or trailers) is reset, rapid-reset, MadeYouReset and CONTINUATION floods end early
# with bounded memory and CPU, 414/431 on HTTP/1, max_connections refuses past
# the limit, and a handshake that never comes is cut by its timeout.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start --set site.header_timeout=2 --set site.handshake_timeout=2 \
    --set site.max_connections=20 --set site.max_request_line=1024 --set site.max_header_size=8192
ok $? "tlsboxd serves the site with tight limits"
PY="$top_srcdir/plugins/site/tests/h2_streams.py"

# ---- slowloris ------------------------------------------------------------------------
out=$(python3 "$PY" slowloris 127.0.0.1 "$P_HTTPS" 0.5 15)
like "$out" "^closed_after=" "slowloris (a header line every 0.5 s) is cut off"
secs=$(echo "$out" | sed -n 's/^closed_after=//p')
ok "$(echo "${secs:-99} >= 1.5 && ${secs:-99} <= 4.5" | bc -l | grep -q 1; echo $?)" \
    "by the 2 s header timeout, not by more bytes (${secs:-?} s)"
# A stray CRLF after a keep-alive request (RFC 9112 2.2: ignored) leaves the
# connection idle, on the 60 s idle timer, not on the 2 s header timer.
out=$(python3 - "$P_HTTPS" "$CA" <<'PY'
import socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[2])
s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10),
                    server_hostname="localhost")
def get():
    s.sendall(b"GET /sub/ HTTP/1.1\r\nHost: localhost\r\n\r\n")
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(65536)
        if not d:
            return "closed"
        buf += d
    head, _, body = buf.partition(b"\r\n\r\n")
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0])
    while len(body) < n:
        body += s.recv(65536)
    return head.split(b"\r\n")[0].decode()
first = get()
s.sendall(b"\r\n")
time.sleep(3.5)
try:
    second = get()
except OSError as e:
    second = "error " + type(e).__name__
print(first, "|", second)
PY
)
is "$out" "HTTP/1.1 200 OK | HTTP/1.1 200 OK" "a CRLF after a request, then 3.5 s: the next request is still served"
# A connection that never finishes its handshake is cut too.
start=$(date +%s.%N)
python3 - "$P_HTTPS" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"\x16\x03\x01\x00\x10")  # the start of a ClientHello, then nothing
s.settimeout(10)
try:
    s.recv(100)
except Exception:
    pass
PY
took=$(echo "$(date +%s.%N) - $start" | bc -l)
ok "$(echo "$took <= 4.5" | bc -l | grep -q 1; echo $?)" "a stalled handshake is cut by the handshake timeout ($(echo "$took" | cut -c1-4) s)"

# ---- h2: streams and header list ------------------------------------------------------------
out=$(python3 "$PY" streams 127.0.0.1 "$P_HTTPS" 200 /sub/)
like "$out" "advertised=100 " "SETTINGS advertise 100 concurrent streams"
okn=$(echo "$out" | sed -n 's/.* ok=\([0-9]*\).*/\1/p')
ref=$(echo "$out" | sed -n 's/.* refused=\([0-9]*\).*/\1/p')
ok "$([ "${okn:-999}" -le 100 ] && [ "${okn:-0}" -ge 1 ]; echo $?)" "at most 100 of 200 streams answered (${okn:-?})"
is "$((${okn:-0} + ${ref:-0}))" 200 "the others are refused with REFUSED_STREAM ($out)"
out=$(python3 "$PY" bigheader 127.0.0.1 "$P_HTTPS" 20000)
is "$out" reset "an h2 header list over max_header_size is reset"
out=$(python3 "$PY" bigheader 127.0.0.1 "$P_HTTPS" 1000)
is "$out" status200 "a normal header list is served"

# ---- h2: rapid reset and CONTINUATION floods --------------------------------------------------
# Each flood goes over one connection while its answers are read.  The
# server must end it early (GOAWAY, or closing the connection) without its
# memory or CPU following the flood, and go on serving everyone else.
# nghttp2 allows a burst of 1000 client resets, then 33 a second
# (site_h2.c), and 8 CONTINUATION frames per header block.
# flood KIND N: the flood's summary line (h2_streams.py flood).
flood() { timeout 60 python3 "$PY" flood 127.0.0.1 "$P_HTTPS" "$TB_PID" "$1" "$2" 20; }
# field LINE NAME: the value of NAME= in LINE.
field() { echo "$1" | sed -n "s/.*\\b$2=\\([^ ]*\\).*/\\1/p"; }
# below N MAX: N is a number under MAX.
below() { [ "$1" -eq "$1" ] 2>/dev/null && [ "$1" -lt "$2" ]; }
# rss_below KB WHAT: the RSS growth measured during WHAT is under 4 MiB
# (not compared under AddressSanitizer, whose quarantine keeps freed memory).
rss_below() {
    if grep -q libasan "/proc/$TB_PID/maps"; then
        diag "AddressSanitizer build: RSS growth during $2 not compared (${1:-?} KiB)"
    else
        ok "$(below "$1" 4096; echo $?)" "the daemon's RSS grew less than 4 MiB during $2 (${1:-?} KiB)"
    fi
}
# served: a normal request on a new connection gets the whole page.
served() {
    curl -s --cacert "$CA" --http2 --max-time 10 "$URL/index.html" | cmp -s - "$TB_TMP/www/index.html"
}
# flood_cut KIND N GOAWAY WHAT: a flood of N groups of KIND over one
# connection ends with a GOAWAY of code GOAWAY and the close, after at most
# 1500 streams, with bounded memory and CPU; then a new client is served.
flood_cut() {
    local out n
    out=$(flood "$1" "$2")
    is "$(field "$out" closed) $(field "$out" goaway)" "yes $3" \
        "$4 ($2 groups): GOAWAY $3, connection closed ($out)"
    n=$(field "$out" streams)
    ok "$(below "$n" 1501; echo $?)" "the server took in at most 1500 of the $2 streams (${n:-?})"
    rss_below "$(field "$out" rss_kb)" "the $1 flood"
    n=$(field "$out" cpu_ms)
    ok "$(below "$n" 2000; echo $?)" "the daemon spent less than 2 s of CPU on it (${n:-?} ms)"
    ok "$(served; echo $?)" "a new client is served the whole page after the $1 flood"
}
flood_cut rapidreset 20000 2 "rapid reset (HEADERS + RST_STREAM), GOAWAY INTERNAL_ERROR"
# MadeYouReset (CVE-2025-8671): the client never sends RST_STREAM, but
# follows each request with a WINDOW_UPDATE that overflows the stream's
# window, which the server must answer with a reset.  Neither the stream
# limit nor nghttp2 1.52's rapid-reset limit sees it; site_h2.c counts the
# resets it is made to send (a burst of 1000, then 33 a second).
floods() { site_api GET metrics | jq '.["tlsbox_site_h2_reset_floods_total"]'; }
is "$(floods)" 0 "no connection has been ended for forced resets yet"
flood_cut madeyoureset 100000 11 \
    "MadeYouReset (HEADERS + overflowing WINDOW_UPDATE), GOAWAY ENHANCE_YOUR_CALM"
is "$(floods)" 1 "the connection is counted in tlsbox_site_h2_reset_floods_total"
like "$(grep MadeYouReset "$TB_TMP/daemon.log")" \
    "HTTP/2 client 127.0.0.1 made the server reset more than 1000 streams" \
    "the log names the client that was cut off"
# The other MadeYouReset lever, DATA on a stream the client ended: nghttp2
# 1.52 ends the connection at the first one (GOAWAY STREAM_CLOSED).
out=$(flood madeyoureset-data 100000)
is "$(field "$out" closed)" yes "MadeYouReset with DATA frames: the connection is closed ($out)"
n=$(field "$out" streams)
ok "$(below "$n" 1501; echo $?)" "the server took in at most 1500 of those streams (${n:-?})"
ok "$(served; echo $?)" "a new client is served the whole page after it"
# nghttp2 1.52 resets streams without telling the site when a
# SETTINGS_INITIAL_WINDOW_SIZE overflows their windows (100 at once) or DATA
# goes past a content-length: 30 rounds of 100 such requests, each round
# after the last one's resets (never over the stream limit), are cut off
# like the other resets the client makes the server send.
for kind in settings clen; do
    out=$(timeout 120 python3 "$PY" resetby 127.0.0.1 "$P_HTTPS" "$kind" 30)
    is "$(field "$out" goaway) $(field "$out" closed)" "11 yes" \
        "MadeYouReset by $kind: GOAWAY ENHANCE_YOUR_CALM, connection closed ($out)"
    n=$(field "$out" resets)
    ok "$(below "$n" 1501; echo $?)" "the server reset at most 1500 of its streams (${n:-?})"
done
ok "$(served; echo $?)" "a new client is served the whole page after them"
# 2000 frames of 16 KB (32 MB of header data), then 2,000,000 empty ones
# (18 MB): far more than the socket buffers take in before a server that
# stops reading closes, so only a server that reads them all shows sent=all.
# The server says why before it closes: GOAWAY ENHANCE_YOUR_CALM (11).
for kind in contgrow:2000 contempty:2000000; do
    out=$(flood "${kind%:*}" "${kind#*:}")
    is "$(field "$out" closed) $(field "$out" sent) $(field "$out" goaway)" "yes part 11" \
        "CONTINUATION flood (${kind%:*}, ${kind#*:} frames): GOAWAY 0xb, closed before the end ($out)"
    rss_below "$(field "$out" rss_kb)" "the ${kind%:*} flood"
    ok "$(served; echo $?)" "a new client is served the whole page after it"
done
# A header block in HEADERS and 2, 3 or 8 CONTINUATION frames is a request
# like any other; the 9th CONTINUATION of one block gets the GOAWAY.
for n in 2 3 8; do
    is "$(python3 "$PY" contsplit 127.0.0.1 "$P_HTTPS" $n)" "status=200 bytes=$(stat -c %s "$TB_TMP/www/index.html")" \
        "a request in HEADERS and $n CONTINUATION frames is served"
done
is "$(python3 "$PY" contsplit 127.0.0.1 "$P_HTTPS" 9)" "goaway=11 closed=yes" \
    "9 CONTINUATION frames: GOAWAY ENHANCE_YOUR_CALM (0xb), then the connection closes"
# Trailers count against max_header_size as the request's fields do.
# nghttp2 checks each field's value before the site sees it, and one byte
# of HPACK index names a 4 KB table entry: 40 trailer blocks of 147 KB of
# indexes (5.9 MB) named 24 GB, 6.5 s of the worker's CPU when uncounted.
out=$(flood trailerbomb 40)
n=$(field "$out" cpu_ms)
is "$(field "$out" resets)" 40 "each of the 40 trailer blocks past max_header_size has its stream reset ($out)"
ok "$(below "$n" 1000; echo $?)" "40 trailer blocks of HPACK indexes cost the daemon under 1 s of CPU (${n:-?} ms: $out)"
ok "$(served; echo $?)" "a new client is served the whole page after them"

# ---- HTTP/1 limits ------------------------------------------------------------------------------
C=(curl -s --cacert "$CA" --http1.1 -o /dev/null -w '%{http_code}')
is "$("${C[@]}" "$URL/$(head -c 2000 /dev/zero | tr '\0' a)")" 414 "request line over the limit: 414"
is "$("${C[@]}" -H "X-Big: $(head -c 9000 /dev/zero | tr '\0' a)" "$URL/")" 431 \
    "headers over the limit: 431"
is "$("${C[@]}" "$URL/sub/")" 200 "a normal request still works"

# ---- max_connections ------------------------------------------------------------------------------
python3 - "$P_HTTPS" "$CA" <<'PY' >"$TB_TMP/maxc"
import socket, ssl, sys, time
port = int(sys.argv[1])
ctx = ssl.create_default_context(cafile=sys.argv[2])
held = []
for i in range(20):
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
    held.append(s)
time.sleep(0.3)
# the 21st: accepted by the kernel, closed at once by the site
try:
    s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5),
                        server_hostname="localhost")
    s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    print("over:", "served" if s.recv(100) else "closed")
except Exception as e:
    print("over: closed")
for s in held[:5]:
    s.close()
# The site sees the closes on its next events: try for up to 5 s.
line = "closed"
for _ in range(50):
    try:
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5),
                            server_hostname="localhost")
        s.sendall(b"GET /sub/ HTTP/1.1\r\nHost: localhost\r\n\r\n")
        got = s.recv(100)
        s.close()
        if got:
            line = got.split(b"\r\n")[0].decode()
            break
    except Exception:
        pass
    time.sleep(0.1)
print("after:", line)
PY
like "$(cat "$TB_TMP/maxc")" "over: closed" "the connection past max_connections is closed"
like "$(cat "$TB_TMP/maxc")" "after: HTTP/1.1 200" "once some close, new connections are served"
for re in 'tlsbox_site_connections_refused_total":[1-9]' \
    'tlsbox_site_handshake_failures_total\{reason=\\"timeout\\"\}":[1-9]' \
    'tlsbox_site_h2_refused_streams_total":[1-9]'; do
    tb_wait_like 10 "$re" site_api GET metrics >/dev/null
done
m=$(site_api GET metrics)
like "$m" 'tlsbox_site_connections_refused_total":[1-9]' "refused connections are counted"
like "$m" 'tlsbox_site_handshake_failures_total\{reason=\\"timeout\\"\}":[1-9]' \
    "handshake timeouts are counted"
like "$m" 'tlsbox_site_h2_refused_streams_total":[1-9]' "refused h2 streams are counted"
tb_stop_daemon
ok $? "daemon stops"
done_testing
