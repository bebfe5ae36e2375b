#!/bin/bash
# The notify plugin stopped with work left, against a real webhook receiver
# and a real SMTP server on loopback: turned off (core.plugins_disabled)
# while a delivery waits an hour for its retry, and while one is held by a
# slow webhook; tlsboxd stopped while a mail waits for its retry to a
# greylisting recipient, and while one is held by a slow mail server.  Each
# time tlsboxd stays up (or stops within its bound, far below
# notify.timeout_seconds), and once notify runs again every delivery
# arrives exactly once: the receiver's and the server's counts compared.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start
ok $? "tlsboxd runs with the notify plugin"

PW=$(tb_free_port)
hooks="$TB_TMP/hooks.jsonl"
fail="$TB_TMP/fail"
hold="$TB_TMP/hold"
: >"$hooks"
echo 0 >"$fail"
tb_bg timeout 300 python3 "$top_srcdir/tests/integration/webhook_receiver.py" "$PW" "$hooks" "$fail" \
    "$hold"
tb_wait_port "$PW" || bail "the webhook receiver did not listen on $PW"
# An hour before a retry: only a start of notify sends it sooner.
tb_ctl set notify.url "http://127.0.0.1:$PW/hook" >/dev/null &&
    tb_ctl set notify.retry_seconds 3600 >/dev/null &&
    tb_ctl set notify.timeout_seconds 60 >/dev/null
ok $? "notify set up: a webhook, retries an hour apart, 60 s for an answer"

state() { site_api GET plugins | jq -r '.[] | select(.name == "notify") | .state'; }
# The store as tlsboxd keeps it (notify's API route is gone while it is off).
row() { # row ID: "status tries"
    sqlite3 "$TB_STATE/tlsbox.db" "SELECT status || ' ' || tries FROM notify_deliveries WHERE id = $1"
}
kept() { # kept ID: what the store keeps for the next try: "body rcpt" (1/0 each)
    sqlite3 "$TB_STATE/tlsbox.db" \
        "SELECT (body IS NOT NULL) || ' ' || (rcpt IS NOT NULL) FROM notify_deliveries WHERE id = $1" 2>&1
}
newest() { sqlite3 "$TB_STATE/tlsbox.db" "SELECT max(id) FROM notify_deliveries"; }
# got ID CODE: how many POSTs of delivery ID the receiver answered CODE
got() { jq -s --argjson id "$1" --argjson c "$2" '[.[] | select(.answered == $c and (.body | fromjson | .id) == $id)] | length' "$hooks"; }
set_off() { # set_off LIST: core.plugins_disabled, then wait until notify shows it
    local want=running
    [ -n "$1" ] && want=disabled
    tb_ctl set core.plugins_disabled "$1" >/dev/null
    tb_wait_says 20 "$want" state
}
alive() { kill -0 "$TB_PID" 2>/dev/null && echo up || echo gone; }
held_try() { # held_try WHO: a test delivery whose try the slow WHO holds; its id in $held
    touch "$hold"
    site_api POST notify/test '{}' >/dev/null
    held=$(newest)
    tb_wait_file "$hold.held" "$TB_PID"
    ok "$([ -s "$hold.held" ] && echo 0 || echo 1)" "the slow $1 holds the try"
}

# 1. Off while a retry waits: the retry follows the start, delivered once.
echo 1 >"$fail"
site_api POST notify/test '{}' >/dev/null
id1=$(newest)
is "$(tb_wait_says 20 "retrying 1" row "$id1")|$(kept "$id1")" "retrying 1|1 0" \
    "the first try answered 500: a retry waits, its body kept"
is "$(set_off notify)" disabled "notify turned off while the retry waits"
is "$(alive)|$(row "$id1")" "up|retrying 1" "tlsboxd stays up; the delivery is still pending"
is "$(set_off '')" running "notify turned on again"
is "$(tb_wait_says 20 "delivered 2" row "$id1")|$(kept "$id1")" "delivered 2|0 0" \
    "the retry followed the start: delivered at the second try, its body dropped"
like "$(cat "$TB_TMP/daemon.log")" "notify.test \(delivery $id1\): sent again after a stop" \
    "the log says it was sent again"

# 2. Off while a slow webhook holds a try: cut off within about a second,
# not notify.timeout_seconds; the try does not count.
held_try webhook
id2=$held
t0=$(date +%s%N)
is "$(set_off notify)" disabled "notify turned off while the webhook holds the try"
ms=$((($(date +%s%N) - t0) / 1000000))
diag "notify stopped ${ms} ms after core.plugins_disabled named it (timeout_seconds 60)"
ok "$((ms < 10000 ? 0 : 1))" "the held try did not keep notify from stopping (${ms} ms)"
rm -f "$hold" "$hold.held"
is "$(alive)|$(row "$id2")" "up|queued 0" \
    "tlsboxd stays up; the cut-off try does not count and the delivery is pending"
is "$(set_off '')" running "notify turned on again"
is "$(tb_wait_says 20 "delivered 1" row "$id2")" "delivered 1" "delivered once it runs again"

# Every delivery of this test so far, then one more (a barrier: none of
# the earlier ones is still on its way once it arrived).
site_api POST notify/test '{}' >/dev/null
id3=$(newest)
is "$(tb_wait_says 20 "delivered 1" row "$id3")" "delivered 1" "a later delivery went through"
is "$(got "$id1" 500) $(got "$id1" 204) $(got "$id2" 204) $(got "$id3" 204)" "1 1 1 1" \
    "the receiver got each delivery exactly once (and the failed first try of the first)"

# 3. tlsboxd stopped while a mail waits for a retry to a greylisting
# recipient: after the start only that recipient gets it, once.
tb_ctl set notify.url "" >/dev/null
PS=$(tb_free_port)
mkdir -p "$TB_TMP/mail"
tb_bg timeout 300 /usr/bin/python3 "$top_srcdir/tests/integration/smtp_sink.py" "$PS" "$TB_TMP/mail" \
    --greylist late@example.test --hold "$hold" 2>"$TB_TMP/mail.err"
tb_wait_port "$PS" || bail "smtp_sink.py did not listen: $(cat "$TB_TMP/mail.err")"
tb_ctl set notify.mail_to "ops@example.test,late@example.test" >/dev/null &&
    tb_ctl set notify.smtp_url "smtp://127.0.0.1:$PS" >/dev/null &&
    tb_ctl set notify.smtp_tls none >/dev/null
ok $? "e-mail set up, no webhook"
mails() { find "$TB_TMP/mail" -name '[0-9]*.json' | wc -l; }
rcpts() { # the recipients of each mail the server took, in order
    local i
    for i in $(seq 1 "$(mails)"); do
        jq -r '.rcpt_tos | join(",")' "$TB_TMP/mail/$i.json"
    done | tr '\n' ' '
}
site_api POST notify/test '{}' >/dev/null
id4=$(newest)
is "$(tb_wait_says 20 "retrying 1" row "$id4")" "retrying 1" \
    "mailed to one recipient; the greylisting one waits for the retry"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT rcpt FROM notify_deliveries WHERE id = $id4" 2>&1)" \
    "late@example.test" "the store keeps whom the retry is for"
tb_stop_daemon
ok $? "tlsboxd stops with the retry pending (within 5 s, no sanitizer report)"
site_start
ok $? "tlsboxd starts again"
is "$(tb_wait_says 20 "delivered 2" row "$id4")" "delivered 2" \
    "the retry followed the start: delivered at the second try"
is "$(rcpts)" "ops@example.test late@example.test " \
    "each recipient got the mail exactly once"

# 4. tlsboxd stopped while a slow mail server holds a try: it stops within
# its bound, and the mail is sent once after the start.
held_try "mail server"
id5=$held
tb_stop_daemon
ok $? "tlsboxd stops within 5 s although the server holds the try (timeout_seconds 60)"
rm -f "$hold" "$hold.held"
is "$(row "$id5")" "queued 0" "the cut-off try does not count; the delivery is pending"
site_start
ok $? "tlsboxd starts again"
is "$(tb_wait_says 20 "delivered 1" row "$id5")" "delivered 1" "delivered after the start"
# late@ was greylisted once only: both take it now.
is "$(rcpts)" "ops@example.test late@example.test ops@example.test,late@example.test " \
    "the server took that mail exactly once"
is "$(alive)" up "tlsboxd runs on"
tb_stop_daemon
ok $? "tlsboxd stops cleanly (no sanitizer report)"

done_testing
