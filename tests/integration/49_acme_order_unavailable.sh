#!/bin/bash
# A transient error on a resumed order is waited out, not answered with a
# new order: the order is valid (its certificate issued, the download failed
# on a 503), and the next attempt's order fetch is answered 503 with
# Retry-After: 3 (acme_forward.py in front of the real pebble,
# DIR/unavailable_once).  That attempt fails keeping the order and the CA's
# wait; the one after the wait resumes the same order and installs its
# certificate.  No second newOrder: it would issue a duplicate certificate.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

pb_setup_forward
PB_DIRECTORY=$FW_DIRECTORY pb_start_tlsbox || bail "tlsboxd did not start"
db=$TB_STATE/tlsbox.db

# Orders placed (201): pebble answers some newOrder requests badNonce (400),
# retried at once by design, which places nothing.
orders_placed() { grep -c ' newOrder .* 201$' "$FW/requests.log"; }
# id|status|order URL of each order for busy.test.
order_rows() {
    sqlite3 "$db" "select id, status, order_url from acme_orders
                   where cert_name = 'busy.test' order by id" | tr '\n' ' '
}
# "PATH STATUS" of each certificate download (not pebble's badNonce
# rejections, retried at once by design).
downloads() {
    awk '$2 == "cert" && $3 == "POST" && $5 != 400 { print $4, $5 }' "$FW/requests.log" | tr '\n' ' '
}

# The order turns valid; its download is answered 503: the order stays valid.
echo "cert 0" >"$FW/unavailable_once"
tb_ctl set acme.domains busy.test >/dev/null
pb_st_until 'e["cert"] == "busy.test" and not e["ok"]' 30
ok $? "the first attempt fails"
is "$(pb_st_get 'e["step"], e.get("problem_type")')" \
    "('download', 'urn:ietf:params:acme:error:serverInternal')" "at the download (503)"
rows=$(order_rows)
like "$rows" "^[0-9]+\|valid\|${FW_DIRECTORY%/dir}/my-order/[^ ]+ \$" "one order, valid ($rows)"
id=${rows%%|*}
url=${rows##*|}
url=${url% }

# The resumed order's fetch is answered 503 with Retry-After: 3.
echo "order 3" >"$FW/unavailable_once"
t0=$(date +%s)
tb_ctl acme renew >/dev/null
pb_st_until 'e["cert"] == "busy.test" and not e["ok"] and e["step"] == "order"' 30
ok $? "the resumed attempt fails at the order fetch"
t1=$(date +%s)
is "$(pb_st_get 'e.get("problem_type"), e.get("detail")')" \
    "('urn:ietf:params:acme:error:serverInternal', '$url: HTTP 503: the CA is busy: try again later; the order is kept for the next attempt')" \
    "the error names the order and says it is kept"
until_=$(pb_st_get 'c.get("ca_retry_after")')
ok "$([ "$until_" -ge $((t0 + 3)) ] && [ "$until_" -le $((t1 + 4)) ] && echo 0 || echo 1)" \
    "the CA's Retry-After is kept: no attempt before $until_ ($t0..$t1 + 3)"
is "$(orders_placed)" 1 "no second order placed"
is "$(order_rows)" "$rows" "the order row is unchanged"

# A person's retry during the CA's wait runs once the wait is over.
tb_ctl acme renew >/dev/null
pb_wait_served busy.test 30
ok $? "the next attempt installs the certificate and it is served"
pb_st_until 'e["cert"] == "busy.test" and e["ok"] and e["step"] == "done"' 30
ok $? "the success is recorded"
is "$(orders_placed)" 1 "still one order placed in all: no duplicate certificate"
is "$(order_rows)" "$id|done|$url " "the same order, now done"
d=$(downloads)
like "$d" "^(/[^ ]+) 503 \1 200 \$" "its certificate URL downloaded twice: 503, then 200 ($d)"
# The order fetch after the 503 waited for the Retry-After (whole seconds:
# at least 2 s after it, for "Retry-After: 3" read just before a second ends).
gap=$(awk '$2 == "order" && $3 == "POST" && $5 == 503 { t = $1; next }
           t && $2 == "order" && $3 == "POST" && $5 == 200 { printf "%.3f", $1 - t; exit }' \
    "$FW/requests.log")
ok "$(awk -v g="${gap:-0}" 'BEGIN { exit !(g >= 2) }'; echo $?)" \
    "the order was fetched again only after the Retry-After (${gap:-none} s later)"
unlike "$(cat "$TB_TMP/daemon.log" "$FW/requests.log")" "PRIVATE KEY" \
    "no private key in the daemon log or the front's log"
tb_stop_daemon
ok $? "daemon stops promptly"
done_testing
