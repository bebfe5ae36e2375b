#!/bin/bash
# ACME dns-01 with a real DNS server: BIND 9 (named) is primary for
# example.test and takes RFC 2136 updates signed with a TSIG key; pebble asks
# it for the _acme-challenge TXT records.  A wildcard certificate
# (*.wild.example.test with wild.example.test: auto answers the name by
# http-01 and the wildcard by dns-01), the record withdrawn afterwards, a
# wrong secret refused by the server and named in the error, dns-01 asked
# for by name, a wildcard without the DNS settings told what to set,
# acme.dns_alias (a CNAME from a zone that takes no updates), and without it
# the CNAME chain found by asking the resolver (named too: it recurses),
# last with acme.dns_resolver empty: the first nameserver of /etc/resolv.conf
# (tlsboxd started again in a mount namespace whose resolv.conf names
# named's second address, on port 53).  The secret never shows in the log,
# the status or the settings list.  The whole test runs in a network
# namespace of its own: named's second address (and its port 53) exists
# only there.
if [ -z "${TB_NETNS:-}" ]; then
    exec env TB_NETNS=1 unshare -n bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
ip link set lo up || bail "lo up in the test's network namespace"
ip addr add 127.0.53.53/32 dev lo || bail "adding 127.0.53.53 to lo"
. "$(dirname "$0")/pebble.sh"
. "$(dirname "$0")/bind_lib.sh"
tb_setup

BIND_STATIC='_acme-challenge.cn IN CNAME _acme-challenge.proof.example.test.
_acme-challenge.cn2 IN CNAME hop.static.test.
hop IN CNAME _acme-challenge.found.example.test.
_acme-challenge.out IN CNAME _acme-challenge.elsewhere.other.test.
_acme-challenge.viaresolv IN CNAME _acme-challenge.found.example.test.' \
    BIND_STUB=127.0.53.53 bind_start wild dns nodns proof || bail "named did not start"
SITE_HTTP=$(tb_free_port)
SITE_HTTPS=$(tb_free_port)
PB_HTTP_PORT=$SITE_HTTP PB_DNS_SERVER=$BIND_SERVER pb_start || bail "pebble did not start"
pb_start_tlsbox || bail "tlsboxd did not start"

for bad in "acme.dns_server=127.0.0.1 53" "acme.dns_tsig_secret=not base64!" \
    "acme.dns_zone=Example.test" "acme.domains=*.*.example.test" "acme.domains=a.*.example.test"; do
    out=$(tb_ctl set "${bad%%=*}" "${bad#*=}" 2>&1)
    is "$?" 1 "refused: $bad"
    like "$out" "${bad%%=*}" "  naming the setting"
done

# A wrong secret first: named refuses the update, and the error says so.
wrong=$(printf 'not-the-key-not-the-key-0123456' | base64)
tb_ctl set acme.dns_server "$BIND_SERVER" >/dev/null &&
    tb_ctl set acme.dns_zone example.test >/dev/null &&
    tb_ctl set acme.dns_resolver "$BIND_SERVER" >/dev/null &&
    tb_ctl set acme.dns_tsig_key "$BIND_KEY" >/dev/null &&
    tb_ctl set acme.dns_tsig_secret "$wrong" >/dev/null
ok $? "dns_server, dns_zone, dns_resolver, dns_tsig_key and a wrong dns_tsig_secret set"
tb_ctl set acme.domains "*.wild.example.test,wild.example.test" >/dev/null
ok $? "acme.domains *.wild.example.test,wild.example.test"
json=$(pb_wait_failure 20)
like "$json" '"failures": ?1' "with the wrong secret the order fails"
like "$json" "_acme-challenge.wild.example.test at $BIND_SERVER: .*(BADSIG|NOTAUTH)" \
    "  the error names the record, the server and its TSIG refusal"
is "$(bind_txt _acme-challenge.wild.example.test)" "" "  and named holds no record"

# The right secret: the change retries at once.
tb_ctl set acme.dns_tsig_secret "$BIND_SECRET" >/dev/null
ok $? "the right dns_tsig_secret set"
pb_wait_served anything.wild.example.test 40
ok $? "a certificate for *.wild.example.test is served to anything.wild.example.test and verifies"
pb_wait_served wild.example.test 5
ok $? "  and to wild.example.test"
sans=$(openssl s_client -connect "127.0.0.1:$SITE_HTTPS" -servername x.wild.example.test </dev/null 2>/dev/null |
    openssl x509 -noout -ext subjectAltName | tail -1 | tr -d ' ')
is "$sans" "DNS:*.wild.example.test,DNS:wild.example.test" "  its names: the wildcard and the name"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT name FROM certificates WHERE source = 'acme'")" \
    "*.wild.example.test" "  stored as *.wild.example.test"
is "$(tb_ctl cert export '*.wild.example.test' | openssl x509 -noout -subject | tr -d ' ')" \
    "subject=CN=*.wild.example.test" "  tlsboxctl cert export '*.wild.example.test' prints it"
like "$(tb_ctl cert list)" '\*\.wild\.example\.test' "  cert list names it"
like "$(tb_ctl acme status)" "challenge: http-01 \(auto; else tls-alpn-01, dns-01\)" \
    "acme status: auto, and dns-01 among the others"
like "$(grep 'dns-01 record put on' "$TB_TMP/daemon.log")" \
    "_acme-challenge.wild.example.test: dns-01 record put on $BIND_SERVER" "the wildcard was answered by dns-01"
like "$(grep -o 'Attempting to validate w/ HTTP: [^ ]*' "$PB_DIR/pebble.log" | sort -u)" \
    "http://wild.example.test:$SITE_HTTP/" "  and wild.example.test by http-01 (auto)"
is "$(bind_txt _acme-challenge.wild.example.test)" "" "the record is withdrawn once the order is done"
like "$(sed -n 's/.*\(updating zone .example.test[^:]*\): \(.*\)/\2/p' "$BIND_DIR/named.log" | paste -sd'|')" \
    "adding an RR at '_acme-challenge.wild.example.test' TXT.*deleting an RR at '?_acme-challenge.wild.example.test'? TXT" \
    "named's log: one TXT added, then deleted"

# dns-01 by name, for a plain name.
tb_ctl set acme.challenge dns-01 >/dev/null
ok $? "acme.challenge dns-01"
http_before=$(grep -c 'Attempting to validate w/ HTTP' "$PB_DIR/pebble.log")
tb_ctl set acme.domains dns.example.test >/dev/null
pb_wait_served dns.example.test 40
ok $? "dns.example.test issued"
is "$(grep -c 'Attempting to validate w/ HTTP' "$PB_DIR/pebble.log")" "$http_before" "  without any http-01"
like "$(grep 'dns-01 record put on' "$TB_TMP/daemon.log" | tail -1)" "_acme-challenge.dns.example.test" \
    "  by dns-01"

# A wildcard with no DNS server set: the error says what to set.
tb_ctl set acme.challenge auto >/dev/null
tb_ctl set acme.dns_server "" >/dev/null
tb_ctl set acme.domains "*.nodns.example.test" >/dev/null
json=$(pb_wait_failure 20)
like "$json" 'a wildcard is validated by dns-01 only: set acme.dns_server, acme.dns_zone, acme.dns_tsig_key and acme.dns_tsig_secret' \
    "a wildcard without acme.dns_server fails, naming the settings to set"
is "$(pb_served_serial dns.example.test | wc -l)" 1 "the certificate before it is still served"
tb_ctl set acme.challenge dns-01 >/dev/null
tb_ctl set acme.domains nodns.example.test >/dev/null
needs() { tb_ctl --json acme status | grep -q 'nodns.example.test: cannot answer dns-01: dns-01 needs acme.dns_server' && echo 1 || echo 0; }
is "$(tb_wait_says 20 1 needs)" 1 "dns-01 asked for with no DNS server: the error names the setting to set"

# NAME ($1) issued by dns-01 with its record put at RECORD ($2) for reason
# HOW ($3, as the log says it; $4 describes NAME): named's log shows the
# record added, and it is withdrawn once the order is done.
issued_at() {
    pb_wait_served "$1" 40
    ok $? "$1 ($4) issued"
    like "$(grep 'dns-01 record put' "$TB_TMP/daemon.log" | tail -1)" \
        "_acme-challenge.$1: dns-01 record put at $2 \\($3\\) on $BIND_SERVER" "  the record was put at $2"
    like "$(grep "updating zone 'example.test/IN': adding an RR" "$BIND_DIR/named.log" | tail -1)" \
        "adding an RR at '$2' TXT" "  named's log says so"
    is "$(bind_txt "$2")" "" "  and it is withdrawn once the order is done"
}

# acme.dns_alias: names in a zone that takes no updates (static.test) point
# their _acme-challenge, once, with a CNAME at one name in example.test.
tb_ctl set acme.dns_server "$BIND_SERVER" >/dev/null
out=$(tb_ctl set acme.dns_alias Proof.example.test 2>&1)
is "$?" 1 "refused: acme.dns_alias=Proof.example.test"
like "$out" "acme.dns_alias" "  naming the setting"
is "$(tb_ctl get acme.dns_alias)" "" "  which stays empty"
says() { tb_ctl --json acme status | grep -qF -- "$1" && echo 1 || echo 0; }
tb_ctl set acme.dns_alias proof.other.test >/dev/null
tb_ctl set acme.domains cn.static.test >/dev/null
is "$(tb_wait_says 20 1 says 'cn.static.test: cannot answer dns-01: acme.dns_alias proof.other.test is not in acme.dns_zone example.test')" \
    1 "an alias outside acme.dns_zone: the error says so"
tb_ctl set acme.dns_alias proof.example.test >/dev/null
ok $? "acme.dns_alias proof.example.test"
at() { tb_ctl acme status | grep -c '^dns-01 at: _acme-challenge.proof.example.test$'; }
is "$(tb_wait_says 20 1 at)" 1 "  acme status says where dns-01 records go"
issued_at cn.static.test _acme-challenge.proof.example.test acme.dns_alias \
    "its _acme-challenge a CNAME to _acme-challenge.proof.example.test"
serial=$(pb_served_serial cn.static.test)
tb_ctl set acme.domains nocn.static.test >/dev/null
is "$(tb_wait_says 40 1 says "(acme.dns_alias: the name's _acme-challenge must be a CNAME to _acme-challenge.proof.example.test)")" \
    1 "a name without the CNAME fails, and the error says what to check"
like "$(tb_ctl acme status)" "nocn.static.test: .*TXT" "  after the CA's own words"
is "$(pb_served_serial cn.static.test)" "$serial" "  the certificate before it is still served"
is "$(bind_txt _acme-challenge.proof.example.test)" "" "  and no record is left behind"

# Without acme.dns_alias, tlsboxd asks the resolver (acme.dns_resolver) where
# _acme-challenge.NAME points and puts the record at the end of the chain.
tb_ctl set acme.dns_alias "" >/dev/null
ok $? "acme.dns_alias emptied"
is "$(tb_wait_says 40 1 says "nocn.static.test: cannot answer dns-01: _acme-challenge.nocn.static.test is not in acme.dns_zone example.test, nor a CNAME to a name in it (asked $BIND_SERVER; or set acme.dns_alias)")" \
    1 "a name outside the zone and no CNAME: the error says so, and what to set"
tb_ctl set acme.domains out.static.test >/dev/null
is "$(tb_wait_says 40 1 says "out.static.test: cannot answer dns-01: _acme-challenge.out.static.test is a CNAME to _acme-challenge.elsewhere.other.test, which is not in acme.dns_zone example.test")" \
    1 "a CNAME out of the zone: the error names where it points"
tb_ctl set acme.domains cn2.static.test >/dev/null
issued_at cn2.static.test _acme-challenge.found.example.test CNAME \
    "_acme-challenge a CNAME to a CNAME into example.test, found by asking"

# Each record put was deleted where it went; those refused were not taken back.
is "$(grep -c 'dns-01 record left behind' "$TB_TMP/daemon.log")" 0 "no 'dns-01 record left behind' in the whole run"
is "$(sqlite3 "$TB_STATE/tlsbox.db" 'SELECT count(*) FROM acme_dns_records')" 0 \
    "and acme_dns_records lists none still to withdraw"

# The secret stays secret.
is "$(grep -c -F "$BIND_SECRET" "$TB_TMP/daemon.log")" 0 "the secret is not in tlsboxd's log"
is "$( (tb_ctl --json acme status; tb_ctl settings acme; tb_ctl --json settings acme) 2>&1 | grep -c -F "$BIND_SECRET")" 0 \
    "nor in acme status or the settings list"

# acme.dns_resolver empty: the first nameserver of /etc/resolv.conf is asked.
tb_stop_daemon
ok $? "tlsboxd stops"
host_resolv=$(cat /etc/resolv.conf)
printf '# resolv.conf as the daemon sees it\nnameserver 127.0.53.53\nnameserver 192.0.2.1\n' \
    >"$TB_TMP/resolv.conf"
chmod 644 "$TB_TMP/resolv.conf"
TB_DAEMON_RESOLV=$TB_TMP/resolv.conf pb_start_tlsbox || bail "tlsboxd did not start again"
is "$(grep nameserver "/proc/$TB_PID/root/etc/resolv.conf" | head -1)" "nameserver 127.0.53.53" \
    "tlsboxd runs again, its /etc/resolv.conf naming named at 127.0.53.53"
is "$(cat /etc/resolv.conf)" "$host_resolv" "  the machine's own is untouched"
tb_ctl set acme.dns_resolver "" >/dev/null
ok $? "acme.dns_resolver emptied"
tb_ctl set acme.domains nocn.static.test >/dev/null
is "$(tb_wait_says 40 1 says "nocn.static.test: cannot answer dns-01: _acme-challenge.nocn.static.test is not in acme.dns_zone example.test, nor a CNAME to a name in it (asked 127.0.53.53; or set acme.dns_alias)")" \
    1 "the error names the resolver it asked: the first nameserver of resolv.conf"
tb_ctl set acme.domains viaresolv.static.test >/dev/null
issued_at viaresolv.static.test _acme-challenge.found.example.test CNAME \
    "_acme-challenge a CNAME into example.test, found by asking resolv.conf's nameserver"

tb_stop_daemon
ok $? "tlsboxd stops cleanly"
pb_stop
bind_stop
done_testing
