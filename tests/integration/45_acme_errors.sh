#!/bin/bash
# Clear errors: ACME idle without domains; an unreachable directory, an
# untrusted CA, a URL that is not a directory, terms not agreed; bad settings
# refused.  Then the right settings issue without a restart.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

SITE_HTTP=$(tb_free_port)
SITE_HTTPS=$(tb_free_port)
PB_HTTP_PORT=$SITE_HTTP pb_start || bail "pebble did not start"
tb_start_daemon --set "site.http_port=$SITE_HTTP" --set "site.https_port=$SITE_HTTPS" ||
    bail "tlsboxd did not start"

st=$(tb_ctl acme status)
like "$st" "state: +idle" "no acme.domains: ACME is idle"
like "$st" "no acme.domains set" "and says why"
like "$(tb_ctl plugins)" "acme +[^ ]+ +[^ ]+ +(running|started)" "the plugin runs (idle is not an error)"

# Wait until the newest event's detail matches.
last_event() {
    local re=$1 j i
    for i in $(seq 1 100); do
        j=$(tb_ctl --json acme status)
        if printf '%s' "$j" | python3 -c '
import json,re,sys
ev=json.load(sys.stdin).get("events") or []
sys.exit(0 if ev and re.search(sys.argv[1], json.dumps(ev[0])) else 1)' "$re"; then
            printf '%s' "$j" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["events"][0]))'
            return 0
        fi
        sleep 0.1
    done
    printf '%s' "$j" | python3 -c 'import json,sys; e=json.load(sys.stdin).get("events") or [{}]; print(json.dumps(e[0]))'
    return 1
}

dead=$(tb_free_port)
tb_ctl set acme.agree_tos true >/dev/null
tb_ctl set acme.directory "https://127.0.0.1:$dead/dir" >/dev/null
tb_ctl set acme.domains err.test >/dev/null
ev=$(last_event "127.0.0.1:$dead")
like "$ev" '"step": "directory"' "unreachable CA: the step is directory"
like "$ev" "tlsbox:connection" "unreachable CA: a connection problem"
like "$ev" "https://127.0.0.1:$dead/dir: .*(onnect|refused)" "unreachable CA: the detail names the URL and the cause"

tb_ctl set acme.directory "$PB_MGMT/roots/0" >/dev/null
ev=$(last_event "verif")
like "$ev" "certificate verification failed|certificate problem" "untrusted CA: certificate verification failed"
like "$ev" "$PB_MGMT/roots/0" "untrusted CA: names the URL"

tb_ctl set acme.ca_file "$PB_CA" >/dev/null
ev=$(last_event "not an ACME directory")
ok $? "a URL that is not a directory: $ev"

tb_ctl set acme.agree_tos false >/dev/null
tb_ctl set acme.directory "$PB_DIRECTORY" >/dev/null
ev=$(last_event "agree_tos")
ok $? "terms not agreed: says to set acme.agree_tos ($ev)"

out=$(tb_ctl set acme.domains "Bad_Name!" 2>&1)
ok $([ $? -ne 0 ] && echo 0 || echo 1) "an invalid domain is refused"
like "$out" "acme.domains" "the refusal names the setting"
# Addresses are taken (48_acme_ip.sh); what only looks like one is not.
for ip in 192.168.1.256 "ok.test,10.0.0"; do
    out=$(tb_ctl set acme.domains "$ip" 2>&1)
    ok $([ $? -ne 0 ] && echo 0 || echo 1) "a broken IP address in acme.domains is refused ($ip)"
    like "$out" "acme.domains: item \"?[0-9.]+\"? does not match the form it takes: Host names \(lowercase[^)]*\) or IP addresses" \
        "the refusal names the setting and the address, and says what it takes"
done
out=$(tb_ctl set acme.key_type dsa 2>&1)
ok $([ $? -ne 0 ] && echo 0 || echo 1) "an unknown key type is refused"
out=$(tb_ctl set acme.directory "http://plain.example/dir" 2>&1)
ok $([ $? -ne 0 ] && echo 0 || echo 1) "a plain-http directory is refused"
is "$(tb_ctl get acme.domains)" "err.test" "refused values changed nothing"
out=$(tb_ctl acme revoke nope.test 2>&1)
like "$out" "not a certificate this ACME plugin manages" "revoking a foreign name is refused"

tb_ctl set acme.agree_tos true >/dev/null
pb_wait_served err.test 30
ok $? "with the right settings the certificate is issued without a restart"
st=$(tb_ctl acme status)
like "$st" "failures +[1-9]|err.test +done +ok" "status shows the history"
like "$(tb_ctl get acme.eab_hmac 2>&1; tb_ctl set acme.eab_hmac c2VjcmV0 >/dev/null; tb_ctl get acme.eab_hmac)" \
    "\*\*\*\*" "the EAB HMAC key is never shown"
tb_stop_daemon
ok $? "daemon stops promptly"
done_testing
