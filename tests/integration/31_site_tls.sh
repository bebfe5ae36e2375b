#!/bin/bash
# TLS of the site with real clients: versions per policy (1.3 and 1.2 on the
# default policy, 1.0/1.1 refused, 1.2 refused after a switch to "modern"),
# session resumption with openssl -sess_out/-sess_in, gnutls-cli, and dual
# ECDSA + RSA certificates chosen per client.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start
ok $? "tlsboxd serves the site"
S=(timeout 10 openssl s_client -connect "127.0.0.1:$P_HTTPS" -servername localhost -CAfile "$CA")

out=$(echo | "${S[@]}" -tls1_3 2>&1)
like "$out" "Protocol *: TLSv1.3" "openssl: TLS 1.3"
like "$out" "Verify return code: 0 \(ok\)" "openssl: chain verifies against the box's CA"
like "$out" "ALPN protocol: h2|No ALPN" "openssl: handshake complete" 
out=$(echo | "${S[@]}" -tls1_2 2>&1)
like "$out" "Protocol *: TLSv1.2" "openssl: TLS 1.2 on the default policy"
like "$out" "Cipher is ECDHE-ECDSA-(AES|CHACHA)" "TLS 1.2: ECDHE with an AEAD suite"
for v in tls1 tls1_1; do
    out=$(echo | "${S[@]}" -$v -cipher 'DEFAULT:@SECLEVEL=0' 2>&1)
    like "$out" "New, \(NONE\), Cipher is \(NONE\)" "openssl: -$v refused"
done
out=$(echo | "${S[@]}" -alpn h2,http/1.1 2>&1 | tr -d '\0')
like "$out" "ALPN protocol: h2" "ALPN selects h2"
out=$(echo | "${S[@]}" -alpn http/1.1 2>&1)
like "$out" "ALPN protocol: http/1.1" "ALPN http/1.1 when asked only that"

# ---- resumption -----------------------------------------------------------------
for v in tls1_3 tls1_2; do
    rm -f "$TB_TMP/sess"
    printf 'GET /sub/ HTTP/1.1\r\nHost: localhost\r\n\r\n' | "${S[@]}" -$v -sess_out "$TB_TMP/sess" \
        -ign_eof >/dev/null 2>&1 &
    sc=$!
    sleep 1.5
    kill $sc 2>/dev/null
    wait $sc 2>/dev/null
    out=$(echo | "${S[@]}" -$v -sess_in "$TB_TMP/sess" 2>&1)
    like "$out" "^Reused, " "openssl -$v: session resumed with -sess_in"
done
sleep 1.2
like "$(site_api GET metrics)" 'tlsbox_site_handshakes_total\{kind=\\"resumed\\"\}":[1-9]' \
    "metrics count resumed handshakes"

# ---- gnutls-cli ---------------------------------------------------------------------
out=$( (printf 'GET /sub/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'; sleep 2) |
    timeout 10 gnutls-cli --x509cafile="$CA" -p "$P_HTTPS" localhost 2>&1)
like "$out" "Handshake was completed" "gnutls-cli: handshake"
like "$out" "HTTP/1.1 200 OK" "gnutls-cli: 200"
like "$out" "sub page" "gnutls-cli: body"

# ---- dual ECDSA + RSA ------------------------------------------------------------
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TB_TMP/rsa.key" -out "$TB_TMP/rsa.pem" \
    -days 30 -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2>/dev/null
gen=$(site_generation)
site_cert_import rsa "$TB_TMP/rsa.pem" "$TB_TMP/rsa.key"
ok $? "an RSA certificate is imported next to the ECDSA one"
for _ in $(seq 1 50); do [ "$(site_generation)" != "$gen" ] && break; sleep 0.1; done
isnt_gen=$([ "$(site_generation)" != "$gen" ] && echo 0 || echo 1)
ok "$isnt_gen" "a new bundle was built"
out=$(echo | timeout 10 openssl s_client -connect "127.0.0.1:$P_HTTPS" -servername localhost -tls1_2 \
    -sigalgs 'RSA-PSS+SHA256:RSA+SHA256' -cipher 'ECDHE-RSA-AES128-GCM-SHA256' 2>&1)
like "$out" "Server public key is 2048 bit" "RSA-only TLS 1.2 client gets the RSA certificate"
like "$out" "Cipher is ECDHE-RSA-AES128-GCM-SHA256" "with an ECDHE-RSA suite"
out=$(echo | timeout 10 openssl s_client -connect "127.0.0.1:$P_HTTPS" -servername localhost -tls1_3 \
    -sigalgs 'rsa_pss_rsae_sha256' 2>&1)
like "$out" "Server public key is 2048 bit" "RSA-only TLS 1.3 client gets the RSA certificate"
out=$(echo | timeout 10 openssl s_client -connect "127.0.0.1:$P_HTTPS" -servername localhost 2>&1)
like "$out" "Server public key is 256 bit" "an ordinary client still gets ECDSA P-256"
is "$(curl -s --cacert "$CA" -o /dev/null -w '%{http_code}' "$URL/sub/")" 200 \
    "curl still verifies and gets 200 after the import"

# ---- policy: modern = TLS 1.3 only ---------------------------------------------------
gen=$(site_generation)
site_policy modern
ok $? "policy preset modern applied"
for _ in $(seq 1 50); do [ "$(site_generation)" != "$gen" ] && break; sleep 0.1; done
out=$(echo | "${S[@]}" -tls1_2 2>&1)
like "$out" "New, \(NONE\), Cipher is \(NONE\)" "after the switch to modern, TLS 1.2 is refused"
out=$(echo | "${S[@]}" -tls1_3 2>&1)
like "$out" "Protocol *: TLSv1.3" "and TLS 1.3 works"
sleep 1.2
like "$(site_api GET metrics)" 'tlsbox_site_handshake_failures_total\{reason=' \
    "handshake failures are counted by alert"
tb_stop_daemon
ok $? "daemon stops"
done_testing
