#!/bin/bash
# Benchmark: time from server start to the first handshake that carries an
# OCSP staple, tlsbox vs nginx vs h2o (Debian packages).  Prints numbers; not
# part of make check.
#
#   tests/perf/ocsp_first_staple.sh [--rounds N]      (make perf-ocsp)
#
# One test CA (root -> intermediate -> leaf "ocsp.test" with an AIA OCSP URL)
# and the real `openssl ocsp` as responder in a network namespace, fronted on
# 127.0.0.1 (tests/integration/ocsp_lib.sh).  nginx and h2o are configured
# as in compare.sh (tests/perf/peer_conf.sh: one worker, TLS 1.3 only), with
# stapling on.  For each server, N rounds of:
#   cold:    start with the certificate configured and no staple anywhere;
#   restart: stop and start again (tlsbox keeps its staple in its store).
# After each start, `openssl s_client -status` connects every 50 ms (20 s at
# most) until a staple comes back; the time from the start command to that
# handshake, and the connections it took, are printed (median of N).
set -u
ROUNDS=3
[ "${1:-}" = "--rounds" ] && ROUNDS=${2:?--rounds N}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${top_builddir:=$SRC}"
: "${top_srcdir:=$SRC}"
export top_builddir top_srcdir
. "$SRC/tests/integration/lib.sh"
tb_setup
. "$SRC/tests/integration/ocsp_lib.sh"
ok() { :; }

oc_make_ca && oc_make_leaf ocsp.test 30 || { echo "test CA failed"; exit 1; }
oc_start_responder || { echo "responder failed"; exit 1; }
cat "$OC/root.pem" "$OC/inter.pem" >"$OC/trust.pem"
mkdir -p "$TB_TMP/www" && echo hello >"$TB_TMP/www/index.html"
PORT=$(tb_free_port)
SITE_HTTPS=$PORT
SITE_HTTP=$(tb_free_port)

now_ms() { date +%s%3N; }

# Poll until a stapled handshake; prints "<ms> <connections>" from $1 (start time).
first_staple() {
    local t0=$1 n=0 out
    while [ $(($(now_ms) - t0)) -lt 20000 ]; do
        n=$((n + 1))
        out=$(timeout 5 openssl s_client -connect "127.0.0.1:$PORT" -servername ocsp.test -status \
            </dev/null 2>/dev/null)
        if printf '%s' "$out" | grep -q "OCSP Response Status: successful"; then
            echo "$(($(now_ms) - t0)) $n"
            return 0
        fi
        sleep 0.05
    done
    echo "timeout $n"
}

stop_pid() {
    kill -TERM "$1" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}

# ---- tlsbox ----
tlsbox_prepare() {
    rm -rf "$TB_STATE"
    # The certificate in the store, without the ocsp plugin: no staple yet.
    tb_start_daemon --plugin "$TB_PLUGINS/site.so" --set "site.https_port=$PORT" \
        --set "site.http_port=$SITE_HTTP" --set "site.root=$TB_TMP/www" >/dev/null
    tb_ctl cert import --cert "$OC/ocsp.test.pem" --chain "$OC/inter.pem" \
        --key "$OC/ocsp.test.key" --name ocsp.test >/dev/null
    tb_stop_daemon
}
tlsbox_start() {
    # Not tb_start_daemon: it waits for the control socket; the clock runs from here.
    "$TB_TLSBOXD" --state-dir "$TB_STATE" --plugin-dir "$TB_PLUGINS" --foreground \
        --set "site.https_port=$PORT" --set "site.http_port=$SITE_HTTP" \
        --set "site.root=$TB_TMP/www" >>"$TB_TMP/daemon.log" 2>&1 &
    TB_PID=$!
}
tlsbox_stop() { tb_stop_daemon; }

# ---- nginx and h2o: the peers of compare.sh (tests/perf/peer_conf.sh),
# stapling OCSP checked against the test CA ----
# shellcheck source=tests/perf/peer_conf.sh
. "$SRC/tests/perf/peer_conf.sh"
PEER_OCSP_TRUST=$OC/trust.pem
NGX="$TB_TMP/nginx"
nginx_prepare() {
    mkdir -p "$NGX"
    peer_nginx_conf "$NGX" "$PORT" "$OC/ocsp.test.chain" "$OC/ocsp.test.key" "$TB_TMP/www" 256 \
        off >"$NGX/nginx.conf"
}
nginx_start() {
    nginx -e "$NGX/error.log" -c "$NGX/nginx.conf" -p "$NGX/" -g 'daemon off;' \
        >>"$NGX/stdout.log" 2>&1 &
    SRV_PID=$!
}
nginx_stop() { stop_pid "$SRV_PID"; }

H2O="$TB_TMP/h2o"
h2o_prepare() {
    mkdir -p "$H2O"
    peer_h2o_conf "$H2O" "$PORT" "$OC/ocsp.test.chain" "$OC/ocsp.test.key" "$TB_TMP/www" 256 \
        >"$H2O/h2o.conf"
}
h2o_start() {
    h2o -c "$H2O/h2o.conf" >>"$H2O/stdout.log" 2>&1 &
    SRV_PID=$!
}
h2o_stop() { stop_pid "$SRV_PID"; }

median() { sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "-")}'; }

declare -A RES
for s in tlsbox nginx h2o; do
    command -v "$s" >/dev/null 2>&1 || [ "$s" = tlsbox ] || { RES[$s]="not installed"; continue; }
    cold="" cold_n="" warm="" warm_n=""
    for _ in $(seq 1 "$ROUNDS"); do
        "${s}_prepare"
        t0=$(now_ms)
        "${s}_start"
        read -r ms n < <(first_staple "$t0")
        cold="$cold $ms"
        cold_n="$cold_n $n"
        "${s}_stop"
        t0=$(now_ms)
        "${s}_start"
        read -r ms n < <(first_staple "$t0")
        warm="$warm $ms"
        warm_n="$warm_n $n"
        "${s}_stop"
    done
    RES[$s]="$(echo "$cold" | tr ' ' '\n' | grep . | median) ms ($(echo "$cold_n" | tr ' ' '\n' | grep . | median) conn) | $(echo "$warm" | tr ' ' '\n' | grep . | median) ms ($(echo "$warm_n" | tr ' ' '\n' | grep . | median) conn)"
    echo "# $s: cold [$cold ] ms, restart [$warm ] ms" >&2
done

echo "Time from start to the first stapled handshake (median of $ROUNDS; connections it took)"
echo "| server | cold start | restart |"
echo "|---|---|---|"
for s in tlsbox nginx h2o; do
    echo "| $s | ${RES[$s]} |"
done
echo "responder requests seen: $(oc_requests)"
