#!/bin/bash
# kill -9 in the middle of an order, then restart: the account is reused, the
# order resumes (or restarts cleanly) and the certificate gets served.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

SITE_HTTP=$(tb_free_port)
SITE_HTTPS=$(tb_free_port)
# pebble waits 0-3 s before each validation: the order stays pending a while.
PB_ENV="PEBBLE_VA_NOSLEEP=0 PEBBLE_VA_SLEEPTIME=4" PB_HTTP_PORT=$SITE_HTTP pb_start ||
    bail "pebble did not start"
pb_start_tlsbox --set acme.domains=crash.test,www.crash.test,api.crash.test ||
    bail "tlsboxd did not start"
db="$TB_STATE/tlsbox.db"
state=""
for _ in $(seq 1 500); do
    state=$(sqlite3 "$db" "select status from acme_orders where order_url is not null order by id desc limit 1" 2>/dev/null)
    [ -n "$state" ] && break
    sleep 0.01
done
kill -KILL "$TB_PID"
wait "$TB_PID" 2>/dev/null
TB_PID=""
diag "order state when killed: ${state:-none}"
like "$state" "^(pending|ready|processing|valid)$" "killed with an order in flight"
is "$(sqlite3 "$db" "select count(*) from certificates where name='crash.test'")" 0 \
    "no certificate was installed before the kill"
is "$(sqlite3 "$db" "select key_pem is not null from acme_orders order by id desc limit 1")" 1 \
    "the order row (with its key) survived the kill"

: >"$TB_TMP/daemon.log"
pb_start_tlsbox --set acme.domains=crash.test,www.crash.test,api.crash.test ||
    bail "tlsboxd did not restart"
pb_wait_served crash.test 40
ok $? "after the restart the certificate is issued and served"
pb_wait_served api.crash.test 5
ok $? "for every name"
like "$(cat "$TB_TMP/daemon.log")" "crash.test: ordering \(resuming an unfinished order\)" "the restart resumed the order"
is "$(sqlite3 "$db" 'select count(*) from acme_orders')" 1 "the same order row was finished"
is "$(sqlite3 "$db" 'select count(*) from acme_accounts')" 1 "the account was reused"
is "$(sqlite3 "$db" "select count(*) from acme_orders where status not in ('done','abandoned','invalid')")" 0 \
    "no order left unfinished"
is "$(sqlite3 "$db" 'select count(*) from acme_orders where key_pem is not null')" 0 \
    "no order keeps a private key"
diag "orders: $(sqlite3 "$db" 'select id||":"||status from acme_orders' | tr '\n' ' ')"
tb_stop_daemon
ok $? "daemon stops promptly"
done_testing
