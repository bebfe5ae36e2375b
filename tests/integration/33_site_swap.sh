#!/bin/bash
# Live swaps under load: a TLS policy change and a certificate import while
# h2load runs must give 0 failed requests; connections keep the bundle they
# started with, new handshakes get the new one.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start
ok $? "tlsboxd serves the site"
for i in 1 2 3; do
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$TB_TMP/swap$i.key" -out "$TB_TMP/swap$i.pem" -days 30 -subj /CN=localhost \
        -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null
done

# Swap policy and certificate a few times while $1 runs; report via files.
swap_during() {
    local log=$1 gen0 i
    shift
    gen0=$(site_generation)
    timeout 120 "$@" >"$log" 2>&1 &
    local load=$!
    local fails=0
    SWAPS_DURING=0
    sleep 0.1
    for i in 1 2 3; do
        site_policy modern || fails=$((fails + 1))
        kill -0 $load 2>/dev/null && SWAPS_DURING=$((SWAPS_DURING + 1))
        site_cert_import "swap$i" "$TB_TMP/swap$i.pem" "$TB_TMP/swap$i.key" || fails=$((fails + 1))
        kill -0 $load 2>/dev/null && SWAPS_DURING=$((SWAPS_DURING + 1))
        site_policy intermediate || fails=$((fails + 1))
        kill -0 $load 2>/dev/null && SWAPS_DURING=$((SWAPS_DURING + 1))
    done
    wait $load
    SWAP_RC=$?
    SWAP_FAILS=$fails
    SWAP_GENS=$(($(site_generation) - gen0))
}

swap_during "$TB_TMP/h2load1" h2load -n 20000 -c 20 -m 10 "$URL/f16k.txt"
is "$SWAP_RC" 0 "h2load -n 20000 -c 20 -m 10 ran to the end"
is "$SWAP_FAILS" 0 "every policy change and certificate import was accepted"
like "$(grep '^requests:' "$TB_TMP/h2load1")" "20000 succeeded, 0 failed, 0 errored, 0 timeout" \
    "0 failed requests across the swaps (h2, keep-alive)"
diag "$(grep -E '^(finished|requests|status codes)' "$TB_TMP/h2load1")"
ok "$([ "${SWAP_GENS:-0}" -ge 3 ]; echo $?)" "the bundle was rebuilt $SWAP_GENS times"
ok "$([ "$SWAPS_DURING" -ge 2 ]; echo $?)" "$SWAPS_DURING of the changes landed while h2load ran"

# New handshakes all the time: one request per connection.
swap_during "$TB_TMP/h2load2" h2load --h1 -n 3000 -c 10 -H 'Connection: close' "$URL/f16k.txt"
is "$SWAP_RC" 0 "h2load with a handshake per request ran to the end"
like "$(grep '^requests:' "$TB_TMP/h2load2")" "3000 succeeded, 0 failed, 0 errored, 0 timeout" \
    "0 failed requests while new handshakes meet new bundles"
diag "$(grep -E '^(finished|requests)' "$TB_TMP/h2load2")"
ok "$([ "$SWAPS_DURING" -ge 2 ]; echo $?)" "$SWAPS_DURING of the changes landed while h2load ran"

# The last certificate imported is the one new clients can get; the old ones still verify.
cat "$CA" "$TB_TMP"/swap?.pem >"$TB_TMP/trust.pem"
is "$(curl -s --cacert "$TB_TMP/trust.pem" -o /dev/null -w '%{http_code}' "$URL/sub/")" 200 \
    "the site still serves after the swaps"
# Workers publish their gauges about once a second, later on a loaded
# machine: wait (bounded) for the count to settle rather than for a time.
for _ in $(seq 1 100); do
    site_api GET metrics | grep -q 'tlsbox_site_connections_open":0' && break
    sleep 0.1
done
like "$(site_api GET metrics)" 'tlsbox_site_connections_open":0' "no connection left open"
tb_stop_daemon
ok $? "daemon stops"
done_testing
