#!/bin/bash
# testssl.sh --fast against the site on the default policy, with the box's
# root passed by --add-ca: no line rated VULNERABLE, no "NOT ok" except the
# chain-of-trust / revocation lines a private CA cannot pass, HSTS offered.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start
ok $? "tlsboxd serves the site"
command -v testssl >/dev/null
ok $? "testssl is installed (Debian package testssl.sh)"

out="$TB_TMP/testssl.txt"
# Every section of a default run (protocols, ciphers, forward secrecy,
# server picks and defaults, headers, vulnerabilities) but the client
# simulations: nothing below reads them, and they were half of its time
# (testssl is CPU-bound bash: 120 s alone, up to 400 s beside another
# test on a busy 2-core machine).
timeout 900 testssl --fast -p -s -f -P -S -h -U --quiet --color 0 --warnings batch \
    --add-ca "$CA" --ip 127.0.0.1 "localhost:$P_HTTPS" >"$out" 2>&1
rc=$?
ok "$([ $rc -ne 124 ] && grep -q 'Done ' "$out"; echo $?)" "testssl ran to the end (exit $rc)"
diag "$(grep -E 'Overall Grade|Grade cap' "$out" | head -3)"

vuln=$(grep -E 'VULNERABLE' "$out" | grep -vE 'not vulnerable|NOT vulnerable')
is "$vuln" "" "no line rated VULNERABLE"
[ -n "$vuln" ] && diag "$vuln"
notok=$(grep -E 'NOT ok' "$out" | grep -viE 'chain of trust|OCSP|CRL|revocation|Certificate Transparency|trust \(hostname\)')
is "$notok" "" "no NOT ok outside chain of trust and revocation"
[ -n "$notok" ] && diag "$notok"
like "$(grep -E 'Strict Transport Security' "$out")" "[0-9]+ days|offered|=[0-9]+ s" "HSTS offered"
like "$(grep -E '^ *(TLS 1.3|TLSv1.3)' "$out")" "offered" "TLS 1.3 offered"
like "$(grep -E '^ *(TLS 1 |TLSv1 |SSLv3)' "$out" | tr '\n' ' ')" "not offered" "old protocols not offered"
like "$(grep -E 'ALPN/HTTP2' "$out")" "h2" "ALPN h2 offered"
tb_stop_daemon
ok $? "daemon stops"
done_testing
