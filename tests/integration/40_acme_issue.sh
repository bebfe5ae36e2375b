#!/bin/bash
# ACME against the real pebble: first issuance for two names, served by the
# site and verifying against pebble's root; the time from daemon start to a
# served certificate is printed (tests/perf/acme_certbot.sh compares it with certbot).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

SITE_HTTP=$(tb_free_port)
SITE_HTTPS=$(tb_free_port)
PB_HTTP_PORT=$SITE_HTTP pb_start || bail "pebble did not start"

t0=$(date +%s.%N)
pb_start_tlsbox --set acme.domains=a.test,b.test || bail "tlsboxd did not start"
pb_wait_served a.test 30
ok $? "a.test is served with a certificate that verifies against pebble's root"
t1=$(date +%s.%N)
tlsbox_s=$(echo "$t1 - $t0" | bc)
diag "tlsbox: daemon start to pebble-issued certificate served: ${tlsbox_s} s"

pb_wait_served b.test 5
ok $? "b.test (second SAN) verifies too"
sans=$(openssl s_client -connect "127.0.0.1:$SITE_HTTPS" -servername a.test </dev/null 2>/dev/null |
    openssl x509 -noout -ext subjectAltName 2>/dev/null | tr -d ' \n')
like "$sans" "DNS:a.test,DNS:b.test" "one certificate with both names as SANs"

chain=$(openssl s_client -connect "127.0.0.1:$SITE_HTTPS" -servername a.test -showcerts </dev/null 2>/dev/null |
    sed -n '/BEGIN CERT/,/END CERT/p')
printf '%s\n' "$chain" >"$TB_TMP/served.pem"
openssl verify -CAfile "$PB_ROOT" -untrusted "$TB_TMP/served.pem" "$TB_TMP/served.pem" >/dev/null 2>&1
ok $? "served chain (leaf + intermediate) verifies with openssl against /roots/0"

st=$(tb_ctl acme status)
like "$st" "account: +https://127.0.0.1:$PB_PORT/my-account/" "status shows the account"
like "$st" "certificate a.test \(ecdsa-p256\)" "status shows the certificate and key type"
like "$st" "renew at" "status shows the renewal time"
like "$st" "a.test +done +ok" "status shows the successful attempt"
json=$(tb_ctl --json acme status)
like "$json" '"failures": ?0' "no failures recorded"

code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SITE_HTTP/.well-known/acme-challenge/unknown-token")
is "$code" 404 "an unknown challenge token is a 404 on the HTTP port"

db="$TB_STATE/tlsbox.db"
is "$(sqlite3 "$db" 'select count(*) from acme_accounts')" 1 "one account stored"
is "$(sqlite3 "$db" "select status from acme_orders order by id desc limit 1")" done "order is done"
is "$(sqlite3 "$db" 'select count(*) from acme_orders where key_pem is not null')" 0 \
    "finished orders keep no private key"
is "$(sqlite3 "$db" "select source from certificates where name='a.test'")" acme "stored as source acme"

# Restart: the certificate and account are reused, nothing is ordered again.
n_orders=$(sqlite3 "$db" 'select count(*) from acme_orders')
tb_stop_daemon
ok $? "daemon stops promptly"
pb_start_tlsbox --set acme.domains=a.test,b.test || bail "tlsboxd did not restart"
pb_wait_served a.test 10
ok $? "served again after a restart"
sleep 1
is "$(sqlite3 "$db" 'select count(*) from acme_orders')" "$n_orders" "no new order after a restart"
tb_stop_daemon

if grep -q "PRIVATE KEY" "$TB_TMP/daemon.log"; then
    ok 1 "no key material in the log"
else
    ok 0 "no key material in the log"
fi

# The comparison with certbot (a timing against a third-party tool) is a
# benchmark, not a test: tests/perf/acme_certbot.sh prints it.

done_testing
