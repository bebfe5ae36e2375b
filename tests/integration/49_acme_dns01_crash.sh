#!/bin/bash
# A dns-01 record put on the customer's DNS server outlives a crash of
# tlsboxd no longer: killed (SIGKILL) after the record is put and the
# authorization is valid, but before the record is withdrawn, tlsboxd finds
# the record in its acme_dns_records table at the next start and withdraws
# it, although the resumed order needs no dns-01 answer any more (its
# authorization is valid).  Real named (BIND 9) taking the update, real
# pebble behind acme_forward.py, which holds the order "pending" with its
# authorization valid (order_pending) so that the kill lands in that window.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
. "$(dirname "$0")/bind_lib.sh"
tb_setup

bind_start crash || bail "named did not start"
SITE_HTTP=$(tb_free_port)
SITE_HTTPS=$(tb_free_port)
PB_HTTP_PORT=$SITE_HTTP PB_DNS_SERVER=$BIND_SERVER pb_start || bail "pebble did not start"
pb_start_forward || bail "acme_forward.py did not start"
dns_start() {
    PB_DIRECTORY=$FW_DIRECTORY pb_start_tlsbox --set acme.challenge=dns-01 \
        --set acme.dns_server="$BIND_SERVER" --set acme.dns_zone=example.test \
        --set acme.dns_resolver="$BIND_SERVER" --set acme.dns_tsig_key="$BIND_KEY" \
        --set acme.dns_tsig_secret="$BIND_SECRET"
}
db=$TB_STATE/tlsbox.db
name=crash.example.test
record=_acme-challenge.$name
# Answered order fetches: with order_pending, the first comes once the
# flow saw the authorization valid (it polls the authorization first).
order_fetches() { grep -c ' order POST .* 200$' "$FW/requests.log"; }
rows() { sqlite3 "$db" "select fqdn, value, server, zone from acme_dns_records order by id"; }

touch "$FW/order_pending"
dns_start || bail "tlsboxd did not start"
tb_ctl set acme.domains "$name" >/dev/null
is "$(tb_wait_says 60 2 order_fetches)" 2 \
    "the authorization is valid and the order held pending: the flow polls it"
value=$(bind_txt "$record")
like "$value" '^[A-Za-z0-9_-]{43}$' "the dns-01 record is on named, not yet withdrawn ($value)"
is "$(rows)" "$record|$value|$BIND_SERVER|example.test" \
    "acme_dns_records holds that record: the name, the value, the server and the zone"

kill -KILL "$TB_PID"
wait "$TB_PID" 2>/dev/null
TB_PID=""
is "$(bind_txt "$record")" "$value" "tlsboxd killed: the record is still on named"

rm -f "$FW/order_pending"
puts_before=$(grep -c 'dns-01 record put on' "$TB_TMP/daemon.log")
dns_start || bail "tlsboxd did not start again"
pb_wait_served "$name" 60
ok $? "the next start finishes the order: the certificate is served"
like "$(cat "$TB_TMP/daemon.log")" "$name: ordering \(resuming an unfinished order\)" \
    "  from the same order"
is "$(grep -c 'dns-01 record put on' "$TB_TMP/daemon.log")" "$puts_before" \
    "  whose authorization was valid: no record put again"
is "$(tb_wait_says 20 "" bind_txt "$record")" "" "the record left by the killed run is gone from named"
like "$(grep 'dns-01 record left by an earlier run' "$TB_TMP/daemon.log")" \
    "dns-01 record left by an earlier run withdrawn: $record TXT \"$value\" on $BIND_SERVER" \
    "  and the log says which one was withdrawn, and where"
like "$(sed -n 's/.*updating zone .example.test[^:]*: \(.*\)/\1/p' "$BIND_DIR/named.log" | paste -sd'|')" \
    "^adding an RR at '$record' TXT \"$value\"\|deleting an RR at '?$record'? TXT" \
    "named's log: that TXT added, then deleted"
is "$(sqlite3 "$db" 'select count(*) from acme_dns_records')" 0 "acme_dns_records is empty"
unlike "$(cat "$TB_TMP/daemon.log" "$FW/requests.log")" "PRIVATE KEY|$BIND_SECRET" \
    "no private key nor the TSIG secret in the daemon log or the front's log"
tb_stop_daemon
ok $? "daemon stops promptly"
pb_stop
bind_stop
done_testing
