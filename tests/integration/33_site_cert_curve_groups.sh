#!/bin/bash
# ECDSA certificates and the client's curves in TLS 1.2.  There the
# signature algorithm does not name a curve; the client's supported_groups
# extension does (RFC 8422 section 5.1: the server's ECDSA key must be on a
# curve the client lists).  With a P-256 and a P-384 certificate for the
# same name, a client that lists P-384 only must get the P-384 one (both
# ports gave the P-256 one, and OpenSSL failed the handshake: "wrong
# curve"), a P-256-only client the P-256 one, and a client that lists both
# the first in the bundle's order, as before.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start
ok $? "tlsboxd runs"

before=$(site_api GET cert | jq '.bundle.certificates | length')
# mkcert NAME CURVE: an ECDSA certificate for c.example, imported as NAME.
mkcert() {
    openssl req -x509 -newkey ec -pkeyopt "ec_paramgen_curve:$2" -nodes -days 30 \
        -keyout "$TB_TMP/$1.key" -out "$TB_TMP/$1.pem" -subj "/CN=$1" \
        -addext "subjectAltName=DNS:c.example" 2>/dev/null &&
        site_cert_import "$1" "$TB_TMP/$1.pem" "$TB_TMP/$1.key"
}
mkcert a-p256 P-256
ok $? "a-p256 (ECDSA P-256, c.example) imported"
mkcert b-p384 P-384
ok $? "b-p384 (ECDSA P-384, c.example) imported"
ncerts() { site_api GET cert | jq '.bundle.certificates | length'; }
is "$(tb_wait_says 20 $((before + 2)) ncerts)" $((before + 2)) "the bundle serves both"

# The SHA-256 fingerprint of a certificate file, and of what a port serves.
fpr() { openssl x509 -noout -fingerprint -sha256 -in "$1" 2>/dev/null | sed 's/.*=//'; }
p256=$(fpr "$TB_TMP/a-p256.pem")
p384=$(fpr "$TB_TMP/b-p384.pem")
isnt_same() { [ -n "$p256" ] && [ -n "$p384" ] && [ "$p256" != "$p384" ]; }
isnt_same
ok $? "the two certificates have distinct fingerprints"
# served PORT GROUPS [SIGALGS]: the fingerprint of the certificate PORT
# gives a TLS 1.2 client asking for c.example ($SNI) that lists GROUPS only and
# the ECDSA signature algorithms SIGALGS (TLS 1.2: with any curve), ""
# when the handshake fails (s_client prints the certificate even then).
served() {
    local out
    out=$(timeout 10 openssl s_client -connect "127.0.0.1:$1" -servername "${SNI:-c.example}" -tls1_2 \
        -groups "$2" -sigalgs "${3:-ECDSA+SHA256:ECDSA+SHA384}" </dev/null 2>/dev/null) || return
    openssl x509 -noout -fingerprint -sha256 <<<"$out" 2>/dev/null | sed 's/.*=//'
}
for port in site:$P_HTTPS admin:$TB_ADMIN_PORT; do
    n=${port%%:*} p=${port#*:}
    is "$(served "$p" P-384)" "$p384" "$n, TLS 1.2, P-384 only: the P-384 certificate"
    is "$(served "$p" P-384 ECDSA+SHA384)" "$p384" "  and with ECDSA+SHA384 only"
    is "$(served "$p" P-256)" "$p256" "$n, TLS 1.2, P-256 only: the P-256 certificate"
    is "$(served "$p" P-256:P-384)" "$p256" "$n, TLS 1.2, both: the first in the bundle's order"
    is "$(served "$p" P-384:P-256)" "$p256" "  whatever the client's order"
    # A name in capitals: GnuTLS does not find it, tls_select's credentials
    # for it do, and their variants for the client's curves.
    is "$(SNI=C.EXAMPLE served "$p" P-384)|$(SNI=C.EXAMPLE served "$p" P-256)" "$p384|$p256" \
        "$n, TLS 1.2, C.EXAMPLE: the P-384 certificate for P-384 only, the P-256 one for P-256"
    # Groups other than ECDSA curves do not count.
    is "$(served "$p" X25519:P-256)" "$p256" "$n, TLS 1.2, X25519 and P-256: the P-256 certificate"
done
# TLS 1.3 names the curve in the signature algorithm, not in the groups.
is "$(timeout 10 openssl s_client -connect "127.0.0.1:$P_HTTPS" -servername c.example -tls1_3 \
    -groups P-384 -sigalgs ecdsa_secp256r1_sha256 </dev/null 2>/dev/null |
    openssl x509 -noout -fingerprint -sha256 2>/dev/null | sed 's/.*=//')" "$p256" \
    "site, TLS 1.3, group P-384 and ecdsa_secp256r1_sha256: the P-256 certificate"
# GnuTLS' own client, which checks the curve too.
timeout 10 gnutls-cli --priority 'NORMAL:-VERS-ALL:+VERS-TLS1.2:-GROUP-ALL:+GROUP-SECP384R1' \
    --x509cafile "$TB_TMP/b-p384.pem" --sni-hostname c.example --verify-hostname c.example \
    -p "$P_HTTPS" 127.0.0.1 </dev/null >"$TB_TMP/gnutls-cli.out" 2>&1
ok $? "gnutls-cli (TLS 1.2, SECP384R1 only) verifies the site's port against b-p384"

tb_stop_daemon
ok $? "tlsboxd stops cleanly"
done_testing
