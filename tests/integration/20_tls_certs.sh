#!/bin/bash
# Certificates through tlsboxctl: the internal CA's leaf on first start, the
# root to trust, import of good input (certbot's fullchain + privkey, cert +
# chain) and refusal of bad input with specific messages and no key shown,
# including certificates browsers refuse for a web server (wrong EKU, CA:TRUE,
# keyUsage without digitalSignature, no SAN, short RSA key, SHA-1/MD5).
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

# Leaves browsers refuse for a web server, made with openssl: NAME.test with
# extensions EXT, key KIND (ec, ed25519, rsa:BITS), signed by CA (int) with
# digest MD; NAME.pem holds the leaf then CA's certificate.
serial=100
mkleaf() {
    local name=$1 ext=$2 kind=${3:-ec} ca=${4:-int} md=${5:-sha256}
    local newkey=(-newkey "$kind")
    [ "$kind" = ec ] && newkey=(-newkey ec -pkeyopt ec_paramgen_curve:P-256)
    serial=$((serial + 1))
    openssl req -new "${newkey[@]}" -nodes -keyout "$name.key" -subj "/CN=$name.test" |
        openssl x509 -req "-$md" -CA "$ca.pem" -CAkey "$ca.key" -days 30 -set_serial "$serial" \
            -extfile <(printf '%b' "$ext") -out "$name.crt" &&
        cat "$name.crt" "$ca.pem" >"$name.pem"
}
san() { printf 'subjectAltName=DNS:%s.test\n' "$1"; }
web='basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n'
intext='basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n'
cd "$TB_TMP" || exit 1
(
    set -e
    # A SHA-1 intermediate under the ECDSA root; an MD5 one under an RSA root.
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout sha1int.key \
        -subj "/CN=SHA1 Int" | openssl x509 -req -sha1 -CA ca.pem -CAkey ca.key -days 30 \
        -set_serial 1 -extfile <(printf '%b' "$intext") -out sha1int.pem
    openssl req -x509 -newkey rsa:2048 -nodes -keyout rsaroot.key -out rsaroot.pem \
        -subj "/CN=RSA Root" -days 30
    openssl req -new -newkey rsa:2048 -nodes -keyout md5int.key -subj "/CN=MD5 Int" |
        openssl x509 -req -md5 -CA rsaroot.pem -CAkey rsaroot.key -days 30 -set_serial 2 \
            -extfile <(printf '%b' "$intext") -out md5int.pem
    openssl req -new -newkey rsa:1024 -nodes -keyout rsa1024int.key -subj "/CN=RSA1024 Int" |
        openssl x509 -req -sha256 -CA rsaroot.pem -CAkey rsaroot.key -days 30 -set_serial 3 \
            -extfile <(printf '%b' "$intext") -out rsa1024int.pem
    mkleaf good "$(san good)\n$web"
    mkleaf eku-client "$(san eku-client)\nextendedKeyUsage=clientAuth\n"
    mkleaf eku-code "$(san eku-code)\nextendedKeyUsage=codeSigning\n"
    mkleaf ca-leaf "$(san ca-leaf)\nbasicConstraints=critical,CA:TRUE\nextendedKeyUsage=serverAuth\n"
    mkleaf ku-ec "$(san ku-ec)\nkeyUsage=critical,keyAgreement\n"
    mkleaf ku-ed "$(san ku-ed)\nkeyUsage=critical,nonRepudiation\n" ed25519
    mkleaf ku-rsa-enc "$(san ku-rsa-enc)\nkeyUsage=critical,keyEncipherment\n" rsa:2048
    mkleaf ku-rsa-none "$(san ku-rsa-none)\nkeyUsage=critical,nonRepudiation\n" rsa:2048
    mkleaf nosan "$web"
    mkleaf rsa1024 "$(san rsa1024)\n$web" rsa:1024
    mkleaf sha1-leaf "$(san sha1-leaf)\n$web" ec int sha1
    mkleaf sha1-int "$(san sha1-int)\n$web" ec sha1int
    mkleaf md5-int "$(san md5-int)\n$web" ec md5int
    mkleaf rsa1024-int "$(san rsa1024-int)\n$web" ec rsa1024int
    # What `openssl req -x509` makes by default: self-signed, CA:TRUE.
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout self.key \
        -out self.pem -subj /CN=self.test -addext subjectAltName=DNS:self.test -days 30
) >>fixtures.log 2>&1
ok $? "unfit leaves made with openssl"
cd - >/dev/null || exit 1
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
# The certificates table, without keys: what a refusal must leave as it was.
certs_table() {
    sqlite3 "file:$TB_STATE/tlsbox.db?mode=ro" "SELECT name, sans, key_type, chain_pem, serial,
        not_after, source, status, updated_at FROM certificates ORDER BY name"
}
refuse() {
    local want=$1 desc=$2 before
    shift 2
    before=$(certs_table)
    tb_ctl cert import "$@" >/dev/null 2>"$TB_TMP/err"
    is "$?" 1 "$desc: refused (exit 1)"
    like "$(cat "$TB_TMP/err")" "$want" "$desc: says why"
    unlike "$(cat "$TB_TMP/err")" "$keyline|PRIVATE KEY" "$desc: no key material in the message"
    is "$(certs_table)" "$before" "$desc: the certificates table is unchanged"
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

# Certificates every browser refuses for a web server: refused at import,
# naming the certificate (its place in the chain and subject) and the fault.
out=$(tb_ctl cert import --cert "$F/good.pem" --key "$F/good.key")
ok $? "a leaf made by openssl with serverAuth, digitalSignature, CA:FALSE and a SAN is imported"
like "$out" "imported good\.test: ecdsa-p256" "as good.test"
refuse 'certificate 1 \(CN=eku-client\.test\) is not for TLS servers: its extended key usage is clientAuth, without serverAuth' \
    "EKU clientAuth only" --cert "$F/eku-client.pem" --key "$F/eku-client.key"
refuse 'certificate 1 \(CN=eku-code\.test\) is not for TLS servers: its extended key usage is codeSigning, without serverAuth' \
    "EKU codeSigning only" --cert "$F/eku-code.pem" --key "$F/eku-code.key"
refuse 'certificate 1 \(CN=ca-leaf\.test\) is a CA certificate \(basicConstraints CA:TRUE\)' \
    "leaf with CA:TRUE" --cert "$F/ca-leaf.pem" --key "$F/ca-leaf.key"
refuse 'certificate 1 \(CN=ku-ec\.test\): its key usage lacks digitalSignature, which an ECDSA key needs' \
    "ECDSA leaf, keyUsage without digitalSignature" --cert "$F/ku-ec.pem" --key "$F/ku-ec.key"
refuse 'certificate 1 \(CN=ku-ed\.test\): its key usage lacks digitalSignature, which an Ed25519 key needs' \
    "Ed25519 leaf, keyUsage without digitalSignature" --cert "$F/ku-ed.pem" --key "$F/ku-ed.key"
refuse 'certificate 1 \(CN=ku-rsa-none\.test\): its key usage lacks digitalSignature and keyEncipherment, which an RSA key needs' \
    "RSA leaf, keyUsage with neither" --cert "$F/ku-rsa-none.pem" --key "$F/ku-rsa-none.key"
refuse 'certificate 1 \(CN=ku-rsa-enc\.test\): its key usage has keyEncipherment but not digitalSignature; TLS 1\.3' \
    "RSA leaf, keyUsage keyEncipherment only" --cert "$F/ku-rsa-enc.pem" --key "$F/ku-rsa-enc.key"
refuse 'certificate 1 \(CN=nosan\.test\) has no subjectAltName with a DNS name or IP address' \
    "leaf without subjectAltName" --cert "$F/nosan.pem" --key "$F/nosan.key"
refuse 'RSA key of 1024 bits is too short \(2048 at least\)' \
    "RSA 1024 leaf" --cert "$F/rsa1024.pem" --key "$F/rsa1024.key"
refuse 'certificate 1 \(CN=sha1-leaf\.test\) is signed with SHA1 \(ECDSA-SHA1\)' \
    "leaf signed with SHA-1, with its chain" --cert "$F/sha1-leaf.pem" --key "$F/sha1-leaf.key"
refuse 'certificate 1 \(CN=sha1-leaf\.test\) is signed with SHA1 \(ECDSA-SHA1\)' \
    "leaf signed with SHA-1, alone" --cert "$F/sha1-leaf.crt" --key "$F/sha1-leaf.key"
refuse 'chain certificate 2 \(CN=SHA1 Int\) is signed with SHA1 \(ECDSA-SHA1\)' \
    "intermediate signed with SHA-1" --cert "$F/sha1-int.pem" --key "$F/sha1-int.key"
refuse 'chain certificate 2 \(CN=MD5 Int\) is signed with MD5 \(RSA-MD5\)' \
    "intermediate signed with MD5" --cert "$F/md5-int.pem" --key "$F/md5-int.key"
refuse 'chain certificate 2 \(CN=RSA1024 Int\) has an RSA key of 1024 bits' \
    "intermediate with an RSA 1024 key" --cert "$F/rsa1024-int.pem" --key "$F/rsa1024-int.key"
out=$(tb_ctl cert import --cert "$F/self.pem" --key "$F/self.key")
ok $? "a lone self-signed certificate (openssl req -x509: CA:TRUE) is still imported"
like "$out" "imported self\.test: ecdsa-p256" "as self.test"
is "$(sqlite3 "$TB_STATE/tlsbox.db" 'SELECT group_concat(name, " ") FROM certificates ORDER BY name')" \
    "good.test internal self.test www.example.test www.example.test-rsa" "only the fit ones are stored"

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
