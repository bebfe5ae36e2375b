#!/bin/bash
# The notify plugin against a real webhook receiver on loopback
# (webhook_receiver.py): a test delivery, a certificate imported, an ACME
# attempt that fails; each POST signed (HMAC-SHA256 of the body, checked
# here with openssl), retried with backoff when the receiver answers 500,
# given up on after four tries when nothing listens; the events setting
# filters; the webhook URL's path and the key never reach the log, the API
# or the audit log; bad values are refused naming the setting.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start
ok $? "tlsboxd runs with the notify plugin"
is "$(site_api GET plugins | jq -r '.[] | select(.name == "notify") | .state')" running \
    "notify runs"

PW=$(tb_free_port)
hooks="$TB_TMP/hooks.jsonl"
fail="$TB_TMP/fail"
: >"$hooks"
echo 0 >"$fail"
timeout 300 python3 "$top_srcdir/tests/integration/webhook_receiver.py" "$PW" "$hooks" "$fail" &
receiver=$!
tb_wait_port "$PW" || bail "the webhook receiver did not listen on $PW"

# Off by default: a test says why nothing is sent.
is "$(site_api POST notify/test '{}' | jq -r .error)" \
    "notify.url is empty: no webhook to tell (and no e-mail: notify.mail_to or notify.smtp_url is empty)" \
    "no URL: POST notify/test is refused, saying why"

hook_path="/hook/PathSecret42"
key="KeyOfTheHook7"
tb_ctl set notify.url "http://127.0.0.1:$PW$hook_path" >/dev/null
ok $? "tlsboxctl set notify.url"
tb_ctl set notify.secret "$key" >/dev/null
tb_ctl set notify.retry_seconds 1 >/dev/null
is "$(tb_ctl get notify.url)" "********" "the URL is kept as a secret (its path may be the webhook's key)"

n_hooks() { wc -l <"$hooks"; }
wait_hooks() { # wait_hooks N: until the receiver has N requests, at most 20 s; prints the count
    local i
    for i in $(seq 1 200); do
        [ "$(n_hooks)" -ge "$1" ] && break
        sleep 0.1
    done
    n_hooks
}
hook() { sed -n "${1}p" "$hooks"; } # hook N: the Nth request as JSON
hmac() { printf '%s' "$1" | openssl dgst -sha256 -hmac "$key" | sed 's/^.*= /sha256=/'; }
delivery() { # delivery ID: "status tries http_status error" from GET notify/deliveries
    site_api GET notify/deliveries |
        jq -r --argjson id "$1" '.deliveries[] | select(.id == $id) | "\(.status) \(.tries) \(.http_status) \(.error)"'
}
wait_delivery() { tb_wait_says 30 "$2" delivery "$1"; } # wait_delivery ID TEXT

# 1. A test delivery: what the webhook gets.
is "$(site_api POST notify/test '{}' | jq -c .)" '{"queued":true,"event":"notify.test"}' \
    "POST notify/test: queued"
is "$(wait_hooks 1)" 1 "the receiver got one POST"
is "$(site_api POST notify/test '{"channel":"mail"}' | jq -r .error)" \
    "no e-mail: notify.mail_to or notify.smtp_url is empty" \
    'POST notify/test {"channel":"mail"} with no e-mail set up: refused, saying why'
h=$(hook 1)
body=$(jq -r .body <<<"$h")
is "$(jq -r '"\(.path) \(.event) \(.type)"' <<<"$h")" "$hook_path notify.test application/json" \
    "to the URL's path, with X-Tlsbox-Event and a JSON body"
like "$(jq -r .agent <<<"$h")" "^tlsbox-notify/" "from tlsbox-notify"
is "$(jq -r .signature <<<"$h")" "$(hmac "$body")" \
    "X-Tlsbox-Signature is the HMAC-SHA256 of the body with notify.secret (openssl agrees)"
is "$(jq -r '"\(.event) \(.data.asked_by) \(.host != "") \(.at | test("^[0-9-]{10}T[0-9:]{8}Z$"))"' <<<"$body")" \
    "notify.test control true true" "the body: event, who asked, the host, when (UTC)"
id=$(jq -r .id <<<"$body")
is "$(wait_delivery "$id" "delivered 1 204 null")" "delivered 1 204 null" \
    "GET notify/deliveries: delivered at the first try, HTTP 204"
is "$(site_api GET notify/deliveries | jq -r .to)" "http://127.0.0.1:$PW" \
    "the API names where to, without the path"

# 2. A certificate imported: cert.changed, with its name.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
    -subj "/CN=hook.example" -addext "subjectAltName=DNS:hook.example" \
    -keyout "$TB_TMP/hook.key" -out "$TB_TMP/hook.crt" 2>/dev/null
tb_ctl cert import --cert "$TB_TMP/hook.crt" --key "$TB_TMP/hook.key" --name hooked >/dev/null
ok $? "a certificate imported"
is "$(wait_hooks 2)" 2 "the receiver got a second POST"
body=$(hook 2 | jq -r .body)
is "$(jq -r '"\(.event) \(.data | tostring | test("hooked"))"' <<<"$body")" "cert.changed true" \
    "cert.changed, naming the certificate"
is "$(hook 2 | jq -r .signature)" "$(hmac "$body")" "signed too"

# 3. The receiver fails twice: retried after 1 s, then 2 s, delivered.
echo 2 >"$fail"
site_api POST notify/test '{}' >/dev/null
is "$(wait_hooks 5)" 5 "three more POSTs: two answered 500, then one more"
is "$(tail -n 3 "$hooks" | jq -r .answered | tr '\n' ' ')" "500 500 204 " "answered 500, 500, 204"
is "$(tail -n 3 "$hooks" | jq -r .body | sort -u | wc -l)" 1 "the same body each time"
id=$(hook 5 | jq -r .body | jq -r .id)
is "$(wait_delivery "$id" "delivered 3 204 null")" "delivered 3 204 null" "delivered at the third try"
like "$(cat "$TB_TMP/daemon.log")" \
    "notify.test not delivered: http://127.0.0.1:$PW answered HTTP 500 \(try 1 of 4\); next in 1 s" \
    "the log says what failed, which try, and when the next"

# 4. Nothing listens: four tries (1 + 2 + 4 s apart), then given up.
dead=$(tb_free_port)
tb_ctl set notify.url "http://127.0.0.1:$dead$hook_path" >/dev/null
site_api POST notify/test '{}' >/dev/null
id=$(site_api GET notify/deliveries | jq -r '.deliveries[0].id')
want="failed 4 null http://127.0.0.1:$dead: Couldn't connect to server"
is "$(wait_delivery "$id" "$want")" "$want" "nothing listening: failed after four tries, saying why"
like "$(cat "$TB_TMP/daemon.log")" "notify.test not delivered: http://127.0.0.1:$dead: Couldn't connect to server \(try 4 of 4\); given up" \
    "the log says it gave up"
is "$(site_metric tlsbox_notify_failed_total)" 1 "tlsbox_notify_failed_total counts it"

# 4b. Deliveries waiting for a retry hold no maintenance thread (there are
# two): with three waiting 300 s, a new one goes out at once.
tb_ctl set notify.retry_seconds 300 >/dev/null
for i in 1 2 3; do site_api POST notify/test '{}' >/dev/null; done
ids=$(site_api GET notify/deliveries | jq -r '.deliveries[0:3][] | .id')
for id in $ids; do
    is "$(wait_delivery "$id" "retrying 1 null http://127.0.0.1:$dead: Couldn't connect to server")" \
        "retrying 1 null http://127.0.0.1:$dead: Couldn't connect to server" "delivery $id waits for its retry"
done
tb_ctl set notify.url "http://127.0.0.1:$PW$hook_path" >/dev/null
site_api POST notify/test '{}' >/dev/null
id=$(site_api GET notify/deliveries | jq -r '.deliveries[0].id')
is "$(wait_delivery "$id" "delivered 1 204 null")" "delivered 1 204 null" \
    "a new delivery goes out while three wait (not after their 300 s)"

# 5. An ACME attempt that fails: acme.failed, with the step and the cause.
tb_ctl set notify.url "http://127.0.0.1:$PW$hook_path" >/dev/null
tb_ctl set notify.events acme.failed >/dev/null
before=$(n_hooks)
tb_ctl set acme.agree_tos true >/dev/null
tb_ctl set acme.directory "https://127.0.0.1:$dead/dir" >/dev/null
tb_ctl set acme.domains hook.test >/dev/null
is "$(wait_hooks $((before + 1)))" "$((before + 1))" "an ACME attempt failed: the receiver got a POST"
body=$(tail -n 1 "$hooks" | jq -r .body)
is "$(jq -r '"\(.event) \(.data.name) \(.data.step) \(.data.attempt)"' <<<"$body")" \
    "acme.failed hook.test directory 1" "acme.failed: the certificate, the step, the attempt"
like "$(jq -r .data.detail <<<"$body")" "https://127.0.0.1:$dead/dir" "and the cause, naming the CA's URL"
tb_ctl set acme.domains '' >/dev/null

# 6. notify.events filters.  Events reach the plugin in the order they
# happen: a certificate imported (cert.changed, no longer named) then a
# policy change (policy.changed, named): only the second is sent.
tb_ctl set notify.events acme.failed,policy.changed >/dev/null
before=$(n_hooks)
last=$(site_api GET notify/deliveries | jq -r '.deliveries[0].id')
tb_ctl cert import --cert "$TB_TMP/hook.crt" --key "$TB_TMP/hook.key" --name hooked2 >/dev/null
site_policy modern
ok $? "a certificate imported, then the TLS policy changed"
is "$(wait_hooks $((before + 1)))" "$((before + 1))" "the receiver got a POST"
is "$(tail -n 1 "$hooks" | jq -r .event)" policy.changed "for policy.changed"
is "$(site_api GET notify/deliveries | jq -r --argjson l "$last" '[.deliveries[] | select(.id > $l) | .event] | join(",")')" \
    "policy.changed" "and none for cert.changed, which notify.events no longer names"

# 7. Refused values change nothing.
out=$(tb_ctl set notify.events "cert.changed,bogus.event" 2>&1)
is "$?" 1 "an unknown event is refused"
like "$out" 'notify.events: item "bogus.event" does not match' "naming the setting and the item"
is "$(tb_ctl get notify.events)" acme.failed,policy.changed "the stored value stays"
out=$(tb_ctl set notify.url "ftp://127.0.0.1/x" 2>&1)
is "$?" 1 "an ftp:// URL is refused"
like "$out" "notify.url" "naming the setting"

# 8. The URL's path and the key are nowhere to be read.
for where in "the daemon log:$(cat "$TB_TMP/daemon.log")" \
    "GET notify/deliveries:$(site_api GET notify/deliveries)" \
    "GET plugins/notify/settings:$(site_api GET plugins/notify/settings)" \
    "the audit log:$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT * FROM audit")" \
    "notify_deliveries:$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT * FROM notify_deliveries")"; do
    is "$(grep -c -e PathSecret42 -e KeyOfTheHook7 <<<"${where#*:}")" 0 \
        "neither the URL's path nor the key in ${where%%:*}"
done

# 9. Its page in the web UI, in headless Chromium.
tb_need_browser
tb_ctl set admin.pbkdf2_iterations 10000 >/dev/null
SITE_PORT=$P_HTTPS tb_ui_run notify_ui.py 120 7 HOOK_ORIGIN="http://127.0.0.1:$PW"

kill "$receiver" 2>/dev/null
wait "$receiver" 2>/dev/null
tb_stop_daemon
ok $? "tlsboxd stops cleanly"
done_testing
