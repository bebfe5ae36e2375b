#!/bin/bash
# Responder outage with short-lived answers (`openssl ocsp -nmin 1`: 60 s):
# the staple stays through failed refreshes (retried with backoff), leaves
# the bundle before its nextUpdate (at nextUpdate - a quarter of its
# validity), and no connection ever gets a staple past its nextUpdate.
# Once a connection got no staple, the status asked right after it says so
# ("stapled": false, status "expired", not "good"), also while a refresh is
# held up by a responder that accepts and never answers.  The staple age
# on /metrics says the same then (-1: no staple), not the last run's age.
. "$(dirname "$0")/lib.sh"
tb_setup
. "$(dirname "$0")/ocsp_lib.sh"

SITE_HTTPS=$(tb_free_port)
SITE_HTTP=$(tb_free_port)
oc_make_ca || bail "test CA"
oc_make_leaf ocsp.test 30 || bail "leaf"
oc_start_responder -nmin 1 || bail "responder"
oc_start_tlsbox --set ocsp.retry_min_seconds=4 || bail "tlsboxd did not start"
tb_wait_port "$SITE_HTTPS" || bail "site not listening"
tb_ctl cert import --cert "$OC/ocsp.test.pem" --chain "$OC/inter.pem" --key "$OC/ocsp.test.key" \
    --name ocsp.test >/dev/null
oc_wait_status ocsp.test stapled true 20
ok $? "stapled with a 60 s answer"
tu=$(oc_status ocsp.test this_update)
nu=$(oc_status ocsp.test next_update)
su=$(oc_status ocsp.test serve_until)
nr=$(oc_status ocsp.test next_refresh)
is "$((nu - tu))" 60 "validity 60 s"
is "$((su - tu))" 45 "served until nextUpdate - 15 s (a quarter)"
ok "$([ "$nr" -ge $((tu + 30)) ] && [ "$nr" -le $((tu + 36)) ] && echo 0 || echo 1)" \
    "refresh planned at half the validity plus jitter (+$((nr - tu)) s)"

# After a connection that got no staple, the status (asked after it, so no
# race: the core drops the staple at serve_until, never before) must say no
# staple is sent and why: "expired", not the last answer's "good".
unstapled=0 wrong=0
check_unstapled() {
    printf '%s\n' "$1" | grep -q 'OCSP response: no response sent' || return 0
    unstapled=$((unstapled + 1))
    local st
    st="$(oc_status ocsp.test stapled) $(oc_status ocsp.test status)"
    [ "$st" = "false expired" ] && return 0
    wrong=$((wrong + 1))
    diag "a connection got no staple at $(date +%s) (serve_until $su), the status then said: $st"
}

oc_stop_responder
stale=0 kept=0 dropped=0 samples=0
while [ "$(date +%s)" -le $((nu + 3)) ] && [ "$samples" -lt 120 ]; do
    samples=$((samples + 1))
    out=$(oc_staple ocsp.test)
    now=$(date +%s)
    next=$(printf '%s\n' "$out" | sed -n 's/^ *Next Update: //p' | head -1)
    fails=$(oc_status ocsp.test failures)
    check_unstapled "$out"
    if [ -n "$next" ]; then
        [ "$(date -d "$next" +%s)" -le "$now" ] && stale=$((stale + 1))
        [ "$fails" -ge 1 ] && kept=$((kept + 1))
    elif [ "$now" -gt "$su" ] && [ "$now" -lt "$nu" ]; then
        dropped=$((dropped + 1))
    fi
    sleep 1
done
diag "$samples connections: $kept stapled after a failed refresh, $dropped unstapled between serve_until and nextUpdate, $stale stale"
is "$stale" 0 "no connection got a staple past its nextUpdate"
ok "$([ "$kept" -ge 1 ] && echo 0 || echo 1)" "the last good staple was kept after failed refreshes ($kept)"
ok "$([ "$dropped" -ge 3 ] && echo 0 || echo 1)" "and dropped before nextUpdate ($dropped connections)"
f=$(oc_status ocsp.test failures)
ok "$([ "$f" -ge 2 ] && echo 0 || echo 1)" "refresh retried with backoff ($f failures)"
is "$(oc_status ocsp.test stapled)" false "status: not stapled"
ok "$([ "$unstapled" -ge 3 ] && echo 0 || echo 1)" "connections without a staple were seen ($unstapled)"
is "$wrong" 0 "after each, the status said not stapled, expired"
is "$(oc_status ocsp.test answer)" good "the last answer is still shown as good"
like "$(tb_ctl ocsp status ocsp.test)" "EXPIRED - no staple is sent" "tlsboxctl says the staple expired"
like "$(oc_status ocsp.test last_error)" "127.0.0.1:$OC_PORT" "last error names the responder"
like "$(cat "$TB_TMP/daemon.log")" "ocsp.test: OCSP staple dropped" "log says the staple was dropped"

# The responder is back: the next retry staples again.
oc_start_responder -nmin 1 || bail "responder restart"
tb_ctl ocsp refresh ocsp.test >/dev/null
like "$(oc_staple ocsp.test)" "Cert Status: good" "stapled again once the responder answers"
is "$(oc_status ocsp.test failures)" 0 "failures reset"
is "$(oc_status ocsp.test status)" good "status good again"
# The gauge is judged at most a second before the status is asked.
metric_age() {
    tb_ctl metrics | sed -n 's/^tlsbox_ocsp_staple_age_seconds{cert="ocsp.test"}[ =:]*//p'
}
g=$(metric_age)
a=$(oc_status ocsp.test staple_age)
ok "$([ -n "$g" ] && [ "$g" -ge 0 ] && [ "$g" -le "$a" ] && [ "$a" -le $((g + 2)) ] && echo 0 || echo 1)" \
    "metrics: staple age $g s, as the status says ($a s)"

# A responder that accepts and never answers: the refresh (planned from
# this_update + 30 s) waits 30 s for it, past serve_until (+45 s); the core
# drops the staple on time and the status must say so then, not when the
# stalled refresh gives up.
tb_ctl set ocsp.timeout_seconds 30 >/dev/null
: >"$OC/hang"
n_hang=$(oc_requests)
su=$(oc_status ocsp.test serve_until)
nr0=$(oc_status ocsp.test next_refresh)
unstapled=0 wrong=0
while [ "$(date +%s)" -le $((su + 3)) ]; do
    check_unstapled "$(oc_staple ocsp.test)"
    sleep 0.5
done
ok "$([ "$unstapled" -ge 2 ] && echo 0 || echo 1)" \
    "connections got no staple while the refresh was stalled ($unstapled)"
is "$(oc_status ocsp.test failures)" 0 "the refresh was still stalled then"
is "$wrong" 0 "after each, the status said not stapled, expired"
is "$(oc_status ocsp.test status) $(metric_age)" "expired -1" \
    "metrics: no staple age while the refresh is stalled (-1), as the status says"
oc_wait_status ocsp.test failures 1 40
ok $? "the stalled refresh gave up"
is "$(oc_status ocsp.test status)" expired "status still expired"
# The refresh began at nr0 at the earliest and failed 30 s later; the
# 4 s backoff counts from then, not from the start of the run.
nr1=$(oc_status ocsp.test next_refresh)
ok "$([ "$nr1" -ge $((nr0 + 33)) ] && echo 0 || echo 1)" \
    "the retry is planned from the failure (+$((nr1 - nr0)) s after the refresh was due)"

# The retry meets the same silent responder.  A stop must not wait the
# 30 s timeout for it, and is not the responder's failure.  Requests since
# the responder went silent: the stalled refresh, then the retry.
held=1
for _ in $(seq 1 150); do
    [ "$(oc_requests)" -ge $((n_hang + 2)) ] && held=0 && break
    sleep 0.1
done
ok $held "the retry went out and is held by the responder"
sleep 0.5
is "$(oc_status ocsp.test failures)" 1 "the held retry has not failed yet"
tb_stop_daemon TERM 5
ok $? "daemon stops within 5 s while a refresh waits on a silent responder"
like "$(cat "$TB_TMP/daemon.log")" "ocsp.test: http://127.0.0.1:$OC_PORT[^ ]*: cancelled \(stopping\)" \
    "the log says the refresh was cancelled by the stop"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT failures FROM ocsp_certs WHERE cert_name='ocsp.test'")" 1 \
    "the cancelled refresh is not counted as a failure"
rm -f "$OC/hang"
done_testing
