#!/bin/bash
# Benchmark: bench's req/s next to h2load's and ab's on the same server, run
# side by side.  Prints numbers; not part of make check (make perf-bench).
#
#   tests/perf/bench_accuracy.sh [--rounds N]      (default 5)
#
# Targets: the local site (tlsbox, one site worker), nginx (one worker) and
# h2o (one thread), started here on loopback
# (plugins/bench/tests/bench_itest.sh).  Scenarios against tlsbox: h2 and h1
# keep-alive vs h2load, a new TLS connection per request vs ab; against
# nginx and h2o: h2 and h1 keep-alive vs h2load.  Each is N paired rounds,
# bench and the tool back to back (who goes first alternates), same requests
# and concurrency; the table gives the medians and the median of the
# per-round ratios bench/tool, and whether it is within 15% of 1.
# The servers run on core 0 at nice 10, every client on core 1 (so on a busy
# machine it is the server that runs short and both clients measure the same
# server).  Exit status 1 only when something failed to run at all.
#
# Server-bound: a comparison says how well bench measures a *server* only when
# the server is the limit.  Against a fast server with h1 keep-alive, h2load's
# one thread saturates its core first and then each tool measures itself
# (doc/performance.md).  So the servers' threads (tlsbox: its site workers
# only, not bench's own thread) go into a cgroup capped at CAP% of a core
# (--cap, default 50; 0 = no cap), which keeps both clients below their own
# limit.  Needs the cgroup v1 cpu controller (per-thread placement); without
# it the run goes uncapped and says so.
set -u
ROUNDS=5
CAP=50
while [ $# -gt 0 ]; do
    case $1 in
    --rounds) ROUNDS=${2:?--rounds N} && shift 2 ;;
    --cap) CAP=${2:?--cap PERCENT} && shift 2 ;;
    *) echo "usage: $0 [--rounds N] [--cap PERCENT]" >&2 && exit 2 ;;
    esac
done
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${top_builddir:=$SRC}"
: "${top_srcdir:=$SRC}"
export top_builddir top_srcdir
. "$SRC/tests/integration/lib.sh"
. "$SRC/plugins/site/tests/site_itest.sh"
. "$SRC/plugins/bench/tests/bench_itest.sh"
tb_setup
BROKEN=0
die() {
    echo "bench_accuracy: $*" >&2
    exit 1
}
for t in h2load ab nginx h2o openssl jq; do
    command -v $t >/dev/null || die "$t is not installed (packaging/install-deps.sh)"
done
site_www
# One site worker, like nginx's and h2o's one: with two, SO_REUSEPORT splits
# the connections unevenly, and by a different split in each run.
bench_start --set site.workers=1 >/dev/null || die "tlsboxd did not start (log: $TB_TMP/daemon.log)"
bench_peer_prepare || die "no certificate for the peers"
start_nginx || die "nginx did not start"
start_h2o || die "h2o did not start"
# The site's workers at nice 10, like nginx and h2o (see the header).
workers=()
for t in /proc/$TB_PID/task/*; do
    grep -q '^site-w' "$t/comm" 2>/dev/null && workers+=("${t##*/}")
done
[ ${#workers[@]} -gt 0 ] || die "tlsboxd has no site worker threads"
renice -n 10 -p "${workers[@]}" >/dev/null
# Cap the servers' CPU (see the header).  CAP_DIR is removed on exit.
CAP_DIR=/sys/fs/cgroup/cpu/tlsbox-bench-accuracy.$$
CAP_NOTE="servers not capped (--cap 0)"
cap_cleanup() {
    [ -d "$CAP_DIR" ] || return 0
    local t
    # A cgroup is removed only when empty: threads back to the root first.
    for t in $(cat "$CAP_DIR/tasks" 2>/dev/null); do
        echo "$t" >/sys/fs/cgroup/cpu/tasks 2>/dev/null
    done
    rmdir "$CAP_DIR" 2>/dev/null
}
# Before lib.sh's own cleanup, which ends in exit with the script's status.
trap 'rc_=$?; cap_cleanup; (exit $rc_); _tb_cleanup' EXIT
# cap_threads TID...: into the capped cgroup.
cap_threads() {
    local t
    for t in "$@"; do
        echo "$t" >"$CAP_DIR/tasks" || return 1
    done
}
if [ "$CAP" != 0 ]; then
    CAP_NOTE="servers not capped: no cgroup v1 cpu controller here"
    if [ -w /sys/fs/cgroup/cpu/tasks ] && mkdir "$CAP_DIR" 2>/dev/null; then
        echo 10000 >"$CAP_DIR/cpu.cfs_period_us"
        echo $((CAP * 100)) >"$CAP_DIR/cpu.cfs_quota_us"
        peers=()
        for p in "$NGINX_PID" "$H2O_PID" $(pgrep -P "$NGINX_PID") $(pgrep -P "$H2O_PID"); do
            peers+=($(ls "/proc/$p/task"))
        done
        cap_threads "${workers[@]}" "${peers[@]}" ||
            die "could not cap the servers' CPU"
        CAP_NOTE="servers capped at $CAP% of core 0 (cgroup cpu quota): ${#workers[@]} site worker(s), ${#peers[@]} nginx/h2o thread(s)"
    fi
fi
echo "$CAP_NOTE" >&2
TABLE=()

# Run the tool once (TARGS) into $TB_TMP/tool.out; prints its req/s, sets
# BAD=1 when it did not answer every request.
tool_run() {
    timeout 120 "${BENCH_CLIENT_CPU[@]}" "${TARGS[@]}" >"$TB_TMP/tool.out" 2>&1
    if [ "${TARGS[0]}" = ab ]; then
        [ "$(ab_failed "$TB_TMP/tool.out")" = 0 ] || BAD=1
        ab_rps "$TB_TMP/tool.out"
    else
        [ "$(h2load_failed "$TB_TMP/tool.out")" = 0 ] &&
            [ "$(h2load_ok "$TB_TMP/tool.out")" -gt 0 ] || BAD=1
        h2load_rps "$TB_TMP/tool.out"
    fi
}

# Run bench once (BARGS plus the load); prints its req/s, sets BAD=1 when it
# did not answer every request ("5000" = a count, "2s" = a duration).
bench_once() {
    local n=$1 c=$2 out load
    case $n in
    *s) load=(-d "${n%s}") ;;
    *) load=(-n "$n") ;;
    esac
    out=$(bench_ctl_run "${BARGS[@]}" "${load[@]}" -c "$c")
    case $n in
    *s) [ "$(jq -r '.results[0].result | (.complete > 0 and .failed == 0)' <<<"$out" 2>/dev/null)" = true ] ;;
    *) [ "$(jq -r '.results[0].result | "\(.complete) \(.failed)"' <<<"$out" 2>/dev/null)" = "$n 0" ] ;;
    esac || BAD=1
    bench_rps <<<"$out" 2>/dev/null
}

# compare TARGET SCENARIO N C BENCH_ARGS -- TOOL_CMD...: ROUNDS paired rounds;
# adds one row to TABLE.
compare() {
    local target=$1 name=$2 n=$3 c=$4 i who rb rt R=() B=() T=() ratio verdict
    shift 4
    BARGS=()
    while [ "$1" != -- ]; do
        BARGS+=("$1")
        shift
    done
    shift
    TARGS=("$@")
    BAD=0
    for i in $(seq 1 "$ROUNDS"); do
        for who in $( ((i % 2)) && echo "bench tool" || echo "tool bench"); do
            if [ "$who" = bench ]; then
                rb=$(bench_once "$n" "$c")
            else
                rt=$(tool_run)
            fi
        done
        B+=("${rb:-0}")
        T+=("${rt:-0}")
        R+=("$(awk -v a="${rb:-0}" -v b="${rt:-0}" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')")
    done
    ratio=$(median "${R[@]}")
    if [ "$BAD" = 1 ]; then
        verdict="RUN FAILED"
        BROKEN=1
    elif awk -v r="$ratio" 'BEGIN { exit !(r >= 0.85 && r <= 1.15) }'; then
        verdict=yes
    else
        verdict=no
    fi
    echo "  $target $name: bench ${B[*]} / ${TARGS[0]} ${T[*]} / ratios ${R[*]}" >&2
    TABLE+=("$(printf '| %-7s | %-48s | %9.0f | %-6s | %9.0f | %5.3f | %-10s |' \
        "$target" "$name" "$(median "${B[@]}")" "${TARGS[0]}" "$(median "${T[@]}")" \
        "$ratio" "$verdict")")
}

URLF="https://127.0.0.1:$P_HTTPS/f16k.txt"
echo "bench vs h2load/ab, $ROUNDS paired rounds each, $(nproc) cores; per-round numbers on stderr" >&2
# Warm-up (file cache, first handshakes) so round 1 is like the others.
bench_ctl_run -s h2 -n 2000 -c 10 --path /f16k.txt >/dev/null
timeout 60 "${BENCH_CLIENT_CPU[@]}" h2load -n 2000 -c 10 -m 10 "$URLF" >/dev/null 2>&1

# Keep-alive runs go by time (2 s): h2load splits a count among its
# connections and ends on the slowest; by time both keep every connection
# busy to the end.  Enough connections that each side has work queued at
# every wake-up.
for target in tlsbox nginx h2o; do
    # The local site by path (bench then knows its workers), peers by URL.
    case $target in
    tlsbox) u=$URLF t=(--path /f16k.txt) ;;
    nginx) u="https://127.0.0.1:$NGINX_PORT/f16k.txt" t=(--url "$u") ;;
    h2o) u="https://127.0.0.1:$H2O_PORT/f16k.txt" t=(--url "$u") ;;
    esac
    compare $target "h2 keep-alive (16 conns x 16 streams, 2 s)" 2s 16 -s h2 -m 16 "${t[@]}" -- \
        h2load -D 2 -c 16 -m 16 "$u"
    compare $target "h1 keep-alive (64 conns, 2 s)" 2s 64 -s h1 "${t[@]}" -- \
        h2load --h1 -D 2 -c 64 "$u"
done

# A new connection per request, against ab: with RSA-2048 the server's
# signature dominates, so both measure the server (with ECDSA the client's
# verify costs more than the server's sign and the clients differ).
(umask 077 && openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TB_TMP/rsa.key" \
    -out "$TB_TMP/rsa.pem" -days 2 -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 >/dev/null 2>&1)
gen=$(site_generation)
site_cert_import rsa "$TB_TMP/rsa.pem" "$TB_TMP/rsa.key" || die "RSA certificate import failed"
site_api PUT policy '{"key_types":["rsa"]}' >/dev/null
for i in $(seq 1 100); do
    [ "$(site_generation)" -gt "$gen" ] &&
        echo | timeout 5 openssl s_client -connect "127.0.0.1:$P_HTTPS" 2>/dev/null |
        grep -q "Peer signature type: RSA" && break
    sleep 0.1
done
[ "$i" -lt 100 ] || die "the site did not switch to its RSA key"
compare tlsbox "new conn per request, RSA-2048 (640, 64 at once)" 640 64 \
    -s https-new --path /f16k.txt -- ab -n 640 -c 64 "$URLF"

echo
echo "bench vs h2load/ab req/s: medians of $ROUNDS paired rounds; ratio = median of bench/tool per round;"
# Evidence that the cap was the limit: the periods in which it throttled.
[ -r "$CAP_DIR/cpu.stat" ] &&
    CAP_NOTE="$CAP_NOTE; throttled in $(awk '/^nr_throttled/ { t = $2 } /^nr_periods/ { p = $2 } END { print t " of " p }' "$CAP_DIR/cpu.stat") 10 ms periods"
echo "$CAP_NOTE"
echo
echo "| target  | scenario                                         | bench r/s | tool   |  tool r/s | ratio | within 15% |"
echo "|---------|--------------------------------------------------|-----------|--------|-----------|-------|------------|"
printf '%s\n' "${TABLE[@]}"
tb_stop_daemon || echo "tlsboxd did not stop cleanly" >&2
exit $BROKEN
