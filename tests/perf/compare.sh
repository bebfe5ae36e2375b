#!/bin/bash
# Benchmark: tlsbox's site plugin next to nginx and h2o (Debian packages).
# A benchmark, not a test: it prints numbers and is never part of make check.
#
#   tests/perf/compare.sh [--quick] [--build DIR] [--servers "tlsbox nginx h2o"]
#                         [--same-headers] [--keep] [--help]
#
# Each server runs on loopback pinned to core 0 with one worker; h2load and the
# idle-connection tool run on core 1.  All servers get the same 16,127-byte file
# and the same ECDSA P-256 certificate (made here, in a temp dir), TLS 1.3 only.
# Each answers with its own default headers (the run prints each one's h1
# answer size and TLS records); --same-headers gives nginx and h2o tlsbox's.
# For each server it measures (--runs picks a subset)
#   hs:     full handshakes: 1000 connections, one request each (h2load -c 1000
#           -n 1000, HTTP/1.1); h2load never resumes a session across clients;
#   h2hs:   the same over h2 (ALPN h2: handshake + h2 session + first request);
#   resume: resumed handshakes, HTTP/1.1 (-c 1, Connection: close: h2load
#           resumes on each reconnect); tlsbox's metrics count full vs resumed;
#   ka:     keep-alive h2 (-m 10) and HTTP/1.1 at -c 10 and -c 50, fixed time;
#   sizes:  HTTP/1.1 keep-alive at -c 10 for files of 1, 4, 64 and 256 KB, fixed
#           time: where the 16,127-byte file sits next to a TLS record boundary,
#           these show req/s and CPU away from it (printed, not a target);
#   large:  1 MB and 100 MB downloads over h1 and h2: CPU per MB, growth of the peak RSS;
#   idle:   PSS and RSS with 1000 and 10,000 idle TLS 1.3 connections that
#           offer ALPN h2, with and without the h2 preface (idle_conns.c);
#   streams: memory of 20 h2 connections that each hold 100 requests open
#           (h2load -m 100 -w 0: the client grants no window, so every
#           answer waits after its HEADERS): what a stream in flight costs;
#   and the server's CPU time per operation: the run time of every thread of
#   the server's process tree (/proc/PID/task/TID/schedstat, nanoseconds),
#   read just before and after each run (utime+stime of /proc/PID/stat,
#   whole clock ticks, where schedstat is missing or a thread ended);
#   and, as a noise indicator, the time a VM's host took of each core (steal);
#   and, for the keep-alive runs, how busy h2load's core was and its CPU per
#   answer: where it is the limit, req/s is one over the client's cost.
# All servers are started first; the runs are interleaved in rounds (every
# server once per round) so noise from the rest of the machine spreads evenly;
# each idle run gets freshly started servers.  Then it prints tlsbox/nginx and
# tlsbox/h2o ratios and whether each target of issue 10 holds.  A full run
# takes about 23 minutes on 2 cores (the 10,000-connection idle runs about 8).
set -u

usage() {
    sed -n '2,35p' "$0" | sed 's/^# \{0,1\}//'
    echo "Options:"
    echo "  --quick          1 round of each run instead of 3 (3 s keep-alive runs instead of 3 x 4 s)"
    echo "  --smoke          tiny counts (checks the script works; numbers mean nothing)"
    echo "  --rounds N       N rounds of the handshake, keep-alive and large-file runs"
    echo "                   (default 3); an odd N, e.g. 5 or 7, gives a firmer median"
    echo "  --runs LIST      default \"$RUNS\""
    echo "  --idle-counts L  idle connections per idle run, default \"$IDLE_COUNTS\""
    echo "  --build DIR      tlsbox build dir (has core/tlsboxd, cli/tlsboxctl, build-plugins/);"
    echo "                   default \$TLSBOX_BUILD, \$top_builddir, or the source tree itself"
    echo "  --servers LIST   subset and order, default \"tlsbox nginx h2o\""
    echo "  --set KEY=VALUE  one more tlsbox setting (repeatable), e.g. site.batch_wait_us=0"
    echo "  --same-headers   nginx and h2o also send tlsbox's security headers and charset"
    echo "                   (same response bytes; not issue 10's configuration)"
    echo "  --keep           keep the temp dir (configs, logs) and print its path"
}

SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/perf/peer_conf.sh
. "$SRC_DIR/peer_conf.sh"
BUILD=${TLSBOX_BUILD:-${top_builddir:-$(cd "$SRC_DIR/../.." && pwd)}}
SERVERS="tlsbox nginx h2o"
RUNS="hs h2hs resume ka sizes large idle streams"
IDLE_COUNTS="1000 10000"
QUICK=0
SMOKE=0
KEEP=0
ROUNDS=""
TLSBOX_SETS=()
while [ $# -gt 0 ]; do
    case $1 in
    --quick) QUICK=1 ;;
    --smoke) SMOKE=1 QUICK=1 ;;
    --runs)
        RUNS=${2:?--runs needs a list}
        shift
        ;;
    --rounds)
        ROUNDS=${2:?--rounds needs a number}
        case $ROUNDS in
        '' | *[!0-9]* | 0*)
            echo "compare.sh: --rounds: '$ROUNDS' is not a number of rounds (1 or more)" >&2
            exit 2
            ;;
        esac
        shift
        ;;
    --idle-counts)
        IDLE_COUNTS=${2:?--idle-counts needs a list}
        shift
        ;;
    --build)
        BUILD=${2:?--build needs a directory}
        shift
        ;;
    --servers)
        SERVERS=${2:?--servers needs a list}
        shift
        ;;
    --set)
        TLSBOX_SETS+=(--set "${2:?--set needs KEY=VALUE}")
        shift
        ;;
    --same-headers) export PEER_SAME_HEADERS=1 ;;
    --keep) KEEP=1 ;;
    -h | --help)
        usage
        exit 0
        ;;
    *)
        echo "compare.sh: unknown option '$1' (try --help)" >&2
        exit 2
        ;;
    esac
    shift
done
BUILD=$(cd "$BUILD" 2>/dev/null && pwd) || {
    echo "compare.sh: --build: no such directory" >&2
    exit 2
}

# Sizes of the runs.  Every loop below is bounded in count, and every client
# runs under timeout(1).
FILE_SIZE=16127
HS_CONNS=1000        # connections per handshake round
IDLE_HOLD=3          # seconds idle connections are held after the last one is up
KA_CONNS="10 50"     # keep-alive connections
RESUME_N=500         # resumed handshakes per round
SIZES="1024 4096 65536 262144" # file sizes of the "sizes" run, bytes
SIZES_CONNS=10       # connections of the "sizes" run
LARGE_MB="1 100"     # large file sizes, MB
LARGE_TOTAL_MB=200   # MB downloaded per large-file run (at least one file)
STREAMS_CONNS=20     # connections of the "streams" run
STREAMS_PER_CONN=100 # requests each holds open (nginx's and h2o's default limits: 128, 100)
STREAMS_HOLD=3       # seconds the streams are held before the reading
if [ "$QUICK" = 1 ]; then
    HS_ROUNDS=1
    KA_ROUNDS=1
    KA_SECONDS=3
else
    HS_ROUNDS=3
    KA_ROUNDS=3
    KA_SECONDS=4
fi
if [ -n "$ROUNDS" ]; then
    HS_ROUNDS=$ROUNDS
    KA_ROUNDS=$ROUNDS
fi
if [ "$SMOKE" = 1 ]; then
    HS_CONNS=50
    KA_SECONDS=1
    RESUME_N=20
    LARGE_MB="1 4"
    LARGE_TOTAL_MB=8
    [ "$IDLE_COUNTS" = "1000 10000" ] && IDLE_COUNTS="50 200"
fi
has_run() { case " $RUNS " in *" $1 "*) return 0 ;; esac; return 1; }
SERVER_CPU=0
CLIENT_CPU=1
# Same crypto for every server: the client offers one suite and one group.
TLS_OPTS=(--tls13-ciphers=TLS_AES_128_GCM_SHA256 --groups=X25519)
CLK_TCK=$(getconf CLK_TCK)

say() { printf '%s\n' "$*"; }
note() { printf '# %s\n' "$*"; }
die() {
    printf 'compare.sh: %s\n' "$*" >&2
    exit 1
}

for tool in h2load taskset cc pkg-config openssl curl python3 timeout ps; do
    command -v "$tool" >/dev/null || die "$tool is not installed (packaging/install-deps.sh)"
done
[ "$(nproc --all)" -ge 2 ] || die "needs 2 cores (server on core $SERVER_CPU, client on core $CLIENT_CPU)"
pkg-config --exists gnutls || die "GnuTLS development files are missing (libgnutls28-dev)"

# Room for the idle connections plus h2load's, in the servers and the tools.
ulimit -n "$(ulimit -Hn)" 2>/dev/null
IDLE_MAX=$(printf '%s\n' $IDLE_COUNTS | sort -n | tail -1)
MAX_CONNS=$((IDLE_MAX + 2000))
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge $((IDLE_MAX + 1200)) ] ||
    die "the open-files limit is $(ulimit -n); $IDLE_MAX idle connections need >= $((IDLE_MAX + 1200))"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/tlsbox-perf.XXXXXX") || die "mktemp failed"
# nginx workers and h2o drop to an unprivileged user: they must read the site.
chmod 755 "$TMP"
INST=""          # suffix of the servers' directories (start_all)
STARTED_PIDS=""  # every server and tool we start; killed by pid at exit
CUR_PID=""

# All pids of the process tree rooted at $1 (nginx master + worker, h2o and
# its neverbleed key process, tlsboxd), one per line.
tree_pids() {
    ps -e -o pid=,ppid= | awk -v root="$1" '
        { parent[$1] = $2; pids[NR] = $1 }
        END {
            keep[root] = 1; print root
            do {
                changed = 0
                for (i = 1; i <= NR; i++) {
                    p = pids[i]
                    if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; changed = 1; print p }
                }
            } while (changed)
        }'
}

kill_tree() {
    local root=$1 pids p i
    pids=$(tree_pids "$root")
    kill -TERM "$root" 2>/dev/null
    for i in $(seq 1 50); do
        kill -0 "$root" 2>/dev/null || break
        sleep 0.1
    done
    for p in $pids; do
        kill -KILL "$p" 2>/dev/null
    done
    wait "$root" 2>/dev/null
}

cleanup() {
    local p
    for p in $STARTED_PIDS; do
        kill -0 "$p" 2>/dev/null && kill_tree "$p"
    done
    if [ "$KEEP" = 1 ]; then
        echo "# kept $TMP" >&2
    else
        rm -rf "$TMP"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Server CPU time of the whole tree, in clock ticks (utime + stime).
cpu_ticks() {
    local p total=0 rest
    for p in $(tree_pids "$1"); do
        rest=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null) || continue
        # after "pid (comm) ": field 1 is state, utime and stime are 12 and 13
        set -- $rest
        total=$((total + ${12} + ${13}))
    done
    echo "$total"
}

# Server CPU time of the whole tree in nanoseconds: the run time the
# scheduler counts for each thread (schedstat's first field).  A round of
# 1,000 handshakes is 25-55 clock ticks, so whole ticks alone put 2-4% of
# grain into every ratio.  A thread that ends between two readings takes its
# time with it: run_load then uses the ticks, which keep a dead thread's.
cpu_ns() {
    local p f v total=0
    for p in $(tree_pids "$1"); do
        for f in /proc/"$p"/task/*/schedstat; do
            read -r v _ 2>/dev/null <"$f" || continue
            total=$((total + v))
        done
    done
    echo "$total"
}

# Sum of a /proc memory figure in kB over the tree: VmRSS (status), Pss
# (smaps_rollup; shared pages split between nginx's master and worker) or
# Anonymous (smaps_rollup: heap and private mappings, no library pages).
mem_kb() {
    local root=$1 what=$2 p total=0 v
    for p in $(tree_pids "$root"); do
        if [ "$what" = rss ]; then
            v=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
        elif [ "$what" = anon ]; then
            v=$(awk '/^Anonymous:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null)
        else
            v=$(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null)
        fi
        total=$((total + ${v:-0}))
    done
    echo "$total"
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_port() {
    local i
    for i in $(seq 1 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        kill -0 "$CUR_PID" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# ---- shared inputs: file, certificate, tool ------------------------------
mkdir -p "$TMP/www"
# Incompressible printable bytes, so no server can gain from compression.
head -c 20000 /dev/urandom | base64 -w 76 | head -c "$FILE_SIZE" >"$TMP/www/file.html"
[ "$(stat -c %s "$TMP/www/file.html")" = "$FILE_SIZE" ] || die "could not write the test file"
chmod 644 "$TMP/www/file.html"
chmod 755 "$TMP/www"

(umask 077 && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$TMP/key.pem" -out "$TMP/cert.pem" -days 2 -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 >/dev/null 2>&1) ||
    die "openssl could not make the ECDSA P-256 certificate"
chmod 644 "$TMP/cert.pem"
PIN="sha256//$(openssl pkey -in "$TMP/key.pem" -pubout -outform der 2>/dev/null |
    openssl dgst -sha256 -binary | base64)"

IDLE_TOOL="$TMP/idle_conns"
# shellcheck disable=SC2046
cc -std=gnu11 -O2 -Wall -Wextra -o "$IDLE_TOOL" "$SRC_DIR/idle_conns.c" \
    $(pkg-config --cflags --libs gnutls) || die "could not build idle_conns"

URL_PATH=/file.html
# Files of other sizes for the "sizes" run, made like file.html.
if has_run sizes; then
    for b in $SIZES; do
        head -c $((b * 2)) /dev/urandom | base64 -w 76 | head -c "$b" >"$TMP/www/size$b.html"
        [ "$(stat -c %s "$TMP/www/size$b.html")" = "$b" ] || die "could not write the $b-byte file"
        chmod 644 "$TMP/www/size$b.html"
    done
fi
# Large files (random bytes) for the "large" run; sparse-free, written once.
if has_run large; then
    for mb in $LARGE_MB; do
        head -c $((mb * 1048576)) /dev/urandom >"$TMP/www/large${mb}m.bin" ||
            die "could not write the ${mb} MB file"
        chmod 644 "$TMP/www/large${mb}m.bin"
    done
fi

# ---- per-server start functions: set CUR_PID and CUR_PORT ------------------
start_nginx() {
    local d="$TMP/nginx$INST"
    command -v nginx >/dev/null || {
        SKIP_WHY="nginx is not installed"
        return 2
    }
    mkdir -p "$d"
    CUR_PORT=$(free_port)
    peer_nginx_conf "$d" "$CUR_PORT" "$TMP/cert.pem" "$TMP/key.pem" "$TMP/www" "$MAX_CONNS" off \
        >"$d/nginx.conf"
    taskset -c "$SERVER_CPU" nginx -e "$d/error.log" -c "$d/nginx.conf" -p "$d/" \
        -g 'daemon off;' >"$d/stdout.log" 2>&1 &
    CUR_PID=$!
    STARTED_PIDS="$STARTED_PIDS $CUR_PID"
    CUR_LOG="$d/error.log"
    wait_port "$CUR_PORT"
}

start_h2o() {
    local d="$TMP/h2o$INST"
    command -v h2o >/dev/null || {
        SKIP_WHY="h2o is not installed"
        return 2
    }
    mkdir -p "$d"
    CUR_PORT=$(free_port)
    peer_h2o_conf "$d" "$CUR_PORT" "$TMP/cert.pem" "$TMP/key.pem" "$TMP/www" "$MAX_CONNS" \
        >"$d/h2o.conf"
    taskset -c "$SERVER_CPU" h2o -c "$d/h2o.conf" >"$d/stdout.log" 2>&1 &
    CUR_PID=$!
    STARTED_PIDS="$STARTED_PIDS $CUR_PID"
    CUR_LOG="$d/error.log"
    wait_port "$CUR_PORT"
}

start_tlsbox() {
    local d="$TMP/tlsbox$INST" ctl="$BUILD/cli/tlsboxctl" i
    if [ ! -x "$BUILD/core/tlsboxd" ] || [ ! -x "$ctl" ]; then
        SKIP_WHY="no tlsboxd/tlsboxctl in $BUILD (build it, or pass --build DIR)"
        return 2
    fi
    if [ ! -e "$BUILD/build-plugins/site.so" ]; then
        SKIP_WHY="the build has no site plugin yet ($BUILD/build-plugins/site.so)"
        return 2
    fi
    mkdir -p "$d/state"
    CUR_PORT=$(free_port)
    CUR_LOG="$d/daemon.log"
    taskset -c "$SERVER_CPU" "$BUILD/core/tlsboxd" --state-dir "$d/state" \
        --plugin-dir "$BUILD/build-plugins" --foreground \
        --set "site.https_port=$CUR_PORT" --set "site.http_port=$(free_port)" \
        --set site.workers=1 --set "site.root=$TMP/www" --set site.bind=127.0.0.1 \
        --set site.max_connections_per_ip=100000 --set "site.max_connections=$MAX_CONNS" \
        --set site.idle_timeout=600 "${TLSBOX_SETS[@]}" >"$CUR_LOG" 2>&1 &
    CUR_PID=$!
    STARTED_PIDS="$STARTED_PIDS $CUR_PID"
    for i in $(seq 1 100); do
        [ -S "$d/state/control.sock" ] &&
            "$ctl" --state-dir "$d/state" status >/dev/null 2>&1 && break
        kill -0 "$CUR_PID" 2>/dev/null || return 1
        sleep 0.1
    done
    "$ctl" --state-dir "$d/state" cert import --cert "$TMP/cert.pem" --key "$TMP/key.pem" \
        >>"$CUR_LOG" 2>&1 || {
        note "tlsboxctl cert import failed"
        return 1
    }
    "$ctl" --state-dir "$d/state" policy preset modern >>"$CUR_LOG" 2>&1 || {
        note "tlsboxctl policy preset modern failed"
        return 1
    }
    wait_port "$CUR_PORT" || return 1
    # The workers pick up the imported certificate asynchronously: wait (<= 10 s)
    # until the site serves our key.
    for i in $(seq 1 100); do
        if curl -sk --tlsv1.3 --pinnedpubkey "$PIN" -o /dev/null --max-time 2 \
            "https://127.0.0.1:$CUR_PORT$URL_PATH"; then
            # Which code seals its AES-GCM records (the site's start-up line).
            R[tlsbox.aes]=$(sed -n 's/.*AES-GCM records sealed by //p' "$CUR_LOG" | tail -1)
            return 0
        fi
        sleep 0.1
    done
    note "tlsbox never served the imported certificate"
    return 1
}

# ---- measurements ---------------------------------------------------------
# Parse h2load's summary: sets H_RPS, H_DONE, H_OK, H_BAD (failed+errored+timeout).
parse_h2load() {
    H_RPS=$(awk '/^finished in/ { for (i = 1; i <= NF; i++) if ($(i+1) ~ /^req\/s/) print $i }' "$1")
    read -r H_DONE H_OK H_BAD < <(awk '/^requests:/ {
        gsub(",", ""); print $6, $8, $10 + $12 + $14 }' "$1")
    H_RPS=${H_RPS:-0}
    H_DONE=${H_DONE:-0}
    H_OK=${H_OK:-0}
    H_BAD=${H_BAD:-0}
}

# run_load NAME H2LOAD_ARGS...: one h2load run on the client core, bracketed by
# CPU readings of the server tree.  Sets H_*, H_TICKS and H_TICKS_F.
run_load() {
    local name=$1 out c0 c1 n0 n1 b0 b1 k0 k1 t0 t1 s0 s1
    shift
    out="$TMP/$CUR_NAME.$name.h2load"
    read -ra s0 <<<"$(core_steal)"
    b0=$(core_busy)
    k0=$(client_busy)
    t0=$(date +%s%N)
    c0=$(cpu_ticks "$CUR_PID")
    n0=$(cpu_ns "$CUR_PID")
    timeout 120 taskset -c "$CLIENT_CPU" h2load "${TLS_OPTS[@]}" "$@" \
        "https://127.0.0.1:$CUR_PORT${LOAD_PATH:-$URL_PATH}" >"$out" 2>&1
    n1=$(cpu_ns "$CUR_PID")
    c1=$(cpu_ticks "$CUR_PID")
    b1=$(core_busy)
    k1=$(client_busy)
    read -ra s1 <<<"$(core_steal)"
    t1=$(date +%s%N)
    H_TICKS=$((c1 - c0))
    # The same in ticks with two decimals, from the nanoseconds, unless they
    # lost a thread's time (more than a tick below the ticks) or are missing.
    H_TICKS_F=$(awk -v n=$((n1 - n0)) -v t="$H_TICKS" -v hz="$CLK_TCK" 'BEGIN {
        f = n * hz / 1e9; if (n <= 0 || f < t - 1) f = t; printf "%.2f", f }')
    H_STEAL_SRV=$((s1[0] - s0[0]))
    H_STEAL_CLI=$((s1[1] - s0[1]))
    # Whatever else ran on the server's core meanwhile (other programs, and the
    # kernel's softirq work for loopback traffic): a noise indicator.
    H_OTHER=$((b1 - b0 - H_TICKS))
    H_CLIENT=$((k1 - k0))
    H_ELAPSED=$(((t1 - t0) * CLK_TCK / 1000000000))
    parse_h2load "$out"
    H_TLS=$(awk -F': ' '/^TLS Protocol:|^Cipher:|^Server Temp Key:|^Application protocol:/ {
        printf "%s%s", sep, $2; sep = " " }' "$out")
}

# Busy clock ticks of the server's core (user nice system irq softirq steal).
core_busy() {
    awk -v c="cpu$SERVER_CPU" '$1 == c { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}

# Busy clock ticks of the client's core, steal left out (user nice system irq
# softirq): h2load's own work and the kernel's for its sockets.  A keep-alive
# run that keeps this core busy nearly all the time measures the client: its
# req/s is one over the client's CPU per answer, whatever the server does.
client_busy() {
    awk -v c="cpu$CLIENT_CPU" '$1 == c { print $2 + $3 + $4 + $7 + $8 }' /proc/stat
}

# Steal ticks of the server's and the client's core, "SERVER CLIENT": time the
# hypervisor ran something else while the core wanted to run.  On the VM of
# doc/performance.md it came and went, 0-40% of a run; the client core's
# counts as much as the server's, since h2load is the limit in the keep-alive runs.
core_steal() {
    awk -v a="cpu$SERVER_CPU" -v b="cpu$CLIENT_CPU" '$1 == a { x = $9 } $1 == b { y = $9 }
        END { print x + 0, y + 0 }' /proc/stat
}

us_per_op() { # ticks ops
    awk -v t="$1" -v n="$2" -v hz="$CLK_TCK" 'BEGIN {
        if (n > 0) printf "%.1f", t * 1e6 / hz / n; else print "-" }'
}

# R[server.metric] = value; metrics: hs_rps hs_us h2_rps h2_us h1_rps h1_us
# rss_idle rss_conns pss_conns alive rss_after
declare -A R PIDOF PORTOF

use() {
    CUR_NAME=$1
    CUR_PID=${PIDOF[$1]}
    CUR_PORT=${PORTOF[$1]}
}

add() { # server key number: R[server.key] += number
    R[$1.$2]=$(awk -v a="${R[$1.$2]:-0}" -v b="$3" 'BEGIN { print a + b }')
}

# account SERVER KIND: add the last run_load to the totals of KIND (hs, h2, h1).
account() {
    local s=$1 k=$2
    add "$s" "${k}_ok" "$H_OK"
    add "$s" "${k}_bad" "$H_BAD"
    add "$s" "${k}_ticks" "$H_TICKS_F"
    add "$s" "${k}_runs" 1
    R[$s.${k}_rps_list]="${R[$s.${k}_rps_list]:-} $H_RPS"
    R[$s.${k}_us_list]="${R[$s.${k}_us_list]:-} $(us_per_op "$H_TICKS_F" "$H_OK")"
    add "$s" other_ticks "$H_OTHER"
    add "$s" elapsed_ticks "$H_ELAPSED"
    add "$s" steal_cli_ticks "$H_STEAL_CLI"
    add "$s" "${k}_cli_ticks" "$H_CLIENT"
    add "$s" "${k}_elapsed" "$H_ELAPSED"
    R[$s.tls]=$H_TLS
    note "$s $k: $H_OK ok, $H_BAD failed, $H_RPS req/s, server $H_TICKS_F ticks," \
        "other work on core $SERVER_CPU $H_OTHER ticks," \
        "stolen by the host: core $SERVER_CPU $H_STEAL_SRV, core $CLIENT_CPU $H_STEAL_CLI ticks" \
        "of $H_ELAPSED ($H_TLS)"
}

# median DIGITS VALUES...: the median of the numbers among VALUES ("-" if none).
median() {
    local d=$1
    shift
    printf '%s\n' "$@" | grep -E '^[0-9.]+$' | sort -g | awk -v d="$d" '{ v[NR] = $1 }
        END { if (NR == 0) print "-"
              else printf "%.*f", d, NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# totals SERVER KIND: the median round's req/s and CPU us per successful request
# (one round disturbed by the rest of the machine does not move the result).
totals() {
    local s=$1 k=$2 bad
    # shellcheck disable=SC2086 # the lists are words on purpose
    R[$s.${k}_rps]=$(median 0 ${R[$s.${k}_rps_list]:-})
    # shellcheck disable=SC2086
    R[$s.${k}_us]=$(median 1 ${R[$s.${k}_us_list]:-})
    # The client's core over all rounds: busy share and CPU per good answer.
    R[$s.${k}_cli_busy]=$(awk -v c="${R[$s.${k}_cli_ticks]:-0}" -v e="${R[$s.${k}_elapsed]:-0}" \
        'BEGIN { if (e > 0) printf "%.0f%%", 100 * c / e; else print "-" }')
    R[$s.${k}_cli_us]=$(us_per_op "${R[$s.${k}_cli_ticks]:-0}" "${R[$s.${k}_ok]:-0}")
    bad=${R[$s.${k}_bad]:-0}
    [ "$bad" = 0 ] || R[$s.${k}_rps]="${R[$s.${k}_rps]}($bad failed)"
}

# check_and_warm SERVER: is it serving the file right, then warm-up, memory idle.
check_and_warm() {
    local s=$1 line hdr b
    use "$s"
    say ""
    say "## $s (pid $CUR_PID, port $CUR_PORT)"
    # Correctness first: 200, the whole file, our key, TLS 1.3 only.
    line=$(curl -sk --tlsv1.3 --pinnedpubkey "$PIN" --max-time 5 -o "$TMP/$s.get" \
        -w '%{http_code} %{size_download} HTTP/%{http_version}' "https://127.0.0.1:$CUR_PORT$URL_PATH")
    note "GET $URL_PATH over TLS 1.3 with our key: $line"
    case $line in
    "200 $FILE_SIZE "*) ;;
    *)
        note "$s does not serve the file correctly; not measured"
        return 1
        ;;
    esac
    # The h1 answer's size decides how many TLS records (16,384 bytes of
    # plaintext at most) each response costs the client.
    hdr=$(curl -sk --http1.1 --max-time 5 -o /dev/null -w '%{size_header}' \
        "https://127.0.0.1:$CUR_PORT$URL_PATH")
    note "HTTP/1.1 answer: $hdr bytes of headers + $FILE_SIZE = $((hdr + FILE_SIZE)) bytes," \
        "$(((hdr + FILE_SIZE + 16383) / 16384)) TLS record(s)"
    if has_run sizes; then
        # Each file of the sizes run whole, and its answer's TLS records.
        for b in $SIZES; do
            line=$(curl -sk --http1.1 --max-time 5 -o /dev/null \
                -w '%{http_code} %{size_download} %{size_header}' "https://127.0.0.1:$CUR_PORT/size$b.html")
            if [ "${line% *}" = "200 $b" ]; then
                R[$s.sz${b}_rec]=$(((${line##* } + b + 16383) / 16384))
            else
                note "warning: $s answers /size$b.html with '$line' (code, bytes, header bytes)"
            fi
        done
    fi
    if curl -sk --tlsv1.2 --tls-max 1.2 --max-time 5 -o /dev/null \
        "https://127.0.0.1:$CUR_PORT$URL_PATH" 2>/dev/null; then
        note "warning: $s accepts TLS 1.2 (should be TLS 1.3 only)"
    else
        note "TLS 1.2 refused: yes"
    fi
    # Warm-up: both protocols, a few hundred requests.
    run_load warmup-h2 -n 400 -c 4 -m 10
    run_load warmup-h1 --h1 -n 400 -c 4
    sleep 1
    R[$s.rss_idle]=$(mem_kb "$CUR_PID" rss)
    R[$s.pss_idle]=$(mem_kb "$CUR_PID" pss)
    R[$s.anon_idle]=$(mem_kb "$CUR_PID" anon)
}

# idle_run SERVER N MODE: memory while N idle TLS 1.3 connections offering
# ALPN h2 are open; MODE h2 (preface + SETTINGS sent) or h2-nopreface.
# Sets R[SERVER.{pss,rss,kbc,alive}_MODE_N].  kbc, the cost of one
# connection, is (Anonymous - Anonymous idle) / N: PSS would also move with
# library pages the client shares (idle_conns maps GnuTLS, as tlsbox does).
# Each (N, MODE) gets servers of its own (start_all), so no run reuses the
# heap another one left.
idle_run() {
    local s=$1 n=$2 mode=$3 key i idle_pid ready out
    use "$s"
    key="${mode}_$n"
    out="$TMP/$s.idle.$key"
    timeout $((70 + n / 50 + IDLE_HOLD)) taskset -c "$CLIENT_CPU" "$IDLE_TOOL" 127.0.0.1 \
        "$CUR_PORT" "$n" "$IDLE_HOLD" "$mode" >"$out.out" 2>"$out.err" &
    idle_pid=$!
    STARTED_PIDS="$STARTED_PIDS $idle_pid"
    ready=""
    for i in $(seq 1 $((1200 + n / 5))); do
        ready=$(awk '/^ready/ { print $2 }' "$out.out")
        [ -n "$ready" ] && break
        kill -0 "$idle_pid" 2>/dev/null || break
        sleep 0.1
    done
    # The last handshakes' Finished and prefaces reach the server, and
    # every connection has been idle long enough for a server that frees
    # buffers of idle connections after a while (tlsbox: 1 s) to have done so.
    sleep 2
    R[$s.rss_$key]=$(mem_kb "$CUR_PID" rss)
    R[$s.pss_$key]=$(mem_kb "$CUR_PID" pss)
    R[$s.anon_$key]=$(mem_kb "$CUR_PID" anon)
    wait "$idle_pid"
    R[$s.alive_$key]="$(awk '/^alive/ { print $2 }' "$out.out")/${ready:-0}"
    R[$s.kbc_$key]=$(awk -v a="${R[$s.anon_$key]}" -v b="${R[$s.anon_idle]}" -v n="$n" \
        'BEGIN { printf "%.1f", (a - b) / n }')
    [ "${ready:-0}" = "$n" ] || R[$s.kbc_$key]="${R[$s.kbc_$key]}?"
    note "$s idle $mode x $n: ${ready:-0} opened, ${R[$s.alive_$key]%/*} open after ${IDLE_HOLD} s;" \
        "PSS ${R[$s.pss_$key]} kB (idle ${R[$s.pss_idle]}), RSS ${R[$s.rss_$key]} kB," \
        "anonymous ${R[$s.anon_$key]} kB (idle ${R[$s.anon_idle]}): ${R[$s.kbc_$key]} kB/conn"
    [ -s "$out.err" ] && note "idle_conns: $(head -3 "$out.err" | tr '\n' ' ')"
}

# streams_run SERVER: anonymous memory while STREAMS_CONNS h2 connections each
# hold STREAMS_PER_CONN requests for the benchmark's file open: h2load -w 0
# grants a stream window of 0, so each answer stops after its HEADERS.  Sets
# R[SERVER.{kbc,held}_streams]: kB per connection with its streams, over the
# memory before the run (after a warm-up that caches the file).
streams_run() {
    local s=$1 out a0 a1 hp n=$((STREAMS_CONNS * STREAMS_PER_CONN))
    use "$s"
    out="$TMP/$s.streams"
    timeout 60 taskset -c "$CLIENT_CPU" h2load "${TLS_OPTS[@]}" -n 200 -c 10 -m 10 \
        "https://127.0.0.1:$CUR_PORT$URL_PATH" >"$out.warm" 2>&1
    sleep 1
    a0=$(mem_kb "$CUR_PID" anon)
    timeout -s INT $((STREAMS_HOLD + 30)) taskset -c "$CLIENT_CPU" h2load "${TLS_OPTS[@]}" \
        -c "$STREAMS_CONNS" -m "$STREAMS_PER_CONN" -w 0 -n "$n" -v \
        "https://127.0.0.1:$CUR_PORT$URL_PATH" >"$out.h2load" 2>&1 &
    hp=$!
    STARTED_PIDS="$STARTED_PIDS $hp"
    sleep "$STREAMS_HOLD"
    a1=$(mem_kb "$CUR_PID" anon)
    # The answers' HEADERS the client saw (-v prints each; h2load stopped
    # by SIGINT prints no summary): every stream was opened and answered as
    # far as the window lets it.
    kill -INT "$hp" 2>/dev/null
    wait "$hp"
    R[$s.held_streams]="$(grep -c '^\[stream_id=[0-9]*\] :status: ' "$out.h2load")/$n"
    R[$s.kbc_streams]=$(awk -v a="$a1" -v b="$a0" -v n="$STREAMS_CONNS" \
        'BEGIN { printf "%.1f", (a - b) / n }')
    note "$s streams: $STREAMS_CONNS connections x $STREAMS_PER_CONN requests held," \
        "${R[$s.held_streams]} answered with HEADERS; anonymous $a0 -> $a1 kB:" \
        "${R[$s.kbc_streams]} kB per connection"
}

# tlsbox's handshake counters (full, resumed) from its metrics.
tlsbox_hs_counts() {
    "$BUILD/cli/tlsboxctl" --state-dir "$TMP/tlsbox$INST/state" metrics 2>/dev/null | awk '
        /^tlsbox_site_handshakes_total\{kind="full"\}/ { f = $2 }
        /^tlsbox_site_handshakes_total\{kind="resumed"\}/ { r = $2 }
        END { print f + 0, r + 0 }'
}

# Peak RSS over the server tree since reset_peak (VmHWM; clear_refs 5 resets it).
reset_peak() {
    local p
    for p in $(tree_pids "$1"); do
        echo 5 >"/proc/$p/clear_refs" 2>/dev/null
    done
}
peak_kb() {
    local p total=0 v
    for p in $(tree_pids "$1"); do
        v=$(awk '/^VmHWM:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
        total=$((total + ${v:-0}))
    done
    echo "$total"
}

# ---- run ------------------------------------------------------------------
say "# tlsbox performance comparison ($([ "$SMOKE" = 1 ] && echo smoke || { [ "$QUICK" = 1 ] && echo quick || echo full; }) run; runs: $RUNS)"
say "# $(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc --all) cores: $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo); $(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo) RAM; kernel $(uname -r); load average $(cut -d' ' -f1-3 /proc/loadavg)"
say "# nginx $(nginx -v 2>&1 | sed 's/.*nginx\///'), h2o $(h2o --version 2>/dev/null | awk '/version/ { print $3 }'), $(h2load --version | head -1), $(openssl version | cut -d' ' -f1-2), GnuTLS $(pkg-config --modversion gnutls)"
[ ${#TLSBOX_SETS[@]} -gt 0 ] && say "# tlsbox with ${TLSBOX_SETS[*]}"
[ "${PEER_SAME_HEADERS:-0}" = 1 ] &&
    say "# --same-headers: nginx and h2o send tlsbox's security headers and charset too"
say "# server on core $SERVER_CPU, client on core $CLIENT_CPU; file $FILE_SIZE bytes; ECDSA P-256; TLS 1.3 TLS_AES_128_GCM_SHA256 X25519"
say "# handshakes: $HS_ROUNDS x $HS_CONNS connections; keep-alive: $KA_ROUNDS x ${KA_SECONDS} s on $KA_CONNS connections; idle: $IDLE_COUNTS connections; sizes: $SIZES bytes at -c $SIZES_CONNS; large: $LARGE_MB MB"
status=0
# start_all: start every server of $SERVERS (directories suffixed $INST),
# check and warm each; sets UP (started) and MEASURED (serving right).
start_all() {
    local s rc
    UP=""
    MEASURED=""
    for s in $SERVERS; do
        SKIP_WHY=""
        CUR_PID=""
        CUR_LOG=/dev/null
        "start_$s"
        rc=$?
        if [ $rc = 2 ]; then
            say ""
            say "## $s: skipped: $SKIP_WHY"
            continue
        fi
        if [ $rc != 0 ]; then
            say ""
            say "## $s: FAILED to start; last lines of $CUR_LOG:"
            tail -n 15 "$CUR_LOG" 2>/dev/null | sed 's/^/#   /'
            status=1
            [ -n "$CUR_PID" ] && kill_tree "$CUR_PID"
            continue
        fi
        PIDOF[$s]=$CUR_PID
        PORTOF[$s]=$CUR_PORT
        UP="$UP $s"
    done
    for s in $UP; do
        if check_and_warm "$s"; then
            MEASURED="$MEASURED $s"
        else
            status=1
        fi
    done
}
stop_all() {
    local s
    for s in $UP; do
        kill_tree "${PIDOF[$s]}"
    done
    UP=""
}
for s in $SERVERS; do
    case $s in
    tlsbox | nginx | h2o) ;;
    *) die "unknown server '$s' (tlsbox, nginx, h2o)" ;;
    esac
done

# Every run below is interleaved (each round runs every server once, all of
# them started and idle meanwhile) so that noise from the rest of the machine
# spreads over all servers instead of landing on one.  Idle memory first,
# before the load runs have grown any heap.
if has_run idle; then
    for n in $IDLE_COUNTS; do
        for mode in h2-nopreface h2; do
            say ""
            say "## idle connections: $n, $mode (servers of their own)"
            INST=".idle.$n.$mode"
            start_all
            for s in $MEASURED; do
                idle_run "$s" "$n" "$mode"
            done
            stop_all
        done
    done
fi
if has_run streams; then
    say ""
    say "## streams held open: $STREAMS_CONNS x $STREAMS_PER_CONN (servers of their own)"
    INST=".streams"
    start_all
    for s in $MEASURED; do
        streams_run "$s"
    done
    stop_all
fi
INST=""
MEASURED=""
if [ -n "$(echo " $RUNS " | sed 's/ idle / /g; s/ streams / /g' | tr -d ' ')" ]; then
    say ""
    say "## load runs (servers of their own)"
    start_all
fi
# One burst of each handshake run first, not counted: a server's first
# 1,000 concurrent handshakes also grow its heap and map its pages (every
# server's first round cost 1.3-2 times its later ones), and the rounds
# compare the servers as they run, not as they start.
if has_run hs || has_run h2hs; then
    for s in $MEASURED; do
        use "$s"
        has_run hs && run_load handshake-warmup --h1 -n "$HS_CONNS" -c "$HS_CONNS"
        has_run h2hs && run_load h2handshake-warmup -n "$HS_CONNS" -c "$HS_CONNS"
        sleep 0.5
    done
fi
for i in $(seq 1 "$HS_ROUNDS"); do
    for s in $MEASURED; do
        use "$s"
        # Every h2load client makes exactly one connection: a full handshake.
        if has_run hs; then
            run_load "handshake$i" --h1 -n "$HS_CONNS" -c "$HS_CONNS"
            account "$s" hs
            sleep 0.5
        fi
        if has_run h2hs; then
            run_load "h2handshake$i" -n "$HS_CONNS" -c "$HS_CONNS"
            account "$s" h2hs
            sleep 0.5
        fi
        if has_run resume; then
            # One client reconnecting after each response: h2load resumes
            # the session on every new connection but the first.
            [ "$s" = tlsbox ] && read -r f0 r0 < <(tlsbox_hs_counts)
            run_load "resume$i" --h1 -n "$RESUME_N" -c 1 -H 'Connection: close'
            account "$s" res
            if [ "$s" = tlsbox ]; then
                read -r f1 r1 < <(tlsbox_hs_counts)
                add tlsbox res_full $((f1 - f0))
                add tlsbox res_resumed $((r1 - r0))
                note "tlsbox resume: $((f1 - f0)) full, $((r1 - r0)) resumed handshakes (metrics)"
            fi
        fi
    done
done
if has_run ka; then
    for c in $KA_CONNS; do
        for k in h2 h1; do
            for i in $(seq 1 "$KA_ROUNDS"); do
                for s in $MEASURED; do
                    use "$s"
                    if [ $k = h2 ]; then
                        run_load "h2-c$c-$i" -D "$KA_SECONDS" -c "$c" -m 10
                    else
                        run_load "h1-c$c-$i" --h1 -D "$KA_SECONDS" -c "$c"
                    fi
                    account "$s" "${k}c$c"
                done
            done
        done
    done
fi
if has_run sizes; then
    for b in $SIZES; do
        for i in $(seq 1 "$KA_ROUNDS"); do
            for s in $MEASURED; do
                use "$s"
                LOAD_PATH="/size$b.html"
                run_load "size$b-$i" --h1 -D "$KA_SECONDS" -c "$SIZES_CONNS"
                LOAD_PATH=""
                account "$s" "sz$b"
            done
        done
    done
fi
if has_run large; then
    for mb in $LARGE_MB; do
        nreq=$((LARGE_TOTAL_MB / mb))
        [ "$nreq" -ge 1 ] || nreq=1
        for k in h1 h2; do
            for i in $(seq 1 "$HS_ROUNDS"); do
                for s in $MEASURED; do
                    use "$s"
                    rss0=$(mem_kb "$CUR_PID" rss)
                    reset_peak "$CUR_PID"
                    LOAD_PATH="/large${mb}m.bin"
                    if [ $k = h1 ]; then
                        run_load "large${mb}m-$k-$i" --h1 -n "$nreq" -c 1
                    else
                        run_load "large${mb}m-$k-$i" -n "$nreq" -c 1
                    fi
                    LOAD_PATH=""
                    account "$s" "l${mb}$k"
                    # Growth of the peak over the RSS before the run (VmHWM,
                    # reset just before): the largest of the rounds.
                    grow=$(($(peak_kb "$CUR_PID") - rss0))
                    [ "$grow" -gt "${R[$s.l${mb}${k}_peak]:--1}" ] && R[$s.l${mb}${k}_peak]=$grow
                done
            done
            for s in $MEASURED; do
                # CPU per MB: all rounds' ticks over the MB of good responses.
                R[$s.l${mb}${k}_usmb]=$(awk -v t="${R[$s.l${mb}${k}_ticks]:-0}" \
                    -v n="${R[$s.l${mb}${k}_ok]:-0}" -v mb="$mb" -v hz="$CLK_TCK" \
                    'BEGIN { if (n > 0) printf "%.0f", t * 1e6 / hz / (n * mb); else print "-" }')
            done
        done
    done
fi
for s in $MEASURED; do
    for k in hs h2hs res $(for c in $KA_CONNS; do echo "h2c$c h1c$c"; done) \
        $(for b in $SIZES; do echo "sz$b"; done); do
        [ -n "${R[$s.${k}_runs]:-}" ] && totals "$s" "$k"
    done
    R[$s.rss_after]=$(mem_kb "${PIDOF[$s]}" rss)
    R[$s.other]=$(awk -v o="${R[$s.other_ticks]:-0}" -v e="${R[$s.elapsed_ticks]:-0}" 'BEGIN {
        if (e > 0) printf "%.0f%%", 100 * o / e; else print "-" }')
    R[$s.steal_cli]=$(awk -v o="${R[$s.steal_cli_ticks]:-0}" -v e="${R[$s.elapsed_ticks]:-0}" 'BEGIN {
        if (e > 0) printf "%.0f%%", 100 * o / e; else print "-" }')
done
[ -n "${R[tlsbox.res_runs]:-}" ] &&
    R[tlsbox.res_check]="${R[tlsbox.res_full]:-0} full / ${R[tlsbox.res_resumed]:-0} resumed"
stop_all

# ---- report ---------------------------------------------------------------
num() { # strip annotations such as "(3 failed)" or "?"
    echo "$1" | sed 's/[^0-9.].*//'
}
val() { echo "${R[$1.$2]:--}"; }
row() { # label metric: printed only when some server has it
    local s line="| $1 |" any=""
    for s in tlsbox nginx h2o; do
        line="$line $(val "$s" "$2") |"
        [ -n "${R[$s.$2]:-}" ] && any=1
    done
    [ -n "$any" ] && say "$line"
}

say ""
say "## results"
say ""
say "| metric | tlsbox | nginx | h2o |"
say "|---|---:|---:|---:|"
row "full handshakes h1, req/s (1 request per connection)" hs_rps
row "CPU per full handshake + 1 request, h1, us" hs_us
row "full handshakes h2, req/s (1 request per connection)" h2hs_rps
row "CPU per full handshake + 1 request, h2, us" h2hs_us
row "resumed handshakes h1, req/s" res_rps
row "CPU per resumed handshake + 1 request, h1, us" res_us
row "tlsbox handshakes during the resumed runs (metrics)" res_check
for c in $KA_CONNS; do
    row "h2 keep-alive -c $c -m 10, req/s" "h2c${c}_rps"
    row "CPU per h2 request at -c $c, us" "h2c${c}_us"
    row "client (h2load) core busy, h2 -c $c" "h2c${c}_cli_busy"
    row "client CPU per h2 answer at -c $c, us" "h2c${c}_cli_us"
    row "HTTP/1.1 keep-alive -c $c, req/s" "h1c${c}_rps"
    row "CPU per h1 request at -c $c, us" "h1c${c}_us"
    row "client (h2load) core busy, h1 -c $c" "h1c${c}_cli_busy"
    row "client CPU per h1 answer at -c $c, us" "h1c${c}_cli_us"
done
for b in $SIZES; do
    row "HTTP/1.1 keep-alive -c $SIZES_CONNS, $b-byte file, req/s" "sz${b}_rps"
    row "CPU per h1 request, $b-byte file, us" "sz${b}_us"
    row "TLS records per h1 answer, $b-byte file" "sz${b}_rec"
done
for mb in $LARGE_MB; do
    for k in h1 h2; do
        row "$mb MB over $k: CPU per MB, us" "l${mb}${k}_usmb"
        row "$mb MB over $k: peak RSS growth during a run, kB" "l${mb}${k}_peak"
    done
done
row "RSS idle, kB" rss_idle
row "PSS idle, kB" pss_idle
row "anonymous memory idle, kB" anon_idle
for n in $IDLE_COUNTS; do
    for mode in h2-nopreface h2; do
        [ $mode = h2 ] && what="h2 preface sent" || what="no h2 preface"
        row "PSS with $n idle TLS connections ($what), kB" "pss_${mode}_$n"
        row "RSS with $n idle TLS connections ($what), kB" "rss_${mode}_$n"
        row "anonymous memory with $n idle TLS connections ($what), kB" "anon_${mode}_$n"
        row "per idle connection ($what, $n), kB (anonymous memory)" "kbc_${mode}_$n"
        row "idle connections still open / opened ($what, $n)" "alive_${mode}_$n"
    done
done
row "per h2 connection with $STREAMS_PER_CONN requests held open, kB (anonymous memory)" kbc_streams
row "requests held open that got their HEADERS / asked" held_streams
row "RSS after the load runs, kB" rss_after
row "server core busy with other work during the runs" other
row "client core stolen by the host during the runs" steal_cli
say ""
for s in $MEASURED; do
    say "# negotiated with $s: $(val "$s" tls)"
    [ "$s" = tlsbox ] && say "# tlsbox sealed its AES-GCM records with $(val tlsbox aes)"
    o=$(num "$(val "$s" other)")
    [ -n "$o" ] && [ "$o" -gt 15 ] &&
        say "# warning: core $SERVER_CPU was busy with other work ${o}% of the time while $s ran: its numbers are noisy; rerun on a quiet machine"
    o=$(num "$(val "$s" steal_cli)")
    [ -n "$o" ] && [ "$o" -gt 5 ] &&
        say "# warning: the host took ${o}% of the client's core $CLIENT_CPU while $s ran (steal): h2load is the limit of the keep-alive runs, so their req/s is the host's; rerun when it is quiet"
done

ratio() { # a b
    local a b
    a=$(num "$1")
    b=$(num "$2")
    if [ -z "$a" ] || [ -z "$b" ]; then
        echo "-"
    else
        awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'
    fi
}

say ""
say "| tlsbox ratio | tlsbox/nginx | tlsbox/h2o |"
say "|---|---:|---:|"
# round_ratio METRIC SERVER: the median over the rounds of tlsbox's figure
# divided by SERVER's in the same round (rounds are interleaved, so a round
# the rest of the machine disturbed moves both); fails without per-round
# figures (memory, large files: those ratios are of the totals).
round_ratio() {
    local a=${R[tlsbox.$1_list]:-} b=${R[$2.$1_list]:-}
    [ -n "$a" ] && [ -n "$b" ] || return 1
    local r
    # shellcheck disable=SC2086,SC2046 # the lists are words on purpose
    # shellcheck disable=SC2046 # the ratios are words on purpose
    r=$(median 2 $(round_ratios "$a" "$b"))
    [ "$r" != - ] && echo "$r"
}
# round_ratios "A-LIST" "B-LIST": each round's A / B, one per line.
round_ratios() {
    # shellcheck disable=SC2086 # the lists are words on purpose
    paste <(printf '%s\n' $1) <(printf '%s\n' $2) |
        awk '$1 ~ /^[0-9.]+$/ && $2 ~ /^[0-9.]+$/ && $2 > 0 { printf "%.6f\n", $1 / $2 }'
}
# round_range METRIC SERVER: the lowest and highest per-round ratio, "0.72-0.84",
# so that a verdict near its limit shows how far the rounds spread.
round_range() {
    local a=${R[tlsbox.$1_list]:-} b=${R[$2.$1_list]:-}
    [ -n "$a" ] && [ -n "$b" ] || return 1
    round_ratios "$a" "$b" | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 }
        END { if (NR) printf "%.2f-%.2f", lo, hi }'
}
ratio_to() { # metric server
    round_ratio "$1" "$2" || ratio "$(val tlsbox "$1")" "$(val "$2" "$1")"
}
ratio_row() { # label metric
    [ -n "${R[tlsbox.$2]:-}" ] || return 0
    say "| $1 | $(ratio_to "$2" nginx) | $(ratio_to "$2" h2o) |"
}
ratio_row "CPU per full handshake, h1" hs_us
ratio_row "CPU per full handshake, h2" h2hs_us
ratio_row "CPU per resumed handshake, h1" res_us
for c in $KA_CONNS; do
    ratio_row "h2 req/s at -c $c" "h2c${c}_rps"
    ratio_row "CPU per h2 request at -c $c" "h2c${c}_us"
    ratio_row "h1 req/s at -c $c" "h1c${c}_rps"
    ratio_row "CPU per h1 request at -c $c" "h1c${c}_us"
done
for b in $SIZES; do
    ratio_row "h1 req/s at -c $SIZES_CONNS, $b-byte file (not a target)" "sz${b}_rps"
    ratio_row "CPU per h1 request, $b-byte file (not a target)" "sz${b}_us"
done
for mb in $LARGE_MB; do
    for k in h1 h2; do
        ratio_row "CPU per MB, $mb MB over $k" "l${mb}${k}_usmb"
        ratio_row "peak RSS growth, $mb MB over $k" "l${mb}${k}_peak"
    done
done
ratio_row "RSS idle" rss_idle
ratio_row "PSS idle" pss_idle
for n in $IDLE_COUNTS; do
    ratio_row "per idle connection, no preface, $n" "kbc_h2-nopreface_$n"
    ratio_row "per idle connection, h2 preface, $n" "kbc_h2_$n"
done
ratio_row "per h2 connection with $STREAMS_PER_CONN requests held open (not a target)" kbc_streams

# target LABEL VALUE LIMIT: holds when VALUE <= LIMIT
target() {
    local label=$1 v l verdict
    v=$(num "$2")
    l=$(num "$3")
    if [ -z "$v" ] || [ -z "$l" ]; then
        return 0
    elif awk -v v="$v" -v l="$l" 'BEGIN { exit !(v <= l) }'; then
        verdict="MET ($v <= $l)"
    else
        verdict="NOT MET ($v > $l)"
    fi
    say "| $label | $verdict |"
}
# target_ratio LABEL METRIC SERVER le|ge LIMIT: the median round's ratio
# tlsbox/SERVER (round_ratio) against LIMIT.
target_ratio() {
    local label=$1 m=$2 s=$3 op=$4 l=$5 extra=${6:-} r range verdict
    r=$(round_ratio "$m" "$s") || return 0
    range=$(round_range "$m" "$s")
    if awk -v r="$r" -v l="$l" -v op="$op" 'BEGIN { exit !(op == "le" ? r <= l : r >= l) }'; then
        verdict=MET
    else
        verdict="NOT MET"
    fi
    say "| $label | $verdict ($r x $s in the median round, rounds $range; medians tlsbox $(val tlsbox "$m"), $s $(val "$s" "$m"))$extra |"
}
# client_limit KIND SERVER: for a req/s verdict, how busy h2load's core was
# against each server and its CPU per answer, when it was the limit (90% or
# more against both): the req/s ratio is then the ratio of the client's costs.
client_limit() {
    local k=$1 s=$2 a b
    a=$(num "$(val tlsbox "${k}_cli_busy")")
    b=$(num "$(val "$s" "${k}_cli_busy")")
    [ -n "$a" ] && [ -n "$b" ] && [ "$a" -ge 90 ] && [ "$b" -ge 90 ] || return 0
    printf '; the client was the limit (its core busy %s%% against tlsbox, %s%% against %s; its CPU per answer %s us against tlsbox, %s against %s)' \
        "$a" "$b" "$s" "$(val tlsbox "${k}_cli_us")" "$(val "$s" "${k}_cli_us")" "$s"
}
x08() { # 0.8 x a server's figure
    awk -v a="$(num "$(val "$1" "$2")")" 'BEGIN { if (a != "") printf "%.1f", 0.8 * a }'
}

say ""
if [ "${PEER_SAME_HEADERS:-0}" = 1 ]; then
    say "| target (issue 10; peers with tlsbox's headers here, so for comparison only) | verdict |"
else
    say "| target (issue 10) | verdict |"
fi
say "|---|---|"
target_ratio "CPU per full handshake + h2 request <= 0.8 x nginx" h2hs_us nginx le 0.8
target_ratio "CPU per resumed handshake <= 0.8 x nginx" res_us nginx le 0.8
for c in $KA_CONNS; do
    for k in h2 h1; do
        target_ratio "$k req/s at -c $c >= h2o" "${k}c${c}_rps" h2o ge 1 "$(client_limit "${k}c${c}" h2o)"
        target_ratio "CPU per $k request at -c $c <= 0.8 x h2o" "${k}c${c}_us" h2o le 0.8
    done
done
for mb in $LARGE_MB; do
    for k in h1 h2; do
        target "CPU per MB, $mb MB over $k <= nginx" "$(val tlsbox "l${mb}${k}_usmb")" "$(val nginx "l${mb}${k}_usmb")"
    done
done
for n in $IDLE_COUNTS; do
    target "per idle connection, no preface, $n: <= 0.8 x nginx" "$(val tlsbox "kbc_h2-nopreface_$n")" "$(x08 nginx "kbc_h2-nopreface_$n")"
    target "per idle connection, h2 preface, $n: <= 0.8 x nginx" "$(val tlsbox "kbc_h2_$n")" "$(x08 nginx "kbc_h2_$n")"
done
exit $status
