#!/bin/bash
# OCSP stapling against the real `openssl ocsp`: a test CA (root ->
# intermediate -> leaf with an AIA OCSP URL on a loopback port), the staple on
# the first connection after the fetch and on the first one after a restart
# (with the responder gone: it comes from the store), openssl and gnutls-cli
# agree; a certificate without a responder URL and a short-lived one are
# "not applicable" and cause no request; metrics count the fetch.  With
# the policy's ocsp_stapling off the status, tlsboxctl and the staple age
# gauge say no staple is sent, and why.  A good answer whose nextUpdate is
# after the certificate expires is stapled until the certificate expires.
. "$(dirname "$0")/lib.sh"
tb_setup
. "$(dirname "$0")/ocsp_lib.sh"

SITE_HTTPS=$(tb_free_port)
SITE_HTTP=$(tb_free_port)
oc_make_ca || bail "test CA: $(tail -3 "$OC/setup.log")"
oc_make_leaf ocsp.test 30 || bail "leaf: $(tail -3 "$OC/setup.log")"
oc_make_leaf short.test 5 || bail "short leaf"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$OC/noaia.key" \
    -out "$OC/noaia.pem" -subj /CN=noaia.test -days 30 -addext subjectAltName=DNS:noaia.test \
    >/dev/null 2>&1 || bail "no-AIA certificate"
oc_start_responder || bail "responder"

oc_start_tlsbox || bail "tlsboxd did not start"
tb_wait_port "$SITE_HTTPS" || bail "site not listening"
tb_ctl cert import --cert "$OC/ocsp.test.pem" --chain "$OC/inter.pem" --key "$OC/ocsp.test.key" \
    --name ocsp.test >/dev/null
ok $? "leaf with an OCSP URL imported"
oc_wait_status ocsp.test status good 20
ok $? "ocsp status of ocsp.test turns good"
is "$(oc_status ocsp.test stapled)" true "and it is stapled"
is "$(oc_status ocsp.test responder)" "http://127.0.0.1:$OC_PORT/" "responder read from the AIA"
n_req=$(oc_requests)
is "$n_req" 1 "one request reached the responder"

# gnutls_ocsp NAME: gnutls-cli --ocsp (it checks the staple) against the site.
gnutls_ocsp() {
    timeout 10 gnutls-cli --ocsp --x509cafile "$OC/root.pem" --port "$SITE_HTTPS" \
        --sni-hostname "$1" --verify-hostname "$1" 127.0.0.1 </dev/null 2>&1
}
# staple_served NAME: what openssl s_client -status and gnutls-cli --ocsp
# are sent for NAME is a good answer for its serial, with the This and
# Next Update tlsboxctl shows.
staple_served() {
    local name=$1 out g serial when
    serial=$(openssl x509 -in "$OC/$name.pem" -noout -serial | cut -d= -f2)
    out=$(oc_staple "$name")
    like "$out" "OCSP Response Status: successful" "$name: s_client -status: successful"
    like "$out" "Cert Status: good" "$name: s_client -status: Cert Status good"
    like "$out" "Serial Number: $serial" "$name: the staple answers for the served leaf's serial"
    for when in This:this_update Next:next_update; do
        like "$out" "${when%%:*} Update: $(date -u -d "@$(oc_status "$name" "${when#*:}")" \
            '+%b %e %H:%M:%S %Y' | sed 's/  / +/')" \
            "$name: the staple's ${when%%:*} Update is the one tlsboxctl shows"
    done
    g=$(gnutls_ocsp "$name")
    like "$g" "Options: OCSP status request" "$name: gnutls-cli --ocsp: a checked OCSP staple"
    like "$g" "Status: The certificate is trusted" "$name: gnutls-cli --ocsp: trusted (good)"
    unlike "$g" "OCSP status: revoked|Cannot verify OCSP" "$name: gnutls-cli has no OCSP complaint"
}
staple_served ocsp.test

# Not applicable: no responder URL; short-lived (5 days).
tb_ctl cert import --cert "$OC/noaia.pem" --key "$OC/noaia.key" --name noaia.test >/dev/null
tb_ctl cert import --cert "$OC/short.test.pem" --chain "$OC/inter.pem" \
    --key "$OC/short.test.key" --name short.test >/dev/null
oc_wait_status noaia.test status not_applicable 10
ok $? "no responder URL: not applicable"
oc_wait_status short.test status not_applicable 10
ok $? "5-day certificate: not applicable"
like "$(oc_status short.test reason)" "short-lived" "reason says short-lived"
like "$(oc_status noaia.test reason)" "no OCSP responder URL" "reason says no responder URL"
sleep 1
is "$(oc_requests)" "$n_req" "neither caused a request to the responder"
unlike "$(grep -E 'WARN.*(noaia|short)\.test' "$TB_TMP/daemon.log")" "." "and no warning in the log"
txt=$(tb_ctl ocsp status ocsp.test)
like "$txt" "status +GOOD" "tlsboxctl ocsp status shows GOOD"
like "$txt" "next refresh" "and the next refresh"
m=$(tb_ctl metrics)
like "$m" "tlsbox_ocsp_fetches_total 2" "metrics: two fetches (ocsp.test, and the internal leaf from the core)"
like "$m" "tlsbox_ocsp_failures_total 0" "metrics: no failure"
like "$m" 'tlsbox_ocsp_staple_age_seconds\{cert="ocsp.test"\} [0-9]' "metrics: staple age"
is "$(oc_next_update_gauge ocsp.test)" "$(oc_status ocsp.test next_update)" "metrics: the answer's nextUpdate, as the status says"
is "$(oc_next_update_gauge noaia.test)" -1 "and -1 for a certificate with no revocation check"

# The same certificate imported again (a deploy hook that copies it on every
# run): the core drops the staple with the old install, so the plugin asks
# again at once and the site staples again; the status never claims a
# staple the site does not send.
tb_ctl cert import --cert "$OC/ocsp.test.pem" --chain "$OC/inter.pem" --key "$OC/ocsp.test.key" \
    --name ocsp.test >/dev/null
ok $? "the same certificate imported again"
for i in $(seq 1 50); do
    [ "$(oc_requests)" -gt "$n_req" ] && break
    sleep 0.2
done
is "$(oc_requests)" $((n_req + 1)) "one new request for the reinstalled certificate"
n_req=$(oc_requests)
# staple_shows TEXT: s_client -status output once it shows TEXT (10 s at most).
staple_shows() {
    for i in $(seq 1 50); do
        out=$(oc_staple ocsp.test)
        [[ "$out" == *"$1"* ]] && break
        sleep 0.2
    done
    printf '%s\n' "$out"
}
like "$(staple_shows "Cert Status: good")" "Cert Status: good" \
    "the reinstalled certificate is stapled again"
oc_wait_status ocsp.test failures 0 10
is "$(oc_status ocsp.test stapled)" true "and the status says stapled"

# Stapling turned off in the TLS policy: the site sends no staple, so the
# status, tlsboxctl and the staple age gauge must not say one is sent; on
# again, the stored staple is sent and the status says so again.
# stapling_to on|off TEXT STAPLED: set it, wait for s_client to show TEXT
# and the status to say STAPLED (polled: the plugin reads the policy on
# its next one-second timer firing).
stapling_to() {
    tb_ctl policy set ocsp_stapling "$([ "$1" = on ] && echo true || echo false)" >/dev/null
    ok $? "policy: ocsp_stapling $1"
    like "$(staple_shows "$2")" "$2" "stapling $1: s_client shows $2"
    oc_wait_status ocsp.test stapled "$3" 5
}
stapling_to off "OCSP response: no response sent" false
is "$(oc_status ocsp.test stapled)/$(oc_status ocsp.test status)/$(oc_status ocsp.test answer)" \
    "false/not_stapled/good" "the status says not stapled, the last answer good"
is "$(oc_status ocsp.test not_stapled_because)" "the TLS policy has ocsp_stapling off" \
    "and says why"
like "$(tb_ctl ocsp status ocsp.test)" \
    "status +not stapled - the TLS policy has ocsp_stapling off" "tlsboxctl says why"
# The gauge is set each second: poll for it rather than sleep.
for i in $(seq 1 25); do
    m=$(tb_ctl metrics)
    [[ "$m" == *'tlsbox_ocsp_staple_age_seconds{cert="ocsp.test"} -1'* ]] && break
    sleep 0.2
done
like "$m" 'tlsbox_ocsp_staple_age_seconds\{cert="ocsp.test"\} -1' \
    "metrics: staple age -1 (none sent)"
stapling_to on "Cert Status: good" true
is "$(oc_status ocsp.test stapled)/$(oc_status ocsp.test status)" "true/good" \
    "the status says stapled, good again"
is "$(oc_status ocsp.test not_stapled_because)" null "and gives no reason not to"
is "$(oc_requests)" "$n_req" "neither change asked the responder"

# Restart with the responder gone: the staple comes from the store.
tb_stop_daemon
ok $? "daemon stops"
oc_stop_responder
oc_start_tlsbox || bail "tlsboxd did not restart"
tb_wait_port "$SITE_HTTPS" || bail "site not listening after restart"
out=$(oc_staple ocsp.test)
like "$out" "OCSP Response Status: successful" "first connection after the restart: successful"
like "$out" "Cert Status: good" "first connection after the restart: good"
like "$(gnutls_ocsp ocsp.test)" "Options: OCSP status request" \
    "gnutls-cli --ocsp agrees after the restart"
sleep 1
is "$(oc_requests)" "$n_req" "no request after the restart: the staple was still fresh"

# A good answer whose nextUpdate is after the certificate expires, as a
# responder with 7-day answers gives in each certificate's last days (here
# an 8-day leaf and 9-day answers): stapled, and kept only until the
# certificate expires, by the plugin and by the core.
oc_make_leaf late.test 8 || bail "leaf late.test"
oc_start_responder -ndays 9 || bail "responder with 9-day answers"
tb_ctl cert import --cert "$OC/late.test.pem" --chain "$OC/inter.pem" --key "$OC/late.test.key" \
    --name late.test >/dev/null || bail "import late.test"
oc_wait_status late.test stapled true 20
ok $? "an answer that outlives the certificate: stapled"
is "$(oc_status late.test status)/$(oc_status late.test last_error)/$(oc_status late.test failures)" \
    "good/null/0" "status good, no error, no failure"
[ "$(oc_status late.test stapled)" = true ] ||
    bail "late.test is not stapled: $(oc_status late.test last_error)"
not_after=$(date -u -d "$(openssl x509 -in "$OC/late.test.pem" -noout -enddate | cut -d= -f2)" +%s)
tu=$(oc_status late.test this_update)
next=$(oc_status late.test next_update)
# openssl ocsp reads the clock once for each: a second may pass between.
d=$((next - tu - 9 * 86400))
ok $((d < 0 || d > 1)) "the answer's nextUpdate is kept as it is (9 days on, +$d s)"
ok $((next <= not_after)) "which is after the certificate expires (+$((next - not_after)) s)"
is "$(oc_status late.test serve_until)" "$not_after" \
    "the staple is served until the certificate expires, not after"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT serve_until, next_update FROM tls_staples
    WHERE cert_name = 'late.test'")" "$not_after|$next" \
    "the core keeps it until the certificate expires too (its nextUpdate as it is)"
nr=$(oc_status late.test next_refresh)
ok $((nr >= not_after)) "refreshed before the certificate expires ($((not_after - nr)) s before)"
like "$(grep 'late.test: OCSP good' "$TB_TMP/daemon.log")" \
    "stapled until $not_after \(nextUpdate $next, after the certificate expires\)" \
    "the log says so"
staple_served late.test # its Next Update after the certificate expires
tb_stop_daemon
done_testing
