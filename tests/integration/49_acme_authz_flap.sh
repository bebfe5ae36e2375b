#!/bin/bash
# A CA that keeps an order "pending" and answers its authorizations "pending"
# again after they were valid (acme_forward.py in front of the real pebble,
# DIR/authz_flap) does not keep an attempt going for ever: after a bounded
# number of passes over the authorizations the attempt fails, naming the
# order and what the CA kept doing; the challenge answers are withdrawn and
# the old certificate keeps being served.  Once the CA answers normally, the
# next attempt finishes the same order and its certificate is served.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

pb_setup_forward
PB_DIRECTORY=$FW_DIRECTORY pb_start_tlsbox || bail "tlsboxd did not start"

# Answered requests of a kind since line $from of the front's log (badNonce
# rejections, retried at once by design, answer 400 and are not counted).
from=0
answered() { tail -n +"$((from + 1))" "$FW/requests.log" | grep -c " $1 POST .* 20[01]\$"; }
# Answered authorization fetches: as pebble said, and rewritten to "pending".
authz_counts() { echo "$(answered authz) $(answered authz+pending)"; }

tb_ctl set acme.domains flap.test >/dev/null
pb_wait_served flap.test 60
ok $? "the first certificate is issued and served"
serial=$(pb_served_serial flap.test)

touch "$FW/authz_flap"
from=$(wc -l <"$FW/requests.log")
tb_ctl acme renew --force >/dev/null
# (bounded: the old code never ended the attempt)
pb_st_until 'e["cert"] == "flap.test" and not e["ok"]' 30
ok $? "the attempt ends with a failure"
is "$(pb_st_get 'e["step"], e.get("problem_type")')" "('order', 'tlsbox:protocol')" \
    "at the order step"
like "$(pb_st_get 'e.get("detail")')" \
    "^${FW_DIRECTORY%/dir}/my-order/[^ ]+: the order is still pending after 4 passes over its authorizations: the CA keeps answering them pending again after they were valid\$" \
    "the error names the order and what the CA kept doing"
# Each pass meets the authorization "pending" once (then polls it valid): four
# passes, four rewritten answers.  The old code went on for ever.
got=$(tb_wait_says 5 4 answered authz+pending)
is "$got" 4 "the authorization was answered \"pending\" again 4 times: one per pass"
counts=$(authz_counts)
sleep 2
is "$(authz_counts)" "$counts" "no authorization fetch after the failure (authz, authz+pending: $counts)"
ok "$([ "$(answered authz)" -le 8 ] && echo 0 || echo 1)" \
    "at most 8 fetches answered as pebble said ($(answered authz))"
is "$(pb_served_serial flap.test)" "$serial" "the old certificate is still served"
ntok=0
codes=""
while read -r tok; do
    ntok=$((ntok + 1))
    codes="$codes $(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
        "http://127.0.0.1:$SITE_HTTP/.well-known/acme-challenge/$tok")"
done <"$FW/tokens.log"
ok "$([ "$ntok" -ge 1 ] && echo 0 || echo 1)" "the front saw challenge tokens ($ntok)"
is "$(echo "$codes" | tr ' ' '\n' | grep -v '^$' | sort -u | tr '\n' ' ')" "404 " \
    "every challenge answer is withdrawn after the attempt ($codes)"

rm -f "$FW/authz_flap"
tb_ctl acme renew --force >/dev/null
s2=$(pb_wait_new_serial flap.test "$serial" 60)
ok $? "once the CA answers normally, a new certificate is served ($serial -> $s2)"
pb_wait_served flap.test 5
ok $? "it verifies against pebble's root"
pb_st_until 'e["cert"] == "flap.test" and e["ok"] and e["step"] == "done"' 30
ok $? "the success is recorded"
from=0
is "$(answered newOrder)" 2 "by the same order as the failed attempt (two orders in all)"
unlike "$(cat "$TB_TMP/daemon.log" "$FW/requests.log" "$FW/tokens.log")" "PRIVATE KEY" \
    "no private key in the daemon log or the front's logs"
tb_stop_daemon
ok $? "daemon stops promptly"
done_testing
