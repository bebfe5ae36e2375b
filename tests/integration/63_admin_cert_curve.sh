#!/bin/bash
# The admin web UI's certificate choice (core/admin_cert.c) and ECDSA
# curves: in TLS 1.3 each ECDSA signature algorithm names one curve, so a
# client that offers ecdsa_secp384r1_sha384 only cannot use a P-256 key.
# With a P-256 and a P-384 certificate for the same name, such a client
# must get the P-384 one (it got the P-256 one, and the handshake failed),
# and a P-256-only client the P-256 one.
. "$(dirname "$0")/lib.sh"
tb_setup
tb_start_daemon
ok $? "tlsboxd runs"

api() {
    curl -s --max-time 10 --unix-socket "$TB_STATE/control.sock" "http://tlsbox/api/v1/$1"
}
ncerts() { api cert | jq '.bundle.certificates | length'; }
before=$(ncerts)
# mkcert NAME CURVE: an ECDSA certificate for c.example, imported as NAME.
mkcert() {
    openssl req -x509 -newkey ec -pkeyopt "ec_paramgen_curve:$2" -nodes -days 30 \
        -keyout "$TB_TMP/$1.key" -out "$TB_TMP/$1.pem" -subj "/CN=$1" \
        -addext "subjectAltName=DNS:c.example" 2>/dev/null &&
        tb_ctl cert import --cert "$TB_TMP/$1.pem" --key "$TB_TMP/$1.key" --name "$1" >/dev/null
}
mkcert a-p256 P-256
ok $? "a-p256 (ECDSA P-256, c.example) imported"
mkcert b-p384 P-384
ok $? "b-p384 (ECDSA P-384, c.example) imported"
is "$(tb_wait_says 20 $((before + 2)) ncerts)" $((before + 2)) "the bundle serves both"

# admin SIGALGS [openssl options]: the CN of the certificate the admin port
# gives a client asking for c.example with only SIGALGS ("" when the
# handshake fails).
admin() {
    local s=$1
    shift
    timeout 10 openssl s_client -connect "127.0.0.1:$TB_ADMIN_PORT" -servername c.example \
        -sigalgs "$s" "$@" </dev/null 2>/dev/null | openssl x509 -noout -subject 2>/dev/null |
        sed 's/.*CN *= *//'
}
is "$(admin ecdsa_secp384r1_sha384 -tls1_3)" b-p384 \
    "TLS 1.3, ecdsa_secp384r1_sha384 only: the P-384 certificate"
is "$(admin ecdsa_secp256r1_sha256 -tls1_3)" a-p256 \
    "TLS 1.3, ecdsa_secp256r1_sha256 only: the P-256 certificate"
is "$(admin ecdsa_secp384r1_sha384:ecdsa_secp256r1_sha256 -tls1_3)" a-p256 \
    "TLS 1.3, both: the first in the bundle's order (P-256)"
# In TLS 1.2 that code point is ECDSA with SHA-384 on any curve.
is "$(admin ecdsa_secp384r1_sha384 -tls1_2)" a-p256 \
    "TLS 1.2, ecdsa_secp384r1_sha384 only: any ECDSA key, the first (P-256)"
# The same answer from GnuTLS' own client, which checks the signature.
timeout 10 gnutls-cli --priority 'NORMAL:-VERS-ALL:+VERS-TLS1.3:-SIGN-ALL:+SIGN-ECDSA-SECP384R1-SHA384' \
    --x509cafile "$TB_TMP/b-p384.pem" --sni-hostname c.example --verify-hostname c.example \
    -p "$TB_ADMIN_PORT" 127.0.0.1 </dev/null >"$TB_TMP/gnutls-cli.out" 2>&1
ok $? "gnutls-cli (TLS 1.3, SECP384R1-SHA384 only) verifies the admin port against b-p384"

tb_stop_daemon
ok $? "tlsboxd stops cleanly"
done_testing
