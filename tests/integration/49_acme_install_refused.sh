#!/bin/bash
# A certificate the install refuses is not fetched again for ever: the CA's
# order is valid, but what it hands out expired long ago (acme_forward.py in
# front of the real pebble answers the download with a certificate for the
# order's key that expired in 2020, as a short-lived certificate found by a
# box that was off for a week).  The attempt fails saying which order's
# certificate was refused and why; that order is abandoned and its key
# wiped; the next attempt places a new order, and its certificate is
# installed and served.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

pb_setup_forward
touch "$FW/cert_expired"
PB_DIRECTORY=$FW_DIRECTORY pb_start_tlsbox || bail "tlsboxd did not start"
db=$TB_STATE/tlsbox.db

# Orders pebble took (201), and certificate downloads answered.
orders_placed() { grep -c ' newOrder .* 201$' "$FW/requests.log"; }
downloads() { grep -c ' cert POST .* 200$' "$FW/requests.log"; }
counts() { echo "$(orders_placed) $(downloads)"; }
# id|status|whether it holds a key, of each order for exp.test.
order_rows() {
    sqlite3 "$db" "select id, status, key_pem is not null from acme_orders
                   where cert_name = 'exp.test' order by id" | tr '\n' ' '
}

tb_ctl set acme.domains exp.test >/dev/null
pb_st_wait 'e["cert"] == "exp.test" and not e["ok"]' 60
ok $? "the attempt fails"
is "$(pb_st_get 'e["step"], e.get("problem_type"), c["failures"], c.get("not_after")')" \
    "('install', 'tlsbox:install', 1, None)" \
    "at the install step, once, and nothing is installed"
like "$(pb_st_get 'e.get("detail")')" \
    "^the certificate of order ${FW_DIRECTORY%/dir}/my-order/[^ ]+ was refused: certificate 1 \(CN ?= ?exp\.test\) expired on 2020-01-02[^;]*; the order is abandoned: the next attempt places a new one$" \
    "the error names the order, the certificate and why it was refused"
# (the front logs a request after answering it: wait for the line)
is "$(tb_wait_says 5 "1 1" counts)" "1 1" "one order placed, its certificate downloaded once"
rows=$(order_rows)
like "$rows" '^[0-9]+\|abandoned\|0 $' "that order is abandoned and holds no key ($rows)"
first=${rows%%|*}

# The CA hands out good certificates again: a new order, not the old one.
rm -f "$FW/cert_expired"
tb_ctl acme renew >/dev/null
pb_wait_served exp.test 60
ok $? "the next attempt's certificate is installed and served (verifies against pebble's root)"
pb_st_wait 'e["cert"] == "exp.test" and e["ok"] and e["step"] == "done"' 30
ok $? "the success is recorded"
is "$(pb_st_get 'c["failures"], c["serial"].upper().replace(":", "")')" \
    "(0, '$(pb_served_serial exp.test)')" "no failures, and the status names the served certificate"
is "$(tb_wait_says 5 "2 2" counts)" "2 2" "by a new order (two placed, two downloads)"
rows=$(order_rows)
like "$rows" "^$first\|abandoned\|0 [0-9]+\|done\|0 \$" \
    "the old order stays abandoned without its key; the new one is done, its key wiped too ($rows)"
unlike "$(cat "$TB_TMP/daemon.log" "$FW/requests.log")" "PRIVATE KEY" \
    "no private key in the daemon log or the front's log"
tb_stop_daemon
ok $? "daemon stops promptly"
done_testing
