#!/bin/bash
# Rotation of generated DH parameters under load: h2load over TLS 1.2 DHE
# (a steady run spanning the swap, and one opening new connections through
# it) sees 0 failed requests while new parameters are generated, checked,
# stored and swapped in through dh.changed; handshakes after the swap use
# them.  Then the 30-day schedule: parameters aged past rotate_days are
# rotated at the next start.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dh_lib.sh"
tb_setup
[ -e "$TB_PLUGINS/dhparam.so" ] || bail "no dhparam plugin built in $TB_PLUGINS"
command -v h2load >/dev/null || bail "h2load not installed (nghttp2-client)"

mkdir -p "$TB_TMP/www"
head -c 2048 /dev/zero | tr '\0' 'x' >"$TB_TMP/www/index.html"
# 2048 bits at normal priority: this test needs generation to be quick.
START=(--set dhparam.bits=2048 --set dhparam.priority=normal --set site.root="$TB_TMP/www"
    --set dhparam.mode=generated)
dh_start "${START[@]}"
ok $? "tlsboxd with an RSA certificate, mode generated"
# TLS 1.2 with DHE-RSA only, no FFDHE group: every handshake uses the parameters.
tb_ctl policy set max_version TLS1.2 >/dev/null && tb_ctl policy set kx DHE-RSA >/dev/null &&
    dh_groups X25519,SECP256R1
ok $? "policy: TLS 1.2, DHE-RSA only, no FFDHE group"
dh_wait_served source generated 60
ok $? "the first generated parameters are served"
fp1=$(dh_status '["served"]["fingerprint"]')
is "$(dh_tls12_bits)" "2048" "TLS 1.2 DHE uses them (2048 bits)"

H2=(h2load --ciphers=DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384
    "https://127.0.0.1:$DH_PORT/index.html")
# Steady: 4 connections for 20 s at 50 requests/s each, across the swap.  Churn: 60 connections
# opened 2 per 0.5 s (15 s), 10 requests each, half of them after the swap.
timeout 60 "${H2[@]}" -D 20 -c 4 --rps=50 >"$TB_TMP/steady.txt" 2>&1 &
steady=$!
timeout 60 "${H2[@]}" -r 2 --rate-period=500ms -c 60 -n 600 >"$TB_TMP/churn.txt" 2>&1 &
churn=$!
sleep 3
out=$(tb_ctl dh generate --bits 2048)
is "$out" "generating 2048-bit parameters at normal priority; see tlsboxctl dh status" \
    "tlsboxctl dh generate --bits 2048 under load, at the priority set (normal)"
swapped=1
for i in $(seq 1 150); do
    fp=$(dh_status '["served"]["fingerprint"]')
    if [ -n "$fp" ] && [ "$fp" != "$fp1" ]; then
        swapped=0
        break
    fi
    sleep 0.1
done
ok $swapped "new parameters swapped in (fingerprint $fp1 -> $fp)"
kill -0 "$steady" 2>/dev/null && kill -0 "$churn" 2>/dev/null
ok $? "while both h2load runs were still going"
wait "$steady"
is "$?" "0" "steady h2load finished"
wait "$churn"
is "$?" "0" "churn h2load finished"
for f in steady churn; do
    r=$(grep '^requests:' "$TB_TMP/$f.txt")
    like "$r" " 0 failed, 0 errored, 0 timeout" "$f h2load: 0 failed requests ($r)"
    total=$(printf '%s' "$r" | sed -n 's/^requests: \([0-9]*\) total.*/\1/p')
    succeeded=$(printf '%s' "$r" | sed -n 's/.* \([0-9]*\) succeeded.*/\1/p')
    ok "$([ "${total:-0}" -gt 0 ] && [ "$total" = "$succeeded" ] && echo 0 || echo 1)" \
        "$f h2load: every request succeeded ($succeeded of $total)"
    like "$(grep -E 'Cipher|Temp Key' "$TB_TMP/$f.txt" | tr '\n' ' ')" \
        "Cipher: DHE-RSA-AES(128|256)-GCM-SHA(256|384).*Server Temp Key: DH 2048 bits" \
        "$f h2load used TLS 1.2 DHE with 2048-bit parameters"
done
like "$(grep 'status codes' "$TB_TMP/churn.txt")" "status codes: [0-9]+ 2xx, 0 3xx, 0 4xx, 0 5xx" \
    "churn h2load: only 2xx answers"
is "$(dh_status '["last_run"]["reason"]')" "request" "the run is recorded as a request"
is "$(dh_tls12_bits)" "2048" "a new handshake after the swap: DH 2048 bits"

# ---- the schedule: parameters older than rotate_days (30) rotate at start.
tb_stop_daemon
ok $? "daemon stops"
sqlite3 "$TB_STATE/tlsbox.db" \
    "UPDATE dhparam_params SET created_at = created_at - 31 * 86400 WHERE source = 'generated'"
runs_before=$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM dhparam_runs")
tb_start_daemon --set site.https_port="$DH_PORT" --set site.http_port="$DH_HTTP" "${START[@]}"
ok $? "daemon starts with parameters 31 days old"
for i in $(seq 1 300); do
    [ "$(dh_status '["last_run"]["reason"]' 2>/dev/null)" = "schedule" ] && break
    sleep 0.2
done
is "$(dh_status '["last_run"]["reason"]')" "schedule" "a scheduled rotation ran"
is "$(dh_status '["last_run"]["state"]')" "done" "and finished"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM dhparam_runs")" "$((runs_before + 1))" \
    "one new run"
dh_wait_served fingerprint "$(sqlite3 "file:$TB_STATE/tlsbox.db?mode=ro" \
    "SELECT fingerprint FROM tls_dh")" 10
is "$(dh_status '["served"]["source"]')" "generated" "the new parameters are served"
unlike "$(dh_status '["served"]["fingerprint"]')" "^($fp1|$fp)\$" "and they are new ones"
age=$(dh_status '["params"]["generated"]["age_days"] < 0.01')
is "$age" "True" "the newest generated parameters are fresh (less than 0.01 days old)"
tb_stop_daemon
ok $? "daemon stops"
done_testing
