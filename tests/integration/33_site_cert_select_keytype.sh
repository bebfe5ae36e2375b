#!/bin/bash
# Dual certificates (ECDSA and RSA for the same names) and a client that can
# verify RSA only.  Among the certificates that fit its key type, the client
# must get the one for the name it asked: a name only a wildcard matches, a
# name in capitals, a name with a trailing dot (GnuTLS alone matches exact
# spellings only).  The bundle orders ECDSA before RSA, so the first
# certificate naming the host is ECDSA, and another RSA certificate sorts
# before the right RSA one: it must not be what the client gets.  The admin
# web UI, which chooses by itself, must give the same answers.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start
ok $? "tlsboxd runs"

# mkcert NAME KEYALG SAN: a certificate with subject CN=NAME, imported as NAME.
mkcert() {
    local k
    case $2 in
    ec) k=(-newkey ec -pkeyopt ec_paramgen_curve:P-256) ;;
    rsa) k=(-newkey rsa:2048) ;;
    esac
    openssl req -x509 "${k[@]}" -nodes -days 30 -keyout "$TB_TMP/$1.key" -out "$TB_TMP/$1.pem" \
        -subj "/CN=$1" -addext "subjectAltName=$3" 2>/dev/null &&
        site_cert_import "$1" "$TB_TMP/$1.pem" "$TB_TMP/$1.key"
}
# sni NAME [openssl options]: the CN of the certificate a client asking for NAME gets.
sni() {
    local n=$1
    shift
    timeout 10 openssl s_client -connect "127.0.0.1:$P_HTTPS" -servername "$n" "$@" </dev/null \
        2>/dev/null | openssl x509 -noout -subject 2>/dev/null | sed 's/.*CN *= *//'
}
rsa_only=(-sigalgs 'rsa_pss_rsae_sha256:rsa_pkcs1_sha256')

mkcert a-ec ec 'DNS:*.w.example,DNS:www.n.example'
ok $? "a-ec (ECDSA, *.w.example and www.n.example), the bundle's first, imported"
mkcert b-other-rsa rsa 'DNS:other.example'
ok $? "b-other-rsa (RSA, other.example) imported"
mkcert c-wild-rsa rsa 'DNS:*.w.example'
ok $? "c-wild-rsa (RSA, *.w.example) imported"
mkcert c-www-rsa rsa 'DNS:www.n.example'
ok $? "c-www-rsa (RSA, www.n.example) imported"
names() { site_api GET cert | jq -c '.bundle.certificates | length'; }
tb_wait_says 20 5 names >/dev/null
is "$(names)" 5 "the bundle serves the four and the internal leaf"

is "$(sni x.w.example)|$(sni WWW.N.Example)" "a-ec|a-ec" \
    "a client that verifies ECDSA gets the ECDSA one"
for v in "" -tls1_2; do
    is "$(sni x.w.example "${rsa_only[@]}" $v)" c-wild-rsa \
        "an RSA-only client ${v:+($v) }asking for x.w.example gets c-wild-rsa, not b-other-rsa"
    is "$(sni WWW.N.Example "${rsa_only[@]}" $v)|$(sni www.n.example. "${rsa_only[@]}" $v)" \
        "c-www-rsa|c-www-rsa" "  and for WWW.N.Example and www.n.example. gets c-www-rsa"
    is "$(sni www.n.example "${rsa_only[@]}" $v)" c-www-rsa "  as for www.n.example"
done
timeout 10 gnutls-cli --priority 'NORMAL:-SIGN-ALL:+SIGN-RSA-SHA256:+SIGN-RSA-PSS-RSAE-SHA256' \
    --x509cafile "$TB_TMP/c-wild-rsa.pem" --sni-hostname x.w.example --verify-hostname x.w.example \
    -p "$P_HTTPS" 127.0.0.1 </dev/null >"$TB_TMP/gnutls-cli.out" 2>&1
ok $? "gnutls-cli (RSA only) verifies x.w.example against c-wild-rsa"

# The admin web UI chooses by itself (core/admin_cert.c): the same answers.
admin() {
    local n=$1
    shift
    timeout 10 openssl s_client -connect "127.0.0.1:$TB_ADMIN_PORT" -servername "$n" "$@" </dev/null 2>/dev/null | openssl x509 -noout -subject 2>/dev/null |
        sed 's/.*CN *= *//'
}
is "$(admin x.w.example)|$(admin WWW.N.Example)" "a-ec|a-ec" "admin UI: a client that verifies ECDSA gets a-ec"
for v in "" -tls1_2; do
    is "$(admin x.w.example "${rsa_only[@]}" $v)|$(admin www.n.example. "${rsa_only[@]}" $v)" \
        "c-wild-rsa|c-www-rsa" "admin UI: an RSA-only client ${v:+($v) }gets the RSA certificates too"
    is "$(admin other.example "${rsa_only[@]}" $v)" b-other-rsa "  and b-other-rsa for other.example"
done

tb_stop_daemon
ok $? "tlsboxd stops cleanly"
done_testing
