#!/bin/bash
# Two policy edits at once, one through the admin server and one through
# the control socket (tlsboxctl), each changing a different field: both
# stay.  Each applied to the active version it read, one was lost.  And a
# form filled from an older version (its "base") is refused with 409, not
# applied over a change made since.
. "$(dirname "$0")/lib.sh"
tb_setup
tb_start_daemon --set admin.pbkdf2_iterations=10000 \
    --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" ||
    bail "daemon did not start"
B="https://127.0.0.1:$TB_ADMIN_PORT"
J="$TB_TMP/cookies"
CURL=(curl -sk --max-time 10 -H "Content-Type: application/json")
is "$(tb_admin_setup "$J" admin "correct horse battery")" 200 "logged in to the admin server"
csrf=$("${CURL[@]}" -b "$J" "$B/api/v1/session" | jq -r .csrf)

rounds=20 lost="" codes=""
for i in $(seq 1 $rounds); do
    "${CURL[@]}" -b "$J" -H "X-CSRF-Token: $csrf" -o /dev/null -w '%{http_code}\n' -X PUT \
        "$B/api/v1/policy" -d "{\"hsts_max_age\": $((1000 + i))}" >"$TB_TMP/a" &
    a=$!
    curl -s --max-time 10 -o /dev/null -w '%{http_code}\n' --unix-socket "$TB_STATE/control.sock" \
        -X PUT http://x/api/v1/policy -d "{\"ticket_rotation_hours\": $((1 + i))}" >"$TB_TMP/b" &
    b=$!
    wait $a $b
    codes="$codes$(cat "$TB_TMP/a" "$TB_TMP/b" | tr '\n' ' ')"
    got=$(tb_ctl --json policy show | jq -c '[.policy.hsts_max_age, .policy.ticket_rotation_hours]')
    [ "$got" = "[$((1000 + i)),$((1 + i))]" ] || lost="$lost round $i: $got;"
done
is "$(tr ' ' '\n' <<<"$codes" | grep -v '^$' | sort -u)" 200 "every edit answered 200"
is "$lost" "" "no edit lost in $rounds rounds of two at once"
is "$(sqlite3 "$TB_STATE/tlsbox.db" 'SELECT count(*) FROM policy_versions')" $((1 + 2 * rounds)) \
    "a version per edit"

# A rollback at the same time as an edit: the edit is applied either to the
# version rolled back to or before it, so the rolled-back field stays.
# Without the lock the edit, built from the version it read before the
# rollback, was stored over it and undid it.
undone=""
for i in $(seq 1 $rounds); do
    tb_ctl policy set ticket_rotation_hours 5 >/dev/null
    v=$(tb_ctl --json policy show | jq .id)
    tb_ctl policy set ticket_rotation_hours 99 >/dev/null
    "${CURL[@]}" -b "$J" -H "X-CSRF-Token: $csrf" -o /dev/null -w '%{http_code}\n' -X PUT \
        "$B/api/v1/policy" -d "{\"hsts_max_age\": $((2000 + i))}" >"$TB_TMP/a" &
    a=$!
    curl -s --max-time 10 -o /dev/null -w '%{http_code}\n' --unix-socket "$TB_STATE/control.sock" \
        -X POST http://x/api/v1/policy/rollback -d "{\"version\": $v}" >"$TB_TMP/b" &
    b=$!
    wait $a $b
    [ "$(cat "$TB_TMP/a" "$TB_TMP/b" | tr '\n' ' ')" = "200 200 " ] ||
        undone="$undone round $i: $(cat "$TB_TMP/a" "$TB_TMP/b" | tr '\n' ' ');"
    got=$(tb_ctl --json policy show | jq .policy.ticket_rotation_hours)
    [ "$got" = 5 ] || undone="$undone round $i: ticket_rotation_hours $got;"
done
is "$undone" "" "no rollback undone by an edit at the same time, in $rounds rounds"

# The web UI's fields form sends every field it shows, as loaded.
put() { # BODY: the status; the reply in $TB_TMP/reply
    "${CURL[@]}" -b "$J" -H "X-CSRF-Token: $csrf" -o "$TB_TMP/reply" -w '%{http_code}' -X PUT \
        "$B/api/v1/policy" -d "$1"
}
loaded=$(tb_ctl --json policy show)
base=$(jq .id <<<"$loaded")
form=$(jq -c '.policy | {min_version, max_version, ciphers, groups, key_types, tickets,
    ocsp_stapling, hsts_max_age}' <<<"$loaded")
tb_ctl policy set hsts_max_age 777 >/dev/null
n=$(sqlite3 "$TB_STATE/tlsbox.db" 'SELECT count(*) FROM policy_versions')
is "$(put "{\"fields\": $(jq -c '.tickets = false' <<<"$form"), \"base\": $base}")" 409 \
    "a form filled from version $base, applied after another change: 409"
like "$(cat "$TB_TMP/reply")" "version $((base + 1)) is active now, not version $base .*nothing stored" \
    "  saying which version is active"
is "$(tb_ctl --json policy show | jq '[.id, .policy.hsts_max_age, .policy.tickets]' -c)" \
    "[$((base + 1)),777,true]" "  the change made since stays, the form's is not applied"
is "$(sqlite3 "$TB_STATE/tlsbox.db" 'SELECT count(*) FROM policy_versions')" "$n" "  no version made"
is "$(put "{\"fields\": {\"tickets\": false}, \"base\": $((base + 1))}")" 200 \
    "the same with the active version as its base: 200"
is "$(put '{"fields": {"tickets": true}, "base": "x"}')" 400 "a base that is not a number: 400"

tb_stop_daemon
ok $? "daemon stops"
done_testing
