#!/bin/bash
# A certificate removed from the store takes its OCSP gauges with it
# (tlsbox_ocsp_staple_age_seconds and tlsbox_ocsp_next_update_timestamp_seconds
# {cert="NAME"}, retired through the host's metric_retire): they used to
# stay on /metrics with their last values until the daemon stopped, for a
# certificate that no longer existed.  The other certificate's stay, and a
# certificate installed again under the name gets them back.  Against the
# real `openssl ocsp` (ocsp_lib.sh).
. "$(dirname "$0")/lib.sh"
tb_setup
. "$(dirname "$0")/ocsp_lib.sh"

SITE_HTTPS=$(tb_free_port)
SITE_HTTP=$(tb_free_port)
oc_make_ca || bail "test CA: $(tail -3 "$OC/setup.log")"
oc_make_leaf gone.test 30 || bail "leaf: $(tail -3 "$OC/setup.log")"
oc_make_leaf stays.test 30 || bail "leaf: $(tail -3 "$OC/setup.log")"
oc_start_responder || bail "responder"
oc_start_tlsbox || bail "tlsboxd did not start"

for n in gone.test stays.test; do
    tb_ctl cert import --cert "$OC/$n.pem" --chain "$OC/inter.pem" --key "$OC/$n.key" \
        --name "$n" >/dev/null
    ok $? "$n imported"
    oc_wait_status "$n" status good 20
    ok $? "$n: OCSP status good"
done
# The gauges are set every second: wait for them, then compare.
series() { tb_ctl metrics | grep -c "^tlsbox_ocsp_[a-z_]*{cert=\"$1\"} "; }
is "$(tb_wait_says 10 2 series gone.test)" 2 "gone.test has its two gauges"
is "$(tb_wait_says 10 "$(oc_status gone.test next_update)" oc_next_update_gauge gone.test)" \
    "$(oc_status gone.test next_update)" "its nextUpdate gauge says what the status says"

# Removed from the store (no API removes a certificate; the store is the
# truth, as core/cert_expiry.c sees it), then a run notices.
sqlite3 "$TB_STATE/tlsbox.db" "DELETE FROM certificates WHERE name = 'gone.test'"
tb_ctl ocsp refresh >/dev/null 2>&1
is "$(tb_ctl --json ocsp status | jq -r '[.certificates[].name] | map(select(. == "gone.test")) | length')" 0 \
    "the OCSP status no longer lists gone.test"
is "$(tb_wait_says 10 0 series gone.test)" 0 "its gauges are gone from the metrics"
curl -s -m 10 --unix-socket "$TB_STATE/control.sock" http://x/api/v1/metrics >"$TB_TMP/metrics.json"
is "$(jq -r '(.metrics // .) | keys[] | select(test("cert=\"[a-z]*[.]test\""))' "$TB_TMP/metrics.json" |
    sort | tr '\n' ' ')" \
    'tlsbox_ocsp_next_update_timestamp_seconds{cert="stays.test"} tlsbox_ocsp_staple_age_seconds{cert="stays.test"} ' \
    "GET metrics (JSON) has stays.test's gauges only"
sleep 2 # two more gauge timer firings: nothing brings them back
is "$(series gone.test)" 0 "still gone two seconds later"
is "$(series stays.test)" 2 "stays.test keeps its two gauges"
is "$(oc_next_update_gauge stays.test)" "$(oc_status stays.test next_update)" \
    "with its value"

# Installed again: a new series under the same name.
tb_ctl cert import --cert "$OC/gone.test.pem" --chain "$OC/inter.pem" --key "$OC/gone.test.key" \
    --name gone.test >/dev/null
oc_wait_status gone.test status good 20
ok $? "gone.test imported again: OCSP status good"
is "$(tb_wait_says 10 2 series gone.test)" 2 "its gauges are back"

tb_stop_daemon
ok $? "stops cleanly"
done_testing
