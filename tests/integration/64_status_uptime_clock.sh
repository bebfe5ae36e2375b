#!/bin/bash
# The uptime in GET status (tlsboxctl status) when the box's wall clock
# steps, as NTP steps a Raspberry Pi's after boot (no RTC): it counted the
# wall clock from the start, so it showed the hours stepped over, or went
# negative after a step back.  The daemon's wall clock (clock_gettime and
# time()) is shifted by tests/integration/clock_shift.c.
. "$(dirname "$0")/lib.sh"
tb_setup
SHIFT="$TB_TMP/clock-shift"
cc -std=c11 -shared -fPIC -o "$TB_TMP/clock_shift.so" "$top_srcdir/tests/integration/clock_shift.c" -ldl ||
    bail "building the clock shim"
echo 0 >"$SHIFT"
CLOCK_SHIFT_FILE="$SHIFT" CLOCK_SHIFT_TIME=1 LD_PRELOAD="$TB_TMP/clock_shift.so" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    tb_start_daemon --demo --set site.https_port="$(tb_free_port)" --set site.http_port=0 ||
    bail "daemon did not start"
field() { tb_ctl --json status | jq -r ".$1"; }
started=$(field started_at)
up=$(field uptime_s)
ok $((up < 0 || up > 60)) "uptime right after the start is small ($up s)"

echo -86400 >"$SHIFT" # a day back
sleep 0.3
up=$(field uptime_s)
ok $((up < 0 || up > 60)) "after the wall clock stepped a day back, uptime is still small ($up s)"
like "$(tb_ctl status | head -1)" ', up [0-9]+s$' "tlsboxctl status shows no negative uptime"

echo 86400 >"$SHIFT" # a day forward
sleep 0.3
up=$(field uptime_s)
ok $((up < 0 || up > 60)) "after the wall clock stepped a day forward, uptime is still small ($up s)"
is "$(field started_at)" "$started" "started_at stays what it was (it tells runs apart)"

tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
