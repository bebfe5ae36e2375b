#!/bin/bash
# An attacker with an IPv4 /24 has 256 addresses.  Each counted on its own,
# two failures from each (the free ones, with a name of its own each time)
# were all checked and slowed nothing down: 512 guesses per lockout, and
# 256 x admin.lockout_after in all, as fast as the PBKDF2 runs went.  Now an
# IPv4 address counts under its /24 as well, with 16 times an address's
# limits (as an IPv6 /48): the /24 backs off after 48 failures and locks as
# one key after 16 x admin.lockout_after, while another /24 logs in.  Real
# curl from 127.0.7.0/24 (all of 127/8 is local).
. "$(dirname "$0")/lib.sh"
tb_setup

LOCK_AFTER=4                 # the least admin.lockout_after takes
FREE_24=48                   # 3 free failures x THROTTLE_SCALE_24 (core/admin_throttle.c)
LOCK_24=$((16 * LOCK_AFTER)) # THROTTLE_SCALE_24 x admin.lockout_after
tb_start_daemon --set admin.lockout_after=$LOCK_AFTER --set admin.pbkdf2_iterations=10000 \
    --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" ||
    bail "daemon did not start"
echo 'admins password is long' | tb_ctl admin passwd admin >/dev/null || bail "creating admin"
B="https://127.0.0.1:$TB_ADMIN_PORT"

# ---- the attack: two failures from each of 100 addresses of one /24 -------
# 127.0.7.1 to 127.0.7.100, a name of its own for each attempt, eight at a
# time: no address and no name reaches its backoff.  The /24 reaches its
# own after 48: the rest are refused unchecked, but for one now and then
# when its 2 s backoff has ended (each such failure starts it again), at
# most until the /24 locks.
attack() { # N: attempt N, from 127.0.7.(1 + N / 2)
    echo "$(tb_admin_login "127.0.7.$((1 + $1 / 2))" "guess$1" wrong "$TB_TMP/attack.$1")"
}
export -f attack tb_admin_login
export B TB_TMP
seq 0 199 | xargs -P 8 -I{} bash -c 'attack {}' >"$TB_TMP/attack.codes"
codes=$(sort "$TB_TMP/attack.codes" | uniq -c | awk '{ printf "%s x %s; ", $2, $1 }')
checked=$(grep -c '^401$' "$TB_TMP/attack.codes")
ok $((checked >= FREE_24 && checked <= LOCK_24 ? 0 : 1)) \
    "of 200 failures from 100 addresses of one /24, $FREE_24 to $LOCK_24 are checked ($codes)"
refused=$(grep -c '^429$' "$TB_TMP/attack.codes")
is "$((checked + refused))" 200 "the others are refused with 429"
said=$(cat "$TB_TMP"/attack.[0-9]* |
    jq -s '[.[] | select((.error | test("too many failed logins")) and .retry_after >= 1)] | length')
is "$said" "$refused" "each 429 says why and when to retry"

# The attacker goes on from fresh addresses of the /24, waiting out each
# backoff, until the /24 is locked: at most LOCK_24 - FREE_24 more failures.
for i in $(seq 1 $((LOCK_24 - FREE_24 + 1))); do
    [ "$(tb_admin_login_waiting "127.0.7.$((100 + i))" "more$i" wrong)" = 429 ] &&
        jq -e '.error | test("locked out")' "$TB_TMP/login" >/dev/null && break
done
is "$(grep -c 'failed login for user' "$TB_TMP/daemon.log")" $LOCK_24 \
    "the /24 locks after $LOCK_24 failures checked in all (16 x admin.lockout_after)"
is "$(grep -c 'login locked out for 900 s: addr:127\.0\.7\.0/24' "$TB_TMP/daemon.log")" 1 \
    "as one key, once"
is "$(tb_admin_login 127.0.7.250 admin 'admins password is long')" 429 \
    "then a fresh address of the /24 is refused, even with the right password"
like "$(jq -r .error "$TB_TMP/login")" "locked out" "it is told it is locked out"
like "$(jq -r .retry_after "$TB_TMP/login")" "^(8[0-9][0-9]|900)$" "for admin.lockout_seconds"

# ---- another /24 is not affected -------------------------------------------
is "$(tb_admin_login 127.0.8.1 nobody wrong)" 401 "a wrong password from another /24 is checked"
is "$(curl -sk --max-time 30 -H "Content-Type: application/json" --interface 127.0.8.2 \
    -c "$TB_TMP/cookies" -o "$TB_TMP/login" -w '%{http_code}' -X POST "$B/api/v1/session/login" \
    -d '{"user":"admin","password":"admins password is long"}')" 200 \
    "admin logs in from another /24"
is "$(curl -sk --max-time 30 -b "$TB_TMP/cookies" "$B/api/v1/session" | jq -r .user)" admin \
    "and gets admin's session"

tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
