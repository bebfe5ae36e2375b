#!/bin/bash
# A CA answer larger than the client reads (1 MiB; nothing an ACME server
# sends comes near it) fails the attempt saying so, not as a connection
# error ("Failure writing output to destination"), and changes nothing: the
# certificate served stays served, the valid order is kept, and the next
# attempt downloads its certificate (acme_forward.py in front of the real
# pebble pads one download with 2 MiB, DIR/huge_once).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

pb_setup_forward
PB_DIRECTORY=$FW_DIRECTORY pb_start_tlsbox || bail "tlsboxd did not start"
# id|status of each order for big.test.
order_rows() {
    sqlite3 "$TB_STATE/tlsbox.db" "select id, status from acme_orders
                                   where cert_name = 'big.test' order by id" | tr '\n' ' '
}

tb_ctl set acme.domains big.test >/dev/null
pb_wait_served big.test 60
ok $? "the first certificate is issued and served"
pb_st_until 'e["cert"] == "big.test" and e["ok"] and e["step"] == "done"' 30
ok $? "its success is recorded"
old=$(pb_served_serial big.test)
is "$(pb_orders_placed)" 1 "by one order"

# The renewal's download comes with 2 MiB more.
echo cert >"$FW/huge_once"
tb_ctl acme renew --force >/dev/null
pb_st_until 'e["cert"] == "big.test" and not e["ok"]' 60
ok $? "the forced renewal fails"
is "$(pb_st_get 'e["step"], e.get("problem_type"), c["failures"]')" \
    "('download', 'tlsbox:too-large', 1)" "at the download, once, as an answer too large"
like "$(pb_st_get 'e.get("detail")')" \
    "^${FW_DIRECTORY%/dir}/[^ ]+: the CA's answer is larger than 1 MiB \(no ACME answer comes near that\); it was not read further\$" \
    "the error names the URL and says what is wrong"
is "$(grep -c ' cert+huge POST ' "$FW/requests.log")" 1 "the front padded one download"
is "$(pb_served_serial big.test)" "$old" "the old certificate is still served"
rows=$(order_rows)
like "$rows" '^[0-9]+\|done [0-9]+\|valid $' "the new order is kept, valid ($rows)"

# The next attempt resumes that order: its certificate, downloaded in full.
tb_ctl acme renew >/dev/null
new=$(pb_wait_new_serial big.test "$old" 60)
ok $? "the next attempt installs the renewed certificate ($old -> $new)"
pb_st_until 'e["cert"] == "big.test" and e["ok"] and e["step"] == "done"' 30
ok $? "the success is recorded"
is "$(pb_orders_placed)" 2 "from the kept order: two orders placed in all"
like "$(order_rows)" '^[0-9]+\|done [0-9]+\|done $' "both orders done"
unlike "$(cat "$TB_TMP/daemon.log" "$FW/requests.log")" "PRIVATE KEY" \
    "no private key in the daemon log or the front's log"
tb_stop_daemon
ok $? "daemon stops promptly"
done_testing
