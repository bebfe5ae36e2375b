#!/bin/bash
# Two-factor login (TOTP) through the admin API, against codes computed as
# an authenticator app does (totp_code.py): set up only with the current
# password and confirmed by a code; then the password alone is not enough,
# a wrong code counts as a failed login (and locks out like one), a code
# logs in once; ten recovery codes come with it, each standing in for a
# code once (at login, to turn it off, for a new set), kept only hashed;
# turned off with password and code, or from the box with tlsboxctl admin
# totp-off.  The secret and the codes are in no log, audit row or later
# reply.
. "$(dirname "$0")/lib.sh"
tb_setup

tb_start_daemon --set admin.lockout_after=4 --set admin.pbkdf2_iterations=10000 \
    --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" ||
    bail "daemon did not start"
B="https://127.0.0.1:$TB_ADMIN_PORT"
J="$TB_TMP/cookies"
CURL=(curl -sk --max-time 10 -H "Content-Type: application/json")
PW="totp test password 1"
code() { python3 "$top_srcdir/tests/integration/totp_code.py" "$secret" "$TB_TMP/totp.step" "$@"; }
# login USER-JSON-EXTRA: status of a login as admin with the password and
# the given extra members ("" for none); the reply in $TB_TMP/login.
login() {
    "${CURL[@]}" -c "$J" -o "$TB_TMP/login" -w '%{http_code}' -X POST "$B/api/v1/session/login" \
        -d "{\"user\":\"admin\",\"password\":\"$PW\"$1}"
}
# call METHOD PATH BODY: status; reply in $TB_TMP/reply.
call() {
    local csrf
    csrf=$("${CURL[@]}" -b "$J" "$B/api/v1/session" | jq -r .csrf)
    "${CURL[@]}" -b "$J" -H "X-CSRF-Token: $csrf" -o "$TB_TMP/reply" -w '%{http_code}' \
        -X "$1" "$B/api/v1/$2" ${3:+-d "$3"}
}

url=$(tb_ctl admin setup-url | head -1)
is "$("${CURL[@]}" -c "$J" -o /dev/null -w '%{http_code}' -X POST "$B/api/v1/session/setup" \
    -d "{\"token\":\"${url##*setup=}\",\"user\":\"admin\",\"password\":\"$PW\"}")" 200 "first run"

# 1. Setting up.
is "$(call GET admin/totp)" 200 "GET admin/totp"
is "$(jq -c . "$TB_TMP/reply")" \
    '{"user":"admin","enabled":false,"pending":false,"recovery_left":0,"recovery_set":10,"recovery_made":0}' \
    "off at first"
is "$(call POST admin/totp '{"current_password":"wrong password"}')" 403 \
    "a new secret needs the current password"
is "$(jq -r .error "$TB_TMP/reply")" "current_password is wrong" "and says so"
is "$(call POST admin/totp "{\"current_password\":\"$PW\"}")" 200 "a new secret with it"
secret=$(jq -r .secret "$TB_TMP/reply")
like "$secret" "^[A-Z2-7]{32}$" "32 base32 characters (160 bits)"
like "$(jq -r .uri "$TB_TMP/reply")" \
    "^otpauth://totp/tlsbox:admin%40[^?]+\?secret=$secret&issuer=tlsbox&algorithm=SHA1&digits=6&period=30$" \
    "and the otpauth URI authenticator apps take"
is "$(call GET admin/totp)" 200 "GET admin/totp"
is "$(jq -c 'del(.recovery_made)' "$TB_TMP/reply")" \
    '{"user":"admin","enabled":false,"pending":true,"recovery_left":0,"recovery_set":10}' \
    "pending, not on: a secret nobody confirmed changes no login"
is "$(login '')" 200 "the password alone still logs in"
is "$(call PUT admin/totp "{\"code\":\"$(code -5)\"}")" 400 "an old code does not confirm it"
like "$(jq -r .error "$TB_TMP/reply")" "does not match the new secret" "saying why"
is "$(call PUT admin/totp '{"code":"12345"}')" 400 "five digits do not either"
is "$(jq -r .error "$TB_TMP/reply")" "code: the 6 digits the app shows" "saying why"
is "$(call PUT admin/totp "{\"code\":\"$(code)\"}")" 200 "the app's code confirms it"
is "$(jq -c '{user, enabled}' "$TB_TMP/reply")" '{"user":"admin","enabled":true}' "two-factor login is on"
jq -r '.recovery_codes[]' "$TB_TMP/reply" >"$TB_TMP/codes"
is "$(grep -cE '^[a-z2-7]{5}-[a-z2-7]{5}$' "$TB_TMP/codes")" 10 \
    "and the reply has ten recovery codes (abcde-fghij: 50 random bits each)"
is "$(sort -u "$TB_TMP/codes" | wc -l)" 10 "all different"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) || ' ' || count(DISTINCT hash) || ' ' ||
    min(length(hash)) FROM admin_recovery_codes")" "10 10 32" "the store keeps ten SHA-256 hashes"
n=0
for c in $(cat "$TB_TMP/codes"); do
    C=$(echo "${c/-/}" | tr a-z A-Z)
    n=$((n + $(sqlite3 "$TB_STATE/tlsbox.db" .dump | grep -ci -e "$c" -e "$C")))
done
is "$n" 0 "and not one code itself (a dump of the store has none)"
all_codes=$(cat "$TB_TMP/codes")
rc1=$(sed -n 1p "$TB_TMP/codes")
rc2=$(sed -n 2p "$TB_TMP/codes")
rc3=$(sed -n 3p "$TB_TMP/codes")
rc4=$(sed -n 4p "$TB_TMP/codes")
ctl_get() { curl -s --max-time 10 --unix-socket "$TB_STATE/control.sock" "http://x/api/v1/$1"; }
is "$(ctl_get 'admin/totp?user=admin' | jq -c 'del(.recovery_made)')" \
    '{"user":"admin","enabled":true,"pending":false,"recovery_left":10,"recovery_set":10}' \
    "the control socket sees it on (GET admin/totp?user=admin), and no secret"
made=$(ctl_get 'admin/totp?user=admin' | jq -r .recovery_made)
ok $([ $((made - $(date +%s))) -le 1 ] && [ $(($(date +%s) - made)) -le 60 ]; echo $?) \
    "recovery_made: when the set was made ($made, now $(date +%s))"
is "$(ctl_get admin/totp | jq -r .error)" \
    "from the control socket, say whose: admin/totp?user=NAME" "and asks whose without ?user="
tb_ctl --json admin totp-off nobody >"$TB_TMP/ctl" 2>&1
ok $(($? == 0)) "tlsboxctl admin totp-off for an unknown user fails"
like "$(cat "$TB_TMP/ctl")" 'no admin user "nobody"' "saying so"

# 2. Logging in.
is "$(login '')" 401 "now the password alone does not log in"
is "$(jq -c . "$TB_TMP/login")" \
    '{"error":"enter the 6-digit code from your authenticator app","code_needed":true}' \
    "the reply asks for the code"
is "$(login ",\"code\":\"$(code -5)\"")" 401 "an old code is refused"
is "$(jq -r .error "$TB_TMP/login")" "wrong one-time code (or one used already)" "saying so"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT failed_logins FROM admin_users WHERE name = 'admin'")" 1 \
    "a wrong code counts as a failed login"
c=$(code)
is "$(login ",\"code\":\"$c\"")" 200 "password and code log in"
is "$("${CURL[@]}" -b "$J" "$B/api/v1/session" | jq -r .state)" ok "with a session"
is "$(login ",\"code\":\"$c\"")" 401 "the same code does not log in twice"
is "$(login ",\"code\":\"$(code)\"")" 200 "the next one does"

# 2b. Recovery codes stand in for the app's code, each once.
left() { ctl_get 'admin/totp?user=admin' | jq -r .recovery_left; }
is "$(login ",\"code\":\"$rc1\"")" 200 "a recovery code logs in in place of the app's code"
is "$(left)" 9 "9 left"
is "$(login ",\"code\":\"$rc1\"")" 401 "the same recovery code does not log in twice"
is "$(jq -r .error "$TB_TMP/login")" "wrong one-time code (or one used already)" "saying so"
is "$(login ",\"code\":\"$(echo "${rc2/-/}" | tr a-z A-Z)\"")" 200 \
    "upper case and without the dash it still counts"
is "$(left)" 8 "8 left"
is "$(login ',"code":"aaaaa-aaaaa"')" 401 "a made-up recovery code is refused"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT failed_logins FROM admin_users WHERE name = 'admin'")" 1 \
    "and counts as a failed login"
is "$(login ",\"code\":\"$(code)\"")" 200 "the app's code still logs in"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT detail FROM audit WHERE action = 'login.recovery_code'
    ORDER BY id")" "9 recovery codes left
8 recovery codes left" "each recovery login is in the audit log, with how many are left"
is "$(grep -c 'logged in from 127.0.0.1 with a recovery code; 8 recovery codes left' \
    "$TB_TMP/daemon.log")" 1 "and warned of in the daemon's log"
is "$(call POST admin/totp/recovery "{\"current_password\":\"$PW\",\"code\":\"$rc3\"}")" 200 \
    "a new set, with password and a recovery code"
jq -r '.recovery_codes[]' "$TB_TMP/reply" >"$TB_TMP/codes"
is "$(grep -cE '^[a-z2-7]{5}-[a-z2-7]{5}$' "$TB_TMP/codes")" 10 "ten new codes"
all_codes="$all_codes $(cat "$TB_TMP/codes")"
is "$(left)" 10 "10 left"
is "$(login ",\"code\":\"$rc4\"")" 401 "an unused code of the old set no longer logs in"
rc1=$(sed -n 1p "$TB_TMP/codes")
rc2=$(sed -n 2p "$TB_TMP/codes")
is "$(login ",\"code\":\"$rc1\"")" 200 "one of the new set does"
is "$(call POST admin/totp/recovery "{\"current_password\":\"$PW\",\"code\":\"$rc1\"}")" 403 \
    "a used one makes no new set"
is "$(call POST admin/totp/recovery "{\"current_password\":\"wrong password\",\"code\":\"$rc2\"}")" \
    403 "nor without the password"
is "$(left)" 9 "9 left: a refused code is not used up"
is "$(call POST admin/totp "{\"current_password\":\"$PW\"}")" 409 \
    "no new secret while one is on"
is "$(jq -r .error "$TB_TMP/reply")" "two-factor login is on already: turn it off first" "saying so"

# 3. Turning it off.
is "$(call POST admin/totp/off "{\"current_password\":\"$PW\",\"code\":\"$(code -5)\"}")" 403 \
    "off needs a current code"
is "$(jq -r .error "$TB_TMP/reply")" "wrong one-time code (or one used already)" "saying so"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT failed_logins FROM admin_users WHERE name = 'admin'")" 3 \
    "and counts as a failed login, as at the login form: 3 since the last login (a used recovery code, a wrong password, this code)"
is "$(call POST admin/totp/off "{\"current_password\":\"$PW\",\"code\":\"$rc2\"}")" 200 \
    "password and a recovery code turn it off (the phone is lost)"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM admin_recovery_codes")" 0 \
    "the recovery codes go with it"
is "$(login '')" 200 "the password alone logs in again"
is "$(call POST admin/totp "{\"current_password\":\"$PW\"}")" 200 "on again: a new secret"
old=$secret
secret=$(jq -r .secret "$TB_TMP/reply")
mid=$secret
ok $([ "$secret" != "$old" ]; echo $?) "a new secret, not the old one"
rm -f "$TB_TMP/totp.step"
is "$(call PUT admin/totp "{\"code\":\"$(code)\"}")" 200 "confirmed"
all_codes="$all_codes $(jq -r '.recovery_codes[]' "$TB_TMP/reply")"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM admin_recovery_codes")" 10 "ten new codes"
out=$(tb_ctl admin totp-off admin)
ok $? "tlsboxctl admin totp-off admin (the app is lost)"
like "$out" "two-factor login of admin is off" "says what it did"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM admin_recovery_codes")" 0 \
    "and the recovery codes are gone"
is "$(login '')" 200 "the password alone logs in again"

# 4. Locked out by wrong codes, as by wrong passwords (admin.lockout_after=4),
# from another address; the owner's browser (its device cookie) still gets
# in with password and code.
is "$(call POST admin/totp "{\"current_password\":\"$PW\"}")" 200 "on again"
secret=$(jq -r .secret "$TB_TMP/reply")
rm -f "$TB_TMP/totp.step"
is "$(call PUT admin/totp "{\"code\":\"$(code)\"}")" 200 "confirmed"
from2() { # from2 EXTRA: a login from 127.0.0.2 without cookies
    "${CURL[@]}" --interface 127.0.0.2 -o "$TB_TMP/login2" -w '%{http_code}' -X POST \
        "$B/api/v1/session/login" -d "{\"user\":\"admin\",\"password\":\"$PW\"$1}"
}
n=0
for i in $(seq 1 12); do
    st=$(from2 ",\"code\":\"$(code -5)\"")
    [ "$st" = 401 ] && n=$((n + 1))
    if [ "$st" = 429 ]; then
        jq -e '.error | test("locked out")' "$TB_TMP/login2" >/dev/null && break
        sleep "$(jq -r .retry_after "$TB_TMP/login2")"
    fi
done
is "$n" 4 "four wrong codes are counted, then the login is locked out"
is "$(from2 ",\"code\":\"$(code)\"")" 429 "then even the right code is refused"
like "$(jq -r .error "$TB_TMP/login2")" "locked out" "saying so"
is "$("${CURL[@]}" -b "$J" -c "$J" -o "$TB_TMP/login" -w '%{http_code}' -X POST \
    "$B/api/v1/session/login" \
    -d "{\"user\":\"admin\",\"password\":\"$PW\",\"code\":\"$(code)\"}")" 200 \
    "the owner's browser (device cookie) logs in with password and code"

# 5. The secrets are nowhere else.
for s in "$old" "$mid" "$secret"; do
    is "$(grep -c "$s" "$TB_TMP/daemon.log")" 0 "a secret is not in the daemon's log"
    is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM audit WHERE
        coalesce(detail,'') || coalesce(before_state,'') || coalesce(after_state,'') LIKE '%$s%'")" \
        0 "nor in the audit log"
done
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT group_concat(actor || ' ' || action, ', ') FROM audit
    WHERE target LIKE 'admin/totp%' ORDER BY id")" \
    "admin POST admin/totp, admin PUT admin/totp, admin POST admin/totp/recovery, admin POST admin/totp/off, admin POST admin/totp, admin PUT admin/totp, control POST admin/totp/off, admin POST admin/totp, admin PUT admin/totp" \
    "the audit log has each change, who made it (control: tlsboxctl), in order"
n=0
for c in $all_codes; do
    n=$((n + $(grep -c "$c" "$TB_TMP/daemon.log") + $(sqlite3 "$TB_STATE/tlsbox.db" \
        "SELECT count(*) FROM audit WHERE coalesce(detail,'') || coalesce(before_state,'') ||
        coalesce(after_state,'') LIKE '%$c%'")))
done
is "$n" 0 "no recovery code ($(echo $all_codes | wc -w) made) is in the log or the audit log"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*), sum(json_extract(detail, '$.code') = '********')
    FROM audit WHERE json_valid(detail) AND json_extract(detail, '$.code') IS NOT NULL")" "5|5" \
    "the 5 changes made with a code (3 confirmations, a new set, off) have it masked in the audit log"
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
