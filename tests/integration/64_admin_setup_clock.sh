#!/bin/bash
# The first-run setup URL lives admin.setup_token_ttl seconds of real time
# when the box's wall clock steps meanwhile, as NTP steps a Raspberry Pi's
# (no RTC) just after the boot at which it is set up: a step back must not
# keep it past its time, a step forward must not end it at once.  The
# daemon's CLOCK_REALTIME and time() are shifted by
# tests/integration/clock_shift.c.
. "$(dirname "$0")/lib.sh"
tb_setup
SHIFT="$TB_TMP/clock-shift"
cc -std=c11 -shared -fPIC -o "$TB_TMP/clock_shift.so" "$top_srcdir/tests/integration/clock_shift.c" -ldl ||
    bail "building the clock shim"
echo 0 >"$SHIFT"
CLOCK_SHIFT_FILE="$SHIFT" CLOCK_SHIFT_TIME=1 LD_PRELOAD="$TB_TMP/clock_shift.so" \
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
    tb_start_daemon --set site.https_port="$(tb_free_port)" --set site.http_port=0 \
    --set admin.pbkdf2_iterations=10000 --set admin.setup_token_ttl=60 ||
    bail "daemon did not start"
B="https://127.0.0.1:$TB_ADMIN_PORT"
setup() { # URL PASSWORD: the status of a first-run setup with the URL's token
    curl -sk --max-time 10 -o "$TB_TMP/reply" -w '%{http_code}' -H 'Content-Type: application/json' \
        -X POST "$B/api/v1/session/setup" \
        -d "{\"token\":\"${1##*#setup=}\",\"user\":\"admin\",\"password\":\"$2\"}"
}

url=$(tb_ctl admin setup-url | head -1)
like "$url" "#setup=[0-9a-f]{64}$" "a setup URL, valid for 60 s"
echo -86400 >"$SHIFT"
sleep 62
# A password too short: a token still taken gets 400, and no user is made.
is "$(setup "$url" short)" 403 "62 s later it has expired, though the wall clock stepped back a day"
like "$(jq -r .error "$TB_TMP/reply")" "expired" "saying so"

url=$(tb_ctl admin setup-url | head -1)
echo 172800 >"$SHIFT"
sleep 0.5
is "$(setup "$url" "correct horse battery")" 200 "a new one still works after the wall clock stepped forward two days"
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
