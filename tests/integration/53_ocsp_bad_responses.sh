#!/bin/bash
# Bad answers from the responder's address are refused and the last good
# staple stays: signed by a key that is not the issuer's, an answer about
# another certificate, and an expired answer.  The first two come from the
# real `openssl ocsp` (non-server mode), the third is crafted with python3
# (openssl cannot date an answer in the past).  An answer older than the
# one held (replayed or cached, still within its validity) is refused too.
. "$(dirname "$0")/lib.sh"
tb_setup
. "$(dirname "$0")/ocsp_lib.sh"

SITE_HTTPS=$(tb_free_port)
SITE_HTTP=$(tb_free_port)
oc_make_ca || bail "test CA"
oc_make_leaf ocsp.test 30 || bail "leaf"
oc_make_leaf other.test 30 || bail "other leaf"
(
    cd "$OC" || exit 1
    set -e
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out rogue.key
    openssl req -x509 -new -key rogue.key -subj "/CN=tlsbox OCSP test intermediate" -days 3 \
        -out rogue.pem
    openssl ocsp -issuer inter.pem -cert ocsp.test.pem -no_nonce -reqout leaf.req
    openssl ocsp -issuer inter.pem -cert other.test.pem -no_nonce -reqout other.req
    openssl ocsp -index index.txt -CA inter.pem -rsigner rogue.pem -rkey rogue.key \
        -reqin leaf.req -respout wrongkey.der -ndays 1
    openssl ocsp -index index.txt -CA inter.pem -rsigner inter.pem -rkey inter.key \
        -reqin other.req -respout othercert.der -ndays 1
    /usr/bin/python3 "$top_srcdir/tests/integration/ocsp_craft.py" inter.pem inter.key \
        ocsp.test.pem -7200 -3600 expired.der
) >>"$OC/setup.log" 2>&1 || bail "bad responses: $(tail -3 "$OC/setup.log")"
oc_start_responder || bail "responder"
oc_start_tlsbox || bail "tlsboxd did not start"
tb_wait_port "$SITE_HTTPS" || bail "site not listening"
tb_ctl cert import --cert "$OC/ocsp.test.pem" --chain "$OC/inter.pem" --key "$OC/ocsp.test.key" \
    --name ocsp.test >/dev/null
oc_wait_status ocsp.test stapled true 20
ok $? "stapled with a good answer"
produced=$(oc_status ocsp.test produced_at)
served=$(oc_staple ocsp.test | sed -n 's/^ *Produced At: //p')
ok "$([ -n "$served" ] && echo 0 || echo 1)" "s_client sees the staple (produced $served)"

n=0
bad() {
    local file=$1 why=$2 want=$3
    n=$((n + 1))
    cp "$OC/$file" "$OC/override.der"
    tb_ctl ocsp refresh ocsp.test >/dev/null
    rm -f "$OC/override.der"
    like "$(oc_status ocsp.test last_error)" "$want" "$why: refused ($want)"
    is "$(oc_status ocsp.test failures)" "$n" "$why: counted as failure $n"
    is "$(oc_status ocsp.test produced_at)" "$produced" "$why: the last good answer is kept"
    is "$(oc_staple ocsp.test | sed -n 's/^ *Produced At: //p')" "$served" \
        "$why: and still served"
}
bad wrongkey.der "signed by a key that is not the issuer's" "not signed by the issuer"
bad othercert.der "answer for another certificate" "for another certificate"
bad expired.der "expired answer" "expired: nextUpdate was"
like "$(tb_ctl metrics)" "tlsbox_ocsp_failures_total 3" "metrics count the three refusals"
is "$(oc_status ocsp.test status)" good "status still good"

# A good answer again replaces the staple.
sleep 1
tb_ctl ocsp refresh ocsp.test >/dev/null
is "$(oc_status ocsp.test failures)" 0 "a good answer resets the failures"
ok "$([ "$(oc_status ocsp.test produced_at)" -gt "$produced" ] && echo 0 || echo 1)" \
    "and is the new staple"

# A good answer already past its half-life (a responder's cache handing out
# an old one: thisUpdate 2 h ago, nextUpdate in 1 h), as the first answer
# for other.test, is stapled, and the next ask waits retry_min_seconds (60 s
# by default) instead of coming back every second for the same old answer
# until it leaves the bundle.
/usr/bin/python3 "$top_srcdir/tests/integration/ocsp_craft.py" "$OC/inter.pem" "$OC/inter.key" \
    "$OC/other.test.pem" -7200 3600 "$OC/old_other.der" >>"$OC/setup.log" 2>&1 || bail "old answer"
cp "$OC/old_other.der" "$OC/override.der"
tb_ctl cert import --cert "$OC/other.test.pem" --chain "$OC/inter.pem" --key "$OC/other.test.key" \
    --name other.test >/dev/null || bail "import other.test"
oc_wait_status other.test stapled true 20
ok $? "other.test stapled with the old answer"
tu=$(oc_status other.test this_update)
fetched=$(oc_status other.test fetched_at)
is "$(oc_status other.test next_update)" "$((tu + 10800))" "an answer past its half-life is taken"
nr=$(oc_status other.test next_refresh)
ok "$([ "$nr" -ge $((fetched + 60)) ] && echo 0 || echo 1)" \
    "its refresh waits retry_min_seconds (+$((nr - fetched)) s, want >= 60)"
before=$(oc_requests)
sleep 5
is "$(oc_requests)" "$before" "the responder is not asked again meanwhile"
rm -f "$OC/override.der"

# But once a newer answer is held, an older one (replayed, or from a cache
# behind the responder), still within its validity, is refused: the newer
# one stays in the store and is still what clients get.
/usr/bin/python3 "$top_srcdir/tests/integration/ocsp_craft.py" "$OC/inter.pem" "$OC/inter.key" \
    "$OC/ocsp.test.pem" -7200 3600 "$OC/old.der" >>"$OC/setup.log" 2>&1 || bail "old answer"
tu=$(oc_status ocsp.test this_update)
produced=$(oc_status ocsp.test produced_at)
served=$(oc_staple ocsp.test | sed -n 's/^ *This Update: //p')
cp "$OC/old.der" "$OC/override.der"
tb_ctl ocsp refresh ocsp.test >/dev/null
rm -f "$OC/override.der"
like "$(oc_status ocsp.test last_error)" \
    "^the answer \(thisUpdate [0-9TZ:-]+\) is older than the one already held \(thisUpdate [0-9TZ:-]+\)" \
    "an older good answer is refused, saying why"
is "$(oc_status ocsp.test status) $(oc_status ocsp.test failures)" "good 1" \
    "status still good, one failure"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT state, stapled, this_update, produced_at FROM ocsp_certs
    WHERE cert_name = 'ocsp.test'")" "good|1|$tu|$produced" "the store keeps the newer answer"
is "$(oc_staple ocsp.test | sed -n 's/^ *This Update: //p')" "$served" \
    "and s_client is still sent the newer one (thisUpdate $served)"
tb_stop_daemon
ok $? "daemon stops"
done_testing
