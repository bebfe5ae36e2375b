# Helpers for the bench plugin's integration tests (tests/integration/7x_bench_*.sh),
# sourced after tests/integration/lib.sh and plugins/site/tests/site_itest.sh.
#
# On two cores or more the daemon (so the site's workers) runs on core 0 and
# every outside client (h2load, ab) on core 1 -- the core bench itself picks
# -- so bench and the tools measure the same server in the same conditions.

BENCH_NCPU=$(nproc)
if [ "$BENCH_NCPU" -ge 2 ]; then
    BENCH_SERVER_CPU=(taskset -c 0)
    BENCH_CLIENT_CPU=(taskset -c 1)
else
    BENCH_SERVER_CPU=()
    BENCH_CLIENT_CPU=()
fi

# Start tlsboxd (site + bench) on core 0 serving $TB_TMP/www (site_www).
bench_start() {
    if [ "$BENCH_NCPU" -ge 2 ]; then
        # tb_start_daemon runs $TB_TLSBOXD: a wrapper that execs it on core 0
        # (exec keeps the pid, so tb_stop_daemon still stops the daemon).
        printf '#!/bin/sh\nexec taskset -c 0 "%s" "$@"\n' "$TB_TLSBOXD" >"$TB_TMP/tlsboxd-cpu0"
        chmod +x "$TB_TMP/tlsboxd-cpu0"
        TB_TLSBOXD="$TB_TMP/tlsboxd-cpu0"
    fi
    site_start "$@"
}

# Wait (<= $2 seconds, default 120) until no bench job runs.
bench_wait() {
    local max=${1:-120} i
    for i in $(seq 1 $((max * 10))); do
        [ "$(site_api GET bench/status | jq -r .running)" = false ] && return 0
        sleep 0.1
    done
    return 1
}

# One run through tlsboxctl; prints the stored run as JSON.
bench_ctl_run() {
    timeout 300 "$TB_TLSBOXCTL" --state-dir "$TB_STATE" --json bench run "$@" 2>/dev/null
}

# req/s of the first result of a run JSON on stdin.
bench_rps() {
    jq -r '.results[0].result.rps'
}

# Median of the numbers given as arguments.
median() {
    printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
        if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Relative difference |a/b - 1| in percent, one decimal.
rel_pct() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) { print 999; exit }
        d = a / b - 1; if (d < 0) d = -d; printf "%.1f", d * 100 }'
}

# within_pct A B PCT: success when |A/B - 1| <= PCT%.
within_pct() {
    awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { if (b <= 0) exit 1
        d = a / b - 1; if (d < 0) d = -d; exit !(d * 100 <= p) }'
}

# req/s from h2load's summary (file), and the number of succeeded requests.
h2load_rps() {
    awk '/^finished in/ { for (i = 1; i <= NF; i++) if ($(i+1) ~ /^req\/s/) print $i }' "$1"
}
h2load_ok() {
    awk '/^requests:/ { gsub(",", ""); print $8 }' "$1"
}

# req/s and failed requests from ab's output (file).
ab_rps() {
    awk '/^Requests per second:/ { print $4 }' "$1"
}
ab_failed() {
    awk '/^Failed requests:/ { print $3 }' "$1"
}

# Number of open file descriptors of the daemon.
daemon_fds() {
    ls "/proc/$TB_PID/fd" 2>/dev/null | wc -l
}

# Failed + errored + timed-out requests in h2load's summary.
h2load_failed() {
    awk '/^requests:/ { gsub(",", ""); print $10 + $12 + $14 }' "$1"
}

# ---- peers that are not tlsbox: nginx and h2o on loopback ---------------------
# Configured by tests/perf/peer_conf.sh, as compare.sh's are; used by
# 72_bench_peers.sh and tests/perf/bench_accuracy.sh.  Both serve $TB_TMP/www
# with one P-256 certificate ($TB_TMP/peer.pem), TLS 1.3 only, at nice 10 on
# the server core.
# shellcheck source=tests/perf/peer_conf.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../../tests/perf/peer_conf.sh"

# Make $TB_TMP/www readable by the servers' workers and write the certificate.
bench_peer_prepare() {
    chmod 755 "$TB_TMP" "$TB_TMP/www"
    chmod 644 "$TB_TMP/www/f16k.txt"
    (umask 077 && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$TB_TMP/peer.key" -out "$TB_TMP/peer.pem" -days 2 -subj /CN=localhost \
        -addext subjectAltName=DNS:localhost,IP:127.0.0.1 >/dev/null 2>&1) || return 1
    chmod 644 "$TB_TMP/peer.key" "$TB_TMP/peer.pem"
}

# Start nginx (one worker, h2 + h1, access log); sets NGINX_PORT, NGINX_PID.
start_nginx() {
    local d="$TB_TMP/nginx"
    mkdir -p "$d"
    NGINX_PORT=$(tb_free_port)
    peer_nginx_conf "$d" "$NGINX_PORT" "$TB_TMP/peer.pem" "$TB_TMP/peer.key" "$TB_TMP/www" \
        4096 "$d/access.log" >"$d/nginx.conf"
    : >"$d/access.log"
    tb_bg nice -n 10 "${BENCH_SERVER_CPU[@]}" nginx -e "$d/error.log" -c "$d/nginx.conf" \
        -p "$d/" -g 'daemon off;'
    NGINX_PID=$TB_BG_PID
    tb_wait_port "$NGINX_PORT"
}

# Start h2o (one thread); sets H2O_PORT, H2O_PID.
start_h2o() {
    local d="$TB_TMP/h2o"
    mkdir -p "$d"
    H2O_PORT=$(tb_free_port)
    peer_h2o_conf "$d" "$H2O_PORT" "$TB_TMP/peer.pem" "$TB_TMP/peer.key" "$TB_TMP/www" 4096 \
        >"$d/h2o.conf"
    tb_bg nice -n 10 "${BENCH_SERVER_CPU[@]}" h2o -c "$d/h2o.conf"
    H2O_PID=$TB_BG_PID
    tb_wait_port "$H2O_PORT"
}
