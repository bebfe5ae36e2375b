#!/bin/bash
# Admin login throttling under attack, with real curl from many loopback
# addresses (all of 127/8 is local): a user's lockout survives a flood of
# failures for other names from other addresses (more than the throttle
# table holds); parallel wrong passwords are checked no more often than one
# after another would be (backoff and lockout apply to attempts in flight);
# a long UTF-8 user name is cut at a character boundary in the lockout's
# audit target; a known user's failures and lock outlive a restart.
. "$(dirname "$0")/lib.sh"
tb_setup

LOCK_AFTER=4
SITE_PORTS=(--set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)")
start_daemon() {
    tb_start_daemon --set admin.lockout_after=$LOCK_AFTER --set admin.pbkdf2_iterations=10000 \
        "${SITE_PORTS[@]}"
}
start_daemon || bail "daemon did not start"
B="https://127.0.0.1:$TB_ADMIN_PORT"

# login FROM USER PASSWORD [OUT], login_waiting FROM USER PASSWORD: from a
# 127.0.0.0/8 address (lib.sh).
login() { tb_admin_login "$@"; }
login_waiting() { tb_admin_login_waiting "$@"; }

echo 'admins password is long' | tb_ctl admin passwd admin >/dev/null || bail "creating admin"
echo 'daves password is long' | tb_ctl admin passwd dave >/dev/null || bail "creating dave"
echo 'erins password is long' | tb_ctl admin passwd erin >/dev/null || bail "creating erin"
# carol's password costs 1000000 PBKDF2 rounds (about 0.5 s): parallel
# attempts are all in flight together, as a slow box would have them.
tb_ctl set admin.pbkdf2_iterations 1000000 >/dev/null || bail "setting pbkdf2_iterations"
echo 'carols password is long' | tb_ctl admin passwd carol >/dev/null || bail "creating carol"
tb_ctl set admin.pbkdf2_iterations 10000 >/dev/null || bail "setting pbkdf2_iterations back"

# ---- parallel wrong passwords (carol, all from 127.0.1.1) ---------------
pids=()
for i in $(seq 1 16); do
    { login 127.0.1.1 carol "wrong$i" "$TB_TMP/par$i"; echo; } >"$TB_TMP/par$i.code" &
    pids+=($!)
done
wait "${pids[@]}" # not the daemon
# At once, well inside the shortest backoff (2 s) that the failures set.
right=$(login 127.0.1.1 carol 'carols password is long' "$TB_TMP/right")
codes=$(cat "$TB_TMP"/par*.code | sort | uniq -c | awk '{ printf "%s x %s; ", $2, $1 }')
n401=$(cat "$TB_TMP"/par*.code | grep -c '^401$')
n429=$(cat "$TB_TMP"/par*.code | grep -c '^429$')
[ "$n401" -ge 1 ] && [ "$n401" -le $LOCK_AFTER ]
ok $? "16 parallel wrong passwords: at most admin.lockout_after ($LOCK_AFTER) checked ($codes)"
is "$((n401 + n429))" 16 "the others refused with 429"
bad=""
for i in $(seq 1 16); do
    [ "$(cat "$TB_TMP/par$i.code")" = 429 ] || continue
    jq -e '(.error | test("too many failed logins")) and .retry_after >= 1' "$TB_TMP/par$i" >/dev/null ||
        bad="$bad $(cat "$TB_TMP/par$i")"
done
is "$bad" "" "each 429 says why and when to retry"
is "$right" 429 "then even carol's right password must wait"
# Backing off; locked already only if a straggler came after the backoff.
if [ "$n401" -lt $LOCK_AFTER ]; then want="wait and retry"; else want="locked out"; fi
like "$(jq -r .error "$TB_TMP/right")" "$want" "the reply says: $want"
# The backoff lets one attempt through at a time, until the lockout.
for i in $(seq $((n401 + 1)) $LOCK_AFTER); do
    is "$(login_waiting 127.0.1.1 carol "again$i")" 401 "after the wait wrong password $i is checked"
done
is "$(login 127.0.1.2 carol 'carols password is long')" 429 \
    "carol is locked out after $LOCK_AFTER failures (right password, another address)"
like "$(jq -r .error "$TB_TMP/login")" "locked out" "the reply says locked out"
is "$(grep -c 'failed login for user "carol"' "$TB_TMP/daemon.log")" "$LOCK_AFTER" \
    "exactly $LOCK_AFTER of carol's passwords were checked (one failure logged each)"

# ---- a lockout survives a flood of other keys (dave) ---------------------
# Four wrong passwords from four addresses lock the user key alone; a long
# UTF-8 name (63 ASCII letters, then "é" across the 64-byte cut of the
# throttle key) is locked alongside.
LONG="$(printf 'a%.0s' $(seq 1 63))éé"
for i in 1 2 3; do
    is "$(login 127.0.2.$i dave "wrong$i") $(login 127.0.3.$i "$LONG" "wrong$i")" "401 401" \
        "wrong password $i for dave and for the long name"
done
is "$(login 127.0.2.4 dave 'daves password is long')" 429 "dave backs off"
is "$(login_waiting 127.0.2.4 dave wrong4) $(login_waiting 127.0.3.4 "$LONG" wrong4)" "401 401" \
    "the fourth wrong password for each"
is "$(login 127.0.2.5 dave 'daves password is long')" 429 "dave is locked out"
like "$(jq -r .error "$TB_TMP/login")" "locked out" "the reply says locked out"

# 300 failures, each with its own user name and source address, each
# address in a /24 of its own (else the /24 would back off): 900 keys,
# more than the 256 the throttle table holds.  Eight at a time.
flood() { # N: one failure from 127.(1 + N/250).(N%250).1; one write per line
    echo "$(login "127.$((1 + $1 / 250)).$(($1 % 250)).1" "junk$1" wrong "$TB_TMP/flood.$1")"
}
export -f flood login tb_admin_login
export B TB_TMP
seq 1 300 | xargs -P 8 -I{} bash -c 'flood {}' >"$TB_TMP/flood.codes"
is "$(sort "$TB_TMP/flood.codes" | uniq -c | awk '{ printf "%s x %s; ", $2, $1 }')" "401 x 300; " \
    "300 failures for other names from other addresses, each checked"
is "$(login 127.0.4.200 dave 'daves password is long')" 429 \
    "dave is still locked out after the flood (right password, fresh address)"
like "$(jq -r .error "$TB_TMP/login")" "locked out" "the reply says locked out"
like "$(jq -r .retry_after "$TB_TMP/login")" "^(8[0-9][0-9]|900)$" "for admin.lockout_seconds"

# ---- the lockout's audit target is valid UTF-8, cut at a character -------
is "$(curl -sk --max-time 30 -H "Content-Type: application/json" --interface 127.0.4.201 \
    -c "$TB_TMP/cookies" -o "$TB_TMP/login" -w '%{http_code}' -X POST "$B/api/v1/session/login" \
    -d '{"user":"admin","password":"admins password is long"}')" 200 "admin logs in from a fresh address"
curl -sk --max-time 30 -b "$TB_TMP/cookies" "$B/api/v1/audit?limit=1000" >"$TB_TMP/audit"
is "$(jq -r '[.entries[] | select(.action == "login.lockout") | .target] | sort | join(" | ")' \
    "$TB_TMP/audit")" \
    "addr:127.0.1.1, user:carol | user:$(printf 'a%.0s' $(seq 1 63)) | user:dave" \
    "the lockouts are audited; the long name's key ends before the 'é' it cannot hold whole"

# ---- a known user's count outlives a restart (erin, dave) ----------------
# Three wrong passwords for erin, from three addresses; then a restart, which
# empties the in-memory table: the fourth locks her all the same.
for i in 1 2 3; do
    is "$(login 127.0.5.$i erin "wrong$i")" 401 "wrong password $i for erin"
done
tb_stop_daemon
start_daemon || bail "daemon did not restart"
is "$(login 127.0.5.10 dave 'daves password is long')" 429 \
    "after a restart dave is still locked out (right password, fresh address)"
like "$(jq -r .error "$TB_TMP/login")" "locked out" "the reply says locked out"
like "$(jq -r .retry_after "$TB_TMP/login")" "^(8[0-9][0-9]|900)$" "for what is left of the 900 s"
is "$(login 127.0.5.4 erin wrong4)" 401 "after the restart erin's fourth wrong password is checked"
is "$(login 127.0.5.5 erin 'erins password is long')" 429 \
    "and it locks her: four failures across the restart (right password, fresh address)"
like "$(jq -r .error "$TB_TMP/login")" "locked out" "the reply says locked out"
echo 'daves new password is long' | tb_ctl admin passwd dave >/dev/null
is "$(login 127.0.5.11 dave 'daves new password is long')" 200 \
    "a new password from the box (tlsboxctl admin passwd) lifts dave's lock"
is "$(login 127.0.5.12 dave wrong5)" 401 "dave's count starts again: a wrong password is checked"
is "$(curl -sk --max-time 30 -H "Content-Type: application/json" --interface 127.0.5.13 \
    -c "$TB_TMP/cookies" -o "$TB_TMP/login" -w '%{http_code}' -X POST "$B/api/v1/session/login" \
    -d '{"user":"admin","password":"admins password is long"}')" 200 "admin logs in"
curl -sk --max-time 30 -b "$TB_TMP/cookies" "$B/api/v1/audit?limit=1000" >"$TB_TMP/audit"
is "$(jq -r '[.entries[] | select(.action == "login.lockout" and .target == "user:erin")] | length' \
    "$TB_TMP/audit")" 1 "erin's lockout is audited once"

tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
