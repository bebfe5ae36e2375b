#!/bin/bash
# The dhparam plugin's three modes, seen by real clients against an RSA
# certificate (made and imported here) under a policy that allows DHE:
# openssl s_client's "Server Temp Key: DH, N bits" for TLS 1.2 DHE-RSA and
# for TLS 1.3 with a client offering only FFDHE groups; bad imports refused
# with the store unchanged; a policy without DHE said so in the status.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/dh_lib.sh"
tb_setup
[ -e "$TB_PLUGINS/dhparam.so" ] || bail "no dhparam plugin built in $TB_PLUGINS"

# The generator the plugin runs (tlsboxd --generate-dh BITS, a fresh process):
# PKCS#3 parameters of that size on stdout; a bad size refused with exit 2.
"$TB_TLSBOXD" --generate-dh 2048 >"$TB_TMP/gen.pem" 2>"$TB_TMP/gen.err"
is "$?" "0" "tlsboxd --generate-dh 2048 exits 0"
is "$(openssl dhparam -in "$TB_TMP/gen.pem" -noout -text 2>/dev/null | sed -n 's/.*DH Parameters: (\([0-9]*\) bit).*/\1/p')" \
    "2048" "and writes 2048-bit DH parameters"
"$TB_TLSBOXD" --generate-dh 1024 >"$TB_TMP/gen.pem" 2>"$TB_TMP/gen.err"
is "$?" "2" "tlsboxd --generate-dh 1024 exits 2"
like "$(cat "$TB_TMP/gen.err")" "'1024' is not a size in bits \(2048-8192\)" "saying why"
is "$(stat -c %s "$TB_TMP/gen.pem")" "0" "and writes nothing"

# One refused --set stops the start and stores none of the pairs: the good
# value given beside it is not half-applied.
tb_start_daemon --set dhparam.rotate_days=7 --set dhparam.bits=1024 >/dev/null
is "$?" "1" "tlsboxd does not start with --set dhparam.bits=1024"
like "$(cat "$TB_TMP/daemon.log")" 'dhparam.bits: "1024" is not one of 2048\|3072\|4096' \
    "the log names the key and the rule"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM settings WHERE key LIKE 'dhparam.%'")" \
    "0" "no dhparam setting was stored, not even rotate_days=7"

# Generation at normal priority and 2048 bits: this test needs it quick.
dh_start --set dhparam.bits=2048 --set dhparam.priority=normal
ok $? "tlsboxd with an RSA certificate and a DHE policy (groups up to FFDHE3072)"
FFDHE_ONLY=ffdhe2048:ffdhe3072:ffdhe4096
metric() {
    tb_ctl --json metrics | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"
}

# ---- rfc7919 (the default): the group follows the policy's smallest one.
is "$(dh_status '["mode"]')" "rfc7919" "the default mode is rfc7919"
is "$(dh_tls12_bits)" "2048" "rfc7919, policy down to FFDHE2048: TLS 1.2 DHE uses 2048 bits"
is "$(dh_tls13_bits "$FFDHE_ONLY")" "2048" "and TLS 1.3 with only FFDHE offered gets ffdhe2048"
is "$(metric tlsbox_dh_served_bits)" "2048" "metric tlsbox_dh_served_bits is 2048"
is "$(metric tlsbox_dh_served_rfc7919)" "1" "metric tlsbox_dh_served_rfc7919 is 1"
dh_groups X25519,SECP256R1,FFDHE3072
ok $? "policy groups now start at FFDHE3072"
is "$(dh_status '["served"]["group"]')" "ffdhe3072" "status: ffdhe3072 served"
is "$(dh_tls12_bits)" "3072" "rfc7919, policy minimum 3072: TLS 1.2 DHE uses 3072 bits"
is "$(dh_tls13_bits "$FFDHE_ONLY")" "3072" "TLS 1.3 with only FFDHE offered uses ffdhe3072"
is "$(metric tlsbox_dh_served_bits)" "3072" "metric tlsbox_dh_served_bits follows: 3072"

# ---- generated: a first generation starts with the mode.  While the policy
# lists FFDHE groups GnuTLS uses them for TLS 1.2 DHE too, and says so.
out=$(tb_ctl dh mode generated)
is "$out" "mode: generated" "tlsboxctl dh mode generated"
for i in $(seq 1 600); do
    [ "$(dh_status '["last_run"]["state"]' 2>/dev/null)" = "done" ] && break
    sleep 0.2
done
is "$(dh_status '["last_run"]["state"]')" "done" "the first generation ran (recorded as done)"
is "$(dh_status '["served"]["stored"]["source"]')" "generated" "the core holds the generated parameters"
is "$(dh_status '["served"]["stored_used"]')" "False" "but with FFDHE groups in the policy they serve no client"
like "$(tb_ctl dh status)" "note: +the TLS policy lists FFDHE groups" "tlsboxctl dh status says why"
is "$(dh_tls12_bits)" "3072" "TLS 1.2 DHE still gets the policy's ffdhe3072"
dh_groups X25519,SECP256R1
ok $? "policy groups without FFDHE"
dh_wait_served source generated 10
ok $? "the generated parameters are served"
is "$(dh_status '["served"]["bits"]')" "2048" "status: 2048-bit generated parameters"
is "$(dh_tls12_bits)" "2048" "generated: TLS 1.2 DHE uses the generated 2048 bits"
is "$(metric tlsbox_dh_served_rfc7919)" "0" "metric tlsbox_dh_served_rfc7919 is 0"
is "$(metric tlsbox_dh_served_bits)" "2048" "metric tlsbox_dh_served_bits is 2048"
is "$(metric 'tlsbox_dh_generations_total{result="ok"}')" "1" "one generation counted"

# ---- import: a PEM written by openssl (the ffdhe4096 prime, so no wait).
openssl genpkey -genparam -algorithm DH -pkeyopt group:ffdhe4096 2>/dev/null |
    openssl dhparam -out "$TB_TMP/dh4096.pem" 2>/dev/null
out=$(tb_ctl dh import "$TB_TMP/dh4096.pem" 2>&1)
is "$out" "imported 4096-bit DH parameters; mode is now import" "tlsboxctl dh import"
is "$(dh_status '["mode"]')" "import" "mode import"
dh_wait_served source import 10
ok $? "the imported parameters are served"
is "$(dh_tls12_bits)" "4096" "import: TLS 1.2 DHE uses the imported 4096 bits"

# ---- every credentials of the bundle serve the same parameters: a second
# RSA certificate gets credentials of its own (core/tls_select.c) for SNI
# second.test in another case; a TLS 1.2 DHE client asking for it gets it
# and the same prime.
before=$(dh_status '["served"]["bundle"]')
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=second.test \
    -addext subjectAltName=DNS:second.test -keyout "$TB_TMP/second.key" \
    -out "$TB_TMP/second.pem" 2>/dev/null &&
    tb_ctl cert import --cert "$TB_TMP/second.pem" --key "$TB_TMP/second.key" \
        --name second-rsa >/dev/null
ok $? "a second RSA certificate (second.test) imported"
dh_wait_bundle_after "$before"
ok $? "the bundle with it is served"
# gnutls_dhe SNI: "SUBJECT|KX" a TLS 1.2 DHE-RSA-only gnutls-cli (no FFDHE
# group offered, so the server's own parameters are used) gets; KX is
# DHE-CUSTOMn for parameters of n bits, DHE-FFDHEn for an RFC 7919 group.
gnutls_dhe() {
    timeout 20 gnutls-cli --insecure --sni-hostname "$1" -p "$DH_PORT" 127.0.0.1 \
        --priority NORMAL:-VERS-ALL:+VERS-TLS1.2:-KX-ALL:+DHE-RSA:-GROUP-ALL:+GROUP-SECP256R1 \
        </dev/null 2>&1 | sed -n "s/^ - subject \`\([^']*\)'.*/\1/p;
                                  s/^- Description: (TLS1.2-X.509)-(\(DHE-[A-Z0-9]*\)).*/\1/p" |
        paste -sd'|'
}
is "$(gnutls_dhe localhost)" "CN=localhost|DHE-CUSTOM4096" \
    "gnutls-cli DHE-RSA, SNI localhost: localhost-rsa, the imported 4096-bit prime"
# SECOND.test: GnuTLS compares names byte for byte, so the session is
# switched to the credentials kept for that name (tls_select_by_name).
is "$(gnutls_dhe second.test)/$(gnutls_dhe SECOND.test)" \
    "CN=second.test|DHE-CUSTOM4096/CN=second.test|DHE-CUSTOM4096" \
    "SNI second.test and SECOND.test: second-rsa, with the same 4096-bit prime"

# ---- bad imports: refused with a message, nothing in the store changes.
before=$(dh_rows)
openssl dhparam -out "$TB_TMP/dh1024.pem" 1024 2>/dev/null
openssl dhparam -dsaparam -out "$TB_TMP/x942.pem" 2048 2>/dev/null
head -c 3000 /dev/urandom | base64 >"$TB_TMP/garbage.pem"
printf -- '-----BEGIN DH PARAMETERS-----\nnot base64 at all\n-----END DH PARAMETERS-----\n' \
    >"$TB_TMP/broken.pem"
refused() { # FILE ERE DESC
    local out rc
    out=$(tb_ctl dh import "$1" 2>&1)
    rc=$?
    is "$rc" "1" "$3: tlsboxctl exits 1"
    like "$out" "$2" "$3: says why"
}
refused "$TB_TMP/dh1024.pem" "refused: DH parameters of 1024 bits are too small: at least 2048" \
    "1024-bit parameters"
refused "$TB_TMP/rsa.pem" "refused: not DH parameters: expected a PEM block" "a certificate"
refused "$TB_TMP/garbage.pem" "refused: not DH parameters" "garbage"
refused "$TB_TMP/broken.pem" "refused: DH parameters do not parse" "a DH PEM with a broken body"
refused "$TB_TMP/x942.pem" "refused: X9.42 DH parameters .* are not supported" "X9.42 parameters"
cat "$TB_TMP/dh4096.pem" "$TB_TMP/rsa.key" >"$TB_TMP/with_key.pem"
refused "$TB_TMP/with_key.pem" "refused: the text holds a private key" "parameters with a key appended"
after=$(dh_rows)
is "$after" "$before" "the store's DH rows and settings are unchanged by the refused imports"
is "$(dh_tls12_bits)" "4096" "and the imported parameters are still served"

# ---- back to rfc7919; then a policy without DHE.
tb_ctl dh mode rfc7919 >/dev/null
dh_wait_served source rfc7919 10
ok $? "mode rfc7919: the RFC 7919 group is served again"
is "$(dh_tls12_bits)" "2048" "TLS 1.2 DHE uses ffdhe2048 (no FFDHE group in the policy)"
is "$(dh_status '["served"]["group"]')" "ffdhe2048" "status: ffdhe2048"
is "$(gnutls_dhe localhost)/$(gnutls_dhe Second.Test)" "CN=localhost|DHE-CUSTOM2048/CN=second.test|DHE-CUSTOM2048" \
    "gnutls-cli DHE-RSA: SNI localhost and Second.Test both get the ffdhe2048 prime"

# ---- SIGHUP: dhparam.mode changed in the store behind the daemon (sqlite3,
# a restored backup) is applied as tlsboxctl dh mode would, and back.
sqlite3 "$TB_STATE/tlsbox.db" "UPDATE settings SET value = 'import' WHERE key = 'dhparam.mode'"
kill -HUP "$TB_PID"
dh_wait_served source import 10
ok $? "after SIGHUP the imported parameters are served (mode import set with sqlite3)"
is "$(dh_tls12_bits)" "4096" "a TLS 1.2 DHE handshake gets the imported 4096 bits"
sqlite3 "$TB_STATE/tlsbox.db" "UPDATE settings SET value = 'rfc7919' WHERE key = 'dhparam.mode'"
kill -HUP "$TB_PID"
dh_wait_served source rfc7919 10
ok $? "after another SIGHUP (mode rfc7919 in the store) the RFC 7919 group is served"
is "$(dh_tls12_bits)" "2048" "a TLS 1.2 DHE handshake gets ffdhe2048 again"
tb_ctl policy set kx ECDHE-ECDSA,ECDHE-RSA >/dev/null
dh_wait_served dhe_tls12 False 10
ok $? "policy without DHE-RSA: the bundle says TLS 1.2 DHE is off"
is "$(dh_status '["dhe_enabled"]')" "False" "status: dhe_enabled false"
like "$(tb_ctl dh status)" "note: +DHE cipher suites are disabled by the TLS policy" \
    "tlsboxctl dh status says DHE is disabled by the policy"
out=$(dh_sclient -tls1_2 -cipher DHE-RSA-AES256-GCM-SHA384)
like "$out" "Cipher is \(NONE\)|handshake failure" "and a DHE-only client is refused"
is "$(metric tlsbox_dh_dhe_enabled)" "0" "metric tlsbox_dh_dhe_enabled is 0"

tb_stop_daemon
ok $? "daemon stops"
done_testing
