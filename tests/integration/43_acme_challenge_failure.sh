#!/bin/bash
# A failing challenge (pebble validates on the wrong HTTP port): the attempt is
# recorded with the CA's problem type and detail, the backoff schedules the
# next try, and the old certificate is still served.  Fixing it recovers.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

SITE_HTTP=$(tb_free_port)
SITE_HTTPS=$(tb_free_port)
PB_HTTP_PORT=$SITE_HTTP pb_start || bail "pebble did not start"
# http-01 by name: under auto, the try after an http-01 failure would answer
# tls-alpn-01 (49_acme_tls_alpn.sh tests that); here the fix must recover.
pb_start_tlsbox --set acme.challenge=http-01 --set acme.domains=fail.test || bail "tlsboxd did not start"
pb_wait_served fail.test 30
ok $? "first certificate served"
s1=$(pb_served_serial fail.test)
cp "$PB_ROOT" "$TB_TMP/root1.pem"

# pebble now validates http-01 on a port where nobody listens.
pb_stop
PB_HTTP_PORT=$(tb_free_port)
pb_restart || bail "pebble did not restart"
before=$(date +%s)
tb_ctl acme renew --force >/dev/null
ok $? "forced renewal requested"
json=$(pb_wait_failure 10)
like "$json" '"failures": ?1' "one failure recorded"
like "$json" '"step": ?"challenge"' "the failing step is named"
like "$json" 'urn:ietf:params:acme:error:connection' "the CA's problem type is kept"
like "$json" 'fail.test: .*connection refused' "the detail names the domain and the cause"
next=$(printf '%s' "$json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["certificates"][0]["next_attempt"])')
delay=$((next - before))
diag "next attempt in ${delay} s"
ok $([ "$delay" -ge 55 ] && [ "$delay" -le 70 ] && echo 0 || echo 1) "backoff: next attempt in about 1 minute"
st=$(tb_ctl acme status)
like "$st" "fail.test +challenge +FAILED urn:ietf:params:acme:error:connection" "tlsboxctl shows the failed attempt"
like "$st" "failures +1 in a row" "tlsboxctl shows the failure count"
like "$(grep WARN "$TB_TMP/daemon.log")" "fail.test: challenge failed .*next in" "the log says what failed and when it retries"

is "$(pb_served_serial fail.test)" "$s1" "the old certificate is still served"
curl -s -o /dev/null --resolve "fail.test:$SITE_HTTPS:127.0.0.1" --cacert "$TB_TMP/root1.pem" \
    "https://fail.test:$SITE_HTTPS/"
ok $? "and still verifies against the old root"

# No hammering: a restart with changed names (due now) still waits out the backoff.
n1=$(sqlite3 "$TB_STATE/tlsbox.db" "select count(*) from acme_events")
tb_stop_daemon
pb_start_tlsbox --set acme.challenge=http-01 --set acme.domains=fail.test,www.fail.test || bail "tlsboxd did not restart"
sleep 2
is "$(sqlite3 "$TB_STATE/tlsbox.db" "select count(*) from acme_events")" "$n1" \
    "nothing is retried before the backoff ends (even after a restart)"
like "$(tb_ctl --json acme status)" "\"next_attempt\": ?$next" "status keeps the scheduled attempt"
is "$(pb_served_serial fail.test)" "$s1" "the old certificate is served after the restart"

# Fix pebble's port; a person's renew retries at once and recovers.
pb_stop
PB_HTTP_PORT=$SITE_HTTP
pb_restart || bail "pebble did not restart"
tb_ctl acme renew >/dev/null
pb_wait_served www.fail.test 30
ok $? "after the fix the new certificate (with the added name) verifies against the new root"
isnt=$([ "$(pb_served_serial fail.test)" != "$s1" ] && echo 0 || echo 1)
ok $isnt "and it is a new certificate"
like "$(tb_ctl --json acme status)" '"failures": ?0' "failure count reset by the success"
like "$(tb_ctl acme status)" "fail.test +done +ok: acme.domains changed" "the reason is recorded"
tb_stop_daemon
ok $? "daemon stops promptly"
done_testing
