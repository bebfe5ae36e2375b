#!/bin/bash
# An order the CA keeps "pending" is not polled back to back: one without
# authorizations is refused with an error naming it, and one whose
# authorizations are all valid is polled with waits in between
# (acme_forward.py in front of the real pebble rewrites the order).
# Once the CA answers normally again, the same order completes.  A finalize
# answered "ready" is followed by waits and order fetches, not by another
# finalize.  A poll Retry-After longer than an attempt waits ends the
# attempt and is kept.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

pb_setup_forward
touch "$FW/order_no_authz"
PB_DIRECTORY=$FW_DIRECTORY pb_start_tlsbox || bail "tlsboxd did not start"

# Answered order fetches (pebble rejects some nonces: a badNonce is retried at once).
order_fetches() { grep -c ' order POST .* 200$' "$FW/requests.log"; }
last_event() {
    tb_ctl --json acme status | python3 -c '
import json,sys
e=(json.load(sys.stdin).get("events") or [{}])[0]
print(e.get("step"), e.get("problem_type"), e.get("detail"))' 2>/dev/null
}

tb_ctl set acme.domains stuck.test >/dev/null
for i in $(seq 1 200); do
    ev=$(last_event)
    [[ "$ev" == order* ]] && break
    sleep 0.1
done
like "$ev" "^order tlsbox:protocol ${FW_DIRECTORY%/dir}/my-order/[^ ]+: pending order without a list of authorization URLs" \
    "a pending order without authorizations is refused, naming the order"
is "$(order_fetches)" 1 "after fetching it once"

# Pending with every authorization valid: polled with growing waits, not back to back.
rm -f "$FW/order_no_authz"
touch "$FW/order_pending"
from=$(wc -l <"$FW/requests.log")
tb_ctl acme renew >/dev/null
# The waits grow 50, 100, 200 ms, then 500 ms: from the fourth gap on,
# consecutive answered order fetches are at least 0.5 s apart (back to back,
# a few ms).
gaps=""
for i in $(seq 1 200); do
    gaps=$(tail -n +"$((from + 1))" "$FW/requests.log" | python3 -c '
import sys
t=[float(l.split()[0]) for l in sys.stdin if l.split()[1] == "order" and l.split()[4] == "200"]
if len(t) >= 7:
    print(" ".join("%.3f" % (b - a) for a, b in zip(t, t[1:7])))')
    [ -n "$gaps" ] && break
    sleep 0.1
done
ok "$(echo "$gaps" | awk 'NF == 6 && $4 >= 0.45 && $5 >= 0.45 && $6 >= 0.45 { ok = 1 } END { exit !ok }'; echo $?)" \
    "a pending order with valid authorizations is polled with growing waits (gaps: $gaps s)"

rm -f "$FW/order_pending"
pb_wait_served stuck.test 30
ok $? "once the CA says ready, the same order completes and is served"
is "$(grep -c ' newOrder .* 201$' "$FW/requests.log")" 1 "no second order was placed"

# A finalize answered "ready" (not yet taken): wait and look at the order, not finalize again.
touch "$FW/finalize_ready"
serial=$(pb_served_serial stuck.test)
from=$(wc -l <"$FW/requests.log")
tb_ctl acme renew --force >/dev/null
s2=$(pb_wait_new_serial stuck.test "$serial" 30)
ok $? "a finalize answered \"ready\": the order completes ($serial -> $s2)"
# (not counting badNonce rejections, retried at once by design)
is "$(tail -n +"$((from + 1))" "$FW/requests.log" | grep ' finalize POST ' | grep -vc ' 400$')" 1 \
    "with one finalize, then order fetches (no second finalize)"
rm -f "$FW/finalize_ready"

# A poll Retry-After longer than an attempt waits: stop at once, and wait that long.
echo 600 >"$FW/order_retry_after"
touch "$FW/order_pending"
t0=$(date +%s)
tb_ctl acme renew --force >/dev/null
for i in $(seq 1 200); do
    ev=$(last_event)
    [[ "$ev" == *timeout* ]] && break
    sleep 0.1
done
t1=$(date +%s)
like "$ev" "^order tlsbox:timeout order still pending \(its authorizations valid\): the CA asks to look again in (599|600) s" \
    "an order poll's Retry-After: 600 ends the attempt without polling sooner"
next=$(tb_ctl --json acme status | python3 -c '
import json,sys
print(json.load(sys.stdin)["certificates"][0].get("next_attempt"))')
ok "$([ "$next" -ge $((t0 + 599)) ] && [ "$next" -le $((t1 + 600)) ] && echo 0 || echo 1)" \
    "the next attempt is when the CA asked ($next, $t0..$t1 + 600)"
tb_stop_daemon
ok $? "daemon stops promptly"
done_testing
