#!/bin/bash
# Admin HTTPS server and its API: HTTPS only, security headers on every
# response, every route of the route table behind a session, first run with
# the one-time token, CSRF on changes, an invalid policy refused with its
# position and nothing stored, private keys never in a response, audit with
# before/after, session expiry (an open live stream does not keep a session
# alive) and logout, login throttling and lockout (logged), /metrics behind
# the scrape token, a certificate change reaching the admin port without a
# restart.
. "$(dirname "$0")/lib.sh"
tb_setup

# The site on free ports too: its default 443/80 may be held by another
# daemon on this machine, and a held port stops tlsboxd from starting.
tb_start_daemon --set admin.lockout_after=5 --set admin.pbkdf2_iterations=10000 \
    --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" ||
    bail "daemon did not start"
B="https://127.0.0.1:$TB_ADMIN_PORT"
J="$TB_TMP/cookies"
CURL=(curl -sk --max-time 10 -H "Content-Type: application/json")

# ---- transport and headers ----------------------------------------------
code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$TB_ADMIN_PORT/")
rc=$?
ok $((rc == 0)) "plain HTTP on the admin port gets no HTTP answer (curl exit $rc, status $code)"
is "$code" "000" "no HTTP status over plain HTTP"
proto=$(echo | openssl s_client -connect "127.0.0.1:$TB_ADMIN_PORT" -brief 2>&1 | grep -i 'Protocol version')
like "$proto" "TLSv1\.3" "the admin port speaks TLS 1.3"

check_headers() { # URL [curl args...]: every security header present
    local url=$1 h
    shift
    h=$("${CURL[@]}" -D - -o /dev/null "$@" "$url" | tr -d '\r')
    local miss=""
    grep -qi "^content-security-policy: .*script-src 'self';.*frame-ancestors 'none'" <<<"$h" || miss="$miss csp"
    grep -qi "^content-security-policy: .*script-src[^;]*unsafe-inline" <<<"$h" && miss="$miss inline-script-allowed"
    grep -qi "^content-security-policy: .*style-src[^;]*unsafe-inline" <<<"$h" && miss="$miss inline-style-allowed"
    grep -qi '^x-content-type-options: nosniff' <<<"$h" || miss="$miss nosniff"
    grep -qi '^referrer-policy: no-referrer' <<<"$h" || miss="$miss referrer"
    grep -qi '^strict-transport-security: max-age=[1-9]' <<<"$h" || miss="$miss hsts"
    echo "$miss"
}
for u in / /index.html /js/app.js /css/style.css /vendor/chart.js/chart.min.js /nope.html \
    /api/v1/session /api/v1/status /api/v1/live /metrics /ui/plugins/example.js; do
    is "$(check_headers "$B$u")" "" "security headers on GET $u"
done
is "$(check_headers "$B/api/v1/session/login" -X POST -d '{"user":"x","password":"y"}')" "" \
    "security headers on a refused login"
is "$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$B/../../etc/passwd")" "404" "no path outside webui/"
is "$("${CURL[@]}" -o /dev/null -w '%{content_type}' "$B/js/app.js")" \
    "text/javascript; charset=utf-8" "modules served as JavaScript"
chart_len=$("${CURL[@]}" "$B/vendor/chart.js/chart.min.js" | wc -c)
is "$chart_len" "$(stat -c %s /usr/share/javascript/chart.js/chart.min.js)" \
    "Chart.js served from Debian's libjs-chart.js"

# ---- every route needs a session ----------------------------------------
routes=$(curl -s --unix-socket "$TB_STATE/control.sock" http://x/api/v1/routes |
    jq -r '.routes[] | "\(.method) \(.pattern)"')
n=$(wc -l <<<"$routes")
[ "$n" -ge 20 ]
ok $? "route table enumerated from the daemon ($n routes, at least 20)"
bad=""
while read -r m p; do
    c=$("${CURL[@]}" -o /dev/null -w '%{http_code}' -X "$m" -H 'Content-Type: application/json' \
        -d '{}' "$B/api/v1/${p/\*/x}")
    [ "$c" = 401 ] || bad="$bad $m:$p=$c"
done <<<"$routes"
is "$bad" "" "all $n routes answer 401 without a session"
is "$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$B/api/v1/live")" 401 "live stream needs a session"
is "$("${CURL[@]}" "$B/api/v1/session" | jq -r .state)" "setup" "no user yet: first-run state"

# ---- first run ----------------------------------------------------------
setup() { "${CURL[@]}" -c "$TB_TMP/jar-refused" -o "$TB_TMP/out" -w '%{http_code}' -X POST "$B/api/v1/session/setup" \
    -d "{\"token\":\"$1\",\"user\":\"admin\",\"password\":\"$2\"}"; }
is "$(curl -sk -o /dev/null -w '%{http_code}' -X POST "$B/api/v1/session/setup" \
    -d '{"token":"0","user":"admin","password":"long enough password"}')" 415 \
    "a form-encoded (cross-site) setup or login is refused"
is "$(setup 0000 'long enough password')" 403 "setup refused without a valid token"
# An IPv6 admin.bind in the URL needs brackets.  setup-url reads the stored
# value, so no restart is needed to see it; the old value goes back after.
tb_ctl set admin.bind ::1 >/dev/null
like "$(tb_ctl admin setup-url | head -1)" "^https://\[::1\]:$TB_ADMIN_PORT/#setup=[0-9a-f]{64}$" \
    "setup-url brackets an IPv6 admin.bind"
tb_ctl set admin.bind 127.0.0.1 >/dev/null
url=$(tb_ctl admin setup-url | head -1)
token=${url##*#setup=}
like "$url" "^https://127\.0\.0\.1:$TB_ADMIN_PORT/#setup=[0-9a-f]{64}$" "setup-url prints the admin URL with a token"
is "$(setup "$token" short)" 400 "a short password is refused"
like "$(cat "$TB_TMP/out")" "at least 10 characters" "and says why"
is "$("${CURL[@]}" -D "$TB_TMP/h" -c "$J" -o /dev/null -w '%{http_code}' -X POST "$B/api/v1/session/setup" \
    -d "{\"token\":\"$token\",\"user\":\"admin\",\"password\":\"correct horse battery\"}")" 200 \
    "first run with the token sets the password and logs in"
like "$(tr -d '\r' <"$TB_TMP/h" | grep -i '^set-cookie')" \
    "__Host-tlsbox=[0-9a-f]{64}; Path=/; Secure; HttpOnly; SameSite=Strict" "session cookie flags"
is "$(setup "$token" 'another long password')" 403 "the token works once"
tb_ctl admin setup-url >/dev/null 2>&1
is "$?" 1 "no setup URL once a user exists"
csrf=$("${CURL[@]}" -b "$J" "$B/api/v1/session" | jq -r .csrf)
like "$csrf" "^[0-9a-f]{64}$" "session gives a CSRF token"
is "$("${CURL[@]}" -b "$J" "$B/api/v1/status" | jq -r .name)" "tlsboxd" "the API answers with a session"

# ---- CSRF and policy ----------------------------------------------------
active() { "${CURL[@]}" -b "$J" "$B/api/v1/policy" | jq -r .id; }
hist() { "${CURL[@]}" -b "$J" "$B/api/v1/policy/history" | jq '.versions | length'; }
v0=$(active)
h0=$(hist)
is "$("${CURL[@]}" -b "$J" -o /dev/null -w '%{http_code}' -X POST "$B/api/v1/policy/preset" -d '{"preset":"modern"}')" \
    403 "a change without the CSRF token is refused"
is "$("${CURL[@]}" -b "$J" -H 'X-CSRF-Token: 00' -o /dev/null -w '%{http_code}' -X POST \
    "$B/api/v1/policy/preset" -d '{"preset":"modern"}')" 403 "a wrong CSRF token is refused"
is "$(active)" "$v0" "policy unchanged after the refused changes"
out=$("${CURL[@]}" -b "$J" -H "X-CSRF-Token: $csrf" -w ' %{http_code}' -X POST "$B/api/v1/policy/raw" \
    -d '{"priority":"NORMAL:+FOO"}')
like "$out" "invalid token '\+FOO' at position 7.* 400$" "an invalid raw policy is refused with its position"
is "$(active) $(hist)" "$v0 $h0" "nothing stored for the invalid policy"
out=$("${CURL[@]}" -b "$J" -H "X-CSRF-Token: $csrf" -X POST "$B/api/v1/policy/preset" -d '{"preset":"modern"}')
is "$(jq -r .policy.min_version <<<"$out")" "TLS1.3" "with the CSRF token the preset applies"

# ---- audit: who, from where, before -> after ----------------------------
"${CURL[@]}" -b "$J" -H "X-CSRF-Token: $csrf" -o /dev/null -X POST "$B/api/v1/policy/preview" \
    -d '{"preset":"compat"}'
is "$("${CURL[@]}" -b "$J" "$B/api/v1/audit?limit=50" | jq '[.entries[] | select(.action=="POST policy/preview")] | length')" \
    0 "a preview changes nothing and is not audited"
a=$("${CURL[@]}" -b "$J" "$B/api/v1/audit?limit=20" | jq -c '[.entries[] | select(.action=="POST policy/preset")][0]')
is "$(jq -r '.actor + " " + .source' <<<"$a")" "admin 127.0.0.1" "audit: who and from where"
is "$(jq -r '(.before|fromjson|.policy.min_version) + " -> " + (.after|fromjson|.policy.min_version)' <<<"$a")" \
    "TLS1.2 -> TLS1.3" "audit: state before and after"

# ---- ACME off: "Renew now" is refused, nothing queued ----------------------
# No acme.domains here: ACME is off, and a renewal request must say so (the
# UI shows the error) instead of "queued" for a renewal that never comes.
acme_rows() {
    sqlite3 "file:$TB_STATE/tlsbox.db?mode=ro" "SELECT (SELECT count(*) FROM acme_orders) || ' ' ||
        (SELECT count(*) FROM acme_events) || ' ' || (SELECT count(*) FROM acme_accounts)"
}
acme_off="acme/renew: ACME is off (acme.domains is empty); nothing was renewed: set acme.domains to the site's names to turn it on"
rows0=$(acme_rows)
is "$("${CURL[@]}" -b "$J" -H "X-CSRF-Token: $csrf" -o "$TB_TMP/renew" -w '%{http_code}' -X POST \
    "$B/api/v1/acme/renew" -d '{"force":true}')" 409 "Renew now with ACME off is refused (409)"
is "$(jq -r .error "$TB_TMP/renew")" "$acme_off" "and the error says ACME is off and which setting turns it on"
out=$(tb_ctl acme renew --force 2>&1)
is "$? $out" "1 tlsboxctl: $acme_off" "tlsboxctl acme renew with ACME off exits 1 with that message"
is "$(acme_rows)" "$rows0" "no ACME order, event or account row was made ($rows0)"

# ---- private keys never come back ---------------------------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TB_TMP/k.pem" \
    -out "$TB_TMP/c.pem" -subj /CN=admin-test.example -days 30 \
    -addext subjectAltName=DNS:admin-test.example 2>/dev/null
body=$(jq -n --rawfile c "$TB_TMP/c.pem" --rawfile k "$TB_TMP/k.pem" \
    '{name:"admin-test", chain_pem:$c, key_pem:$k}')
is "$("${CURL[@]}" -b "$J" -H "X-CSRF-Token: $csrf" -o "$TB_TMP/import" -w '%{http_code}' -X POST \
    "$B/api/v1/cert/import" -d "$body")" 201 "certificate imported over the admin API"
keyline=$(sed -n 2p "$TB_TMP/k.pem")
: >"$TB_TMP/bodies"
cat "$TB_TMP/import" >>"$TB_TMP/bodies"
while read -r m p; do
    [ "$m" = GET ] || continue
    for q in "${p/\*/admin-test}" "${p/\*/x}"; do
        "${CURL[@]}" -b "$J" "$B/api/v1/$q" >>"$TB_TMP/bodies"
    done
done <<<"$routes"
"${CURL[@]}" -b "$J" "$B/api/v1/audit?limit=1000" >>"$TB_TMP/bodies"
ok $(($(wc -c <"$TB_TMP/bodies") < 5000)) "collected every GET reply ($(wc -c <"$TB_TMP/bodies") bytes)"
if grep -qF -e "$keyline" -e "PRIVATE KEY" "$TB_TMP/bodies" "$TB_TMP/daemon.log"; then
    ok 1 "the private key appears in no response and not in the log"
else
    ok 0 "the private key appears in no response and not in the log"
fi
is "$("${CURL[@]}" -b "$J" "$B/api/v1/audit?limit=50" |
    jq -r '[.entries[] | select(.action=="POST cert/import")][0].detail | fromjson | .key_pem')" \
    "********" "the audit log masks the key"

# ---- a failed login's name is kept short, cut between characters ---------
# Anyone can send a 16 KB name, and each failure is a log line and an audit
# row: 63 bytes then a 2-byte character straddle the 64 bytes kept, and
# "..." marks the cut.  From its own address: no effect on throttling.
long=$(head -c 63 /dev/zero | tr '\0' a)
is "$("${CURL[@]}" --interface 127.0.0.3 -o /dev/null -w '%{http_code}' -X POST "$B/api/v1/session/login" \
    -d "$(jq -n --arg u "${long}é$(head -c 8000 /dev/zero | tr '\0' b)" '{user: $u, password: "x"}')")" \
    401 "a login with an 8065-byte UTF-8 name fails"
"${CURL[@]}" -b "$J" "$B/api/v1/audit?limit=1" >"$TB_TMP/audit1"
is "$(jq -r '.entries | length' "$TB_TMP/audit1")" 1 "audit?limit=1 lists one entry"
is "$(jq -r '.entries[0] | "\(.action) \(.source) \(.target) \(.actor == .target)"' "$TB_TMP/audit1")" \
    "login.failed 127.0.0.3 ${long}... true" \
    "it is the failed login, name and target cut before the character, with \"...\""
like "$(cat "$TB_TMP/daemon.log")" "failed login for user \"${long}\.\.\.\" from 127\.0\.0\.3" \
    "the log line holds the same 66 bytes of the name"
is "$(jq -r '(.next_before | type) == "number" and .next_before == .entries[0].id' "$TB_TMP/audit1")" \
    true "next_before: the id to list older entries from"
is "$("${CURL[@]}" -b "$J" "$B/api/v1/audit?limit=1000" | jq -c 'has("next_before"), .next_before')" \
    $'true\nnull' "next_before is null when nothing older is left"

# ---- certificate change reaches the admin port without a restart --------
# Asked for by its name, as a browser at https://admin-test.example:PORT/
# does (without SNI, 127.0.0.1 gets the internal leaf, which names it).
subj=""
for _ in $(seq 1 50); do
    subj=$(echo | openssl s_client -connect "127.0.0.1:$TB_ADMIN_PORT" -servername admin-test.example 2>/dev/null |
        openssl x509 -noout -subject 2>/dev/null)
    case $subj in *admin-test.example*) break ;; esac
    sleep 0.1
done
like "$subj" "CN ?= ?admin-test.example" "the admin port serves the newly imported certificate"
subj=$(echo | openssl s_client -connect "127.0.0.1:$TB_ADMIN_PORT" -servername admin-test.example. 2>/dev/null |
    openssl x509 -noout -subject 2>/dev/null)
like "$subj" "CN ?= ?admin-test.example" "an SNI with a trailing dot gets the same certificate"

# ---- settings refused by the field --------------------------------------
is "$("${CURL[@]}" -b "$J" -H "X-CSRF-Token: $csrf" -o "$TB_TMP/out" -w '%{http_code}' -X PUT \
    "$B/api/v1/plugins/site/settings" -d '{"workers":"999"}')" 400 "an out-of-range setting is refused"
like "$(jq -r .error "$TB_TMP/out")" '^site\.workers: "999" is out of range 0\.\.64$' \
    "the message names the setting and its range"
put_setting() { # KEY VALUE: prints the status, the reply in $TB_TMP/out
    "${CURL[@]}" -b "$J" -H "X-CSRF-Token: $csrf" -o "$TB_TMP/out" -w '%{http_code}' -X PUT \
        "$B/api/v1/settings/$1" -d "$(jq -n --arg v "$2" '{value: $v}')"
}
# The error quotes the value cut at 64 bytes: here inside the last character.
is "$(put_setting core.hostname "$(head -c 63 /dev/zero | tr '\0' a)é")" 400 \
    "a host name with a non-ASCII character is refused"
like "$(jq -r .error "$TB_TMP/out")" '^core\.hostname: "a{63}"\.\.\. does not match' \
    "the message names core.hostname (not a bare null)"
# core.user is the account a tlsboxd started as root becomes (and gives the
# state directory to): the box's to choose, not a web session's.
user_before=$(tb_ctl get core.user)
is "$(put_setting core.user pi)" 409 "core.user from a web session: refused"
is "$(jq -r .error "$TB_TMP/out")" \
    "core.user: set on the box itself (as root: tlsboxctl set core.user NAME), not from the web UI: it names the account tlsboxd becomes when started as root" \
    "saying where it is set"
is "$("${CURL[@]}" -b "$J" -H "X-CSRF-Token: $csrf" -o "$TB_TMP/out" -w '%{http_code}' -X PUT \
    "$B/api/v1/plugins/core/settings" -d '{"user":"pi"}')" 409 "also among other settings"
is "$(tb_ctl get core.user)" "$user_before" "core.user is as it was"
tb_ctl set core.user "$user_before" >/dev/null
ok $? "the control socket sets it (the box itself)"
is "$("${CURL[@]}" -b "$J" -o "$TB_TMP/out" -w '%{http_code}' "$B/api/v1/x%FF")" 404 \
    "an API path that is not UTF-8 is not found"
like "$(jq -r .error "$TB_TMP/out")" '^no such API path: /api/v1/x' "and the reply says so"
is "$("${CURL[@]}" -b "$J" -o "$TB_TMP/out" -w '%{http_code}' \
    "$B/api/v1/settings/history?plugin=%00site")" 400 "a query value with %00 is refused"
like "$(jq -r .error "$TB_TMP/out")" '^query string: bad percent escape at byte [0-9]+' \
    "and the reply says where"
is "$("${CURL[@]}" -b "$J" "$B/api/v1/settings/history?plugin=%73ite&limit=500" |
    jq -r '[.changes[] | [.items[].key | startswith("site.")] | any] | length > 0 and all')" true \
    "an escaped value still decodes (%73ite is site)"
bind0=$(tb_ctl get admin.bind)
for v in 1.2.3.4.5 :::: ...; do
    is "$(put_setting admin.bind "$v")" 400 "admin.bind $v is refused"
    is "$(jq -r .error "$TB_TMP/out")" "admin.bind: \"$v\" is not an IPv4 or IPv6 address" \
        "the message names admin.bind"
done
is "$(tb_ctl get admin.bind)" "$bind0" "admin.bind unchanged ($bind0)"
# A DNS name holds at most 253 characters: the pattern bounds each label
# (63), .max the name, so a CA never gets an order it must refuse.
lbl=$(head -c 63 /dev/zero | tr '\0' a)
long="$lbl.$lbl.$lbl.$lbl.test" # 4 * 64 + 4 = 260 characters
is "$(put_setting acme.domains "ok.test,$long")" 400 "a 260-character name in acme.domains is refused"
is "$(jq -r .error "$TB_TMP/out")" \
    "acme.domains: item \"$lbl.\"... is 260 bytes long, more than the 253 allowed" \
    "the message names acme.domains, the item and the limit"
# The web UI's form saves through the plugin's route and puts a message
# that starts with "acme.domains:" under that field.
is "$("${CURL[@]}" -b "$J" -H "X-CSRF-Token: $csrf" -o "$TB_TMP/out" -w '%{http_code}' -X PUT \
    "$B/api/v1/plugins/acme/settings" -d "$(jq -n --arg v "$long" '{domains: $v}')")" 400 \
    "the web UI's save of acme.domains is refused"
like "$(jq -r .error "$TB_TMP/out")" "^acme\.domains: item \"a{63}\.\"\.\.\. is 260 bytes long" \
    "with a message the form shows under the acme.domains field"
out=$(tb_ctl set acme.domains "$long" 2>&1)
is "$?" 1 "tlsboxctl set refuses it too"
like "$out" "acme\.domains: item \"a{63}\.\"\.\.\. is 260 bytes long, more than the 253 allowed" \
    "and says why"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM settings WHERE key='acme.domains'")" 0 \
    "nothing was stored: ACME stays off"

# ---- bodies without a session are small -----------------------------------
# core.api_max_body (1 MB) is for requests behind a session; before logging
# in a client may send 16 KB, so 64 connections cannot pin 64 MB.
pad=$(head -c 20000 /dev/zero | tr '\0' a)
printf '{"user":"pad-test","password":"%s"}' "$pad" >"$TB_TMP/big-login"
is "$("${CURL[@]}" -o "$TB_TMP/out" -w '%{http_code}' -X POST "$B/api/v1/session/login" \
    --data-binary @"$TB_TMP/big-login")" 413 "a 20 KB log-in body is refused"
is "$(jq -r .error "$TB_TMP/out")" "request body too large" "and says why"
is "$("${CURL[@]}" -o /dev/null -w '%{http_code}' -X POST "$B/api/v1/policy/raw" \
    --data-binary @"$TB_TMP/big-login")" 413 "a 20 KB API body without a session is refused before reading it"
printf '{"workers":"999","x":"%s"}' "$pad" >"$TB_TMP/big-set"
is "$("${CURL[@]}" -b "$J" -H "X-CSRF-Token: $csrf" -o "$TB_TMP/out" -w '%{http_code}' -X PUT \
    "$B/api/v1/plugins/site/settings" --data-binary @"$TB_TMP/big-set")" 400 \
    "behind a session a 20 KB body reaches the route"
like "$(jq -r .error "$TB_TMP/out")" "^site\." "and the route answers it (not the size limit)"

# ---- /metrics behind the scrape token -----------------------------------
is "$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$B/metrics")" 404 "/metrics off without admin.metrics_token"
tb_ctl set admin.metrics_token "scrape-token-0123456789" >/dev/null
is "$("${CURL[@]}" -o /dev/null -w '%{http_code}' "$B/metrics")" 401 "/metrics needs the token"
is "$("${CURL[@]}" -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer wrong-token-0123456' "$B/metrics")" \
    401 "/metrics refuses a wrong token"
like "$("${CURL[@]}" -H 'Authorization: Bearer scrape-token-0123456789' "$B/metrics")" \
    "^tlsbox_site_connections_open [0-9]" "/metrics with the token"

# ---- sessions: expiry and logout ----------------------------------------
tb_ctl set admin.session_idle 2 >/dev/null
sleep 3.5
is "$("${CURL[@]}" -b "$J" -o /dev/null -w '%{http_code}' "$B/api/v1/status")" 401 "an idle session expires"
tb_ctl set admin.session_idle 1800 >/dev/null
login() { # USER PASSWORD [curl args]: prints the status
    local u=$1 p=$2
    shift 2
    "${CURL[@]}" -c "$J" -o "$TB_TMP/login" -w '%{http_code}' "$@" -X POST "$B/api/v1/session/login" \
        -d "{\"user\":\"$u\",\"password\":\"$p\"}"
}
# ---- a live stream alone does not keep its session in use ----------------
# A dashboard left open gets a metrics event a second from the box; those
# are not requests: the session still ends admin.session_idle after the last
# one, and the stream with it (long before curl's 30 s limit).
tb_ctl set admin.session_idle 3 >/dev/null
is "$(login admin 'correct horse battery')" 200 "log in for a live stream"
code=$(curl -skN --max-time 30 -b "$J" -o "$TB_TMP/live" -w '%{http_code}' "$B/api/v1/live")
is "$? $code" "0 200" "a live stream left alone ends by itself (exit 0, not curl's time limit)"
n=$(grep -c '^event: metrics' "$TB_TMP/live")
ok $((n < 1)) "it sent metrics events while the session lasted ($n)"
is "$("${CURL[@]}" -b "$J" -o /dev/null -w '%{http_code}' "$B/api/v1/status")" 401 \
    "the session idled out under the open stream"
tb_ctl set admin.session_idle 1800 >/dev/null
# ---- admin.pbkdf2_iterations raised: the next login remakes the hash -------
pw_iter() { sqlite3 "file:$TB_STATE/tlsbox.db?mode=ro" "SELECT pw_iterations FROM admin_users WHERE name='admin'"; }
is "$(pw_iter)" 10000 "admin's stored hash has 10000 iterations"
tb_ctl set admin.pbkdf2_iterations 12000 >/dev/null
is "$(pw_iter)" 10000 "raising admin.pbkdf2_iterations to 12000 remakes no hash by itself"
is "$(login admin 'correct horse battery')" 200 "log in with the setting at 12000"
is "$(pw_iter)" 12000 "the login remade admin's hash with 12000 iterations"
is "$(grep -c 'password hash of user "admin" remade with 12000 PBKDF2 iterations (was 10000)' \
    "$TB_TMP/daemon.log")" 1 "and logged it once"
is "$(login admin 'correct horse battery')" 200 "the password checks against the new hash"
is "$(grep -c 'password hash of user "admin" remade' "$TB_TMP/daemon.log")" 1 \
    "a second login remakes nothing"
tb_ctl set admin.pbkdf2_iterations 10000 >/dev/null
is "$(login admin 'correct horse battery')" 200 "log in again"
csrf=$(jq -r .csrf "$TB_TMP/login")
is "$("${CURL[@]}" -b "$J" -H "X-CSRF-Token: $csrf" -o /dev/null -w '%{http_code}' -X POST "$B/api/v1/session/logout")" \
    200 "log out"
is "$("${CURL[@]}" -b "$J" -o /dev/null -w '%{http_code}' "$B/api/v1/status")" 401 "the session is gone after logout"

# ---- throttling and lockout (user bob, from 127.0.0.2) -------------------
echo 'bobs password is long' | tb_ctl admin passwd bob >/dev/null
is "$?" 0 "tlsboxctl admin passwd creates a user"
from=(--interface 127.0.0.2)
# retry_after counts down from the failure: on a loaded machine a second may
# pass before the next attempt, so the wait is checked against the time
# that really passed.  retry_after_within BACKOFF T0 MSG: the last login's
# retry_after is BACKOFF seconds less the time since T0 (ms, taken before the
# failure), rounded, and at least 1; sets wait_s.
retry_after_within() {
    local backoff=$1 t0=$2 msg=$3 t1 lo
    t1=$(date +%s%3N)
    wait_s=$(jq -r .retry_after "$TB_TMP/login")
    lo=$((backoff - (t1 - t0 + 999) / 1000))
    [ "$lo" -ge 1 ] || lo=1
    ok "$([ "$wait_s" -ge "$lo" ] && [ "$wait_s" -le "$backoff" ]; echo $?)" \
        "$msg ($wait_s s, between $lo and $backoff)"
}
# Bob's own browser (127.0.0.3) logged in once before: it holds a device cookie.
DJ="$TB_TMP/bob-device"
devlogin() { # [curl args]: bob's right password from 127.0.0.3; prints the status
    "${CURL[@]}" --interface 127.0.0.3 -o /dev/null -w '%{http_code}' "$@" -X POST \
        "$B/api/v1/session/login" -d '{"user":"bob","password":"bobs password is long"}'
}
is "$(devlogin -c "$DJ")" 200 "bob logs in from his browser"
like "$(grep -F __Host-tlsbox-device "$DJ" | awk '{print $5 " " $7}')" '^[0-9]+ [0-9]+\.[0-9a-f]{64}$' \
    "and his browser keeps a device cookie (with an expiry: Max-Age)"
is "$(login bob wrong1 "${from[@]}") $(login bob wrong2 "${from[@]}")" "401 401" \
    "two wrong passwords are refused"
t0=$(date +%s%3N)
is "$(login bob wrong3 "${from[@]}")" 401 "a third is refused"
is "$(login bob 'bobs password is long' "${from[@]}")" 429 "then even the right one must wait (backoff)"
retry_after_within 2 "$t0" "retry_after is the 2 s backoff less the time passed"
sleep $((wait_s + 1))
t0=$(date +%s%3N)
is "$(login bob wrong4 "${from[@]}")" 401 "after the wait a wrong password is checked again"
is "$(login bob 'bobs password is long' "${from[@]}")" 429 "the fourth failure doubles the wait"
retry_after_within 4 "$t0" "to 4 s less the time passed"
sleep 5
is "$(login bob wrong5 "${from[@]}")" 401 "fifth failure"
is "$(login bob 'bobs password is long' "${from[@]}")" 429 "locked out after admin.lockout_after failures"
like "$(jq -r .error "$TB_TMP/login")" "locked out" "the reply says locked out"
like "$(jq -r .retry_after "$TB_TMP/login")" "^(89[0-9]|900)$" "for admin.lockout_seconds"
is "$(login admin 'correct horse battery')" 200 "another user from another address still logs in"
# The lock is on the name; the browser that logged in as bob before is exempt
# (device cookie), one without the cookie is not, and a forged one is none.
is "$(devlogin)" 429 "bob's name is locked for a browser without his device cookie"
is "$(devlogin -b "$DJ")" 200 "his own browser, with its device cookie, still logs in"
sed 's/\(__Host-tlsbox-device\t[0-9]*\.\)[0-9a-f]/\1x/' "$DJ" >"$DJ.forged"
is "$(devlogin -b "$DJ.forged")" 429 "a forged device cookie is no cookie"
like "$(cat "$TB_TMP/daemon.log")" 'user "bob" logged in from 127\.0\.0\.3 \(a known device\)' \
    "the log says the login came from a known device"
like "$(cat "$TB_TMP/daemon.log")" "failed login for user \"bob\" from 127\.0\.0\.2" "failures are logged"
like "$(cat "$TB_TMP/daemon.log")" "login locked out for 900 s: addr:127\.0\.0\.2, user:bob" "the lockout is logged"
# A name with terminal escapes (JSON \u001b) is logged as \x1b, never raw.
is "$("${CURL[@]}" --interface 127.0.0.4 -o /dev/null -w '%{http_code}' -X POST "$B/api/v1/session/login" \
    -d '{"user":"\u001b[2J\u001b[31mroot\u0007","password":"x"}')" 401 "a name with ESC and BEL: 401"
like "$(cat "$TB_TMP/daemon.log")" 'failed login for user "\\x1b\[2J\\x1b\[31mroot\\x07" from 127\.0\.0\.4' \
    "and logged with \\x1b and \\x07 for its control bytes"
is "$(LC_ALL=C grep -c $'[\x01-\x08\x0b-\x1f\x7f]' "$TB_TMP/daemon.log")" 0 "no raw control byte in the daemon log"
csrf=$(jq -r .csrf "$TB_TMP/login")
is "$("${CURL[@]}" -b "$J" "$B/api/v1/audit?limit=100" | jq '[.entries[] | select(.action=="login.lockout")] | length')" \
    1 "the lockout is in the audit log"

# ---- a new password from the web needs the current one ------------------
# A session left open in a browser must not be enough to lock its owner out.
passwd() { # BODY: PUT admin/password with the session; prints the status
    "${CURL[@]}" -b "$J" -H "X-CSRF-Token: $csrf" -o "$TB_TMP/out" -w '%{http_code}' -X PUT \
        "$B/api/v1/admin/password" -d "$1"
}
is "$(passwd '{"password":"a stolen session password"}')" 403 \
    "a new password without the current one is refused"
is "$(jq -r .error "$TB_TMP/out")" \
    'admin/password from the web needs the current password ("current_password")' "and says why"
is "$(passwd '{"password":"a stolen session password","current_password":"not the password"}')" \
    403 "a new password with a wrong current one is refused"
is "$(jq -r .error "$TB_TMP/out")" "current_password is wrong" "and says why"
like "$(cat "$TB_TMP/daemon.log")" 'failed login for user "admin" from a web session' \
    "the wrong current password is logged as a failed login"
is "$(login admin 'a stolen session password' --interface 127.0.0.4)" 401 \
    "the refused new password does not log in"
is "$(login admin 'correct horse battery')" 200 "the old one still does"
csrf=$(jq -r .csrf "$TB_TMP/login")
cp "$J" "$TB_TMP/old-session"
is "$(passwd '{"password":"a brand new password","current_password":"correct horse battery"}')" \
    200 "with the current password the new one is set"
is "$("${CURL[@]}" -b "$TB_TMP/old-session" -o /dev/null -w '%{http_code}' "$B/api/v1/status")" \
    401 "the new password ended the session"
is "$(login admin 'a brand new password')" 200 "the new password logs in"
is "$("${CURL[@]}" -b "$J" "$B/api/v1/audit?limit=20" |
    jq -r '[.entries[] | select(.action=="PUT admin/password")][0].detail | fromjson |
        .password + " " + .current_password')" "******** ********" \
    "the audit log masks both passwords"

tb_stop_daemon
ok $? "daemon stops cleanly"

# --set admin.port to a port another process holds: the web UI cannot listen
# there, so the value is undone and the UI serves on the port stored before.
busy=$(tb_free_port)
tb_bg python3 -c 'import socket, sys, time
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(1)
print("listening", flush=True)
time.sleep(300)' "$busy" >"$TB_TMP/holder.out"
holder=$TB_BG_PID
tb_wait_file "$TB_TMP/holder.out" "$holder"
is "$(cat "$TB_TMP/holder.out")" listening "another process holds port $busy"
: >"$TB_TMP/daemon.log"
tb_start_daemon --set admin.port="$busy"
ok $? "tlsboxd --set admin.port=$busy: tlsboxd starts"
log=$(cat "$TB_TMP/daemon.log")
like "$log" "admin: cannot listen on \\[127\\.0\\.0\\.1\\]:$busy: Address already in use" \
    "the log says the web UI cannot listen on it"
like "$log" "tlsboxd --set: admin could not start with the values given to admin\\.port \\(see above\\): undone, the values stored before are back" \
    "and that the --set value is undone"
unlike "$log" "web UI not served" "the web UI is not left off"
is "$(tb_ctl get admin.port)" "$TB_ADMIN_PORT" "the store keeps the port it had"
is "$(curl -sk --max-time 10 -o /dev/null -w '%{http_code}' "$B/")" 200 "the web UI serves on it"
tb_stop_daemon
ok $? "daemon stops cleanly"
kill "$holder"

# The same name at start: tlsboxd --set refuses it and does not start.  (The
# timeout only ends a daemon that wrongly started; no result depends on it.)
timeout 60 "$TB_TLSBOXD" --state-dir "$TB_STATE" --plugin-dir "$TB_PLUGINS" --foreground \
    --set site.https_port="$(tb_free_port)" --set site.http_port="$(tb_free_port)" \
    --set acme.domains="$long" >"$TB_TMP/long.log" 2>&1
is "$?" 1 "tlsboxd --set acme.domains=<260 characters> exits 1"
like "$(cat "$TB_TMP/long.log")" \
    "--set refused, no setting stored: acme\.domains: item \"a{63}\.\"\.\.\. is 260 bytes long, more than the 253 allowed" \
    "and says why"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM settings WHERE key='acme.domains'")" 0 \
    "nothing was stored"
done_testing
