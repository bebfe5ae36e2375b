#!/bin/bash
# HTTP/2 state comes and goes with use: the nghttp2 session is made when the
# client's preface arrives (not at ALPN selection), the frame buffer of a
# connection idle for a second or more goes back to the kernel, and the
# headers kept for requests not yet answered stay within a budget.  A client
# that waits before its preface, and one that pauses between requests long
# enough for the buffer to be released, still get every byte right.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start --set site.workers=1
ok $? "tlsboxd serves the site"
PY="$top_srcdir/plugins/site/tests/h2_streams.py"
want="status=200 bytes=16127 sha256=$(sha256sum "$TB_TMP/www/f16k.txt" | cut -d' ' -f1)"

# Preface 1.5 s after the handshake, then three requests 2.5 s apart: the
# site releases the idle connection's frame buffer between them (once a
# second, for connections idle 1 s or more).
out=$(timeout 30 python3 "$PY" late 127.0.0.1 "$P_HTTPS" /f16k.txt 1.5 3 2.5)
is "$(echo "$out" | sed -n 1p)" "$want" "late preface: the first answer is the whole file"
is "$(echo "$out" | sed -n 2p)" "$want" "after 2.5 s idle: the second answer is the whole file"
is "$(echo "$out" | sed -n 3p)" "$want" "after 2.5 s idle again: the third answer is the whole file"
is "$(echo "$out" | sed -n 4p)" "settings=yes" "the site's SETTINGS is its first frame"

# Many idle connections released at once, then all used again: no answer is
# corrupted (the buffers come back zeroed and are rewritten).
pids=""
for i in $(seq 1 8); do
    timeout 30 python3 "$PY" late 127.0.0.1 "$P_HTTPS" /f16k.txt 0 2 2.5 >"$TB_TMP/late.$i" &
    pids="$pids $!"
done
# shellcheck disable=SC2086
wait $pids # by pid: the daemon is a child of this shell too
good=$(cat "$TB_TMP"/late.* | grep -c -x "$want")
is "$good" 16 "8 connections idle 2.5 s between two requests: 16 whole answers"

# Plain curl over h2, several requests on one connection: unchanged.
code=$(curl -s --cacert "$CA" --http2 -o /dev/null -o /dev/null -w '%{http_code}%{http_version} ' \
    --max-time 10 "$URL/f16k.txt" "$URL/f16k.txt")
is "$code" "2002 2002 " "curl: two h2 requests on one connection"

# Requests that never end (HEADERS without END_STREAM) keep their headers
# until answered.  8 connections, each with 99 of them naming a 4 KB HPACK
# table entry three times (12 KB of header values, under max_header_size,
# for 3 bytes each on the wire) and then one GET: each connection's kept
# headers are capped at 4 x max_header_size (64 KB), the streams past that
# are reset, and the GET is answered.  Before, every such stream kept 16 KB
# of heap: 13 MB for the 8 connections' 50 KB.
out=$(timeout 60 python3 "$PY" halfopen 127.0.0.1 "$P_HTTPS" "$TB_PID" 8 3)
val() { echo "$out" | sed -n "s/.*\\b$1=\\([0-9]*\\).*/\\1/p"; }
is "$(val answered)" 8 "the GET after 99 never-ending requests is answered on each connection"
n=$(val reset)
ok "$([ "${n:-0}" -ge 720 ]; echo $?)" "at most 9 of each connection's 99 are kept, the rest reset (reset: ${n:-?})"
n=$(val rss_kb)
if grep -q libasan "/proc/$TB_PID/maps"; then
    diag "AddressSanitizer build: RSS growth not compared (${n:-?} KiB)"
else
    ok "$([ "${n:-99999}" -lt 4096 ]; echo $?)" "the daemon's RSS grew less than 4 MiB meanwhile (${n:-?} KiB)"
fi
done_testing
