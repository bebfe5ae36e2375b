#!/bin/bash
# A stop during a dns-01 wait (acme.dns_wait_seconds: the record is up on
# named, the plugin waits for secondaries before the CA looks) is a stop,
# not a failed challenge: the order is kept as it was (pending, its
# challenge not answered yet), no failure is recorded, and the next start
# resumes that order instead of placing a new one.  Real named (BIND 9)
# taking the update, real pebble behind acme_forward.py (which counts the
# orders pebble took).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
. "$(dirname "$0")/bind_lib.sh"
tb_setup

bind_start stop || bail "named did not start"
SITE_HTTP=$(tb_free_port)
SITE_HTTPS=$(tb_free_port)
PB_HTTP_PORT=$SITE_HTTP PB_DNS_SERVER=$BIND_SERVER pb_start || bail "pebble did not start"
pb_start_forward || bail "acme_forward.py did not start"
dns_start() {
    PB_DIRECTORY=$FW_DIRECTORY pb_start_tlsbox --set acme.challenge=dns-01 \
        --set acme.dns_server="$BIND_SERVER" --set acme.dns_zone=example.test \
        --set acme.dns_resolver="$BIND_SERVER" --set acme.dns_tsig_key="$BIND_KEY" \
        --set acme.dns_tsig_secret="$BIND_SECRET" "$@"
}
dns_start --set acme.dns_wait_seconds=600 || bail "tlsboxd did not start"
db=$TB_STATE/tlsbox.db
name=stop.example.test
# id|status of each order for the name.
order_rows() {
    sqlite3 "$db" "select id, status from acme_orders where cert_name = '$name'
                   order by id" | tr '\n' ' '
}

tb_ctl set acme.domains "$name" >/dev/null
like "$(tb_wait_like 30 . bind_txt "_acme-challenge.$name")" . \
    "the dns-01 record is put on named; the plugin now waits 600 s for secondaries"
rows=$(order_rows)
like "$rows" '^[0-9]+\|pending $' "one order, pending ($rows)"
tb_stop_daemon
ok $? "the daemon stops promptly in that wait"
is "$(order_rows)" "$rows" "the order is kept pending, not given up as invalid"
is "$(sqlite3 "$db" "select count(*) from acme_events where cert_name = '$name' and not ok")
$(sqlite3 "$db" "select count(*) from acme_kv where key = 'challenge_failed:$name'")" "0
0" "no failure recorded, no challenge marked failed"
is "$(bind_txt "_acme-challenge.$name")" "" "the record is withdrawn"

dns_start --set acme.dns_wait_seconds=0 || bail "tlsboxd did not start again"
pb_wait_served "$name" 60
ok $? "the next start gets the certificate, served"
is "$(pb_orders_placed)" 1 "from the same order: one order placed in all"
is "$(order_rows)" "${rows%%|*}|done " "that order is done"
unlike "$(cat "$TB_TMP/daemon.log" "$FW/requests.log")" "PRIVATE KEY|$BIND_SECRET" \
    "no private key nor the TSIG secret in the daemon log or the front's log"
tb_stop_daemon
ok $? "daemon stops promptly"
done_testing
