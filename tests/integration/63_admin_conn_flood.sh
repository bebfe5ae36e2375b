#!/bin/bash
# Clients that hold all 64 connections of the admin port, each asking for
# Chart.js and reading it slowly, and open each connection anew every 3 s:
# none ever gets as old as ADMIN_ANON_ANSWER_S (10 s), so closing by age
# found none, and a new admin was refused for as long as the flood went on.
# Now a new connection, when all are held, closes one of a client holding
# more than its share (64 over the clients holding any, the new one's
# counted in), or of a site (an IPv6 /48 or an IPv4 /24) holding more than a
# site's, that is waiting or answering without a session, whatever its age.
# Three floods: four IPv4 clients with 16 connections each (each client's
# limit), 64 addresses of one IPv4 /24 with one each (each within a
# client's share of 1: each counted as a site of its own, they kept the
# admin out), and 64 /64s of one /48 with one each.  Each time the new admin logs in and gets
# its pages on the one connection it opened, and the connections closed are
# the flooders'.  Real sockets (admin_flood.py), in a network namespace of
# the test's own for the IPv6 addresses.
. "$(dirname "$0")/lib.sh"
tb_netns "$@"
SERVER6=2001:db8:7::1
ADMIN6=2001:db8:8::1 # another /48
SITE=()              # 2001:db8:5:N::1, N 0 to 63: 64 /64s of one /48
for i in $(seq 0 63); do SITE+=("2001:db8:5:$i::1"); done
for a in $SERVER6 $ADMIN6 "${SITE[@]}"; do
    echo "addr add $a/128 dev lo nodad"
done | ip -6 -batch - || bail "adding the test addresses"
tb_setup

FLOOD="$top_srcdir/tests/integration/admin_flood.py"
start() { # ARGS: (re)start the daemon
    tb_start_daemon --set admin.pbkdf2_iterations=10000 "$@" \
        --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" ||
        bail "daemon did not start"
}
start
echo 'admins password is long' | tb_ctl admin passwd admin >/dev/null || bail "creating admin"

established() { # connections the admin port holds
    ss -Htn state established "sport = :$TB_ADMIN_PORT" | wc -l
}

# phase NAME HOST ADMIN_FROM SOURCE...: flood from the 64 SOURCEs, then a
# new admin from ADMIN_FROM.  (Not from the log: its line on a close comes
# once per 10 s, and the flooders' own reconnects may take it.)
phase() {
    local name=$1 host=$2 from=$3 oldest nclosed ages young
    shift 3
    local out="$TB_TMP/$name"
    tb_bg python3 "$FLOOD" flood "$host" "$TB_ADMIN_PORT" "$out.ready" "$out.hold" "$out.closed" \
        "$out.stop" "$@" </dev/null
    local flooder=$TB_BG_PID
    tb_wait_file "$out.ready" "$flooder"
    is "$(cat "$out.ready" 2>/dev/null)" 64 "$name: the flood holds 64 connections, each opened anew"
    # The flood at an instant: no reset under way whose gap the admin could
    # slip into by chance.  The server holds 64, all young.
    : >"$out.hold"
    tb_wait_file "$out.hold.age" "$flooder"
    oldest=$(cat "$out.hold.age" 2>/dev/null)
    ok $((${oldest%.*} < 10 ? 0 : 1)) "$name: all younger than 10 s (the oldest ${oldest:-?} s)"
    is "$(tb_wait_says 10 64 established)" 64 "$name: the server holds 64"
    echo 0 >"$out.closed"
    python3 "$FLOOD" admin "$host" "$TB_ADMIN_PORT" "$from" "$out.admin"
    # Until the flooders have seen the reset for it (<= 10 s).
    for _ in $(seq 1 100); do
        read -r nclosed ages <"$out.closed"
        [ "$nclosed" -ge 1 ] && break
        sleep 0.1
    done
    : >"$out.stop"
    wait "$flooder"
    is "$(cat "$out.admin")" "200 200 200 200 1" \
        "$name: a new admin logs in, gets the page, its session and Chart.js on one connection"
    cmp -s "$out.admin.index" "$top_srcdir/webui/index.html"
    ok $? "$name: the page is webui/index.html"
    like "$(cat "$out.admin.session" 2>/dev/null)" \
        '^\{"state":"ok","user":"admin","csrf":"[0-9a-f]+"\}$' "$name: the session is admin's"
    cmp -s "$out.admin.chart" /usr/share/javascript/chart.js/chart.min.js
    ok $? "$name: Chart.js is all there ($(wc -c <"$out.admin.chart" 2>/dev/null) bytes)"
    ok $((${nclosed:-0} >= 1 ? 0 : 1)) \
        "$name: the server closed flooders' connections for it (${nclosed:-0}; ages in s: $ages)"
    young=$(for a in $ages; do echo "${a%.*}"; done | awk '$1 < 10' | wc -l)
    is "$young" "${nclosed:-0}" "$name: each younger than 10 s"
}

IPV4=()
for i in $(seq 0 63); do IPV4+=("127.0.0.$((2 + i / 16))"); done
phase ipv4 127.0.0.1 127.0.0.6 "${IPV4[@]}"

tb_stop_daemon
start
IPV4SITE=() # 127.0.1.1 to 127.0.1.64; the admin from another /24
for i in $(seq 1 64); do IPV4SITE+=("127.0.1.$i"); done
phase ipv4site 127.0.0.1 127.0.2.1 "${IPV4SITE[@]}"

tb_stop_daemon
start --set admin.bind=$SERVER6
phase ipv6 $SERVER6 $ADMIN6 "${SITE[@]}"

tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
