#!/bin/bash
# Revocation at the responder (the real `openssl ocsp`, index rewritten):
# the next refresh says REVOKED loudly (status, log line, metric, event seen
# by the daemon), the staple leaves the bundle; a must-staple leaf without a
# valid staple carries a warning in the status.  A revocation takes the
# served staple away even when the plugin lost its row for that certificate.
. "$(dirname "$0")/lib.sh"
tb_setup
. "$(dirname "$0")/ocsp_lib.sh"

SITE_HTTPS=$(tb_free_port)
SITE_HTTP=$(tb_free_port)
oc_make_ca || bail "test CA"
oc_make_leaf ocsp.test 30 "tlsfeature=status_request" || bail "must-staple leaf"
for n in lost.test; do
    oc_make_leaf $n 30 || bail "leaf $n"
done
oc_start_responder || bail "responder"
oc_start_tlsbox || bail "tlsboxd did not start"
tb_wait_port "$SITE_HTTPS" || bail "site not listening"
for n in ocsp.test lost.test; do
    tb_ctl cert import --cert "$OC/$n.pem" --chain "$OC/inter.pem" --key "$OC/$n.key" \
        --name $n >/dev/null || bail "import $n"
done
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

# The plugin lost the row of a stapled certificate (an older tlsbox pruned
# the rows of the certificates a stop kept a run from reaching) while the
# core still serves its good staple: a REVOKED answer must take that
# staple away all the same.
db="$TB_STATE/tlsbox.db"
oc_wait_status lost.test stapled true 20
ok $? "lost.test stapled"
like "$(oc_staple lost.test)" "Cert Status: good" "lost.test is served a good staple"
tb_stop_daemon
ok $? "daemon stops"
sqlite3 "$db" "DELETE FROM ocsp_certs WHERE cert_name = 'lost.test'"
is "$(sqlite3 "$db" "SELECT count(*) FROM ocsp_certs WHERE cert_name = 'lost.test'")" 0 \
    "lost.test's row is gone"
oc_revoke lost.test || bail "responder restart"
oc_start_tlsbox || bail "tlsboxd did not start again"
tb_wait_port "$SITE_HTTPS" || bail "site not listening after the restart"
oc_wait_status lost.test status revoked 20
ok $? "after the restart, lost.test is found revoked"
like "$(tb_wait_like 10 "no response sent" oc_staple lost.test)" "OCSP response: no response sent" \
    "and its old good staple is no longer served"
is "$(sqlite3 "$db" "SELECT state, stapled FROM ocsp_certs WHERE cert_name = 'lost.test'")" \
    "revoked|0" "the store says revoked, not stapled"
tb_stop_daemon
ok $? "daemon stops"
done_testing
