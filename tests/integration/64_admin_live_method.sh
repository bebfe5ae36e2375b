#!/bin/bash
# /api/v1/live, served by the admin server itself and not in the route
# table, answers a method other than GET as the table answers its paths:
# 405 with "Allow: GET" (it used to be 404 "no such API path"), and a 405
# from the table names the path's methods in Allow too.
. "$(dirname "$0")/lib.sh"
tb_setup

tb_start_daemon --set admin.pbkdf2_iterations=10000 \
    --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" ||
    bail "daemon did not start"
B="https://127.0.0.1:$TB_ADMIN_PORT"
J="$TB_TMP/cookies"
is "$(tb_admin_setup "$J" admin 'correct horse battery')" 200 "first-run setup"

# status and Allow of METHOD PATH with the session (and its CSRF token).
answer() {
    local csrf how=(-X "$1")
    [ "$1" = HEAD ] && how=(-I) # curl -X HEAD would wait for a body
    csrf=$(curl -sk --max-time 10 -b "$J" "$B/api/v1/session" | jq -r .csrf)
    curl -sk --max-time 10 -b "$J" -H "X-CSRF-Token: $csrf" -D - -o /dev/null \
        "${how[@]}" "$B/api/v1/$2" | tr -d '\r' |
        awk 'NR == 1 { s = $2 } tolower($1) == "allow:" { $1 = ""; a = $0 }
             END { print s " allow:" a }'
}
for m in HEAD POST PUT DELETE; do
    is "$(answer "$m" live)" "405 allow: GET" "$m /api/v1/live: 405, Allow: GET"
done
is "$(answer HEAD status)" "405 allow: GET" "HEAD /api/v1/status: 405, Allow: GET"
is "$(answer DELETE settings/core.hostname)" "405 allow: PUT, GET" \
    "DELETE /api/v1/settings/core.hostname: Allow names its methods"

# GET still opens the stream (its first event comes at once).
ev=$(curl -sk --max-time 3 -b "$J" "$B/api/v1/live" | head -1)
is "$ev" "event: metrics" "GET /api/v1/live still streams"

tb_stop_daemon
ok $? "stops cleanly"
done_testing
