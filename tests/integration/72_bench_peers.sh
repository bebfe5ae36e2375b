#!/bin/bash
# bench against servers that are not tlsbox: nginx and h2o started here on
# loopback (bench_itest.sh, as tests/perf/compare.sh configures them).
# Values only, nothing timed: numbers come back (complete = requested, every
# answer a 200, handshakes counted), h2 streams a server refuses unprocessed
# (GOAWAY after nginx's keepalive_requests) are retried, not failed, h2o
# resumes sessions, and when nginx is stopped mid-run the requests it
# answered are complete, the rest failed: complete + failed = the count,
# complete = nginx's access log.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
. "$top_srcdir/plugins/bench/tests/bench_itest.sh"
tb_setup
for t in nginx h2o openssl; do
    command -v $t >/dev/null || bail "$t is not installed (packaging/install-deps.sh)"
done
site_www
bench_start
ok $? "tlsboxd (bench) is up"
bench_peer_prepare
ok $? "a P-256 certificate for the peers"

start_nginx
ok $? "nginx serves on port $NGINX_PORT"
start_h2o
ok $? "h2o serves on port $H2O_PORT"

# Numbers come back: a run by count against each peer and protocol answers
# every request with the whole file, over the asked protocol, on one
# handshake per connection.  (How fast, against h2load, is a benchmark:
# tests/perf/bench_accuracy.sh, make perf-bench.)
N=2000
C=8
peer_values() {
    local name=$1 url=$2 proto=$3 out
    out=$(bench_ctl_run -s "$proto" -n $N -c $C -m 8 --url "$url")
    is "$(jq -r '.results[0].result | "\(.complete) \(.failed)"' <<<"$out")" "$N 0" \
        "$name: $N requests asked, $N complete, 0 failed"
    is "$(jq -r '.results[0].result | "\(.status."2xx" == .complete) \(.tls.alpn) \(.body_bytes == .complete * 16127)"' <<<"$out")" \
        "true $([ "$proto" = h2 ] && echo h2 || echo http/1.1) true" \
        "$name: every answer a 200 with the whole file, over the asked protocol"
    is "$(jq -r '.results[0].result.handshakes | .full + .resumed' <<<"$out")" "$C" \
        "$name: $C handshakes counted, one per connection"
}

peer_values "nginx h2" "https://127.0.0.1:$NGINX_PORT/f16k.txt" h2
peer_values "nginx h1" "https://127.0.0.1:$NGINX_PORT/f16k.txt" h1
peer_values "h2o h2" "https://127.0.0.1:$H2O_PORT/f16k.txt" h2
peer_values "h2o h1" "https://127.0.0.1:$H2O_PORT/f16k.txt" h1

# A server that ends each h2 connection with GOAWAY after 100 requests
# (nginx's keepalive_requests, h2 too in 1.22) and takes 3 streams at once:
# the streams bench had open above GOAWAY's last stream id, those it refused
# with REFUSED_STREAM, and the requests bench still held back for its stream
# limit were never processed (RFC 9113 6.8, 8.7), so they are retried on a
# new connection, as h2load does, not counted as failed.
d="$TB_TMP/nginx-kr"
mkdir -p "$d"
KR_PORT=$(tb_free_port)
peer_nginx_conf "$d" "$KR_PORT" "$TB_TMP/peer.pem" "$TB_TMP/peer.key" "$TB_TMP/www" 4096 off |
    sed 's/keepalive_requests 1000000;/keepalive_requests 100; http2_max_concurrent_streams 3;/' \
        >"$d/nginx.conf"
tb_bg nginx -e "$d/error.log" -c "$d/nginx.conf" -p "$d/" -g 'daemon off;'
KR_PID=$TB_BG_PID
tb_wait_port "$KR_PORT"
ok $? "nginx with keepalive_requests 100 serves on port $KR_PORT"
out=$(bench_ctl_run -s h2 -n 2000 -c 2 -m 8 --url "https://127.0.0.1:$KR_PORT/f16k.txt")
r=$(jq -c '.results[0].result' <<<"$out")
diag "$(jq -r '"complete \(.complete), failed \(.failed), retried \(.retried), connections \(.connections)"' <<<"$r")"
is "$(jq -r '"\(.complete) \(.failed) \(.status."2xx")"' <<<"$r")" "2000 0 2000" \
    "GOAWAY after 100 requests: 2000 asked, 2000 complete (all 200), 0 failed"
ok "$(jq -e '.connections >= 20 and .retried > 0' <<<"$r" >/dev/null; echo $?)" \
    "on new connections ($(jq -r .connections <<<"$r") for 2000 requests), the refused streams retried ($(jq -r .retried <<<"$r"))"
show=$(tb_ctl bench show "$(jq -r .id <<<"$out")")
like "$show" "requests +2000 complete, 0 failed " "bench show: 2000 complete, 0 failed"
like "$show" "retried +$(jq -r .retried <<<"$r") \\(h2 streams the server refused" \
    "bench show: and how many were retried"
csv=$(tb_ctl bench show "$(jq -r .id <<<"$out")" --csv)
is "$(printf '%s\n' "$csv" | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "retried") c = i } NR == 2 { print $c }')" \
    "$(jq -r .retried <<<"$r")" "bench show --csv: the same retried"
# A request sent again is a request made: the retries stay within
# bench.max_requests, the refused streams past it fail.  Each of the 20
# connections refuses at least the 5 streams above nginx's limit of 3.
tb_ctl set bench.max_requests 2050 >/dev/null
r=$(bench_ctl_run -s h2 -n 2000 -c 2 -m 8 --url "https://127.0.0.1:$KR_PORT/f16k.txt" |
    jq -c '.results[0].result')
diag "$(jq -r '"at bench.max_requests 2050: complete \(.complete), failed \(.failed), retried \(.retried)"' <<<"$r")"
is "$(jq -r '"\(.complete + .failed) \(.retried)"' <<<"$r")" "2000 50" \
    "-n 2000 at bench.max_requests 2050: 2000 complete or failed, 50 retried, 2050 sent"
out=$(bench_ctl_run -s h2 -d 30 -c 2 -m 8 --url "https://127.0.0.1:$KR_PORT/f16k.txt")
r=$(jq -c '.results[0].result' <<<"$out")
diag "$(jq -r '"timed: complete \(.complete), failed \(.failed), retried \(.retried), not sent \(.not_sent)"' <<<"$r")"
# A stream refused once the run stopped sending is not sent again: not_sent,
# not retried; each request sent is complete, failed, retried or not sent.
is "$(jq -r '"\(.complete + .failed + .retried + .not_sent) \(.request_limited) \(.retried > 0)"' <<<"$r")" \
    "2050 true true" "a timed run sends 2050 requests, retried ones included, and says it hit the limit"
csv=$(tb_ctl bench show "$(jq -r .id <<<"$out")" --csv)
is "$(printf '%s\n' "$csv" | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "complete" ||
    $i == "failed" || $i == "retried" || $i == "not_sent") c[i] = 1 }
    NR == 2 { for (i in c) t += $i; print t }')" "2050" \
    "bench show --csv: complete + failed + retried + not_sent = 2050 too"
tb_ctl set bench.max_requests 1000000 >/dev/null
kill -TERM "$KR_PID"

run=$(bench_ctl_run -s https-resume -n 100 -c 4 --url "https://127.0.0.1:$H2O_PORT/f16k.txt")
is "$(jq -r '.results[0].result | "\(.complete) \(.failed) \(.handshakes.full + .handshakes.resumed)"' <<<"$run")" \
    "100 0 100" "h2o https-resume: 100 answers on 100 handshakes"
like "$(jq -r '.results[0].result.handshakes.resumed' <<<"$run")" '^(9[0-9]|96)$' \
    "h2o resumed the sessions bench offered (>= 90 of 100)"
like "$(jq -r '.results[0].result.pinning.note' <<<"$run")" "^loopback target: client on cpu [0-9]+ " \
    "a loopback URL is not the local site: the client is pinned, the site's workers left alone"

# ---- interim answers ------------------------------------------------------------
# A server that sends "103 Early Hints" before each 200 (as a CDN or a
# framework does): the 103 is not the answer.  Counted as one, each keep-alive
# request would take the previous one's 200 for its own.
P_HINTS=$(tb_free_port)
tb_bg python3 -c '
import socket, sys, threading
def serve(c):
    buf = b""
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            buf += d
            while b"\r\n\r\n" in buf:
                _, buf = buf.split(b"\r\n\r\n", 1)
                c.sendall(b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n")
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
    except OSError:
        pass
    c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(64)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
' "$P_HINTS"
tb_wait_port "$P_HINTS"
ok $? "a server sending 103 Early Hints before each answer listens on $P_HINTS"
for sc in h1 http; do
    out=$(bench_ctl_run -s $sc -n 200 -c 2 --url "http://127.0.0.1:$P_HINTS/x")
    is "$(jq -r '.results[0].result | "\(.complete) \(.failed) \(.status."1xx") \(.status."2xx") \(.body_bytes)"' <<<"$out")" \
        "200 0 0 200 1000" "$sc: 200 requests, each answered by its 200 (the 103s skipped): 1000 body bytes"
done

# ---- the server stops mid-run ------------------------------------------------
: >"$TB_TMP/nginx/access.log"
N=60000
out=$(site_api POST bench/run "{\"scenario\":\"h1\",\"requests\":$N,\"concurrency\":4,\"url\":\"https://127.0.0.1:$NGINX_PORT/f16k.txt\"}")
id=$(jq -r .id <<<"$out")
# Up to 60 s for the first 2000 answers (a busy machine is slow, not wrong).
for i in $(seq 1 1200); do
    [ "$(site_api GET bench/status | jq -r '.progress.done // 0')" -gt 2000 ] && break
    sleep 0.05
done
kill -TERM "$NGINX_PID"
bench_wait 120
ok $? "the run ended after nginx stopped"
r=$(site_api GET "bench/runs/$id" | jq -c '.results[0].result')
complete=$(jq -r .complete <<<"$r")
failed=$(jq -r .failed <<<"$r")
logged=$(grep -c '" 200 ' "$TB_TMP/nginx/access.log")
diag "complete $complete, failed $failed, nginx logged $logged answers"
is "$((complete + failed))" "$N" "complete + failed = the $N requests asked for"
ok $((failed > 0 && complete > 2000 ? 0 : 1)) "both are there: $complete complete, $failed failed"
d=$((complete - logged))
ok $((d >= -4 && d <= 4 ? 0 : 1)) \
    "complete ($complete) equals what nginx logged ($logged), give or take the 4 in flight"
is "$(jq -r .status.\"2xx\" <<<"$r")" "$complete" "every complete answer was a 200"

tb_stop_daemon
ok $? "tlsboxd stops cleanly"
done_testing
