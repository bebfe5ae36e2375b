#!/bin/bash
# A CA's Retry-After is kept: newOrder answered 429 rateLimited with
# Retry-After: 3600 (acme_forward.py in front of the real pebble); a SIGHUP,
# an acme.* setting change, renew --force and a failed revoke then send no
# new order, and the status keeps saying when the CA allows the next one.
# With a 3 s Retry-After, a renew asked during it orders once it has passed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

pb_setup_forward
echo 3600 >"$FW/ratelimit"
PB_DIRECTORY=$FW_DIRECTORY pb_start_tlsbox || bail "tlsboxd did not start"

# newOrder requests that reached the front, and those pebble took (201).
new_orders() { grep -c ' newOrder ' "$FW/requests.log"; }
orders_placed() { grep -c ' newOrder .* 201$' "$FW/requests.log"; }
# Run a command that makes the daemon check again, and wait until a check
# started after it has rebuilt the status (checked_at moved past the last one).
after_check() {
    local c0
    c0=$(pb_st_get 's.get("checked_at", 0)')
    while [ "$(date +%s)" -le "$c0" ]; do sleep 0.05; done
    "$@" >/dev/null
    pb_st_wait "s.get(\"checked_at\", 0) > $c0"
}

t0=$(date +%s)
tb_ctl set acme.domains rl.test >/dev/null
pb_st_wait '"rateLimited" in e.get("problem_type", "")'
ok $? "newOrder answered 429 rateLimited is recorded"
t1=$(date +%s)
is "$(new_orders)" 1 "one newOrder reached the CA"
is "$(pb_st_get 'e["step"]')" order "the failed step is order"
next=$(pb_st_get 'c["next_attempt"]')
ok "$([ "$next" -ge $((t0 + 3600)) ] && [ "$next" -le $((t1 + 3601)) ] && echo 0 || echo 1)" \
    "next attempt is the CA's Retry-After: now + 3600 s ($next, $t0..$t1)"
is "$(pb_st_get 'c.get("ca_retry_after")')" "$next" "the status says the CA asked to wait until then"
like "$(tb_ctl acme status)" "CA wait until +[-0-9]+ [0-9:]+ UTC \(in (59m|1h00m)" \
    "tlsboxctl acme status shows the CA's wait"

after_check kill -HUP "$TB_PID"
ok $? "a SIGHUP (settings reload) was checked"
is "$(new_orders)" 1 "the reload sent no new order"
after_check tb_ctl set acme.email ops@example.org
ok $? "an acme.* change was checked"
is "$(new_orders)" 1 "the acme.* change sent no new order"
after_check tb_ctl acme renew --force
ok $? "renew --force was checked"
is "$(new_orders)" 1 "renew --force sent no new order before the CA's time"
like "$(grep 'rl.test' "$TB_TMP/daemon.log")" "CA asked to wait until" \
    "the log says why the forced renewal waits"
after_check tb_ctl acme revoke rl.test
ok $? "a failed revoke (nothing issued yet) and the check after it ran"
is "$(pb_st_get 'e["step"] + " " + str(e["ok"])')" "revoke False" "the revoke failure is recorded"
is "$(new_orders)" 1 "the check after the revoke sent no new order"
is "$(pb_st_get 'c["next_attempt"]')" "$next" "the next attempt is still the CA's time"
is "$(pb_st_get 'c.get("ca_retry_after")')" "$next" "and the status still names the CA's wait"

# A short Retry-After, for another certificate name: after it, the order goes through.
echo 3 >"$FW/ratelimit"
tb_ctl set acme.domains rl2.test >/dev/null
pb_st_wait '"rateLimited" in e.get("problem_type", "") and e["cert"] == "rl2.test"'
ok $? "rl2.test: 429 with Retry-After: 3 recorded"
ca=$(pb_st_get 'c.get("ca_retry_after")')
like "$ca" '^[0-9]+$' "the CA's wait is shown ($ca)"
rm -f "$FW/ratelimit"
n=$(wc -l <"$FW/requests.log")
# Asked during the CA's wait: held until it is over (not sent early, not
# dropped: the local backoff alone would wait a minute).
tb_ctl acme renew >/dev/null
pb_wait_served rl2.test 30
ok $? "a renew asked during the CA's wait orders once it is over, and the certificate is served"
is "$(orders_placed)" 1 "with exactly one order placed"
first=$(tail -n +"$((n + 1))" "$FW/requests.log" | grep ' newOrder ' | head -1 | cut -d. -f1)
ok "$([ -n "$first" ] && [ "$first" -ge "$ca" ] && echo 0 || echo 1)" \
    "the first newOrder after the 429 came no earlier than the CA allowed ($first >= $ca)"
pb_st_wait 'e["cert"] == "rl2.test" and e["ok"] and c.get("ca_retry_after") is None'
ok $? "success recorded; the CA's wait is gone from the status"
tb_stop_daemon
ok $? "daemon stops promptly"
done_testing
