#!/bin/bash
# site.batch_wait_us: a worker that serves several connections at once takes
# their requests in batches (polled after a short wait, no wake-up each); a
# single client is served one wake-up per request as before; 0 turns batching
# off.  Every request gets its whole answer either way, and the metrics
# tlsbox_site_event_batches_total{how="woken"|"polled"} show which happened.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start --set site.workers=1
ok $? "tlsboxd serves the site"

woken() { site_metric 'tlsbox_site_event_batches_total{how="woken"}'; }
polled() { site_metric 'tlsbox_site_event_batches_total{how="polled"}'; }
# wait_ge COUNTER N: wait (at most 5 s) for the worker's once-a-second flush
# to show the counter (woken or polled) at N or more.
wait_ge() {
    local i
    for i in $(seq 1 50); do
        [ "$("$1")" -ge "$2" ] && return 0
        sleep 0.1
    done
    return 1
}
h2load_ok() { # FILE N: h2load's summary says N succeeded and none failed
    like "$(grep '^requests:' "$1")" "$2 succeeded, 0 failed, 0 errored, 0 timeout" "$3"
}

is "$(tb_ctl get site.batch_wait_us)" 30 "batch_wait_us defaults to 30"
err=$(tb_ctl set site.batch_wait_us 5000 2>&1)
is "$?" 1 "batch_wait_us 5000 is refused"
like "$err" "site.batch_wait_us" "the error names the setting"
like "$err" "range" "and gives the range"
is "$(tb_ctl get site.batch_wait_us)" 30 "the value stays 30"

# One client, one connection, one request at a time: every batch is one
# event, and one event never starts batching.
w0=$(woken)
p0=$(polled)
timeout 60 h2load --h1 -c 1 -n 500 "$URL/f16k.txt" >"$TB_TMP/one.out" 2>&1
h2load_ok "$TB_TMP/one.out" 500 "one client: 500 requests answered"
wait_ge woken $((w0 + 500))
ok $? "one client: the worker was woken for each of its 500 requests ($(($(woken) - w0)))"
is "$(($(polled) - p0))" 0 "one client: no batch was polled"

timeout 60 h2load --h1 -c 10 -n 5000 "$URL/f16k.txt" >"$TB_TMP/ten.out" 2>&1
h2load_ok "$TB_TMP/ten.out" 5000 "ten clients: 5000 requests answered"
timeout 60 h2load -c 10 -m 10 -n 5000 "$URL/f16k.txt" >"$TB_TMP/ten2.out" 2>&1
h2load_ok "$TB_TMP/ten2.out" 5000 "ten h2 clients, 10 streams each: 5000 requests answered"
sum=$(curl -s --cacert "$CA" "$URL/big.bin" | sha256sum | cut -d' ' -f1)
is "$sum" "$(sha256sum <"$TB_TMP/www/big.bin" | cut -d' ' -f1)" "a 2 MB download arrives whole"

# Off: set live, no batch is polled any more.
tb_ctl set site.batch_wait_us 0 >/dev/null
is "$(tb_ctl get site.batch_wait_us)" 0 "batch_wait_us set to 0"
# The change reaches the worker with the settings event; until then a run
# may still batch.  Each run ends when no new batch was polled during it.
same=1
for round in $(seq 1 10); do
    p0=$(polled)
    w0=$(woken)
    timeout 60 h2load --h1 -c 10 -n 2000 "$URL/f16k.txt" >"$TB_TMP/off.out" 2>&1
    wait_ge woken $((w0 + 1)) || break
    sleep 1.2 # a whole flush period: the polled count is final
    if [ "$(polled)" = "$p0" ]; then
        same=0
        break
    fi
done
ok "$same" "with batch_wait_us 0, ten clients' 2000 requests poll no batch (run $round)"
h2load_ok "$TB_TMP/off.out" 2000 "and all 2000 are answered"

tb_stop_daemon
ok $? "tlsboxd stops cleanly"

# Many connections ready at once: the worker takes the next batch by polling.
# Whether a live load such as h2load's makes the worker batch depends on how
# its requests happen to bunch (sleeps that gather less than two events turn
# batching off for a while), so this is made certain: a fresh daemon with
# batching off while 300 connections open and ask once each (no batch sleep
# can count against batching), then batching on (30 us), then the daemon is
# stopped (SIGSTOP) while each connection sends one more request.  Woken
# again, its worker's wait returns 256 of them (its most per wait) and
# starts a batch: the other 44 are there for the poll that follows.
site_start --set site.workers=1 --set site.max_connections_per_ip=1000 \
    --set site.batch_wait_us=0
ok $? "tlsboxd restarted with batching off"
p0=$(polled)
out=$(timeout 90 python3 "$top_srcdir/plugins/site/tests/h2_streams.py" burst 127.0.0.1 "$P_HTTPS" \
    "$TB_PID" 300 /f16k.txt "$TB_TLSBOXCTL" --state-dir "$TB_STATE" set site.batch_wait_us 30)
kill -CONT "$TB_PID" 2>/dev/null # should the client have died while it was stopped
is "$out" "answered=300 of 300" "300 connections ready at once: every request answered"
is "$(tb_ctl get site.batch_wait_us)" 30 "batching was on for them (batch_wait_us 30)"
wait_ge polled $((p0 + 1))
p1=$(polled)
[ "$p1" -gt "$p0" ]
ok $? "300 connections ready at once: the next batch was polled without a wake-up ($((p1 - p0)))"
tb_stop_daemon
ok $? "tlsboxd stops cleanly"
done_testing
