#!/bin/bash
# Certificates through tlsboxctl: the internal CA's leaf on first start, the
# root to trust, import of good input (certbot's fullchain + privkey, cert +
# chain) and refusal of bad input with specific messages and no key shown.
. "$(dirname "$0")/lib.sh"
tb_setup

P1=$(tb_free_port)
P2=$(tb_free_port)
tb_start_daemon --set site.https_port="$P1" --set site.http_port="$P2" --set core.hostname=box.test
ok $? "tlsboxd starts"

out=$(tb_ctl cert list)
ok $? "cert list exits 0"
like "$out" "^internal +ecdsa-p256 +(89|90) +internal +active" "internal ECDSA P-256 leaf, 90 days"
like "$out" "box\.test,box\.local,localhost,127\.0\.0\.1,::1" "for the host name, .local, localhost and loopback"
like "$out" "serving: bundle [0-9]+ with \[\"internal\"\]" "and it is served"

tb_ctl cert root >"$TB_TMP/root.pem"
ok $? "cert root exits 0"
like "$(head -1 "$TB_TMP/root.pem")" "BEGIN CERTIFICATE" "cert root prints a PEM certificate"
tb_ctl cert export internal >"$TB_TMP/internal.pem"
unlike "$(cat "$TB_TMP/internal.pem")" "PRIVATE" "export has no key"
openssl verify -CAfile "$TB_TMP/root.pem" -purpose sslserver "$TB_TMP/internal.pem" >/dev/null 2>&1
ok $? "openssl verify: the internal leaf chains to the root"
like "$(sqlite3 "$TB_STATE/tlsbox.db" 'SELECT count(*) FROM internal_ca')" "^1$" "one root in the store"

# Fixtures: a CA, an intermediate and leaves, made now, removed at exit.
cd "$TB_TMP" || exit 1
{
    printf 'cn = Test Root\nca\ncert_signing_key\nexpiration_days = 3650\n' >ca.tmpl
    printf 'cn = Test Int\nca\ncert_signing_key\nexpiration_days = 1000\n' >int.tmpl
    printf 'cn = www.example.test\ndns_name = www.example.test\ntls_www_server\nsigning_key\nexpiration_days = 60\n' >leaf.tmpl
    printf 'cn = old.test\ndns_name = old.test\ntls_www_server\nsigning_key\nactivation_date = "2019-01-01 00:00:00"\nexpiration_date = "2020-01-01 00:00:00"\n' >old.tmpl
    certtool --generate-privkey --key-type ecdsa --no-text --outfile ca.key
    certtool --generate-self-signed --load-privkey ca.key --template ca.tmpl --outfile ca.pem
    certtool --generate-privkey --key-type ecdsa --no-text --outfile int.key
    certtool --generate-certificate --load-privkey int.key --load-ca-certificate ca.pem \
        --load-ca-privkey ca.key --template int.tmpl --outfile int.pem
    for k in leaf other old; do certtool --generate-privkey --key-type ecdsa --no-text --outfile $k.key; done
    certtool --generate-privkey --key-type rsa --bits 2048 --no-text --outfile rsa.key
    for c in leaf:leaf rsa:leaf old:old; do
        certtool --generate-certificate --load-privkey ${c%%:*}.key --load-ca-certificate int.pem \
            --load-ca-privkey int.key --template ${c##*:}.tmpl --outfile ${c%%:*}.pem
    done
    mkdir -p live/www.example.test
    cat leaf.pem int.pem >live/www.example.test/fullchain.pem
    cp leaf.key live/www.example.test/privkey.pem
    cat int.pem leaf.pem >ooo.pem
} >fixtures.log 2>&1
ok $? "fixtures made with certtool"
cd - >/dev/null || exit 1
F=$TB_TMP

gen0=$(tb_ctl --json status | python3 -c 'import json,sys; print(json.load(sys.stdin)["tls_bundle_generation"])')
out=$(tb_ctl cert import --cert "$F/live/www.example.test/fullchain.pem" --key "$F/live/www.example.test/privkey.pem")
ok $? "import certbot's fullchain.pem + privkey.pem"
like "$out" "imported www\.example\.test: ecdsa-p256, (59|60) days left, issuer CN=Test Int" "import says what it stored"
out=$(tb_ctl cert import --cert "$F/rsa.pem" --chain "$F/int.pem" --key "$F/rsa.key")
ok $? "import cert.pem + chain.pem (RSA)"
like "$out" "imported www\.example\.test-rsa: rsa-2048" "an RSA certificate gets the -rsa name"
out=$(tb_ctl cert list)
like "$out" "www\.example\.test +ecdsa-p256 +(59|60) +import" "list shows the ECDSA import"
like "$out" "www\.example\.test-rsa +rsa-2048" "list shows the RSA import"
for _ in $(seq 1 50); do
    gen=$(tb_ctl --json status | python3 -c 'import json,sys; print(json.load(sys.stdin)["tls_bundle_generation"])')
    [ "$gen" -gt "$gen0" ] && tb_ctl cert list | grep -q 'serving: .*www.example.test-rsa' && break
    sleep 0.1
done
like "$(tb_ctl cert list)" 'serving: bundle [0-9]+ with \["www\.example\.test","internal","www\.example\.test-rsa"\]' \
    "the bundle is rebuilt: ECDSA certificates first, then RSA"

keyline=$(sed -n 2p "$F/other.key")
refuse() {
    local want=$1 desc=$2
    shift 2
    tb_ctl cert import "$@" >/dev/null 2>"$TB_TMP/err"
    is "$?" 1 "$desc: refused (exit 1)"
    like "$(cat "$TB_TMP/err")" "$want" "$desc: says why"
    unlike "$(cat "$TB_TMP/err")" "$keyline|PRIVATE KEY" "$desc: no key material in the message"
}
refuse "does not match" "key of another certificate" --cert "$F/leaf.pem" --chain "$F/int.pem" --key "$F/other.key"
refuse "out of order" "chain out of order" --cert "$F/ooo.pem" --key "$F/leaf.key"
refuse "expired on 2020-01-01" "expired certificate" --cert "$F/old.pem" --chain "$F/int.pem" --key "$F/old.key"
refuse "no PEM certificate" "a key given as certificate" --cert "$F/other.key" --key "$F/other.key"
refuse "reserved" "the internal name" --cert "$F/leaf.pem" --chain "$F/int.pem" --key "$F/leaf.key" --name internal
tb_ctl cert import --cert "$F/nonexistent.pem" --key "$F/leaf.key" 2>"$TB_TMP/err"
is "$?" 4 "unreadable file: exit 4"
like "$(cat "$TB_TMP/err")" "nonexistent.pem" "and names the file"
tb_ctl cert import --cert "$F/leaf.pem" --chain "$F/int.pem" --key "$F/leaf.key" \
    --name $'caf\xe9' 2>"$TB_TMP/err"
is "$?" 2 "a --name that is not UTF-8: exit 2"
like "$(cat "$TB_TMP/err")" "cert/import: a value given .* is not UTF-8 text" "and says so"
tb_ctl cert import --cert "$F/leaf.pem" --key "$F" 2>"$TB_TMP/err"
is "$?" 4 "a directory given as the key: exit 4"
is "$(cat "$TB_TMP/err")" "tlsboxctl: key $F: Is a directory" "and says which and why"
is "$(sqlite3 "$TB_STATE/tlsbox.db" 'SELECT count(*) FROM certificates')" 3 "refusals stored nothing"

tb_ctl cert export nope >/dev/null 2>"$TB_TMP/err"
is "$?" 1 "export of an unknown name fails"
like "$(cat "$TB_TMP/err")" "no certificate named 'nope'" "and says so"

# Restart: the same root and leaf, no new CA.
root1=$(cat "$TB_TMP/root.pem")
tb_stop_daemon
ok $? "daemon stops"
tb_start_daemon --set site.https_port="$P1" --set site.http_port="$P2"
ok $? "daemon restarts"
is "$(tb_ctl cert root)" "$root1" "the root survives a restart"
done_testing
