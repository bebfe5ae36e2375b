#!/bin/bash
# core.plugins_disabled takes effect while tlsboxd serves, with the real
# plugins: a plugin it names is stopped (its ports closed, its API and HTTP
# routes gone), one it no longer names starts with the settings stored
# meanwhile; one that cannot start (a port below 1024 once root's rights
# are gone) says why and is mended by a setting, without a restart.
# Toggled while its HTTP route is under load, nothing fails or crashes.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start
ok $? "tlsboxd serves the site on port $P_HTTPS"
want_sum=$(sha256sum <"$TB_TMP/www/f16k.txt")

state_of() { # state_of NAME: "STATE ERROR" as GET plugins gives it
    site_api GET plugins | jq -r --arg n "$1" '.[] | select(.name == $n) | "\(.state) \(.error)"'
}
wait_state() { tb_wait_says 20 "$2" state_of "$1"; } # wait_state NAME TEXT (at most 20 s)
file_sum() { # file_sum PORT: the checksum of f16k.txt as served there, or curl's exit code
    local rc
    curl -sf --cacert "$CA" -o "$TB_TMP/got" "https://localhost:$1/f16k.txt"
    rc=$?
    if [ "$rc" = 0 ]; then sha256sum <"$TB_TMP/got"; else echo "curl exit $rc"; fi
    rm -f "$TB_TMP/got"
}
challenge() { # the status the plain port answers for an ACME challenge path (000: no answer)
    curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P_HTTP/.well-known/acme-challenge/t1"
}
stops_logged() {
    grep -o 'plugin [a-z]* stopped: core.plugins_disabled names it now\|plugin [a-z]*: starting (core.plugins_disabled no longer names it)\|plugin [a-z]* started' \
        "$TB_TMP/daemon.log" | tr '\n' ';'
}

is "$(challenge)" 404 "before: acme answers the challenge path on the plain port (unknown token)"
is "$(site_api GET acme/status | jq -r .state)" idle "and its API route answers"

# 1. Disabled from the API: stopped at once, no restart asked for.
out=$(site_api PUT settings/core.plugins_disabled '{"value":"site,acme"}')
is "$(jq -r '"\(.value) \(.restart_needed)"' <<<"$out")" "site,acme false" \
    "PUT core.plugins_disabled: stored, and no restart is asked for"
is "$(wait_state site "disabled null")" "disabled null" "the site is shown disabled"
is "$(wait_state acme "disabled null")" "disabled null" "acme too"
is "$(file_sum "$P_HTTPS")" "curl exit 7" "the https port no longer accepts connections"
is "$(challenge)" 000 "nor the plain one"
is "$(site_api GET acme/status | jq -r .error)" "no such API path: /api/v1/acme/status" \
    "acme's API route is gone"
is "$(stops_logged)" \
    "plugin site stopped: core.plugins_disabled names it now;plugin acme stopped: core.plugins_disabled names it now;" \
    "the log says each stopped, the later loaded first (as at shutdown)"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT target, detail FROM audit ORDER BY id DESC LIMIT 1")" \
    'settings/core.plugins_disabled|{"value":"site,acme"}' "the audit log records the change"
is "$(state_of ocsp)" "running null" "the plugins not named run on"

# 2. A change while disabled is stored and used once the plugin is enabled.
P_NEW=$(tb_free_port)
is "$(tb_ctl set site.https_port "$P_NEW" 2>&1)" \
    "site.https_port = $P_NEW (plugin site is disabled (core.plugins_disabled): stored, it starts with this once it is enabled)" \
    "a disabled plugin's setting: stored, and tlsboxctl says when it takes effect"
tb_ctl set core.plugins_disabled ''
ok $? "tlsboxctl set core.plugins_disabled '' (both enabled)"
is "$(wait_state site "running null")" "running null" "the site runs again"
is "$(wait_state acme "running null")" "running null" "acme too"
is "$(file_sum "$P_NEW")" "$want_sum" "the site serves the file on the port set while it was disabled"
is "$(file_sum "$P_HTTPS")" "curl exit 7" "and not on the old one"
is "$(challenge)" 404 "acme answers the challenge path again"
is "$(site_api GET acme/status | jq -r .state)" idle "and its API route"
like "$(stops_logged)" \
    ";plugin acme: starting \(core.plugins_disabled no longer names it\);plugin acme started;plugin site: starting \(core.plugins_disabled no longer names it\);plugin site started;$" \
    "the log says each started again, in load order"

# 3. A port below 1024 opens only while tlsboxd starts as root: enabled
# with one, the site fails and says so; a port it can open starts it.
tb_ctl set core.plugins_disabled site >/dev/null
is "$(wait_state site "disabled null")" "disabled null" "the site is disabled again"
P_LOW=$(tb_free_low_port)
tb_ctl set site.https_port "$P_LOW" >/dev/null
tb_ctl set core.plugins_disabled '' >/dev/null
want="failed start hook failed: site.https_port: port $P_LOW on 127.0.0.1 is below 1024: it opens only while tlsboxd starts as root"
is "$(wait_state site "$want")" "$want" "enabled with port $P_LOW: failed, and the reason says why"
is "$(tb_ctl set site.https_port "$P_HTTPS" >/dev/null; wait_state site "running null")" "running null" \
    "a port it can open, set in its place: the site starts, without a restart"
is "$(file_sum "$P_HTTPS")" "$want_sum" "and serves on it"
# A plugin that failed, disabled, shows no old failure.
tb_ctl set core.plugins_disabled site >/dev/null
is "$(wait_state site "disabled null")" "disabled null" "disabled while it runs: disabled"
tb_ctl set site.https_port "$P_LOW" >/dev/null
tb_ctl set core.plugins_disabled '' >/dev/null
is "$(wait_state site "$want")" "$want" "enabled with port $P_LOW again: failed"
tb_ctl set core.plugins_disabled site >/dev/null
is "$(wait_state site "disabled null")" "disabled null" "disabled after it failed: disabled, no reason shown"
tb_ctl set site.https_port "$P_HTTPS" >/dev/null
tb_ctl set core.plugins_disabled '' >/dev/null
is "$(wait_state site "running null")" "running null" "enabled with a port it can open: it runs"

# 4. acme stopped and started while the plain port answers its route:
# every request gets acme's 404 or the site's redirect, none fails.
tb_wait_port "$P_HTTP"
: >"$TB_TMP/codes"
urls=()
for i in $(seq 1 100); do urls+=(-o /dev/null "http://127.0.0.1:$P_HTTP/.well-known/acme-challenge/t$i"); done
load() { # until $TB_TMP/stop exists, at most 60 rounds of 100 keep-alive requests
    local n
    for n in $(seq 1 60); do
        [ -e "$TB_TMP/stop" ] && break
        curl -s -w '%{http_code}\n' "${urls[@]}" >>"$TB_TMP/codes.$1"
    done
}
rm -f "$TB_TMP/stop"
load a &
la=$!
load b &
lb=$!
for i in 1 2 3 4 5; do
    tb_ctl set core.plugins_disabled acme >/dev/null
    wait_state acme "disabled null" >/dev/null
    tb_ctl set core.plugins_disabled '' >/dev/null
    wait_state acme "running null" >/dev/null
done
touch "$TB_TMP/stop"
wait "$la" "$lb"
cat "$TB_TMP/codes.a" "$TB_TMP/codes.b" >"$TB_TMP/codes"
n=$(wc -l <"$TB_TMP/codes")
diag "$n requests while acme was toggled: $(sort "$TB_TMP/codes" | uniq -c | tr -s ' \n' ' ')"
ok $((n < 200)) "the load ran ($n requests, at least 200)"
is "$(grep -cv '^\(404\|301\)$' "$TB_TMP/codes")" 0 "every one answered 404 (acme) or 301 (the site)"
is "$(grep -c 'plugin acme stopped: core' "$TB_TMP/daemon.log")" 6 "acme was stopped 5 more times"
is "$(state_of acme)" "running null" "acme runs"
is "$(challenge)" 404 "and answers"
kill -0 "$TB_PID"
ok $? "tlsboxd is alive"

# 5. The other plugins, stopped and started together: each serves again.
routes() { # the HTTP status of each one's status route
    local r
    for r in ocsp/status dh/status bench/status example/hello; do
        printf '%s ' "$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$TB_STATE/control.sock" \
            "http://tlsbox/api/v1/$r")"
    done
}
is "$(routes)" "200 200 200 200 " "ocsp, dhparam, bench and example answer"
tb_ctl set core.plugins_disabled ocsp,dhparam,bench,example >/dev/null
for p in ocsp dhparam bench example; do
    is "$(wait_state $p "disabled null")" "disabled null" "$p disabled"
done
is "$(routes)" "404 404 404 404 " "none of their routes answers"
is "$(file_sum "$P_HTTPS")" "$want_sum" "the site serves on"
tb_ctl set core.plugins_disabled '' >/dev/null
for p in ocsp dhparam bench example; do
    is "$(wait_state $p "running null")" "running null" "$p enabled: it runs"
done
is "$(routes)" "200 200 200 200 " "and each answers again"
is "$(site_api GET dh/status | jq -r '"\(.mode) \(.served.source) \(.served.group)"')" \
    "rfc7919 rfc7919 ffdhe2048" "dhparam reports what it serves, as before"

# 6. The list as stored rules the next start.
tb_ctl set core.plugins_disabled example >/dev/null
is "$(wait_state example "disabled null")" "disabled null" "example disabled"
tb_stop_daemon
ok $? "tlsboxd stops cleanly (no sanitizer report)"
is "$TB_EXIT" 0 "with exit status 0"
tb_start_daemon
is "$(state_of example) $(state_of site)" "disabled null running null" \
    "restarted: example stays disabled, the site runs"
tb_stop_daemon
ok $? "and stops"
done_testing
