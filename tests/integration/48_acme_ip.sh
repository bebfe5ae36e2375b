#!/bin/bash
# An IP-address certificate (RFC 8738) from the real pebble: acme.domains
# names 127.0.0.1, the order carries an "ip" identifier, http-01 is answered
# on the site's HTTP port at that address, and the certificate (an IP SAN)
# is what a client that connects by address gets: it sends no SNI,
# and the certificate with an address comes before a host name's.  Then
# ::1, as IPv6 (the certificate named --1).  A setting that is no address
# nor host name is refused, saying so.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

SITE_HTTP=$(tb_free_port)
SITE_HTTPS=$(tb_free_port)
PB_HTTP_PORT=$SITE_HTTP pb_start || bail "pebble did not start"
pb_start_tlsbox || bail "tlsboxd did not start"

for bad in 127.0.0.256 1.2.3 "2001:db8:::1" "2001:DB8::1"; do
    out=$(tb_ctl set acme.domains "$bad" 2>&1)
    is "$?" 1 "acme.domains $bad: refused"
    like "$out" "acme.domains" "naming the setting"
done
is "$(tb_ctl get acme.domains)" "" "the setting stays empty"

# A host-name certificate first, named to sort before the address's, so
# that only the order of the bundle can give the address's to a client
# without SNI.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj "/CN=first.example" -addext "subjectAltName=DNS:first.example" \
    -keyout "$TB_TMP/first.key" -out "$TB_TMP/first.crt" 2>/dev/null
tb_ctl cert import --cert "$TB_TMP/first.crt" --key "$TB_TMP/first.key" --name 0-first >/dev/null
ok $? "a host-name certificate imported as 0-first"

tb_ctl set acme.domains 127.0.0.1 >/dev/null
ok $? "acme.domains 127.0.0.1"
served_to() { # served_to HOST: the leaf a client connecting to HOST without SNI gets, as PEM
    openssl s_client -connect "$1:$SITE_HTTPS" -noservername </dev/null 2>/dev/null |
        openssl x509 2>/dev/null
}
issued() { served_to 127.0.0.1 | openssl x509 -noout -issuer 2>/dev/null | grep -c -i pebble; }
is "$(tb_wait_says 40 1 issued)" 1 "a client that connects to 127.0.0.1 without SNI gets pebble's certificate"
served_to 127.0.0.1 >"$TB_TMP/leaf.pem"
sans=$(openssl x509 -in "$TB_TMP/leaf.pem" -noout -ext subjectAltName | tail -1 | tr -d ' ')
is "$sans" "IPAddress:127.0.0.1" "its one SAN is the address"
openssl s_client -connect "127.0.0.1:$SITE_HTTPS" -noservername -showcerts </dev/null 2>/dev/null |
    sed -n '/BEGIN CERT/,/END CERT/p' >"$TB_TMP/chain.pem"
openssl verify -CAfile "$PB_ROOT" -untrusted "$TB_TMP/chain.pem" -verify_ip 127.0.0.1 \
    "$TB_TMP/leaf.pem" >/dev/null 2>&1
ok $? "it verifies against pebble's root for the address 127.0.0.1"
is "$(curl -s --cacert "$PB_ROOT" -o /dev/null -w '%{http_code}' "https://127.0.0.1:$SITE_HTTPS/")" 404 \
    "curl https://127.0.0.1/ verifies it (404: the site has no files here)"
like "$(grep -o 'Identifier{Type:"[a-z]*", Value:"[^"]*"}' "$PB_DIR/pebble.log" | sort -u)" \
    '^Identifier\{Type:"ip", Value:"127.0.0.1"\}$' "pebble validated one identifier, of type ip (its log)"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT source || ' ' || sans FROM certificates WHERE name = '127.0.0.1'")" \
    'acme ["127.0.0.1"]' "stored as the acme certificate 127.0.0.1"
like "$(tb_ctl acme status)" "certificate 127.0.0.1 \(ecdsa-p256\)" "acme status names it"
like "$(openssl s_client -connect "127.0.0.1:$SITE_HTTPS" -servername first.example </dev/null 2>/dev/null |
    openssl x509 -noout -subject)" "CN ?= ?first.example" "a client that asks for first.example still gets that certificate"

# IPv6: ::1, named --1 (a certificate name has no colon).
tb_ctl set acme.domains ::1 >/dev/null
ok $? "acme.domains ::1"
# pebble's, and naming ::1 (the internal leaf names ::1 too: it is served
# to [::1] until then)
issued6() {
    served_to "[::1]" | openssl x509 -noout -issuer -ext subjectAltName 2>/dev/null |
        tr '\n' ' ' | grep -ic 'pebble.*IP Address:0:0:0:0:0:0:0:1'
}
is "$(tb_wait_says 40 1 issued6)" 1 "a client that connects to [::1] without SNI gets a certificate for ::1"
served_to "[::1]" >"$TB_TMP/leaf6.pem"
openssl verify -CAfile "$PB_ROOT" -untrusted "$TB_TMP/chain.pem" -verify_ip ::1 "$TB_TMP/leaf6.pem" >/dev/null 2>&1
ok $? "it verifies against pebble's root for the address ::1"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT source || ' ' || sans FROM certificates WHERE name = '--1'")" \
    'acme ["::1"]' "stored as the acme certificate --1"
like "$(grep -o 'Identifier{Type:"[a-z]*", Value:"[^"]*"}' "$PB_DIR/pebble.log" | sort -u | paste -sd' ')" \
    'Type:"ip", Value:"::1"' "ordered as an ip identifier, ::1"

# Restart: the certificate matches the setting; nothing is ordered again.
db="$TB_STATE/tlsbox.db"
n_orders=$(sqlite3 "$db" 'SELECT count(*) FROM acme_orders')
tb_stop_daemon
ok $? "tlsboxd stops cleanly"
pb_start_tlsbox || bail "tlsboxd did not start again"
is "$(tb_wait_says 20 1 issued6)" 1 "served again after a restart"
sleep 1
is "$(sqlite3 "$db" 'SELECT count(*) FROM acme_orders')" "$n_orders" "no new order after a restart"
tb_stop_daemon
ok $? "tlsboxd stops cleanly"
pb_stop
done_testing
