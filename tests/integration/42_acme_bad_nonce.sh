#!/bin/bash
# pebble rejecting half of all good nonces (PEBBLE_WFE_NONCEREJECT=50): every
# issuance still succeeds, retrying badNonce with the fresh nonce it carries.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

SITE_HTTP=$(tb_free_port)
SITE_HTTPS=$(tb_free_port)
PB_ENV="PEBBLE_WFE_NONCEREJECT=50" PB_HTTP_PORT=$SITE_HTTP pb_start || bail "pebble did not start"
pb_start_tlsbox --set acme.domains=nonce.test,www.nonce.test || bail "tlsboxd did not start"
pb_wait_served nonce.test 30
ok $? "issued despite 50% badNonce"
prev=$(pb_served_serial nonce.test)
for round in 1 2 3; do
    tb_ctl acme renew --force >/dev/null
    new=$prev
    for _ in $(seq 1 200); do
        new=$(pb_served_serial nonce.test)
        [ -n "$new" ] && [ "$new" != "$prev" ] && break
        sleep 0.1
    done
    ok $([ -n "$new" ] && [ "$new" != "$prev" ] && echo 0 || echo 1) \
        "forced renewal $round succeeded (serial $new)"
    prev=$new
done
db="$TB_STATE/tlsbox.db"
is "$(sqlite3 "$db" 'select count(*) from acme_events where ok=0')" 0 "no failed attempt recorded"
is "$(sqlite3 "$db" "select count(*) from acme_events where step='done' and ok=1")" 4 \
    "four issuances recorded"
retries=$(tb_ctl metrics 2>/dev/null | grep -E '^tlsbox_acme_bad_nonce_total' | awk '{print $2}')
diag "badNonce answers retried: ${retries:-?}"
ok $([ "${retries:-0}" -gt 0 ] 2>/dev/null && echo 0 || echo 1) "badNonce retries were needed and counted"
pebble_bad=$(grep -c "badNonce\|bad nonce" "$PB_DIR/pebble.log")
diag "pebble log lines about bad nonces: $pebble_bad"
tb_stop_daemon
ok $? "daemon stops promptly"
done_testing
