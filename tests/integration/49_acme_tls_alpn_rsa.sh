#!/bin/bash
# tls-alpn-01 under a TLS policy whose signature algorithms are RSA only (a
# box with an RSA certificate, for clients that verify RSA only): the
# validation certificate must be one the policy can sign with: RSA here
# (an ECDSA one, as always before, failed: pebble could not complete its
# handshake, "Failed to connect ... for the tls-alpn-01 challenge").  Real
# pebble checks tls-alpn-01 on the site's HTTPS port (site.http_port=0).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

SITE_HTTP=0
SITE_HTTPS=$(tb_free_port)
PB_HTTP_PORT=$(tb_free_port) PB_TLS_PORT=$SITE_HTTPS pb_start || bail "pebble did not start"
pb_start_tlsbox --set acme.key_type=rsa-2048 || bail "tlsboxd did not start"

# An RSA certificate, so that an RSA-only policy leaves a certificate to serve.
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -keyout "$TB_TMP/rsa.key" \
    -out "$TB_TMP/rsa.pem" -subj "/CN=rsa.example" -addext "subjectAltName=DNS:rsa.example" \
    2>/dev/null || bail "openssl req"
tb_ctl cert import --cert "$TB_TMP/rsa.pem" --key "$TB_TMP/rsa.key" --name rsa.example >/dev/null
ok $? "an RSA certificate imported"
tb_ctl policy set sigalgs "RSA-PSS-RSAE-SHA256,RSA-SHA256" >/dev/null
ok $? "the policy's signature algorithms: RSA only"

tb_ctl set acme.domains alpnrsa.example >/dev/null
ok $? "acme.domains alpnrsa.example (acme.key_type rsa-2048)"
pb_wait_served alpnrsa.example 40
ok $? "the certificate pebble issued by tls-alpn-01 is served and verifies"
answered=$(grep -c 'answered the tls-alpn-01 challenge for alpnrsa.example' "$TB_TMP/daemon.log")
ok "$([ "$answered" -ge 1 ] && echo 0 || echo 1)" \
    "tlsboxd answered pebble's tls-alpn-01 handshake ($answered time(s))"
like "$(grep -o 'tls-alpn-01 validation certificate for alpnrsa.example: [^ ]*' "$TB_TMP/daemon.log" | sort -u)" \
    "^tls-alpn-01 validation certificate for alpnrsa.example: rsa-2048$" \
    "  with an RSA validation certificate, the policy having no ECDSA signature"
tb_stop_daemon
ok $? "daemon stops"
pb_stop
done_testing
