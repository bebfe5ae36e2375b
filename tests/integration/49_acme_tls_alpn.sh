#!/bin/bash
# ACME tls-alpn-01 (RFC 8737) against the real pebble, for a box whose plain
# HTTP port is closed: site.http_port=0, so nothing can answer http-01, and
# pebble checks tls-alpn-01 on the site's HTTPS port.  acme.challenge=auto
# (the default) picks tls-alpn-01 there; the core serves the validation
# certificate to pebble's acme-tls/1 handshake and withdraws it once the
# order is done.  Then an IP address (RFC 8738: the validator sends the
# in-addr.arpa name), a refused setting, an explicit http-01 that fails
# while the certificate before it keeps serving, and auto switching to
# tls-alpn-01 after http-01 failed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

SITE_HTTP=0
SITE_HTTPS=$(tb_free_port)
# pebble's http-01 port: nothing listens there.
PB_HTTP_PORT=$(tb_free_port) PB_TLS_PORT=$SITE_HTTPS pb_start || bail "pebble did not start"
pb_start_tlsbox || bail "tlsboxd did not start"

is "$(tb_ctl get acme.challenge)" "auto" "acme.challenge is auto by default"
out=$(tb_ctl set acme.challenge http-02 2>&1)
is "$?" 1 "acme.challenge http-02: refused"
like "$out" "acme.challenge.*(auto|http-01).*tls-alpn-01" "naming the setting and the choices"
is "$(tb_ctl get acme.challenge)" "auto" "the setting stays auto"

alpn_status() { # what a client offering only acme-tls/1 negotiates for SNI $1
    openssl s_client -connect "127.0.0.1:$SITE_HTTPS" -servername "$1" -alpn acme-tls/1 \
        </dev/null 2>/dev/null | grep -E '^(ALPN protocol|No ALPN)' | head -1
}
is "$(alpn_status alpn.example)" "No ALPN negotiated" "before any order, acme-tls/1 is not negotiated"

tb_ctl set acme.domains alpn.example >/dev/null
ok $? "acme.domains alpn.example"
pb_wait_served alpn.example 40
ok $? "the certificate pebble issued for alpn.example is served and verifies against its root"
like "$(openssl s_client -connect "127.0.0.1:$SITE_HTTPS" -servername alpn.example </dev/null 2>/dev/null |
    openssl x509 -noout -issuer)" "[Pp]ebble" "issued by pebble"
answered=$(grep -c 'answered the tls-alpn-01 challenge for alpn.example' "$TB_TMP/daemon.log")
ok "$([ "$answered" -ge 1 ] && echo 0 || echo 1)" \
    "tlsboxd answered pebble's tls-alpn-01 handshake for alpn.example ($answered time(s))"
is "$(grep -c 'Attempting to validate w/ HTTP' "$PB_DIR/pebble.log")" 0 "pebble never tried http-01"
is "$(alpn_status alpn.example)" "No ALPN negotiated" \
    "after the order the answer is withdrawn: acme-tls/1 is not negotiated"
is "$(tb_ctl --json cert list | /usr/bin/python3 -c \
    'import json,sys; print(json.load(sys.stdin)["bundle"]["tls_alpn_challenges"])')" "[]" \
    "the bundle holds no tls-alpn-01 answer"
is "$(curl -s --http2 -o /dev/null -w '%{http_version} %{http_code}' --cacert "$PB_ROOT" \
    --resolve "alpn.example:$SITE_HTTPS:127.0.0.1" "https://alpn.example:$SITE_HTTPS/")" "2 404" \
    "an ordinary client gets h2 and an answer (404: no files here)"
like "$(tb_ctl acme status)" "alpn.example.*done" "acme status: the order is done"
like "$(tb_ctl acme status)" "challenge: tls-alpn-01 \(auto; else http-01\)" \
    "acme status names the challenge auto chose (no HTTP port)"

# An IP address: the validator's SNI is 1.0.0.127.in-addr.arpa.
tb_ctl set acme.domains 127.0.0.1 >/dev/null
ok $? "acme.domains 127.0.0.1"
ip_issued() { # pebble's, naming 127.0.0.1 (so does the internal leaf, served to it until then)
    openssl s_client -connect "127.0.0.1:$SITE_HTTPS" -noservername </dev/null 2>/dev/null |
        openssl x509 -noout -issuer -ext subjectAltName 2>/dev/null | tr '\n' ' ' |
        grep -ic 'pebble.*IP Address:127.0.0.1'
}
is "$(tb_wait_says 40 1 ip_issued)" 1 "127.0.0.1 issued: a client without SNI gets its certificate"
answered=$(grep -c 'answered the tls-alpn-01 challenge for 127.0.0.1' "$TB_TMP/daemon.log")
ok "$([ "$answered" -ge 1 ] && echo 0 || echo 1)" "by tls-alpn-01 for 127.0.0.1 ($answered time(s))"
is "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$PB_ROOT" "https://127.0.0.1:$SITE_HTTPS/")" 404 \
    "curl https://127.0.0.1/ verifies it"
serial_ip=$(openssl s_client -connect "127.0.0.1:$SITE_HTTPS" -noservername </dev/null 2>/dev/null |
    openssl x509 -noout -serial)

# http-01 asked for, with no HTTP port: the order fails, saying why, and
# the certificate before it is still served.
tb_ctl set acme.challenge http-01 >/dev/null
ok $? "acme.challenge http-01"
tb_ctl set acme.domains 127.0.0.1,fail.example >/dev/null
json=$(pb_wait_failure 15)
like "$json" '"failures": ?1' "the http-01 order fails once"
like "$json" 'urn:ietf:params:acme:error:connection' "with the CA's problem: no connection"
is "$(openssl s_client -connect "127.0.0.1:$SITE_HTTPS" -noservername </dev/null 2>/dev/null |
    openssl x509 -noout -serial)" "$serial_ip" "the certificate before it is still served"
is "$(alpn_status fail.example)" "No ALPN negotiated" "no tls-alpn-01 answer was put up for it"

# tls-alpn-01 asked for by name: the same order goes through.
tb_ctl set acme.challenge tls-alpn-01 >/dev/null
ok $? "acme.challenge tls-alpn-01"
status_challenge() {
    tb_ctl --json acme status | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin).get("challenge"))'
}
is "$(tb_wait_says 10 tls-alpn-01 status_challenge)" "tls-alpn-01" "acme status says tls-alpn-01"
tb_ctl acme renew >/dev/null
pb_wait_served fail.example 40
ok $? "then fail.example is issued by tls-alpn-01"
like "$(tb_ctl --json acme status)" '"failures": ?0' "the failure count is reset"

# auto with an HTTP port that the CA cannot reach (pebble checks http-01 on
# another port, as when a router blocks 80): http-01 fails, and the next
# try answers tls-alpn-01.
tb_stop_daemon
ok $? "tlsboxd stops cleanly"
http_tries=$(grep -c 'Attempting to validate w/ HTTP' "$PB_DIR/pebble.log")
SITE_HTTP=$(tb_free_port)
pb_start_tlsbox --set acme.challenge=auto --set acme.domains=alt.example || bail "tlsboxd did not start again"
json=$(pb_wait_failure 15)
like "$json" '"failures": ?1' "auto with an HTTP port: the first try (http-01) fails"
ok "$([ "$(grep -c 'Attempting to validate w/ HTTP' "$PB_DIR/pebble.log")" -gt "$http_tries" ] && echo 0 || echo 1)" \
    "  pebble tried http-01"
tb_ctl acme renew >/dev/null
pb_wait_served alt.example 40
ok $? "a person's retry answers tls-alpn-01 and alt.example is issued"
like "$(grep 'alt.example: answering' "$TB_TMP/daemon.log")" "answering tls-alpn-01 this time \(http-01 failed last time\)" \
    "  the log says it switched because http-01 failed"
ok "$([ "$(grep -c 'answered the tls-alpn-01 challenge for alt.example' "$TB_TMP/daemon.log")" -ge 1 ] && echo 0 || echo 1)" \
    "  and the core answered pebble's handshake"

tb_stop_daemon
ok $? "tlsboxd stops cleanly"
pb_stop
done_testing
