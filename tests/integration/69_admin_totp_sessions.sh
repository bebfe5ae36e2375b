#!/bin/bash
# Turning two-factor login on or off ends the user's other sessions, as a
# new password does, and keeps the one that made the change: a session
# opened with the password alone (say, a stolen one) must not outlive the
# second factor meant to stop it.  Off from the box (tlsboxctl admin
# totp-off) ends them all; ending a setup nobody confirmed ends none.
. "$(dirname "$0")/lib.sh"
tb_setup

tb_start_daemon --set admin.pbkdf2_iterations=10000 \
    --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" ||
    bail "daemon did not start"
B="https://127.0.0.1:$TB_ADMIN_PORT"
CURL=(curl -sk --max-time 10 -H "Content-Type: application/json")
PW="totp sessions password"
code() { python3 "$top_srcdir/tests/integration/totp_code.py" "$secret" "$TB_TMP/totp.step" "$@"; }
# login JAR [EXTRA]: status of a login as admin into cookie jar JAR.
login() {
    "${CURL[@]}" -c "$TB_TMP/$1" -o /dev/null -w '%{http_code}' -X POST "$B/api/v1/session/login" \
        -d "{\"user\":\"admin\",\"password\":\"$PW\"${2:-}}"
}
# alive JAR: the state GET session gives with that jar's cookie ("ok":
# logged in).
alive() { "${CURL[@]}" -b "$TB_TMP/$1" "$B/api/v1/session" | jq -r .state; }
# call JAR METHOD PATH BODY: status; reply in $TB_TMP/reply.
call() { tb_admin_call "$TB_TMP/$1" "${@:2}"; }

is "$(tb_admin_setup "$TB_TMP/a" admin "$PW")" 200 "first run (browser a)"
is "$(login b)" 200 "browser b logs in with the password"

# A setup begun and dropped ends no session.
is "$(call a POST admin/totp "{\"current_password\":\"$PW\"}")" 200 "a begins a setup"
is "$(call a POST admin/totp/off "{\"current_password\":\"$PW\"}")" 200 "and drops it"
is "$(alive b)" ok "b's session is still open: nothing about the login changed"

# On: b's session ends, a's stays.
is "$(call a POST admin/totp "{\"current_password\":\"$PW\"}")" 200 "a begins again"
secret=$(jq -r .secret "$TB_TMP/reply")
is "$(call a PUT admin/totp "{\"code\":\"$(code)\"}")" 200 "and confirms: two-factor login is on"
jq -r '.recovery_codes[]' "$TB_TMP/reply" >"$TB_TMP/codes"
is "$(alive b)" login "b's session, opened with the password alone, has ended"
is "$(alive a)" ok "a's, which turned it on, goes on"

# Off from a session: the others end.
is "$(login c ",\"code\":\"$(sed -n 1p "$TB_TMP/codes")\"")" 200 "c logs in with password and code"
is "$(call a POST admin/totp/off \
    "{\"current_password\":\"$PW\",\"code\":\"$(sed -n 2p "$TB_TMP/codes")\"}")" 200 \
    "a turns two-factor login off"
is "$(alive c)" login "c's session has ended"
is "$(alive a)" ok "a's goes on"

# Off from the box: every session ends (whoever holds one may be why).
is "$(call a POST admin/totp "{\"current_password\":\"$PW\"}")" 200 "a begins once more"
secret=$(jq -r .secret "$TB_TMP/reply")
rm -f "$TB_TMP/totp.step"
is "$(call a PUT admin/totp "{\"code\":\"$(code)\"}")" 200 "and turns it on"
tb_ctl admin totp-off admin >/dev/null
is "$?" 0 "tlsboxctl admin totp-off admin"
is "$(alive a)" login "a's session has ended too"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM admin_sessions")" 0 "no session is left"
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
