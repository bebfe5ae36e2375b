#!/bin/bash
# bench against servers that are not tlsbox: nginx and h2o started here on
# loopback (configured as tests/perf/compare.sh does).  Numbers come back
# and agree with h2load's within 15% (median of paired rounds, by time), and
# when nginx is stopped mid-run the requests it answered are complete, the
# rest failed: complete + failed = the count, complete = nginx's access log.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
. "$top_srcdir/plugins/bench/tests/bench_itest.sh"
tb_setup
for t in h2load nginx h2o openssl; do
    command -v $t >/dev/null || bail "$t is not installed (packaging/install-deps.sh)"
done
site_www
bench_start
ok $? "tlsboxd (bench) is up"
chmod 755 "$TB_TMP" "$TB_TMP/www"
chmod 644 "$TB_TMP/www/f16k.txt"
(umask 077 && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$TB_TMP/peer.key" -out "$TB_TMP/peer.pem" -days 2 -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 >/dev/null 2>&1)
chmod 644 "$TB_TMP/peer.key" "$TB_TMP/peer.pem"

start_nginx() {
    local d="$TB_TMP/nginx"
    mkdir -p "$d"
    NGINX_PORT=$(tb_free_port)
    cat >"$d/nginx.conf" <<CONF
worker_processes 1;
pid $d/nginx.pid;
error_log $d/error.log warn;
events { worker_connections 4096; }
http {
    access_log $d/access.log;
    keepalive_requests 1000000;
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$NGINX_PORT ssl http2;
        server_name localhost;
        ssl_certificate $TB_TMP/peer.pem;
        ssl_certificate_key $TB_TMP/peer.key;
        ssl_protocols TLSv1.3;
        root $TB_TMP/www;
    }
}
CONF
    : >"$d/access.log"
    tb_bg nice -n 10 "${BENCH_SERVER_CPU[@]}" nginx -e "$d/error.log" -c "$d/nginx.conf" \
        -p "$d/" -g 'daemon off;'
    NGINX_PID=$TB_BG_PID
    tb_wait_port "$NGINX_PORT"
}

start_h2o() {
    local d="$TB_TMP/h2o" user=""
    mkdir -p "$d"
    H2O_PORT=$(tb_free_port)
    [ "$(id -u)" = 0 ] && user="user: root"
    cat >"$d/h2o.conf" <<CONF
$user
num-threads: 1
pid-file: $d/h2o.pid
error-log: $d/error.log
listen:
  host: 127.0.0.1
  port: $H2O_PORT
  ssl:
    certificate-file: $TB_TMP/peer.pem
    key-file: $TB_TMP/peer.key
    minimum-version: TLSv1.3
    ocsp-update-interval: 0
hosts:
  default:
    paths:
      /:
        file.dir: $TB_TMP/www
CONF
    tb_bg nice -n 10 "${BENCH_SERVER_CPU[@]}" h2o -c "$d/h2o.conf"
    tb_wait_port "$H2O_PORT"
}

start_nginx
ok $? "nginx serves on port $NGINX_PORT"
start_h2o
ok $? "h2o serves on port $H2O_PORT"

# Paired rounds by time, bench and h2load back to back; median of ratios.
ROUNDS=7
peer_compare() {
    local name=$1 url=$2 proto=$3 i out rb rt R=() a args agreed=1 c
    # Enough connections that each side has work at every wake-up (see 71).
    if [ "$proto" = h2 ]; then
        c=16
        args=(-m 16)
    else
        c=64
        args=(--h1)
    fi
    for a in 1 2 3; do
        R=()
        for i in $(seq 1 $ROUNDS); do
            out=$(bench_ctl_run -s "$proto" -d 2 -c $c -m 16 --url "$url")
            rb=$(bench_rps <<<"$out")
            [ "$(jq -r '.results[0].result | (.complete > 0 and .failed == 0)' <<<"$out")" = true ] ||
                diag "  bench run failed: $(jq -c '.results[0].result | [.complete, .failed]' <<<"$out")"
            timeout 60 "${BENCH_CLIENT_CPU[@]}" h2load "${args[@]}" -D 2 -c $c "$url" >"$TB_TMP/h2load.out" 2>&1
            rt=$(h2load_rps "$TB_TMP/h2load.out")
            R+=("$(awk -v a="${rb:-0}" -v b="${rt:-0}" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')")
        done
        RATIO=$(median "${R[@]}")
        diag "$name: ratios bench/h2load ${R[*]}: median $RATIO"
        if awk -v r="$RATIO" 'BEGIN { exit !(r >= 0.85 && r <= 1.15) }'; then
            agreed=0
            break
        fi
    done
    is "$(jq -r '.results[0].result | "\(.status."2xx" == .complete) \(.tls.alpn) \(.body_bytes == .complete * 16127)"' <<<"$out")" \
        "true $([ "$proto" = h2 ] && echo h2 || echo http/1.1) true" \
        "$name: every answer a 200 with the whole file, over the asked protocol"
    ok $agreed "$name: bench/h2load req/s median ratio $RATIO is within 15% of 1"
}

peer_compare "nginx h2" "https://127.0.0.1:$NGINX_PORT/f16k.txt" h2
peer_compare "nginx h1" "https://127.0.0.1:$NGINX_PORT/f16k.txt" h1
peer_compare "h2o h2" "https://127.0.0.1:$H2O_PORT/f16k.txt" h2
peer_compare "h2o h1" "https://127.0.0.1:$H2O_PORT/f16k.txt" h1

run=$(bench_ctl_run -s https-resume -n 100 -c 4 --url "https://127.0.0.1:$H2O_PORT/f16k.txt")
is "$(jq -r '.results[0].result | "\(.complete) \(.failed) \(.handshakes.full + .handshakes.resumed)"' <<<"$run")" \
    "100 0 100" "h2o https-resume: 100 answers on 100 handshakes"
like "$(jq -r '.results[0].result.handshakes.resumed' <<<"$run")" '^(9[0-9]|96)$' \
    "h2o resumed the sessions bench offered (>= 90 of 100)"
like "$(jq -r '.results[0].result.pinning.note' <<<"$run")" "^loopback target: client on cpu [0-9]+ " \
    "a loopback URL is not the local site: the client is pinned, the site's workers left alone"

# ---- the server stops mid-run ------------------------------------------------
: >"$TB_TMP/nginx/access.log"
N=60000
out=$(site_api POST bench/run "{\"scenario\":\"h1\",\"requests\":$N,\"concurrency\":4,\"url\":\"https://127.0.0.1:$NGINX_PORT/f16k.txt\"}")
id=$(jq -r .id <<<"$out")
for i in $(seq 1 200); do
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
