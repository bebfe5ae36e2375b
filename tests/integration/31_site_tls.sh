#!/bin/bash
# TLS of the site with real clients: versions per policy (1.3 and 1.2 on the
# default policy, 1.0/1.1 refused, 1.2 refused after a switch to "modern"),
# session resumption with openssl -sess_out/-sess_in, gnutls-cli, a KeyUpdate
# from the client in the middle of a large answer, and dual ECDSA + RSA
# certificates chosen per client.
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
    # s_client writes the session when the server's ticket arrives.
    for _ in $(seq 1 100); do
        [ -s "$TB_TMP/sess" ] && break
        sleep 0.1
    done
    kill $sc 2>/dev/null
    wait $sc 2>/dev/null
    out=$(echo | "${S[@]}" -$v -sess_in "$TB_TMP/sess" 2>&1)
    like "$out" "^Reused, " "openssl -$v: session resumed with -sess_in"
done
re='tlsbox_site_handshakes_total\{kind=\\"resumed\\"\}":[1-9]'
like "$(tb_wait_like 10 "$re" site_api GET metrics)" "$re" "metrics count resumed handshakes"

# ---- gnutls-cli ---------------------------------------------------------------------
out=$( (printf 'GET /sub/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'; sleep 2) |
    timeout 10 gnutls-cli --x509cafile="$CA" -p "$P_HTTPS" localhost 2>&1)
like "$out" "Handshake was completed" "gnutls-cli: handshake"
like "$out" "HTTP/1.1 200 OK" "gnutls-cli: 200"
like "$out" "sub page" "gnutls-cli: body"

# ---- TLS 1.3 KeyUpdate ------------------------------------------------------------
# While a 12 MB answer streams, the client updates its keys and asks for ours
# (openssl s_client's K command).  The site seals its TLS 1.3 records itself
# (site_record.c): it must answer with a KeyUpdate of its own and go on with
# the new key, and every byte must arrive.  Each step waits for the previous
# one to show (handshake done, body flowing, K read), so s_client reads each
# input line on its own.
head -c 12582912 /dev/urandom >"$TB_TMP/www/ku.bin"
ku_wait() { # ku_wait FILE REGEX | ku_wait FILE -size BYTES: up to 30 s
    for _ in $(seq 1 300); do
        if [ "$2" = -size ]; then
            [ "$(stat -c %s "$1" 2>/dev/null || echo 0)" -ge "$3" ] && return 0
        else
            grep -aq -- "$2" "$1" 2>/dev/null && return 0
        fi
        sleep 0.1
    done
    return 1
}
rm -f "$TB_TMP/ku.in"
mkfifo "$TB_TMP/ku.in"
exec 7<>"$TB_TMP/ku.in" # opened both ways: neither end's open() waits for the other
# (the redirections inside: a background command's stdin is otherwise /dev/null)
tb_bg bash -c 'exec timeout 60 openssl s_client -connect "127.0.0.1:$1" -servername localhost \
    -CAfile "$2" -tls1_3 -msg -msgfile "$3.msg" <"$3.in" >"$3.out" 2>"$3.err"' _ \
    "$P_HTTPS" "$CA" "$TB_TMP/ku"
sc=$TB_BG_PID
ku_wait "$TB_TMP/ku.out" "Verify return code"
ok $? "KeyUpdate: s_client connected"
base=$(stat -c %s "$TB_TMP/ku.out")
printf 'GET /ku.bin HTTP/1.1\r\nHost: localhost\r\n\r\n' >&7
ku_wait "$TB_TMP/ku.out" -size $((base + 1048576))
ok $? "KeyUpdate: the 12 MB answer is streaming"
printf 'K\n' >&7
ku_wait "$TB_TMP/ku.err" KEYUPDATE
ok $? "KeyUpdate: s_client sent its KeyUpdate (update_requested)"
ku_wait "$TB_TMP/ku.out" -size $((base + 12582912))
printf 'GET /sub/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' >&7
wait $sc
is $? 0 "KeyUpdate: s_client ends cleanly when the server closes"
exec 7>&-
is "$(grep -c '^<<< TLS 1.3, Handshake \[length 0005\], KeyUpdate' "$TB_TMP/ku.msg")" 1 \
    "KeyUpdate: the server answered with one KeyUpdate of its own"
is "$(python3 - "$TB_TMP/ku.out" "$TB_TMP/www/ku.bin" <<'PY'
import re, sys
out = open(sys.argv[1], "rb").read()
want = open(sys.argv[2], "rb").read()
i = out.find(b"HTTP/1.1 200 OK\r\n")
j = out.find(b"\r\n\r\n", i)
n = int(re.search(rb"(?i)\r\ncontent-length: *(\d+)", out[i:j]).group(1))
body = out[j + 4:j + 4 + n]
rest = out[j + 4 + n:]
print("same" if body == want else "differs", "sub" if b"sub page" in rest else "no-second")
PY
)" "same sub" "KeyUpdate: the 12 MB body arrived intact, then the next answer"

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
re='tlsbox_site_handshake_failures_total\{reason='
like "$(tb_wait_like 10 "$re" site_api GET metrics)" "$re" "handshake failures are counted by alert"
tb_stop_daemon
ok $? "daemon stops"
done_testing
