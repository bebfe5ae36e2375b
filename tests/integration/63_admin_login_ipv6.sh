#!/bin/bash
# Login throttling counts an IPv6 client by its /64: one host (or LAN) gets
# a whole /64, so stepping to the next address of it must not start a fresh
# count.  Another /64 and IPv4 keep their own counts.  Real curl from real
# addresses: the test makes them in a network namespace of its own.
if [ -z "${TB_NETNS:-}" ]; then
    if [ "$(id -u)" != 0 ] || ! unshare -n true 2>/dev/null; then
        echo "1..0 # SKIP needs root and unshare -n to add IPv6 test addresses"
        exit 0
    fi
    exec env TB_NETNS=1 unshare -n bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"

ip link set lo up || bail "lo up in the test's network namespace"
NET=2001:db8:1:2 OTHER=2001:db8:1:3
for a in $NET::1 $NET::a $NET::b $NET::c $NET::d $NET::e $OTHER::a; do
    ip -6 addr add "$a/64" dev lo nodad || bail "adding $a"
done
tb_setup

LOCK_AFTER=4
tb_start_daemon --set admin.lockout_after=$LOCK_AFTER --set admin.pbkdf2_iterations=10000 \
    --set admin.bind=$NET::1 --set site.https_port="$(tb_free_port)" \
    --set site.http_port="$(tb_free_port)" || bail "daemon did not start"
echo 'admins password is long' | tb_ctl admin passwd admin >/dev/null || bail "creating admin"

B="https://[$NET::1]:$TB_ADMIN_PORT"
login() { tb_admin_login "$@"; }

# Each failure from its own address of the /64 and for its own unknown
# name: only the /64's count can reach the lockout.
codes=""
i=0
for a in a b c d; do
    i=$((i + 1))
    codes="$codes $(tb_admin_login_waiting $NET::$a "nobody$i" wrong)"
done
is "$codes" " 401 401 401 401" "$LOCK_AFTER failures from four addresses of one /64 are checked"
is "$(login $NET::e admin 'admins password is long')" 429 \
    "a fifth address of that /64 is refused, even with the right password"
like "$(jq -r '"\(.error) \(.retry_after)"' "$TB_TMP/login")" '^too many failed logins: locked out [0-9]+$' \
    "it is told the addresses are locked out"
ok $(($(jq -r ".retry_after // 0" "$TB_TMP/login") > 800 ? 0 : 1)) "for the lockout (900 s), not a backoff"
like "$(cat "$TB_TMP/daemon.log")" "login locked out for 900 s: addr:$NET::/64" \
    "the log names the locked /64"
is "$(login $OTHER::a admin 'admins password is long')" 200 "another /64 logs in"
is "$(login 127.0.0.1 admin 'admins password is long' 2>/dev/null || true)" 000 \
    "(the admin listens on the IPv6 address only)"
is "$(sqlite3 "file:$TB_STATE/tlsbox.db?mode=ro" \
    "SELECT source FROM audit WHERE action = 'login.failed' ORDER BY id" | tr '\n' ' ')" \
    "$NET::a $NET::b $NET::c $NET::d " "the audit log keeps each full address"

tb_stop_daemon
done_testing
