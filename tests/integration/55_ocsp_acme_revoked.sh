#!/bin/bash
# An ACME certificate found revoked by OCSP is replaced at once: pebble
# issues a.test with an AIA OCSP URL pointing at the real `openssl ocsp`,
# which signs with pebble's own intermediate key (from pebble's management
# interface) and lists the certificate; revoked there, the ocsp plugin's next
# refresh says REVOKED and the acme plugin orders a new certificate, which is
# then served.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup
. "$(dirname "$0")/ocsp_lib.sh"

SITE_HTTP=$(tb_free_port)
SITE_HTTPS=$(tb_free_port)
PB_OCSP_URL="http://127.0.0.1:$OC_PORT/"
PB_HTTP_PORT=$SITE_HTTP pb_start || bail "pebble did not start"
curl -sf --cacert "$PB_CA" "$PB_MGMT/intermediates/0" >"$OC/inter.pem" &&
    curl -sf --cacert "$PB_CA" "$PB_MGMT/intermediate-keys/0" >"$OC/inter.key" ||
    bail "pebble's intermediate and its key"

pb_start_tlsbox --set acme.domains=a.test --set ocsp.timeout_seconds=3 || bail "tlsboxd did not start"
pb_wait_served a.test 30
ok $? "a.test issued by pebble and served"
tb_ctl cert export a.test | openssl x509 >"$OC/a.test.pem"
first=$(openssl x509 -in "$OC/a.test.pem" -noout -serial | cut -d= -f2)
is "$(openssl x509 -in "$OC/a.test.pem" -noout -ocsp_uri)" "$PB_OCSP_URL" \
    "pebble wrote the responder URL into the certificate"
exp=$(date -u -d "$(openssl x509 -in "$OC/a.test.pem" -noout -enddate | cut -d= -f2)" +%y%m%d%H%M%SZ)
printf 'V\t%s\t\t%s\tunknown\t/CN=a.test\n' "$exp" "$first" >"$OC/index.txt"
oc_start_responder || bail "responder"

out=$(tb_ctl ocsp refresh a.test)
like "$out" "status +GOOD" "pebble's certificate is good at the responder"
like "$(oc_staple a.test)" "Cert Status: good" "and stapled"

oc_revoke a.test || bail "responder restart"
out=$(tb_ctl ocsp refresh a.test)
like "$out" "status +REVOKED" "revoked at the responder: REVOKED"
for i in $(seq 1 300); do
    s=$(pb_served_serial a.test)
    [ -n "$s" ] && [ "$s" != "$first" ] && break
    sleep 0.1
done
ok "$([ -n "$s" ] && [ "$s" != "$first" ] && echo 0 || echo 1)" \
    "a new certificate is served ($first -> $s)"
pb_wait_served a.test 5
ok $? "the new certificate verifies against pebble's root"
like "$(cat "$TB_TMP/daemon.log")" "acme: a.test: revoked \(OCSP\); ordering a replacement now" \
    "the acme plugin says why it replaced it"
for i in $(seq 1 50); do [ "$(oc_status a.test status)" != revoked ] && break; sleep 0.2; done
unlike "$(oc_status a.test status)" "revoked" "the OCSP status follows the new certificate"
tb_stop_daemon
ok $? "daemon stops"
done_testing
