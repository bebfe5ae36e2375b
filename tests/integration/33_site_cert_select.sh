#!/bin/bash
# Which certificate a client gets where GnuTLS alone picks the first one.
# A client that connects by IP address sends no server name (RFC 6066 allows
# no address in SNI), so the address it reached is the only name it asks
# for: the site gives it the certificate that names that address.  And a
# name that only a wildcard certificate matches gets that certificate
# (GnuTLS matches exact names only), at any address; an exact name wins.  The
# daemon listens on 127.0.0.1, 127.0.0.2, 127.0.0.3 and ::1, and holds a
# certificate for 127.0.0.2, one for 127.0.0.3 and ::1, one for a host name,
# two wildcards and an exact name under one of them, and the internal leaf
# (the machine's name and addresses, localhost, 127.0.0.1, ::1).  Real
# clients: openssl s_client with and without SNI, curl verifying each
# address and a wildcard against its certificate.  The admin web UI
# chooses the same way.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start --set site.bind=127.0.0.1,127.0.0.2,127.0.0.3,::1
ok $? "tlsboxd runs, listening on 127.0.0.1, 127.0.0.2, 127.0.0.3 and ::1"

# mkcert NAME SAN: an ECDSA P-256 certificate with subject CN=NAME, imported as NAME.
mkcert() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
        -keyout "$TB_TMP/$1.key" -out "$TB_TMP/$1.pem" -subj "/CN=$1" -addext "subjectAltName=$2" \
        2>/dev/null && site_cert_import "$1" "$TB_TMP/$1.pem" "$TB_TMP/$1.key"
}
# served HOST:PORT [openssl options]: the CN of the certificate a client without SNI gets.
served() {
    local to=$1
    shift
    timeout 10 openssl s_client -connect "$to" -noservername "$@" </dev/null 2>/dev/null |
        openssl x509 -noout -subject 2>/dev/null | sed 's/.*CN *= *//'
}
# sni HOST:PORT NAME: the CN of the certificate a client asking for NAME gets.
sni() {
    timeout 10 openssl s_client -connect "$1" -servername "$2" </dev/null 2>/dev/null |
        openssl x509 -noout -subject 2>/dev/null | sed 's/.*CN *= *//'
}
# by_address: the bundle's certificate per loopback address (GET cert).
by_address() {
    site_api GET cert | jq -Sc '.bundle.certificates_by_address |
        with_entries(select(.key | test("^(127\\.0\\.0\\.[123]|::1)$")))'
}

leaf=$(served "127.0.0.1:$P_HTTPS")
like "$leaf" "." "before any import, a client gets the internal leaf (CN=$leaf)"
is "$(sni "127.0.0.1:$P_HTTPS" localhost)" "$leaf" "  as SNI localhost does"
mkcert two IP:127.0.0.2
ok $? "certificate two (IP:127.0.0.2) imported"
mkcert three IP:127.0.0.3,IP:::1
ok $? "certificate three (IP:127.0.0.3, IP:::1) imported"
mkcert named DNS:named.example
ok $? "certificate named (DNS:named.example) imported"
want='{"127.0.0.1":"internal","127.0.0.2":"two","127.0.0.3":"three","::1":"three"}'
is "$(tb_wait_says 20 "$want" by_address)" "$want" \
    "GET cert: the bundle's certificate per address (bundle.certificates_by_address)"

is "$(served "127.0.0.2:$P_HTTPS")" two "a client of 127.0.0.2 without SNI gets two"
is "$(served "127.0.0.3:$P_HTTPS")" three "a client of 127.0.0.3 without SNI gets three"
is "$(served "[::1]:$P_HTTPS")" three "a client of ::1 without SNI gets three"
is "$(served "127.0.0.1:$P_HTTPS")" "$leaf" "a client of 127.0.0.1 without SNI gets the internal leaf, which names it"
is "$(served "127.0.0.1:$P_HTTPS" -tls1_2)" "$leaf" "  over TLS 1.2 too"
is "$(served "127.0.0.3:$P_HTTPS" -tls1_2)" three "  and 127.0.0.3 over TLS 1.2"

# A client that sends a name still gets its own, whatever address it reached.
is "$(sni "127.0.0.3:$P_HTTPS" named.example)" named "SNI named.example at 127.0.0.3 gets named"
is "$(sni "127.0.0.2:$P_HTTPS" localhost)" "$leaf" "SNI localhost at 127.0.0.2 gets the internal leaf"

# curl sends no SNI for an address and verifies the address against the certificate.
for a in 127.0.0.2:two 127.0.0.3:three "[::1]:three"; do
    host=${a%:*}
    is "$(curl -s --cacert "$TB_TMP/${a##*:}.pem" -o /dev/null -w '%{http_code}' \
        "https://$host:$P_HTTPS/f16k.txt")" 200 "curl https://$host/ verifies against ${a##*:} and gets 200"
done
is "$(curl -s --http2 --cacert "$TB_TMP/three.pem" -o /dev/null -w '%{http_version} %{http_code}' \
    "https://127.0.0.3:$P_HTTPS/f16k.txt")" "2 200" "  over h2 too"
is "$(curl -s --cacert "$CA" -o /dev/null -w '%{http_code}' "https://127.0.0.1:$P_HTTPS/f16k.txt")" 200 \
    "curl https://127.0.0.1/ verifies against the internal CA"

# A new bundle: three without its addresses; 127.0.0.3 is named by no
# certificate now (the first one serves it), ::1 by the internal leaf.
mkcert three DNS:three.example
ok $? "three replaced by a certificate for three.example only"
want='{"127.0.0.1":"internal","127.0.0.2":"two","::1":"internal"}'
is "$(tb_wait_says 20 "$want" by_address)" "$want" "the bundle's addresses follow"
is "$(served "127.0.0.3:$P_HTTPS")" two "127.0.0.3 without SNI: the first certificate (two)"
is "$(served "[::1]:$P_HTTPS")" "$leaf" "::1 without SNI: the internal leaf"
is "$(sni "127.0.0.3:$P_HTTPS" three.example)" three "SNI three.example gets three"

# Wildcards, sorted after "two" (the first certificate, which names 127.0.0.2).
mkcert wa 'DNS:*.a.example'
ok $? "certificate wa (*.a.example) imported"
mkcert wb 'DNS:*.b.example'
ok $? "certificate wb (*.b.example) imported"
mkcert exactb DNS:exact.b.example
ok $? "certificate exactb (exact.b.example) imported"
wildcards() { site_api GET cert | jq -Sc '.bundle.certificates_by_wildcard'; }
want='{"*.a.example":"wa","*.b.example":"wb"}'
is "$(tb_wait_says 20 "$want" wildcards)" "$want" \
    "GET cert: the bundle's certificate per wildcard (bundle.certificates_by_wildcard)"
for at in 127.0.0.1 127.0.0.2 127.0.0.3 "[::1]"; do
    is "$(sni "$at:$P_HTTPS" x.a.example)|$(sni "$at:$P_HTTPS" y.b.example)" "wa|wb" \
        "at $at, SNI x.a.example gets wa and y.b.example gets wb"
done
is "$(sni "127.0.0.1:$P_HTTPS" Y.B.Example)" wb "a name in capitals matches too"
is "$(sni "127.0.0.2:$P_HTTPS" exact.b.example)" exactb "exact.b.example gets its own certificate, not *.b.example"
is "$(sni "127.0.0.2:$P_HTTPS" x.y.a.example)" two "x.y.a.example (two labels) is not matched: the address's"
is "$(sni "127.0.0.2:$P_HTTPS" a.example)" two "nor is a.example"
is "$(sni "127.0.0.2:$P_HTTPS" named.example)" named "named.example still gets named"
# Names are not case-sensitive (RFC 6066): GnuTLS compares them byte for byte.
for at in 127.0.0.1 127.0.0.2; do
    is "$(sni "$at:$P_HTTPS" NAMED.Example)|$(sni "$at:$P_HTTPS" Exact.B.Example)" "named|exactb" \
        "at $at, SNI NAMED.Example gets named and Exact.B.Example gets exactb (not wb)"
done
# One trailing dot names the same host (RFC 6066 forbids it, some clients
# send it; nginx drops it): GnuTLS alone would find no certificate for it.
for at in 127.0.0.1 127.0.0.2; do
    is "$(sni "$at:$P_HTTPS" named.example.)|$(sni "$at:$P_HTTPS" Exact.B.Example.)|$(sni "$at:$P_HTTPS" y.b.example.)" \
        "named|exactb|wb" "at $at, SNI named.example. gets named, Exact.B.Example. exactb, y.b.example. wb"
done
# Not a name: two dots at the end, a dot alone.  (openssl sends the name as
# given; gnutls-cli would drop one dot itself.)
is "$(sni "127.0.0.2:$P_HTTPS" named.example..)|$(sni "127.0.0.2:$P_HTTPS" .)" "two|two" \
    "SNI named.example.. and SNI . name no host: the address's certificate (two)"
out=$(timeout 10 openssl s_client -connect "127.0.0.1:$P_HTTPS" -servername y.b.example -tls1_2 \
    </dev/null 2>/dev/null | openssl x509 -noout -subject 2>/dev/null | sed 's/.*CN *= *//')
is "$out" wb "  over TLS 1.2 too"
for v in 1.1 2; do
    is "$(curl -s "--http$v" --cacert "$TB_TMP/wb.pem" --resolve "y.b.example:$P_HTTPS:127.0.0.1" \
        -o /dev/null -w '%{http_version} %{http_code}' "https://y.b.example:$P_HTTPS/f16k.txt")" \
        "$v 200" "curl --http$v https://y.b.example/ verifies against wb and gets 200"
done

# The admin web UI (libmicrohttpd, on 127.0.0.1) chooses the same way.
A="127.0.0.1:$TB_ADMIN_PORT"
is "$(served "$A")" "$leaf" "admin UI at 127.0.0.1 without SNI: the internal leaf, which names 127.0.0.1 (not two, the first)"
is "$(served "$A" -tls1_2)" "$leaf" "  over TLS 1.2 too"
is "$(sni "$A" named.example)|$(sni "$A" exact.b.example)" "named|exactb" "admin UI: an exact name gets its certificate"
is "$(sni "$A" x.a.example)|$(sni "$A" Y.B.Example)" "wa|wb" "admin UI: a name only a wildcard matches gets the wildcard's"
is "$(sni "$A" x.y.a.example)" "$leaf" "admin UI: a name no certificate matches gets the address's"
is "$(curl -s --cacert "$CA" -o /dev/null -w '%{http_code}' "https://$A/")" 200 \
    "curl https://127.0.0.1:<admin port>/ verifies against the internal CA and gets 200"
like "$(grep 'admin: serving the' "$TB_TMP/daemon.log" | tail -1)" "admin: serving the 7 certificate\(s\) of TLS bundle generation" \
    "the log says how many certificates the admin UI chooses among"

is "$(site_metric 'tlsbox_site_handshake_failures_total{reason="setup"}')" 0 "no session failed its setup"
tb_stop_daemon
ok $? "tlsboxd stops cleanly"
done_testing
