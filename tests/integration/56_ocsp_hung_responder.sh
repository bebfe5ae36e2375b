#!/bin/bash
# A responder that accepts and never answers must not hold up the other
# responders' certificates: the run refreshes certificates one after
# another, so without care a1, a2 and a3 (one hung URL) would each wait
# ocsp.timeout_seconds before b.test (another URL) is asked.  After the
# first timeout the run asks that URL nothing more: a2 and a3 fail at once
# with the reason, keep their last good staple and are retried with the
# usual backoff.  Checked by counting the requests each responder got in
# one forced run, not by timing it.  A stop while a run waits on that
# responder leaves the rows of the certificates it had not reached as they
# were (the store is compared value for value), and a revocation found
# after the restart takes the old good staple out of the bundle.
. "$(dirname "$0")/lib.sh"
tb_setup
. "$(dirname "$0")/ocsp_lib.sh"

SITE_HTTPS=$(tb_free_port)
SITE_HTTP=$(tb_free_port)
PORT_B=$(tb_free_port)
oc_make_ca || bail "test CA"
for n in a1 a2 a3; do
    oc_make_leaf $n.test 30 || bail "leaf $n"
done
# b.test names the second responder URL (same CA and index, another front).
OC_PORT=$PORT_B oc_make_leaf b.test 30 || bail "leaf b"
oc_start_responder || bail "responder"
oc_start_tlsbox --set ocsp.retry_min_seconds=600 || bail "tlsboxd did not start"
tb_wait_port "$SITE_HTTPS" || bail "site not listening"
for n in a1 a2 a3 b; do
    tb_ctl cert import --cert "$OC/$n.test.pem" --chain "$OC/inter.pem" --key "$OC/$n.test.key" \
        --name $n.test >/dev/null || bail "import $n.test"
done
for n in a1 a2 a3; do
    oc_wait_status $n.test stapled true 20
    ok $? "$n.test stapled"
done
# Nothing listens on b.test's URL yet: refused, so it has no staple.
oc_wait_status b.test failures 1 20
ok $? "b.test failed once (its responder is not up yet)"
is "$(oc_status b.test stapled)" false "b.test not stapled"

oc_start_front "$PORT_B" "$OC/b" || bail "second front"
: >"$OC/hang"
: >"$OC/requests.log"
tb_ctl ocsp refresh >/dev/null
ok $? "a forced refresh of all certificates finished"
diag "b.test was fetched $(($(oc_status b.test fetched_at) - $(oc_status a1.test fetched_at))) s after a1.test"
is "$(oc_requests)" 1 "the hung responder was asked once in that run (a1.test only)"
is "$(wc -l <"$OC/b/requests.log" | tr -d ' ')" 1 "the other responder was asked for b.test"
like "$(oc_staple b.test)" "Cert Status: good" "b.test is stapled"
is "$(oc_status b.test stapled) $(oc_status b.test status) $(oc_status b.test failures)" \
    "true good 0" "status of b.test: stapled, good, no failures"

hung="http://127.0.0.1:$OC_PORT/: the responder did not answer within 3 s"
for n in a1 a2 a3; do
    is "$(oc_status $n.test stapled) $(oc_status $n.test status) $(oc_status $n.test failures)" \
        "true good 1" "status of $n.test: last good staple kept, one failure"
    like "$(oc_status $n.test last_error)" "$hung" "$n.test: the reason names the URL and timeout"
    f=$(oc_status $n.test fetched_at)
    is "$(($(oc_status $n.test next_refresh) - f))" 600 "$n.test: retried after the usual backoff"
done
unlike "$(oc_status a1.test last_error)" "not asked again" "a1.test was asked"
for n in a2 a3; do
    like "$(oc_status $n.test last_error)" "not asked again until the retry" \
        "$n.test was not asked in that run, and its status says so"
done
like "$(oc_staple a2.test)" "Cert Status: good" "a2.test keeps its last good staple"

# A stop while a run waits on the silent responder: the certificates that
# run had not reached yet keep their rows as they were (state, stapled,
# failures, backoff), or the next start would not know their staple is
# served.  a1.test is asked first (certificates come in name order); the
# timeout is raised so that the stop, not the timeout, ends the wait.
db="$TB_STATE/tlsbox.db"
rows() {
    sqlite3 "$db" "SELECT cert_name, state, stapled, this_update, next_update, serve_until,
        failures, next_refresh, ifnull(last_error, '-') FROM ocsp_certs ORDER BY cert_name"
}
tb_ctl set ocsp.timeout_seconds 30 >/dev/null
before=$(rows)
is "$(printf '%s\n' "$before" | cut -d'|' -f1-3 | paste -sd' ')" \
    "a1.test|good|1 a2.test|good|1 a3.test|good|1 b.test|good|1 internal|good|1" \
    "every row good and stapled (the internal CA's leaf too)"
: >"$OC/requests.log"
is "$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$TB_STATE/control.sock" \
    -X POST -d '{}' http://x/api/v1/ocsp/refresh)" 202 "a forced refresh of all is queued"
held=1
for _ in $(seq 1 150); do
    [ "$(oc_requests)" -ge 1 ] && held=0 && break
    sleep 0.1
done
ok $held "the run asked the silent responder for a1.test and waits"
tb_stop_daemon TERM 10
ok $? "daemon stops within 10 s while the run waits"
like "$(cat "$TB_TMP/daemon.log")" "a1.test: http://127.0.0.1:$OC_PORT/: cancelled \(stopping\)" \
    "the wait was cancelled by the stop"
is "$(rows)" "$before" "every row is as it was before the interrupted run"

# After the restart, a revocation of a certificate the interrupted run
# skipped takes its staple out of what clients get.
rm -f "$OC/hang"
oc_revoke a3.test || bail "responder restart"
oc_start_tlsbox || bail "tlsboxd did not start again"
tb_wait_port "$SITE_HTTPS" || bail "site not listening after the restart"
like "$(oc_staple a3.test)" "Cert Status: good" "after the restart a3.test is still served its staple"
out=$(tb_ctl ocsp refresh a3.test)
like "$out" "status +REVOKED" "a3.test is now revoked"
like "$(tb_wait_like 10 "no response sent" oc_staple a3.test)" "OCSP response: no response sent" \
    "and its old good staple is no longer served"
is "$(sqlite3 "$db" "SELECT state, stapled FROM ocsp_certs WHERE cert_name = 'a3.test'")" \
    "revoked|0" "the store says revoked, not stapled"
like "$(oc_staple a2.test)" "Cert Status: good" "a2.test still served its staple"
tb_stop_daemon
ok $? "daemon stops"
done_testing
