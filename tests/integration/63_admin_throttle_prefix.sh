#!/bin/bash
# A home gets an IPv6 /56: 256 /64s, as many as the login throttle's table
# holds.  Failing from each /64 until it locked filled the table with locks,
# and then every login, anyone's, got 429 ("too many failed logins from
# other addresses and users") until the locks ended.  Now failures count
# under the /56 and /48 as well (4 and 16 times a /64's limits): the /56
# locks as one key after 4 x admin.lockout_after failures, and the others
# log in.  Real curl from 128 /64s of one /56, in a network namespace of
# the test's own.
. "$(dirname "$0")/lib.sh"
tb_netns "$@"
SERVER=2001:db8:7::1
NEIGHBOUR=2001:db8:5:200::1 # another /56 of the attacker's /48
STRANGER=2001:db8:8::1      # another /48
# The attacker: 2001:db8:5:100::1 to 2001:db8:5:17f::1, a /64 each, and
# 2001:db8:5:1ff::1.
ATTACK=(2001:db8:5:1ff::1)
for i in $(seq 0 127); do ATTACK+=("$(printf '2001:db8:5:1%02x::1' "$i")"); done
for a in $SERVER $NEIGHBOUR $STRANGER "${ATTACK[@]}"; do
    echo "addr add $a/128 dev lo nodad"
done | ip -6 -batch - || bail "adding the test addresses"
tb_setup

LOCK_AFTER=4                # the least admin.lockout_after takes
LOCK_56=$((4 * LOCK_AFTER)) # THROTTLE_SCALE_56 in core/admin_throttle.c
tb_start_daemon --set admin.lockout_after=$LOCK_AFTER --set admin.pbkdf2_iterations=10000 \
    --set admin.bind=$SERVER --set site.https_port="$(tb_free_port)" \
    --set site.http_port="$(tb_free_port)" || bail "daemon did not start"
echo 'admins password is long' | tb_ctl admin passwd admin >/dev/null || bail "creating admin"
B="https://[$SERVER]:$TB_ADMIN_PORT"

# ---- the attack: 4 failures from each of 128 /64s of the /56 ------------
# Each /64 for a name of its own, eight at a time: three failures from each
# /64, one /64 after another (the third starts their backoff), then the
# fourth from each, after the backoff when told to wait.  That locked each
# /64 and its name: 256 locks, and the table was full.
attack() { # ROUND N: attempt N of the round, from /64 number N / 3 (N in round 2)
    local i code
    i=$(($1 == 1 ? $2 / 3 : $2))
    code=$(tb_admin_login "$(printf '2001:db8:5:1%02x::1' $i)" "nobody$i" wrong "$TB_TMP/attack.$1.$2")
    if [ "$1" = 2 ] && [ "$code" = 429 ] && jq -e '.error | test("wait")' "$TB_TMP/attack.$1.$2" >/dev/null; then
        sleep "$(jq -r .retry_after "$TB_TMP/attack.$1.$2")"
        code=$(tb_admin_login "$(printf '2001:db8:5:1%02x::1' $i)" "nobody$i" wrong "$TB_TMP/attack.$1.$2")
    fi
    echo "$code"
}
export -f attack tb_admin_login
export B TB_TMP
{
    seq 0 383 | xargs -P 8 -I{} bash -c 'attack 1 {}'
    seq 0 127 | xargs -P 8 -I{} bash -c 'attack 2 {}'
} >"$TB_TMP/attack.codes"
codes=$(sort "$TB_TMP/attack.codes" | uniq -c | awk '{ printf "%s x %s; ", $2, $1 }')
checked=$(grep -c '^401$' "$TB_TMP/attack.codes")
ok $((checked >= LOCK_56 - LOCK_AFTER && checked <= LOCK_56 ? 0 : 1)) \
    "of 512 failures from 128 /64s of one /56, at most $LOCK_56 are checked ($codes)"
# The /56 backs off from its 12th failure: the attacker's retries after each
# wait (at most four, each some 2 s) bring it to its lock.
for _ in 1 2 3 4 5 6; do
    [ "$(tb_admin_login_waiting 2001:db8:5:1ff::1 admin 'admins password is long')" = 429 ] &&
        jq -e '.error | test("locked out")' "$TB_TMP/login" >/dev/null && break
done
is "$(tb_admin_login 2001:db8:5:1ff::1 admin 'admins password is long')" 429 \
    "then the /56 is refused, even with the right password"
like "$(jq -r .error "$TB_TMP/login")" "locked out" "it is told it is locked out"
is "$(grep -c 'failed login for user' "$TB_TMP/daemon.log")" $LOCK_56 \
    "after $LOCK_56 failures checked in all (4 x admin.lockout_after)"
is "$(grep -c 'login locked out for 900 s: .*addr:2001:db8:5:100::/56' "$TB_TMP/daemon.log")" \
    1 "the /56 is locked as one key, once"

# ---- the others log in -----------------------------------------------------
# login_page FROM: the status of a login from FROM, then of its session
# (with the cookie the login set), and the session's user.
login_page() {
    local code
    code=$(curl -sk --max-time 30 -H "Content-Type: application/json" --interface "$1" \
        -c "$TB_TMP/cookies.$1" -o "$TB_TMP/login.$1" -w '%{http_code}' \
        -X POST "$B/api/v1/session/login" -d '{"user":"admin","password":"admins password is long"}')
    echo "$code $(curl -sk --max-time 30 --interface "$1" -b "$TB_TMP/cookies.$1" \
        -o "$TB_TMP/session.$1" -w '%{http_code}' "$B/api/v1/session")" \
        "$(jq -r .user "$TB_TMP/session.$1" 2>/dev/null)"
}
is "$(login_page $NEIGHBOUR)" "200 200 admin" \
    "another /56 of the same /48 logs in and gets admin's session"
is "$(login_page $STRANGER)" "200 200 admin" "another /48 too"
unlike "$(cat "$TB_TMP/daemon.log")" "throttle table full" "no login was refused for a full table"

tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
