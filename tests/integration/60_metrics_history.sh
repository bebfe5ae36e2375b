#!/bin/bash
# GET metrics/history over more points than one answer holds (5000 a name):
# a week of the default one-a-minute history is 10080 points.  The answer
# held the oldest 5000, so it ended three and a half days ago and left out
# everything newer; it must hold the newest, in time order.  And a since
# that is not a number is refused, as are audit's limit and before.
. "$(dirname "$0")/lib.sh"
tb_setup
tb_start_daemon --set site.https_port="$(tb_free_port)" --set site.http_port=0 ||
    bail "daemon did not start"
DB=$(tb_ctl --json status | jq -r .store)
now=$(date +%s)
name=tlsbox_test_history_x100
sqlite3 "$DB" "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 10079)
    INSERT INTO metrics_history SELECT $now - 60 * i, '$name', i FROM n;" ||
    bail "cannot write history rows"
h=$(curl -s --unix-socket "$TB_STATE/control.sock" \
    "http://tlsbox/api/v1/metrics/history?names=$name&since=604800")
is "$(jq ".$name | length" <<<"$h")" 5000 "5000 points of the 10080 asked for"
is "$(jq ".$name[-1][0]" <<<"$h")" "$now" "the last point is the newest row"
is "$(jq ".$name[0][0]" <<<"$h")" "$((now - 60 * 4999))" "the first is the 5000th newest"
is "$(jq "[.$name[][0]] | . == sort" <<<"$h")" true "oldest first"
h=$(curl -s --unix-socket "$TB_STATE/control.sock" \
    "http://tlsbox/api/v1/metrics/history?names=$name&since=3600")
n=$(jq ".$name | length" <<<"$h")
ok $((n < 60 || n > 61)) "the last hour: every point of it ($n)"
# since that is not a number read as 0 (then 60 s): "since=1d" answered
# the last minute with a 200.
code=$(curl -s --unix-socket "$TB_STATE/control.sock" -o "$TB_TMP/reply" -w '%{http_code}' \
    "http://tlsbox/api/v1/metrics/history?names=$name&since=1d")
is "$code" 400 "since=1d refused"
is "$(jq -r .error "$TB_TMP/reply")" "since=1d: expected a whole number" "saying why"
# audit?limit=abc read as 0, then 1: one entry and a 200; before=x read
# as 0, the newest page, though a page before something was asked for.
for q in limit=abc before=x limit=; do
    code=$(curl -s --unix-socket "$TB_STATE/control.sock" -o "$TB_TMP/reply" -w '%{http_code}' \
        "http://tlsbox/api/v1/audit?$q")
    is "$code $(jq -r .error "$TB_TMP/reply")" "400 $q: expected a whole number" "audit?$q refused"
done
code=$(curl -s --unix-socket "$TB_STATE/control.sock" -o "$TB_TMP/reply" -w '%{http_code}' \
    "http://tlsbox/api/v1/audit?limit=2")
is "$code $(jq '.entries | length <= 2' "$TB_TMP/reply")" "200 true" "audit?limit=2 answered"
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
