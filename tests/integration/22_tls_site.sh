#!/bin/bash
# The bundle served by the site plugin, seen by real clients: openssl
# s_client verifies the internal leaf against the root, ALPN, HSTS, a policy
# change applied without a restart, ticket resumption across a restart.
. "$(dirname "$0")/lib.sh"
tb_setup

[ -e "$TB_PLUGINS/site.so" ] || bail "no site plugin built in $TB_PLUGINS"
P1=$(tb_free_port)
P2=$(tb_free_port)
tb_start_daemon --set site.https_port="$P1" --set site.http_port="$P2"
ok $? "tlsboxd starts"
tb_wait_port "$P1"
ok $? "site listens on $P1"
tb_ctl cert root >"$TB_TMP/root.pem"
gen() { tb_ctl --json status | python3 -c 'import json,sys; print(json.load(sys.stdin)["tls_bundle_generation"])'; }
wait_gen() {
    local i
    for i in $(seq 1 50); do
        [ "$(gen)" -gt "$1" ] && return 0
        sleep 0.1
    done
    return 1
}
sc() {
    timeout 10 openssl s_client -connect "127.0.0.1:$P1" -servername localhost \
        -CAfile "$TB_TMP/root.pem" -verify_return_error "$@" </dev/null 2>&1
}

out=$(sc -alpn h2,http/1.1)
like "$out" "Verify return code: 0 \(ok\)" "s_client verifies the internal leaf against the root"
like "$out" "Protocol *: TLSv1\.3|New, TLSv1\.3" "TLS 1.3"
like "$out" "ALPN protocol: h2" "ALPN h2"
like "$out" "Peer signature type: ECDSA|Server public key is 256 bit" "ECDSA P-256 certificate"
out=$(sc -tls1_2)
like "$out" "Protocol *: TLSv1\.2" "TLS 1.2 allowed by the default policy"
like "$out" "Cipher *: ECDHE-ECDSA-(AES|CHACHA)" "with ECDHE and AEAD"
# Both handshakes above verified a signature; with libcrypto built in
# (core/tls_sign.h) it made them, for the ECDSA leaf, and the bundle says so.
want='[]'
grep -q '^#define HAVE_OPENSSL_SIGN 1' "$top_builddir/config.h" && want='["internal"]'
is "$(tb_ctl --json cert list | jq -c '.bundle.signed_by_libcrypto')" "$want" \
    "the bundle names the certificates libcrypto signs for: $want"
like "$(tb_ctl cert list)" "signatures by libcrypto for: \[" "tlsboxctl cert list says so too"
out=$(sc -tls1_1 -cipher 'DEFAULT:@SECLEVEL=0')
like "$out" "Cipher is \(NONE\)" "TLS 1.1 refused"

hdr=$(curl -sS --max-time 10 --cacert "$TB_TMP/root.pem" -o /dev/null -D - \
    --resolve "localhost:$P1:127.0.0.1" "https://localhost:$P1/" 2>&1)
like "$hdr" "^HTTP/2 " "curl speaks h2, verifying with the root"
like "$hdr" "[Ss]trict-[Tt]ransport-[Ss]ecurity: max-age=31536000" "HSTS header from the policy"

# TLS 1.2 ticket, then resumption; then the same ticket after a restart.
sc -tls1_2 -sess_out "$TB_TMP/sess" >/dev/null
out=$(sc -tls1_2 -sess_in "$TB_TMP/sess")
like "$out" "^Reused, TLSv1\.2" "TLS 1.2 session resumes"

g=$(gen)
tb_ctl policy preset modern >/dev/null
wait_gen "$g"
ok $? "policy change rebuilt the bundle"
out=$(sc -tls1_2)
like "$out" "Cipher is \(NONE\)" "after preset modern, TLS 1.2 is refused without a restart"
out=$(sc)
like "$out" "Verify return code: 0 \(ok\)" "and TLS 1.3 still works"
tb_ctl policy rollback 1 >/dev/null
wait_gen "$((g + 1))"
ok $? "rollback rebuilt the bundle"

tb_stop_daemon
ok $? "daemon stops"
tb_start_daemon --set site.https_port="$P1" --set site.http_port="$P2"
ok $? "daemon restarts"
tb_wait_port "$P1"
out=$(sc -tls1_2 -sess_in "$TB_TMP/sess")
like "$out" "^Reused, TLSv1\.2" "a ticket from before the restart still resumes (stored master key)"
done_testing
