#!/bin/bash
# The notify plugin's e-mail against real SMTP servers on loopback
# (smtp_sink.py, on Debian's aiosmtpd): a test mail and a certificate
# change mailed over STARTTLS with AUTH, the server's certificate checked
# against notify.ca_file; what the mail says (headers a client parses, the
# summary, the details); refused when the password is wrong, when the
# server's certificate is not trusted, when STARTTLS is not offered (unless
# notify.smtp_tls = none); smtps:// from the first byte; a failing webhook
# does not hold the mail; the Notifications page in Chromium; bad values
# refused naming the setting; the password in no log, reply, store row or
# mail.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start
ok $? "tlsboxd runs with the notify plugin"

# A CA of this test and the mail server's certificate for 127.0.0.1.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=mail test CA" \
    -keyout "$TB_TMP/mailca.key" -out "$TB_TMP/mailca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$TB_TMP/mail.key" -out "$TB_TMP/mail.csr" 2>/dev/null
openssl x509 -req -in "$TB_TMP/mail.csr" -CA "$TB_TMP/mailca.pem" -CAkey "$TB_TMP/mailca.key" \
    -CAcreateserial -days 2 -extfile <(printf 'subjectAltName=IP:127.0.0.1\n') \
    -out "$TB_TMP/mail.crt" 2>/dev/null
ok $? "a mail server certificate from a CA of this test"

PASS="MailPass9secret"
sinks=""
sink() { # sink NAME ARGS...: an SMTP server writing to $TB_TMP/NAME; its port in $port
    port=$(tb_free_port)
    mkdir -p "$TB_TMP/$1"
    local name=$1
    shift
    timeout 300 /usr/bin/python3 "$top_srcdir/tests/integration/smtp_sink.py" "$port" \
        "$TB_TMP/$name" "$@" 2>"$TB_TMP/$name.err" &
    sinks="$sinks $!"
    tb_wait_port "$port" || bail "smtp_sink.py $name did not listen: $(cat "$TB_TMP/$name.err")"
}
sink tls --tls "$TB_TMP/mail.crt" "$TB_TMP/mail.key" --auth box "$PASS"
P_TLS=$port
sink plain --refuse gone@example.test --greylist late@example.test
P_PLAIN=$port
sink smtps --tls "$TB_TMP/mail.crt" "$TB_TMP/mail.key" --implicit --auth box "$PASS"
P_SMTPS=$port

mails() { find "$TB_TMP/$1" -name '[0-9]*.json' | wc -l; } # mails NAME: how many it got
wait_mails() { # wait_mails NAME N: until NAME has N mails, at most 20 s; prints the count
    local i
    for i in $(seq 1 200); do
        [ "$(mails "$1")" -ge "$2" ] && break
        sleep 0.1
    done
    mails "$1"
}
mail() { cat "$TB_TMP/$1/$2.json"; } # mail NAME N: the Nth mail as JSON
# header NAME N FIELD: a header of the mail as Python's email parser reads it
header() {
    mail "$1" "$2" | /usr/bin/python3 -c '
import email, email.header, json, sys
m = email.message_from_string(json.load(sys.stdin)["data"])
v = m[sys.argv[1]]
print(str(email.header.make_header(email.header.decode_header(v))) if v else "")' "$3"
}
text() { mail "$1" "$2" | jq -r .data | tr -d '\r' | sed '1,/^$/d'; } # text NAME N: the body
delivery() { # delivery ID: "channel status tries code error"
    site_api GET notify/deliveries |
        jq -r --argjson id "$1" '.deliveries[] | select(.id == $id) | "\(.channel) \(.status) \(.tries) \(.http_status) \(.error)"'
}
wait_delivery() { tb_wait_says 30 "$2" delivery "$1"; } # wait_delivery ID TEXT
first3() { delivery "$1" | cut -d' ' -f1-3; } # first3 ID: "channel status tries"
first_try() { # a test mail that fails: its delivery once the first try did
    local id
    site_api POST notify/test '{}' >/dev/null
    id=$(newest)
    tb_wait_says 20 "mail retrying 1" first3 "$id" >/dev/null
    delivery "$id"
}
newest() { site_api GET notify/deliveries | jq -r ".deliveries[${1:-0}].id"; }

# 1. Refused values change nothing.
for bad in "notify.mail_to:ops at example.test" "notify.mail_to:ops@example.test,<x>@y" \
    "notify.smtp_url:smtp://box:pw@127.0.0.1:25" "notify.smtp_url:http://127.0.0.1:25" \
    "notify.smtp_tls:maybe" "notify.mail_from:two words@x" "notify.ca_file:relative.pem"; do
    out=$(tb_ctl set "${bad%%:*}" "${bad#*:}" 2>&1)
    st=$?
    ok $((st == 0)) "${bad%%:*} = '${bad#*:}' is refused"
    like "$out" "${bad%%:*}" "naming the setting"
done
is "$(tb_ctl get notify.mail_to)|$(tb_ctl get notify.smtp_url)|$(tb_ctl get notify.smtp_tls)" \
    "||required" "nothing was stored: no e-mail, STARTTLS required by default"

# Nothing set up: an event is skipped quietly (checked at the end, when it
# has long been handled).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj "/CN=quiet.example" \
    -addext "subjectAltName=DNS:quiet.example" -keyout "$TB_TMP/quiet.key" -out "$TB_TMP/quiet.crt" 2>/dev/null
tb_ctl cert import --cert "$TB_TMP/quiet.crt" --key "$TB_TMP/quiet.key" --name quiet >/dev/null
ok $? "a certificate imported while neither webhook nor e-mail is set up"

# 2. Set up: STARTTLS with AUTH, the test CA trusted through notify.ca_file.
tb_ctl set notify.mail_to "ops@example.test,second@example.test" >/dev/null &&
    tb_ctl set notify.mail_from "box@example.test" >/dev/null &&
    tb_ctl set notify.smtp_url "smtp://127.0.0.1:$P_TLS" >/dev/null &&
    tb_ctl set notify.smtp_user box >/dev/null &&
    tb_ctl set notify.smtp_password "$PASS" >/dev/null &&
    tb_ctl set notify.ca_file "$TB_TMP/mailca.pem" >/dev/null &&
    tb_ctl set notify.retry_seconds 1 >/dev/null
ok $? "tlsboxctl set the mail settings"
is "$(tb_ctl get notify.smtp_password)" "********" "the password is kept as a secret"
is "$(site_api GET notify/deliveries | jq -c .mail)" \
    "{\"to\":\"ops@example.test,second@example.test\",\"via\":\"smtp://127.0.0.1:$P_TLS\"}" \
    "GET notify/deliveries names the recipients and the server"

# 3. A test mail: what the server got, and what a mail client reads.
is "$(site_api POST notify/test '{}' | jq -c .)" '{"queued":true,"event":"notify.test"}' \
    "POST notify/test with no webhook, only e-mail: queued"
is "$(wait_mails tls 1)" 1 "the mail server got one mail"
is "$(mail tls 1 | jq -c '[.mail_from, .rcpt_tos, .tls, .user]')" \
    '["box@example.test",["ops@example.test","second@example.test"],true,"box"]' \
    "from notify.mail_from to both recipients, over STARTTLS, logged in as box"
host=$(tb_ctl get core.hostname 2>/dev/null) # as the plugin names the box
[ -n "$host" ] || host=$(hostname)
is "$(header tls 1 Subject)" "[tlsbox $host] Test message" "Subject: the box and what happened"
is "$(header tls 1 From)|$(header tls 1 To)" "tlsbox <box@example.test>|ops@example.test,second@example.test" \
    "From and To headers"
is "$(header tls 1 Content-Type)|$(header tls 1 Auto-Submitted)|$(header tls 1 X-Tlsbox-Event)" \
    "text/plain; charset=utf-8|auto-generated|notify.test" \
    "plain UTF-8 text, marked auto-generated (no auto-replies), with the event"
date_ok=$(header tls 1 Date | /usr/bin/python3 -c '
import email.utils, sys, time
t = email.utils.parsedate_to_datetime(sys.stdin.read().strip()).timestamp()
print(int(abs(t - time.time()) < 120))')
is "$date_ok" 1 "a Date header a mail client parses, of now"
like "$(header tls 1 Message-ID)" "^<tlsbox\.[0-9]+\.[0-9]+@$host>$" "a Message-ID of the box"
body=$(text tls 1)
like "$body" "^Test message\." "the body starts with what happened"
like "$body" "Event: notify.test" "then the event"
like "$body" "asked_by: control" "and the details: who asked"
id=$(newest)
is "$(wait_delivery "$id" "mail delivered 1 250 null")" "mail delivered 1 250 null" \
    "GET notify/deliveries: by e-mail, delivered at the first try, SMTP 250"
like "$(cat "$TB_TMP/daemon.log")" "notify.test mailed \(try 1, SMTP 250\)" "the log says so"

# 4. A certificate imported: cert.changed, its name in the subject.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj "/CN=mailed.example" -addext "subjectAltName=DNS:mailed.example" \
    -keyout "$TB_TMP/mailed.key" -out "$TB_TMP/mailed.crt" 2>/dev/null
tb_ctl cert import --cert "$TB_TMP/mailed.crt" --key "$TB_TMP/mailed.key" --name mailed >/dev/null
ok $? "a certificate imported"
is "$(wait_mails tls 2)" 2 "a second mail"
is "$(header tls 2 Subject)" "[tlsbox $host] Certificate mailed changed" \
    "Subject: Certificate mailed changed"

# 5. A wrong password: refused by the server, retried, given up, saying why.
tb_ctl set notify.smtp_password "WrongPass0" >/dev/null
site_api POST notify/test '{}' >/dev/null
id=$(newest)
want="mail failed 4 535 smtp://127.0.0.1:$P_TLS: Login denied (SMTP 535)"
is "$(wait_delivery "$id" "$want")" "$want" "a wrong password: failed after four tries, the server's 535 shown"
is "$(mails tls)" 2 "no mail got through"
tb_ctl set notify.smtp_password "$PASS" >/dev/null
# From here a failed try waits 300 s: the next steps look at the first try,
# and a retry must not go out under settings changed meanwhile.
tb_ctl set notify.retry_seconds 300 >/dev/null

# 6. The server's certificate is not trusted without notify.ca_file.
tb_ctl set notify.ca_file '' >/dev/null
like "$(first_try)" "^mail retrying 1 [0-9a-z]+ smtp://127.0.0.1:$P_TLS: SSL peer certificate or SSH remote key was not OK" \
    "an untrusted certificate: the first try fails, because the certificate does not verify"
tb_ctl set notify.ca_file "$TB_TMP/nonexistent.pem" >/dev/null
like "$(first_try)" "^mail retrying 1 .*notify.ca_file $TB_TMP/nonexistent.pem cannot be read as PEM certificates" \
    "a ca_file that cannot be read is named"
tb_ctl set notify.ca_file "$TB_TMP/mailca.pem" >/dev/null
is "$(mails tls)" 2 "still no mail got through"

# 7. A server that offers no STARTTLS gets nothing, unless smtp_tls = none.
tb_ctl set notify.smtp_url "smtp://127.0.0.1:$P_PLAIN" >/dev/null
tb_ctl set notify.smtp_user '' >/dev/null
like "$(first_try)" "^mail retrying 1 .*smtp://127.0.0.1:$P_PLAIN: the server offers no STARTTLS \(notify.smtp_tls = none sends in plain text\)" \
    "no STARTTLS offered: refused, saying how to allow plain text"
is "$(mails plain)" 0 "the server got nothing"
tb_ctl set notify.smtp_tls none >/dev/null
site_api POST notify/test '{}' >/dev/null
is "$(wait_mails plain 1)" 1 "with notify.smtp_tls = none, it gets the mail"
is "$(mail plain 1 | jq -c '[.tls, .user]')" '[false,null]' "in plain text, without a login"

# 7b. A recipient the server refuses does not keep the mail from the others:
# delivered, saying whom the server refused and why, and not retried (that
# would mail the others twice).  All refused: a failure, retried.
tb_ctl set notify.mail_to "ops@example.test,gone@example.test" >/dev/null
site_api POST notify/test '{}' >/dev/null
id=$(newest)
is "$(wait_mails plain 2)" 2 "one of two recipients refused: the server still gets the mail"
is "$(mail plain 2 | jq -c .rcpt_tos)" '["ops@example.test"]' "for the recipient it took"
want="mail delivered 1 250 refused: gone@example.test (SMTP 550 5.1.1 <gone@example.test>: no such user here)"
is "$(wait_delivery "$id" "$want")" "$want" \
    "GET notify/deliveries: delivered at the first try, naming the refused recipient and the server's reply"
like "$(cat "$TB_TMP/daemon.log")" "WARN.*notify.test mailed \(try 1, SMTP 250\); refused: gone@example.test \(SMTP 550" \
    "the log warns of it"
tb_ctl set notify.mail_to "gone@example.test" >/dev/null
is "$(first_try)" "mail retrying 1 550 smtp://127.0.0.1:$P_PLAIN: no recipient accepted: gone@example.test (SMTP 550 5.1.1 <gone@example.test>: no such user here)" \
    "every recipient refused: the try fails, saying whom and why, and is retried"
is "$(mails plain)" 2 "and the server got nothing more"

# 7c. A recipient refused for now (450: greylisting) gets the next try, alone:
# the others are not mailed twice.
tb_ctl set notify.retry_seconds 1 >/dev/null
tb_ctl set notify.mail_to "ops@example.test,late@example.test" >/dev/null
site_api POST notify/test '{}' >/dev/null
id=$(newest)
is "$(wait_mails plain 3)" 3 "one of two recipients greylisted: the server gets the mail for the other"
is "$(mail plain 3 | jq -c .rcpt_tos)" '["ops@example.test"]' "  for ops@example.test only"
is "$(wait_mails plain 4)" 4 "  and a second try"
is "$(mail plain 4 | jq -c .rcpt_tos)" '["late@example.test"]' "  for late@example.test only"
is "$(header plain 4 To)" "ops@example.test,late@example.test" "  its To: names both, as the first"
is "$(header plain 4 Subject)" "$(header plain 3 Subject)" "  and its subject is the first's"
want="mail delivered 2 250 null"
is "$(wait_delivery "$id" "$want")" "$want" "GET notify/deliveries: delivered at the second try"
like "$(cat "$TB_TMP/daemon.log")" "WARN.*notify.test mailed \(try 1, SMTP 250\); refused: late@example.test \(SMTP 450 4.2.0 <late@example.test>: greylisted, try again later\); next try for late@example.test in 1 s" \
    "the log says who was refused for now, and when the next try is"

# 7d. The mail server's setting emptied while a retry waits: the retry
# gives up at once, saying why (it read before the start of the URL).
tb_ctl set notify.retry_seconds 5 >/dev/null
tb_ctl set notify.mail_to "gone@example.test" >/dev/null
site_api POST notify/test '{}' >/dev/null
id=$(newest)
want="mail retrying 1 550 smtp://127.0.0.1:$P_PLAIN: no recipient accepted: gone@example.test (SMTP 550 5.1.1 <gone@example.test>: no such user here)"
is "$(wait_delivery "$id" "$want")" "$want" "a refused mail waits 5 s to retry"
tb_ctl set notify.smtp_url '' >/dev/null
want="mail failed 2 null notify.mail_to or notify.smtp_url is empty: nothing to send to"
is "$(wait_delivery "$id" "$want")" "$want" \
    "notify.smtp_url emptied meanwhile: the retry gives up at the second try, saying why"
tb_ctl set notify.smtp_url "smtp://127.0.0.1:$P_PLAIN" >/dev/null
tb_ctl set notify.retry_seconds 300 >/dev/null
tb_ctl set notify.mail_to "ops@example.test,second@example.test" >/dev/null
tb_ctl set notify.smtp_tls required >/dev/null

# 8. smtps://: TLS from the first byte.
tb_ctl set notify.smtp_url "smtps://127.0.0.1:$P_SMTPS" >/dev/null
tb_ctl set notify.smtp_user box >/dev/null
site_api POST notify/test '{}' >/dev/null
is "$(wait_mails smtps 1)" 1 "smtps://: the server got the mail"
is "$(mail smtps 1 | jq -c '[.tls, .user]')" '[true,"box"]' "over TLS, logged in"

# 8b. The Notifications page in headless Chromium: the tests it sends (Send
# a test, then Test e-mail) go out by e-mail (a second and third mail).
tb_need_browser
tb_ctl set admin.pbkdf2_iterations 10000 >/dev/null
SITE_PORT=$P_HTTPS tb_ui_run notify_mail_ui.py 120 7 MAIL_VIA="smtps://127.0.0.1:$P_SMTPS" \
    MAIL_TO="ops@example.test, second@example.test" SMTP_PASSWORD="$PASS"
is "$(wait_mails smtps 3)" 3 "the mail server got the page's two tests"

# 9. A webhook that fails does not hold the mail: one delivery each.
tb_ctl set notify.url "http://127.0.0.1:$(tb_free_port)/hook" >/dev/null
site_api POST notify/test '{}' >/dev/null
is "$(wait_mails smtps 4)" 4 "with a dead webhook set too, the mail goes out"
both() { site_api GET notify/deliveries | jq -r '[.deliveries[0:2][] | "\(.channel) \(.status)"] | sort | join(", ")'; }
is "$(tb_wait_says 20 "mail delivered, webhook retrying" both)" "mail delivered, webhook retrying" \
    "two deliveries: the mail delivered, the webhook waiting to retry"
# A test of one channel: that channel only.
count() { site_api GET notify/deliveries | jq '.deliveries | length'; }
n0=$(count)
is "$(site_api POST notify/test '{"channel":"mail"}' | jq -c .)" '{"queued":true,"event":"notify.test"}' \
    'POST notify/test {"channel":"mail"}: queued'
is "$(wait_mails smtps 5)" 5 "the mail goes out"
is "$(count)|$(delivery "$(newest)" | cut -d' ' -f1)" "$((n0 + 1))|mail" "one delivery, by e-mail only"
is "$(site_api POST notify/test '{"channel":"sms"}' | jq -r .error)" 'channel: "webhook" or "mail" (or none: both)' \
    "an unknown channel is refused, saying which there are"
tb_ctl set notify.url '' >/dev/null
is "$(site_api POST notify/test '{"channel":"webhook"}' | jq -r .error)" "notify.url is empty: no webhook to tell" \
    "a test of the webhook with none set: refused, saying why"
is "$(count)" "$((n0 + 1))" "nothing was queued"

# 10. The password is nowhere to be read.
for where in "the daemon log:$(cat "$TB_TMP/daemon.log")" \
    "GET notify/deliveries:$(site_api GET notify/deliveries)" \
    "GET plugins/notify/settings:$(site_api GET plugins/notify/settings)" \
    "the audit log:$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT * FROM audit")" \
    "notify_deliveries:$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT * FROM notify_deliveries")" \
    "the mails:$(cat "$TB_TMP"/tls/*.json "$TB_TMP"/plain/*.json "$TB_TMP"/smtps/*.json)"; do
    is "$(grep -c -e "$PASS" -e WrongPass0 <<<"${where#*:}")" 0 "the SMTP password is not in ${where%%:*}"
done

is "$(grep -c 'WARN.*not sent' "$TB_TMP/daemon.log")" 0 \
    "the event from before anything was set up was skipped without a warning"

for p in $sinks; do kill "$p" 2>/dev/null; done
wait $sinks 2>/dev/null
tb_stop_daemon
ok $? "tlsboxd stops cleanly"
done_testing
