#!/bin/bash
# ACME renewal: pebble issues 30-second certificates, so the one-third-left
# rule renews about every 20 s; h2load runs across the swap with 0 failures,
# and new handshakes get the new certificate with no restart.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

SITE_HTTP=$(tb_free_port)
SITE_HTTPS=$(tb_free_port)
PB_VALIDITY=30 PB_HTTP_PORT=$SITE_HTTP pb_start || bail "pebble did not start"
mkdir -p "$TB_TMP/www"
echo "hello" >"$TB_TMP/www/index.html"
pb_start_tlsbox --set acme.domains=renew.test --set "site.root=$TB_TMP/www" || bail "tlsboxd did not start"
pb_wait_served renew.test 30
ok $? "first certificate served"
s1=$(pb_served_serial renew.test)
like "$s1" "^[0-9A-F]+$" "serial of the first certificate ($s1)"
na=$(sqlite3 "$TB_STATE/tlsbox.db" "select not_after - not_before from certificates where name='renew.test'")
like "$na" "^(29|30)$" "pebble issued a 30 s certificate"

# Load across the renewal: ~25 s of requests on 4 connections.
h2load -D 25 -c 4 -m 4 --connect-to "127.0.0.1:$SITE_HTTPS" "https://renew.test:$SITE_HTTPS/" \
    >"$TB_TMP/h2load.log" 2>&1 &
h2pid=$!
s2=$s1
for _ in $(seq 1 300); do
    s2=$(pb_served_serial renew.test)
    [ -n "$s2" ] && [ "$s2" != "$s1" ] && break
    sleep 0.1
done
isnt=1
[ -n "$s2" ] && [ "$s2" != "$s1" ] && isnt=0
ok $isnt "renewed without being asked: new serial $s2"
wait $h2pid
h2=$(grep -E "^requests:" "$TB_TMP/h2load.log")
diag "h2load: $h2"
like "$h2" " 0 failed, 0 errored" "h2load across the swap: 0 failed requests"
like "$(grep -E '^status codes:' "$TB_TMP/h2load.log")" "status codes: [1-9][0-9]* 2xx" "all 200s"
like "$h2" "requests: [1-9][0-9]* total" "h2load made requests"

pb_wait_served renew.test 5
ok $? "the renewed certificate verifies"
json=$(tb_ctl --json acme status)
like "$json" "one third of the lifetime left" "the attempt records why it renewed"
like "$json" '"failures": ?0' "no failures"
n=$(sqlite3 "$TB_STATE/tlsbox.db" "select count(*) from acme_events where step='done' and ok=1")
ok $([ "$n" -ge 2 ] && echo 0 || echo 1) "at least two issuances recorded ($n)"
tb_stop_daemon
ok $? "daemon stops promptly"
done_testing
