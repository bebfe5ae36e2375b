#!/bin/bash
# A new password ends every session of the user, also the one a login
# checked against the old password just before would have made after it:
# the session is made only while the user's stored hash is still the one
# the login checked.  Else whoever knows the old password (the reason to
# change it) kept a session by logging in while the change was made.  The
# PBKDF2 runs are made slow (admin.pbkdf2_iterations) so that the login
# reads the old hash before the new password is stored and makes its
# session after.
. "$(dirname "$0")/lib.sh"
tb_setup

tb_start_daemon --set admin.pbkdf2_iterations=3000000 \
    --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" ||
    bail "daemon did not start"
B="https://127.0.0.1:$TB_ADMIN_PORT"
J="$TB_TMP/cookies"
CURL=(curl -sk --max-time 30 -H "Content-Type: application/json")
echo 'the old password' | tb_ctl admin passwd dave >/dev/null || bail "creating dave"

# The new password's PBKDF2 run starts first; the login's starts (after
# reading the stored hash) while it runs, and ends after the change.
start=$(date +%s%N)
echo 'the new password' | tb_ctl admin passwd dave >"$TB_TMP/passwd" 2>&1 &
passwd_pid=$!
sleep 0.15
st=$("${CURL[@]}" -c "$J" -o "$TB_TMP/login" -w '%{http_code}' -X POST "$B/api/v1/session/login" \
    -d '{"user":"dave","password":"the old password"}')
wait "$passwd_pid"
ok $? "tlsboxctl admin passwd dave"
diag "passwd and the login took $((($(date +%s%N) - start) / 1000000)) ms together"
is "$st" 401 "the login with the old password, checked while it changed, is refused"
is "$("${CURL[@]}" -b "$J" "$B/api/v1/session" | jq -r .state)" login "and has no session"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM admin_sessions")" 0 \
    "no session of dave is left after the change"
is "$("${CURL[@]}" -o /dev/null -w '%{http_code}' -X POST "$B/api/v1/session/login" \
    -d '{"user":"dave","password":"the new password"}')" 200 "the new password logs in"

# Two logins at once while admin.pbkdf2_iterations changed: both read the
# old hash, one remakes it first; the other, finding the hash changed,
# checks against the remade one and logs in too.
tb_ctl set admin.pbkdf2_iterations 2900000 >/dev/null || bail "setting pbkdf2_iterations"
for a in 127.0.0.2 127.0.0.3; do
    "${CURL[@]}" --interface "$a" -o /dev/null -w '%{http_code}' -X POST \
        "$B/api/v1/session/login" -d '{"user":"dave","password":"the new password"}' >"$TB_TMP/st.$a" &
done
wait $(jobs -p | grep -vx "$TB_PID")
is "$(cat "$TB_TMP/st.127.0.0.2") $(cat "$TB_TMP/st.127.0.0.3")" "200 200" \
    "two logins at once, while the hash is remade with the new count, both log in"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT pw_iterations FROM admin_users")" 2900000 \
    "the hash is remade"
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
