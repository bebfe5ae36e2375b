#!/bin/bash
# The admin port counts an IPv6 client by its /64: one host (or LAN) gets a
# whole /64, so stepping to the next address of it must not start a fresh
# count of failed logins, nor of open connections.  Another /64 keeps its
# own counts.  Real curl from real addresses: the test makes them in a
# network namespace of its own.
. "$(dirname "$0")/lib.sh"
tb_netns "$@"
NET=2001:db8:1:2 OTHER=2001:db8:1:3
HOLD=()
for i in $(seq 1 16); do HOLD+=("$NET::1:$i"); done
for a in $NET::1 $NET::a $NET::b $NET::c $NET::d $NET::e $OTHER::a $OTHER::b "${HOLD[@]}"; do
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

# ---- open connections: 16 per client, a /64 counting as one ------------
# 16 TLS connections from 16 addresses of the /64, each past its handshake
# (so the server has taken it), held open until the holder is killed.
cat >"$TB_TMP/hold.py" <<'PY'
import socket, ssl, sys, time
host, port, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
held = []
for src in sys.argv[4:]:
    s = socket.create_connection((host, port), 10, (src, 0))
    held.append(ctx.wrap_socket(s))
open(ready, "w").write("%d\n" % len(held))
time.sleep(600)
PY
tb_bg python3 "$TB_TMP/hold.py" "$NET::1" "$TB_ADMIN_PORT" "$TB_TMP/held" "${HOLD[@]}"
holder=$TB_BG_PID
tb_wait_file "$TB_TMP/held" "$holder"
is "$(cat "$TB_TMP/held" 2>/dev/null)" 16 "16 connections from 16 addresses of the /64 are open"
status() { # FROM: the status of GET /api/v1/session from address FROM
    curl -sk --max-time 10 --interface "$1" -o /dev/null -w '%{http_code}' "$B/api/v1/session"
}
is "$(status $NET::e)" 000 "a 17th from another address of the /64 is refused"
is "$(status $OTHER::b)" 200 "another /64 is served"
kill "$holder"
wait "$holder" 2>/dev/null
# The server notices the closes in its connection threads: wait for that.
code=000
for _ in $(seq 1 100); do
    code=$(status $NET::e)
    [ "$code" = 200 ] && break
    sleep 0.1
done
is "$code" 200 "once they close, the /64 is served again"

tb_stop_daemon
done_testing
