#!/bin/bash
# Benchmark: time from tlsboxd start to a pebble-issued certificate served,
# and certbot standalone against the same pebble, for comparison.  Prints
# numbers; never part of make check (a race against a third-party tool).
#   top_builddir=... tests/perf/acme_certbot.sh
top_srcdir="${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}"
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/pebble.sh"
command -v certbot >/dev/null || { echo "certbot not installed: nothing to compare"; exit 0; }
tb_setup
SITE_HTTP=$(tb_free_port)
SITE_HTTPS=$(tb_free_port)
PB_HTTP_PORT=$SITE_HTTP pb_start || bail "pebble did not start"

t0=$(date +%s.%N)
pb_start_tlsbox --set acme.domains=a.test,b.test || bail "tlsboxd did not start"
pb_wait_served a.test 30 || bail "tlsboxd got no certificate"
t1=$(date +%s.%N)
tlsbox_s=$(echo "$t1 - $t0" | bc)
tb_stop_daemon

cb="$TB_TMP/certbot"
mkdir -p "$cb"
t0=$(date +%s.%N)
REQUESTS_CA_BUNDLE="$PB_CA" timeout 120 certbot certonly --standalone --non-interactive \
    --agree-tos -m admin@example.org --server "$PB_DIRECTORY" \
    --http-01-port "$SITE_HTTP" --http-01-address 127.0.0.1 \
    --config-dir "$cb/etc" --work-dir "$cb/work" --logs-dir "$cb/log" \
    -d a.test -d b.test >"$cb/out.log" 2>&1 || bail "certbot failed: $(tail -3 "$cb/out.log")"
t1=$(date +%s.%N)
certbot_s=$(echo "$t1 - $t0" | bc)
printf 'acme issuance, two names, pebble on loopback:\n'
printf '  tlsbox (daemon start to certificate served): %6.2f s\n' "$tlsbox_s"
printf '  certbot standalone:                          %6.2f s\n' "$certbot_s"
exit 0
