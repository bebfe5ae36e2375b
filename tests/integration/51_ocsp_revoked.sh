#!/bin/bash
# Revocation at the responder (the real `openssl ocsp`, index rewritten):
# the next refresh says REVOKED loudly (status, log line, metric, event seen
# by the daemon), the staple leaves the bundle; a must-staple leaf without a
# valid staple carries a warning in the status.
. "$(dirname "$0")/lib.sh"
tb_setup
. "$(dirname "$0")/ocsp_lib.sh"

SITE_HTTPS=$(tb_free_port)
SITE_HTTP=$(tb_free_port)
oc_make_ca || bail "test CA"
oc_make_leaf ocsp.test 30 "tlsfeature=status_request" || bail "must-staple leaf"
oc_start_responder || bail "responder"
oc_start_tlsbox || bail "tlsboxd did not start"
tb_wait_port "$SITE_HTTPS" || bail "site not listening"
tb_ctl cert import --cert "$OC/ocsp.test.pem" --chain "$OC/inter.pem" --key "$OC/ocsp.test.key" \
    --name ocsp.test >/dev/null
oc_wait_status ocsp.test stapled true 20
ok $? "must-staple leaf stapled"
is "$(oc_status ocsp.test must_staple)" true "status knows it is must-staple"
is "$(oc_status ocsp.test warning)" null "no warning while the staple is valid"
like "$(oc_staple ocsp.test)" "Cert Status: good" "served staple says good"

oc_revoke ocsp.test
out=$(tb_ctl ocsp refresh ocsp.test)
ok $? "tlsboxctl ocsp refresh ocsp.test"
like "$out" "status +REVOKED" "the refresh shows REVOKED"
is "$(oc_status ocsp.test status)" revoked "status revoked"
is "$(oc_status ocsp.test stapled)" false "no longer stapled"
like "$(oc_status ocsp.test revoked_at)" "^[0-9]+$" "revocation time recorded"
like "$(oc_status ocsp.test warning)" "must-staple certificate without a valid staple" \
    "must-staple without a staple: warning in the status"
like "$(grep 'ERR' "$TB_TMP/daemon.log")" "ocsp: ocsp.test: certificate REVOKED \(serial" \
    "an error line in the log names the certificate"
out=$(oc_staple ocsp.test)
like "$out" "OCSP response: no response sent" "the revoked answer is not stapled"
like "$(tb_ctl metrics)" "tlsbox_ocsp_revoked_total 1" "metric counts the revocation"

# A second refresh does not repeat the alarm.
tb_ctl ocsp refresh ocsp.test >/dev/null
is "$(grep -c 'certificate REVOKED' "$TB_TMP/daemon.log")" 1 "one alarm per revocation"
tb_stop_daemon
ok $? "daemon stops"
done_testing
