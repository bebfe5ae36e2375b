#!/bin/bash
# The admin UI's live stream (/api/v1/live) when the box's wall clock steps,
# as NTP steps a Raspberry Pi's after boot (no RTC): one event a second all
# the same, "t" following the wall clock, "mono" the monotonic clock.  The
# daemon's CLOCK_REALTIME is shifted by tests/integration/clock_shift.c.
. "$(dirname "$0")/lib.sh"
tb_setup
SHIFT="$TB_TMP/clock-shift"
cc -std=c11 -shared -fPIC -o "$TB_TMP/clock_shift.so" "$top_srcdir/tests/integration/clock_shift.c" -ldl ||
    bail "building the clock shim"
echo 0 >"$SHIFT"
# A sanitizer build wants its runtime first in the library list; the shim
# before it does not matter to it.
CLOCK_SHIFT_FILE="$SHIFT" LD_PRELOAD="$TB_TMP/clock_shift.so" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    tb_start_daemon --demo --set site.https_port="$(tb_free_port)" --set site.http_port=0 \
    --set admin.pbkdf2_iterations=10000 || bail "daemon did not start"
B="https://127.0.0.1:$TB_ADMIN_PORT"
J="$TB_TMP/jar"
url=$(tb_ctl admin setup-url | head -1)
is "$(curl -sk -c "$J" -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
    -X POST "$B/api/v1/session/setup" \
    -d "{\"token\":\"${url##*#setup=}\",\"user\":\"admin\",\"password\":\"correct horse battery\"}")" 200 \
    "logged in"
LIVE="$TB_TMP/live"
: >"$LIVE"
tb_bg curl -sk -N -b "$J" -o "$LIVE" "$B/api/v1/live"

# "t mono" of every complete event so far, one a line.
events() { sed -n 's/^data: //p' "$LIVE" | jq -R -r 'fromjson? | "\(.t) \(.mono)"'; }
# Wait (at most S seconds) until N events have come.
wait_events() {
    for _ in $(seq 1 $(($2 * 10))); do
        [ "$(events | wc -l)" -ge "$1" ] && return 0
        sleep 0.1
    done
    return 1
}
wait_events 2 10
ok $? "the stream sends events"

n=$(events | wc -l)
echo -3600 >"$SHIFT" # an hour back
wait_events $((n + 3)) 15
ok $? "after the wall clock stepped an hour back, events keep coming"

n=$(events | wc -l)
echo 3600 >"$SHIFT" # two hours forward
wait_events $((n + 3)) 15
ok $? "after the wall clock stepped two hours forward, events keep coming"
close=$(events | awk 'NR > 1 && $1 - t > -500 && $1 - t < 500 { n++ } { t = $1 } END { print n + 0 }')
is "$close" 0 "no burst of events for the hours stepped over (events less than 0.5 s apart)"
t=$(events | tail -1 | cut -d' ' -f1)
want=$((($(date +%s) + 3600) * 1000))
ok $((t < want - 60000 || t > want + 60000)) "t follows the stepped wall clock ($t, about $want)"
bad=$(events | awk 'NR > 1 && ($2 == "null" || $2 - m < 1000) { n++ } { m = $2 } END { print n + 0 }')
is "$bad" 0 "mono grows by a second or more from one event to the next across both steps"

tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
