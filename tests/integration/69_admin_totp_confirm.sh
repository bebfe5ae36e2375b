#!/bin/bash
# Confirming a pending two-factor secret (PUT admin/totp) is throttled as a
# login is: an open session whose password it does not know must not guess
# the pending secret's code without end (3 of a million codes match at any
# time; hundreds of guesses a second found one in minutes) and so turn
# two-factor login on with recovery codes only it has seen.  Two wrong
# codes are free, the third starts the backoff (429 with retry_after); a
# code that is not 6 digits is no guess; the right code still confirms once
# the wait is over.
. "$(dirname "$0")/lib.sh"
tb_setup

tb_start_daemon --set admin.pbkdf2_iterations=10000 \
    --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" ||
    bail "daemon did not start"
B="https://127.0.0.1:$TB_ADMIN_PORT"
J="$TB_TMP/cookies"
CURL=(curl -sk --max-time 10 -H "Content-Type: application/json")
PW="totp confirm password"
code() { python3 "$top_srcdir/tests/integration/totp_code.py" "$secret" "$TB_TMP/totp.step" "$@"; }
call() { tb_admin_call "$J" "$@"; } # METHOD PATH BODY: status; reply in $TB_TMP/reply

echo "$PW" | tb_ctl admin passwd admin >/dev/null || bail "creating admin"
is "$("${CURL[@]}" -c "$J" -o /dev/null -w '%{http_code}' -X POST "$B/api/v1/session/login" \
    -d "{\"user\":\"admin\",\"password\":\"$PW\"}")" 200 "admin logs in"
is "$(call POST admin/totp "{\"current_password\":\"$PW\"}")" 200 "a pending secret"
secret=$(jq -r .secret "$TB_TMP/reply")

is "$(call PUT admin/totp '{"code":"12345"}')" 400 "five digits: refused, no guess"
for i in 5 6 7; do
    is "$(call PUT admin/totp "{\"code\":\"$(code -$i)\"}")" 400 "wrong code $((i - 4)): 400"
done
is "$(call PUT admin/totp "{\"code\":\"$(code -8)\"}")" 429 "then the next guess must wait"
is "$(jq -r .error "$TB_TMP/reply")" "too many wrong codes: wait and retry" "saying so"
retry=$(jq -r .retry_after "$TB_TMP/reply")
like "$retry" "^[12]$" "for 2 s"
is "$(call GET admin/totp)" 200 "GET admin/totp"
is "$(jq -c '{enabled, pending}' "$TB_TMP/reply")" '{"enabled":false,"pending":true}' \
    "still pending: nothing turned on"
sleep "$((retry + 1))"
is "$(call PUT admin/totp "{\"code\":\"$(code)\"}")" 200 "after the wait the app's code confirms it"
is "$(jq -r .enabled "$TB_TMP/reply")" true "two-factor login is on"
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
