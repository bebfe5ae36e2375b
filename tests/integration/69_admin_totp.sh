#!/bin/bash
# Two-factor login (TOTP) through the admin API, against codes computed as
# an authenticator app does (totp_code.py): set up only with the current
# password and confirmed by a code; then the password alone is not enough,
# a wrong code counts as a failed login (and locks out like one), a code
# logs in once; turned off with password and code, or from the box with
# tlsboxctl admin totp-off.  The secret is in no log, audit row or later
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
is "$(jq -c . "$TB_TMP/reply")" '{"user":"admin","enabled":false,"pending":false}' "off at first"
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
is "$(jq -c . "$TB_TMP/reply")" '{"user":"admin","enabled":false,"pending":true}' \
    "pending, not on: a secret nobody confirmed changes no login"
is "$(login '')" 200 "the password alone still logs in"
is "$(call PUT admin/totp "{\"code\":\"$(code -5)\"}")" 400 "an old code does not confirm it"
like "$(jq -r .error "$TB_TMP/reply")" "does not match the new secret" "saying why"
is "$(call PUT admin/totp '{"code":"12345"}')" 400 "five digits do not either"
is "$(jq -r .error "$TB_TMP/reply")" "code: the 6 digits the app shows" "saying why"
is "$(call PUT admin/totp "{\"code\":\"$(code)\"}")" 200 "the app's code confirms it"
is "$(jq -c . "$TB_TMP/reply")" '{"user":"admin","enabled":true}' "two-factor login is on"
ctl_get() { curl -s --max-time 10 --unix-socket "$TB_STATE/control.sock" "http://x/api/v1/$1"; }
is "$(ctl_get 'admin/totp?user=admin' | jq -c .)" '{"user":"admin","enabled":true,"pending":false}' \
    "the control socket sees it on (GET admin/totp?user=admin), and no secret"
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
is "$(call POST admin/totp "{\"current_password\":\"$PW\"}")" 409 \
    "no new secret while one is on"
is "$(jq -r .error "$TB_TMP/reply")" "two-factor login is on already: turn it off first" "saying so"

# 3. Turning it off.
is "$(call POST admin/totp/off "{\"current_password\":\"$PW\",\"code\":\"$(code -5)\"}")" 403 \
    "off needs a current code"
is "$(jq -r .error "$TB_TMP/reply")" "wrong one-time code (or one used already)" "saying so"
is "$(call POST admin/totp/off "{\"current_password\":\"$PW\",\"code\":\"$(code)\"}")" 200 \
    "password and code turn it off"
is "$(login '')" 200 "the password alone logs in again"
is "$(call POST admin/totp "{\"current_password\":\"$PW\"}")" 200 "on again: a new secret"
old=$secret
secret=$(jq -r .secret "$TB_TMP/reply")
mid=$secret
ok $([ "$secret" != "$old" ]; echo $?) "a new secret, not the old one"
rm -f "$TB_TMP/totp.step"
is "$(call PUT admin/totp "{\"code\":\"$(code)\"}")" 200 "confirmed"
out=$(tb_ctl admin totp-off admin)
ok $? "tlsboxctl admin totp-off admin (the app is lost)"
like "$out" "two-factor login of admin is off" "says what it did"
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
    "admin POST admin/totp, admin PUT admin/totp, admin POST admin/totp/off, admin POST admin/totp, admin PUT admin/totp, control POST admin/totp/off, admin POST admin/totp, admin PUT admin/totp" \
    "the audit log has each change, who made it (control: tlsboxctl), in order"
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
