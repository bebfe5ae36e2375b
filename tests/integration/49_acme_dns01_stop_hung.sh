#!/bin/bash
# A stop while the dns-01 put (the RFC 2136 UPDATE) waits for a DNS server
# that takes the connection and never answers: the put gives up 2 s after
# the stop, as the withdrawal after it does, instead of waiting its full
# 10 s, and the stop is no failed challenge (the order is kept pending for
# the next start).  Real pebble; the DNS server is a few lines of Python
# that count the messages they got and answer none.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

SITE_HTTP=$(tb_free_port)
SITE_HTTPS=$(tb_free_port)
PB_HTTP_PORT=$SITE_HTTP pb_start || bail "pebble did not start"
DNS_PORT=$(tb_free_port)
# A line in dns_got for each connection that sent something (not the port
# probe); connections are kept open, unanswered, for at most 120 s.
tb_bg python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(8)
s.settimeout(0.2)
held, end = [], time.time() + 120
while time.time() < end:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.settimeout(5)
    try:
        data = c.recv(2048)
    except OSError:
        data = b""
    held.append(c)
    if data:
        with open(sys.argv[2], "a") as f:
            f.write("message\n")
' "$DNS_PORT" "$TB_TMP/dns_got"
tb_wait_port "$DNS_PORT" 10 || bail "the mute DNS server did not start"

pb_start_tlsbox --set acme.challenge=dns-01 --set acme.dns_server="127.0.0.1:$DNS_PORT" \
    --set acme.dns_zone=example.test --set acme.dns_alias=acme.example.test \
    --set acme.dns_tsig_key=tlsbox-acme --set acme.dns_tsig_secret=c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0 ||
    bail "tlsboxd did not start"
db=$TB_STATE/tlsbox.db
name=hung.example.test
got() { [ -f "$TB_TMP/dns_got" ] && wc -l <"$TB_TMP/dns_got" || echo 0; }
tb_ctl set acme.domains "$name" >/dev/null
is "$(tb_wait_says 30 1 got)" 1 "the put reached the DNS server, which does not answer"

t0=$(date +%s%N)
tb_stop_daemon TERM 30
ok $? "the daemon stops"
took=$((($(date +%s%N) - t0) / 1000000))
# Not a timing test: 2 s for the put, 2 s for the withdrawal; it took 12 s.
ok "$([ "$took" -lt 8000 ] && echo 0 || echo 1)" "within 8 s, not the put's 10 s and more (took $took ms)"
is "$(got)" 2 "  after asking to withdraw the record, which the server may have added"
like "$(grep 'dns-01 record left behind' "$TB_TMP/daemon.log")" \
    "_acme-challenge.acme.example.test at 127.0.0.1:$DNS_PORT: no answer in 2 s \(stopping\)" \
    "  the withdrawal's own 2 s, logged"
is "$(sqlite3 "$db" "select status from acme_orders where cert_name = '$name'")
$(sqlite3 "$db" "select count(*) from acme_events where cert_name = '$name' and not ok")" "pending
0" "the order is kept pending, and no failure recorded: a stop, not a failed challenge"
is "$(sqlite3 "$db" "select fqdn from acme_dns_records")" "_acme-challenge.acme.example.test" \
    "the record not withdrawn is listed for the next start"
pb_stop
done_testing
