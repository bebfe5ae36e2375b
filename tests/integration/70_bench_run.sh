#!/bin/bash
# The bench plugin end to end on the real daemon: every scenario against the
# local site, bodies and statuses counted right, full/resumed handshakes equal
# to the server's own metrics, one run at a time, cancel (fast, stored as
# cancelled, no leaked connections), limits (bench's, and the site's
# connections per address for a run on it; in all: 74_bench_site_limits.sh)
# and refused targets, and the stored runs through list / show / CSV /
# compare.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
. "$top_srcdir/plugins/bench/tests/bench_itest.sh"
tb_setup
site_www
bench_start
ok $? "tlsboxd serves the site on port $P_HTTPS"
SIZE=$(stat -c %s "$TB_TMP/www/f16k.txt")

# ---- scenarios -------------------------------------------------------------
run=$(bench_ctl_run -s h2 -n 2000 -c 4 -m 8 --path /f16k.txt)
is "$(jq -r .state <<<"$run")" done "h2 run finished"
r=$(jq -c '.results[0].result' <<<"$run")
is "$(jq -r '[.complete, .failed, .status."2xx"] | @tsv' <<<"$r")" "2000	0	2000" \
    "h2: 2000 complete, 0 failed, all 200"
is "$(jq -r .body_bytes <<<"$r")" $((2000 * SIZE)) "h2: body bytes = 2000 x the file size"
is "$(jq -r '.tls.alpn + " " + .tls.protocol' <<<"$r")" "h2 TLS1.3" "h2: ALPN h2 over TLS 1.3"
is "$(jq -r .connections <<<"$r")" 4 "h2: 4 connections"
like "$(jq -r '.latency_ms | [."50", ."99", ."100"] | @tsv' <<<"$r")" '^[0-9.]+	[0-9.]+	[0-9.]+$' \
    "h2: latency percentiles present"
ok "$(jq -r '(.latency_ms."50" <= .latency_ms."99") and (.latency_ms."99" <= .latency_ms."100") and (.latency_ms."50" > 0)' <<<"$r" | grep -qx true; echo $?)" \
    "h2: percentiles ordered and positive"
if [ "$BENCH_NCPU" -ge 2 ]; then
    is "$(jq -r .pinning.client_cpu <<<"$r")" 1 "the client ran on core 1 (site workers on core 0)"
fi

run=$(bench_ctl_run -s h1 -n 1000 -c 3 --path /f16k.txt)
is "$(jq -r '.results[0].result | [.complete, .failed, .connections, .tls.alpn] | @tsv' <<<"$run")" \
    "1000	0	3	http/1.1" "h1 keep-alive: 1000 requests on 3 connections"

# By url to an IPv6 address: the Host / :authority sent is "[::1]:port" (a bare
# "::1" is not a host, and the site answers such a request 400).
for s in h1 h2; do
    run=$(bench_ctl_run -s $s -n 100 -c 2 --url "https://[::1]:$P_HTTPS/f16k.txt")
    is "$(jq -r '.results[0].result | [.complete, .failed, .status."2xx"] | @tsv' <<<"$run")" \
        "100	0	100" "$s by url https://[::1]:$P_HTTPS/: 100 complete, all 200"
done

run=$(bench_ctl_run -s http -n 300 -c 3 --path /f16k.txt)
is "$(jq -r '.results[0].result | [.complete, .failed, .status."3xx", .connections] | @tsv' <<<"$run")" \
    "300	0	300	300" "http: 300 requests on 300 new connections, answered by the plain port's 301"

run=$(bench_ctl_run -s h2 -n 200 -c 2 --path /nope)
is "$(jq -r '.results[0].result | [.complete, .failed, .status."4xx"] | @tsv' <<<"$run")" \
    "200	0	200" "a 404 counts as complete with status 4xx (as ab and h2load count it)"

# ---- handshakes equal the server's metrics ----------------------------------
hs() { echo "$(site_metric 'tlsbox_site_handshakes_total{kind="full"}') $(site_metric 'tlsbox_site_handshakes_total{kind="resumed"}')"; }
before=$(hs)
run=$(bench_ctl_run -s https-new -n 300 -c 4 --path /f16k.txt)
after=$(hs)
is "$(jq -r '.results[0].result.handshakes | "\(.full) \(.resumed)"' <<<"$run")" "300 0" \
    "https-new: bench counted 300 full handshakes"
is "$(awk -v a="$before" -v b="$after" 'BEGIN { split(a, x); split(b, y); print y[1] - x[1], y[2] - x[2] }')" \
    "300 0" "https-new: the server's metrics counted the same (300 full, 0 resumed)"
before=$(hs)
run=$(bench_ctl_run -s https-resume -n 300 -c 4 --path /f16k.txt)
after=$(hs)
is "$(jq -r '.results[0].result.handshakes | "\(.full) \(.resumed)"' <<<"$run")" "4 296" \
    "https-resume: 4 full (one per slot), 296 resumed"
is "$(awk -v a="$before" -v b="$after" 'BEGIN { split(a, x); split(b, y); print y[1] - x[1], y[2] - x[2] }')" \
    "4 296" "https-resume: the server's metrics counted the same"
is "$(jq -r '.results[0].result.server.handshakes | "\(.full) \(.resumed)"' <<<"$run")" "4 296" \
    "the run's own server section agrees"
for tv in 1.2 1.3; do
    run=$(bench_ctl_run -s https-resume -n 40 -c 2 --tls $tv --cipher chacha20 --path /f16k.txt)
    is "$(jq -r '.results[0].result | "\(.handshakes.full) \(.handshakes.resumed) \(.tls.protocol) \(.tls.cipher)"' <<<"$run")" \
        "2 38 TLS$tv CHACHA20-POLY1305" "TLS $tv + ChaCha20 asked for, negotiated, and resumed"
done

# ---- the handshake time is the whole handshake ---------------------------------
# Through a proxy that holds each connection's first client bytes (the
# ClientHello) for 200 ms: every full handshake takes at least that long,
# TLS 1.2 with its two round trips as TLS 1.3 with one.
P_DELAY=$(tb_free_port)
tb_bg python3 -c '
import socket, sys, threading, time
def pipe(src, dst, delay):
    try:
        while True:
            d = src.recv(65536)
            if not d:
                break
            if delay:
                time.sleep(0.2)
                delay = False
            dst.sendall(d)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
l = socket.socket()
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", int(sys.argv[1])))
l.listen(16)
while True:
    c, _ = l.accept()
    u = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
    threading.Thread(target=pipe, args=(c, u, True), daemon=True).start()
    threading.Thread(target=pipe, args=(u, c, False), daemon=True).start()
' "$P_DELAY" "$P_HTTPS"
tb_wait_port "$P_DELAY"
for tv in 1.2 1.3; do
    run=$(bench_ctl_run -s https-new -n 4 -c 1 --tls $tv --url "https://127.0.0.1:$P_DELAY/f16k.txt")
    is "$(jq -r '.results[0].result | [.complete, .failed, .tls.protocol, .handshake_ms.min >= 200] | @tsv' <<<"$run")" \
        "4	0	TLS$tv	true" "TLS $tv handshakes through the proxy: each one 200 ms or more ($(jq -r '.results[0].result.handshake_ms.min' <<<"$run") ms)"
done

# ---- one at a time, cancel ---------------------------------------------------
fds0=$(daemon_fds)
out=$(site_api POST bench/run '{"scenario":"h1","duration":60,"concurrency":40,"path":"/f16k.txt"}')
id=$(jq -r .id <<<"$out")
like "$id" '^[0-9]+$' "a 60 s run was queued (#$id)"
for i in $(seq 1 100); do
    [ "$(site_api GET bench/status | jq -r '.progress.done // 0')" -gt 1000 ] && break
    sleep 0.1
done
st=$(site_api GET bench/status)
is "$(jq -r '[.running, .id, .kind, .progress.total_ms] | @tsv' <<<"$st")" "true	$id	run	60000" \
    "status shows the running run with its progress"
fds_mid=$(daemon_fds)
ok $((fds_mid >= fds0 + 40 ? 0 : 1)) "its 40 connections are open in the daemon ($fds0 fds before, $fds_mid during)"
out=$(tb_ctl bench run -s h2 -n 100 2>&1)
rc=$?
is "$rc" 1 "a second run is refused (exit 1)"
like "$out" "another benchmark is running \(run #$id" "with a message naming the running one"
t0=$(date +%s%N)
tb_ctl bench cancel >/dev/null
bench_wait 10
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
diag "cancel took $ms ms"
ok $((ms < 3000 ? 0 : 1)) "the cancelled run stopped within a second or so ($ms ms; bound 3 s)"
show=$(site_api GET "bench/runs/$id")
is "$(jq -r .state <<<"$show")" cancelled "the stored run says cancelled"
is "$(jq -r '.results[0].result.cancelled' <<<"$show")" true "and so does its result"
for i in $(seq 1 30); do
    [ "$(daemon_fds)" -le "$fds0" ] && break
    sleep 0.1
done
is "$(daemon_fds)" "$fds0" "no leaked connections: the daemon's fd count is back to $fds0"

# A timed run as long as the limit: the requests in flight when it stops
# issuing complete as in any timed run (h2 always has some in flight).
tb_ctl set bench.max_duration 1 >/dev/null
run=$(bench_ctl_run -s h2 -d 1 -c 2 -m 4 --path /f16k.txt)
is "$(jq -r '.results[0].result | [.failed, .time_limited] | @tsv' <<<"$run")" "0	false" \
    "a 1 s run at a 1 s limit: 0 failed, not stopped at the time limit"
tb_ctl set bench.max_duration 300 >/dev/null

# ---- limits and refused targets -----------------------------------------------
n_runs=$(site_api GET bench/runs | jq length)
tb_ctl set bench.max_requests 5000 >/dev/null
tb_ctl set bench.max_duration 30 >/dev/null
tb_ctl set bench.max_concurrency 50 >/dev/null
out=$(tb_ctl bench run -s h2 -n 5001 2>&1)
is "$?" 1 "5001 requests refused (limit 5000)"
like "$out" "requests 5001 is out of range: 1\.\.5000 \(limit bench\.max_requests" "message names the limit"
out=$(tb_ctl bench run -s h2 -d 31 2>&1)
like "$out" "duration 31 is out of range: 1\.\.30 \(limit bench\.max_duration" "31 s refused (limit 30)"
out=$(tb_ctl bench run -s h2 -n 99999999999999999999 2>&1)
is "$?" 2 "a request count too large for any integer is a usage error"
like "$out" "-n needs a positive integer, not '99999999999999999999'" "naming what was typed"
out=$(tb_ctl bench run -s h1 -c 51 -n 100 2>&1)
like "$out" "concurrency 51 is out of range: 1\.\.50 \(limit bench\.max_concurrency" "51 connections refused"
out=$(tb_ctl bench run -s h2 -n 10 --url https://192.0.2.10/ 2>&1)
is "$?" 1 "a public target is refused"
like "$out" "target 192\.0\.2\.10 is a public address" "with a message saying why"
out=$(tb_ctl bench run -s h2 -n 10 --url https://example.org/ 2>&1)
like "$out" 'target host "example.org" is not an IP address' "a host name is refused (no lookups)"
out=$(tb_ctl bench run -s h2 -n 10 --url http://127.0.0.1:$P_HTTP/ 2>&1)
like "$out" "scenario h2 needs an https:// url" "h2 over plain http refused"
out=$(tb_ctl bench run -s h2 -n 10 --cipher rc4 2>&1)
like "$out" 'cipher "rc4" is not one of' "an unknown cipher refused"
# The site closes connections past site.max_connections_per_ip from one
# address, and past site.max_connections in all: a run on it with more would
# fail requests without saying why.  site_limit_refused SETTING LIMIT C
# URL_SCENARIO URL: a run of C connections on the local site is refused with
# a message naming both numbers and the command, and so is one by URL.
site_limit_refused() {
    local key=$1 limit=$2 c=$3 out
    out=$(tb_ctl bench run -s h2 -c "$c" -n 200 2>&1)
    is "$?" 1 "$c connections to the local site at site.$key $limit refused"
    like "$out" "concurrency $c exceeds site\.$key $limit in effect: .*tlsboxctl set site\.$key $c$" \
        "the message names both numbers and the setting to raise"
    out=$(tb_ctl bench run -s "$4" -c "$c" -n 200 --url "$5" 2>&1)
    like "$out" "concurrency $c exceeds site\.$key $limit in effect" "so is a url: $5"
}
tb_ctl set site.max_connections_per_ip 8 >/dev/null
site_limit_refused max_connections_per_ip 8 20 h1 "https://127.0.0.1:$P_HTTPS/f16k.txt"
run=$(bench_ctl_run -s h2 -c 4 -n 200 --path /f16k.txt)
is "$(jq -r '.results[0].result | "\(.complete) \(.failed)"' <<<"$run")" "200 0" \
    "4 connections, within the limit, run: 200 complete, 0 failed"
n_runs=$((n_runs + 1))
tb_ctl set site.max_connections_per_ip 256 >/dev/null
# site.max_connections, which the site reads at start only, is checked in
# 74_bench_site_limits.sh (the daemon started with a small one).
is "$(site_api GET bench/runs | jq length)" "$n_runs" "nothing refused was stored"
# A timed run that uses up bench.max_requests (5000 here) before its time says so.
run=$(bench_ctl_run -s h2 -d 30 -c 2 -m 4 --path /f16k.txt)
is "$(jq -r '.results[0].result | [.complete + .failed, .request_limited, .time_limited] | @tsv' <<<"$run")" \
    "5000	true	false" "a 30 s run at bench.max_requests 5000 stops after 5000 requests and says so"
like "$(tb_ctl bench show "$(jq -r .id <<<"$run")")" "[0-9]+ failed .*\(stopped at the request limit" \
    "bench show says so too"

# ---- stored runs: list, show, CSV, compare --------------------------------------
a=$(bench_ctl_run -s h2 -n 1000 -c 2 --path /f16k.txt | jq -r .id)
b=$(bench_ctl_run -s h2 -n 1000 -c 2 --path /f16k.txt | jq -r .id)
list=$(tb_ctl bench list)
like "$list" "^$b +run +done .* h2 [0-9]+/s" "bench list shows the newest run first"
csv=$(tb_ctl bench show "$b" --csv)
is "$(printf '%s\n' "$csv" | wc -l)" 2 "CSV: a header and one line"
is "$(printf '%s\n' "$csv" | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "rps") c = i } NR == 2 { printf "%.2f", $c }')" \
    "$(site_api GET "bench/runs/$b" | jq -r '.results[0].result.rps * 100 | round / 100 | tostring' | awk '{ printf "%.2f", $1 }')" \
    "CSV req/s equals the stored run's"
human=$(tb_ctl bench show "$b")
like "$human" "requests +1000 complete, 0 failed" "bench show prints the run for people"
like "$human" "machine: .*, $BENCH_NCPU cores" "with the machine"
cmp=$(tb_ctl --json bench compare "$a" "$b")
ra=$(jq -r '.rows[0].a_rps' <<<"$cmp")
rb=$(jq -r '.rows[0].b_rps' <<<"$cmp")
is "$(jq -r '.rows[0].name' <<<"$cmp")" h2 "compare matches the steps by name"
awk -v a="$ra" -v b="$rb" -v r="$(jq -r '.rows[0].rps_ratio' <<<"$cmp")" \
    'BEGIN { d = r - b / a; exit !(d < 0.0001 && d > -0.0001) }'
ok $? "compare's ratio is B/A"
out=$(tb_ctl bench show 99999 2>&1)
like "$out" "no run #99999" "an unknown run is a clear error"

tb_stop_daemon
ok $? "tlsboxd stops cleanly"
done_testing
