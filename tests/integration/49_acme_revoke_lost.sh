#!/bin/bash
# A revoke whose answer was lost: the CA revoked the certificate, but the
# daemon never heard (acme_forward.py in front of the real pebble forwards
# the revoke and answers 504 in its place, DIR/revoke_lost).
# The revoke asked for again gets pebble's own 400 alreadyRevoked: that is
# taken as done (the certificate is revoked), noted in the log, and a
# replacement is ordered and served.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

pb_setup_forward
PB_DIRECTORY=$FW_DIRECTORY pb_start_tlsbox || bail "tlsboxd did not start"

# Revokes that reached the front, by what it answered: "504 400 other".
revokes() {
    echo "$(grep -c ' revoke POST .* 504$' "$FW/requests.log")" \
        "$(grep -c ' revoke POST .* 400$' "$FW/requests.log")" \
        "$(grep ' revoke POST ' "$FW/requests.log" | grep -vc ' \(504\|400\)$')"
}
# The newest revoke event (the replacement's events come after it).
REV='([x for x in s.get("events", []) if x["step"] == "revoke"] or [{}])[0]'

orders_placed() { grep -c ' newOrder .* 201$' "$FW/requests.log"; }
# pebble's view of a serial (hex, as openssl prints it): Valid or Revoked.
pb_cert_status() {
    curl -sf --max-time 5 --cacert "$PB_CA" "$PB_MGMT/cert-status-by-serial/$1" |
        python3 -c 'import json,sys; print(json.load(sys.stdin).get("Status"))' 2>/dev/null
}
tb_ctl set acme.domains lost.test >/dev/null
pb_wait_served lost.test 60
ok $? "the first certificate is issued and served"
serial=$(pb_served_serial lost.test)
is "$(pb_cert_status "$serial")" Valid "pebble has it valid"

# The first revoke reaches pebble; its answer never comes back.
touch "$FW/revoke_lost"
tb_ctl acme revoke lost.test >/dev/null
pb_st_until "$REV.get(\"ok\") is False" 30
ok $? "the revoke whose answer was lost is recorded as failed"
like "$(pb_st_get "$REV.get(\"detail\")")" "HTTP 504 with no problem document" \
    "as an HTTP 504"
is "$(tb_wait_says 5 "1 0 0" revokes)" "1 0 0" "one revoke reached the CA, its answer lost"
is "$(pb_cert_status "$serial")" Revoked "yet pebble revoked the certificate"
is "$(pb_served_serial lost.test)" "$serial" "not knowing, the daemon still serves it"
is "$(orders_placed)" 1 "and orders no replacement"

# Asked again: pebble answers 400 alreadyRevoked.
rm -f "$FW/revoke_lost"
tb_ctl acme revoke lost.test >/dev/null
pb_st_until "$REV.get(\"ok\") is True" 30
ok $? "the revoke answered alreadyRevoked is recorded as done"
is "$(tb_wait_says 5 "1 1 0" revokes)" "1 1 0" "the second revoke was answered 400 (alreadyRevoked)"
like "$(pb_st_get "$REV.get(\"detail\")")" \
    "^revoked on request \(the CA had revoked it already: an earlier revoke's answer was lost\); a replacement is being ordered\$" \
    "the event says the CA had revoked it already"
like "$(grep 'lost.test' "$TB_TMP/daemon.log")" \
    "lost.test: the CA answered alreadyRevoked: taken as done" "the log notes it"
s2=$(pb_wait_new_serial lost.test "$serial" 60)
ok $? "a replacement is ordered and served ($serial -> $s2)"
pb_wait_served lost.test 5
ok $? "it verifies against pebble's root"
is "$(pb_cert_status "$s2")" Valid "the replacement is valid at pebble"
is "$(orders_placed)" 2 "by one new order"
unlike "$(cat "$TB_TMP/daemon.log" "$FW/requests.log")" "PRIVATE KEY" \
    "no private key in the daemon log or the front's log"
tb_stop_daemon
ok $? "daemon stops promptly"
done_testing
