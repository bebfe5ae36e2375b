#!/bin/bash
# TLS policy through tlsboxctl: default, preset, a raw string with an error
# (position reported, nothing stored), field edits, history, rollback, preview.
. "$(dirname "$0")/lib.sh"
tb_setup

P1=$(tb_free_port)
P2=$(tb_free_port)
tb_start_daemon --set site.https_port="$P1" --set site.http_port="$P2"
ok $? "tlsboxd starts"
db() { sqlite3 "$TB_STATE/tlsbox.db" "$1"; }
gen() { tb_ctl --json status | python3 -c 'import json,sys; print(json.load(sys.stdin)["tls_bundle_generation"])'; }
# Wait (bounded) until the bundle generation passes $1.
wait_gen() {
    local i
    for i in $(seq 1 50); do
        [ "$(gen)" -gt "$1" ] && return 0
        sleep 0.1
    done
    return 1
}

out=$(tb_ctl policy show)
ok $? "policy show exits 0"
like "$out" "^version 1 \(active\)" "version 1 is active"
like "$out" "preset +intermediate" "default preset is intermediate"
like "$out" "hsts_max_age +31536000" "HSTS one year"
like "$out" "hsts_preload +false" "no preload"
like "$out" "min_version +TLS1\.2" "TLS 1.2 and up"

g=$(gen)
out=$(tb_ctl policy preset modern)
ok $? "policy preset modern"
like "$out" "^version 2 \(active\)" "as version 2"
like "$out" "priority +NONE:\+VERS-TLS1\.3:\+AES" "TLS 1.3 only priority string"
wait_gen "$g"
ok $? "policy.changed rebuilt the bundle"

before=$(db 'SELECT count(*) FROM policy_versions')
tb_ctl policy raw "NORMAL:+BOGUS-ALG" >/dev/null 2>"$TB_TMP/err"
is "$?" 1 "a raw string with a bad token is refused"
like "$(cat "$TB_TMP/err")" "invalid token '\+BOGUS-ALG' at position 7" "the error names the token and its position"
is "$(db 'SELECT count(*) FROM policy_versions')" "$before" "nothing stored"
is "$(db 'SELECT id FROM policy_versions WHERE active = 1')" 2 "version 2 still active"
tb_ctl policy raw "NORMAL:+3DES-CBC" >/dev/null 2>"$TB_TMP/err"
like "$(cat "$TB_TMP/err")" "3DES-CBC at position 7 is never allowed" "3DES is never allowed"
# MD5 signatures are broken like the MD5 MAC: refused in a raw string and as
# a field, and nothing is stored.
tb_ctl policy raw "NORMAL:+SIGN-RSA-MD5" >/dev/null 2>"$TB_TMP/err"
is "$?" 1 "a raw string enabling RSA-MD5 signatures is refused"
like "$(cat "$TB_TMP/err")" "signature algorithm RSA-MD5 at position 7 is never allowed" \
    "  the error names it and its position"
tb_ctl policy set sigalgs "RSA-SHA256,RSA-MD5" >/dev/null 2>"$TB_TMP/err"
is "$?" 1 "sigalgs with RSA-MD5 is refused"
like "$(cat "$TB_TMP/err")" "sigalgs: 'RSA-MD5' is never allowed" "  the error names the field and the value"
tb_ctl policy set ciphers "AES-128-GCM,FOO" >/dev/null 2>"$TB_TMP/err"
like "$(cat "$TB_TMP/err")" "ciphers: 'FOO' is not a cipher GnuTLS knows" "unknown cipher named"
tb_ctl policy set hsts_preload true >/dev/null 2>"$TB_TMP/err"
like "$(cat "$TB_TMP/err")" "needs hsts_include_subdomains" "preload needs includeSubDomains"
is "$(db 'SELECT count(*) FROM policy_versions')" "$before" "refusals stored nothing"

out=$(tb_ctl policy raw "SECURE256:-VERS-TLS1.0:-VERS-TLS1.1")
ok $? "a valid raw string is applied"
like "$out" "priority +SECURE256:-VERS-TLS1\.0:-VERS-TLS1\.1" "and used as is"
out=$(tb_ctl policy raw "")
like "$out" "priority +NONE:" "an empty raw string returns to the structured policy"
like "$out" "preset +modern" "whose fields are the modern preset again"
out=$(tb_ctl policy set hsts_max_age 600)
like "$out" "hsts_max_age +600" "set one field"
like "$out" "preset +modern" "an HSTS change keeps the preset"

out=$(tb_ctl policy history)
ok $? "policy history exits 0"
like "$out" "^VERSION +ACTIVE" "history has a header"
like "$out" "5 +\* .* control +modern +set hsts_max_age" "newest first, active marked, author and comment"
like "$out" "1 + [0-9-]+ [0-9:]+ +system +intermediate +default policy" "the default is version 1"

v1=$(db 'SELECT policy_json FROM policy_versions WHERE id = 1')
out=$(tb_ctl policy rollback 1)
ok $? "rollback to version 1"
like "$out" "^version 6 \(active\)" "as a new version 6 (history stays linear)"
is "$(db 'SELECT policy_json FROM policy_versions WHERE id = 6')" "$v1" "version 6 equals version 1 exactly"
like "$(tb_ctl policy history | sed -n 2p)" "rollback to version 1" "history says so"
tb_ctl policy rollback 99 >/dev/null 2>"$TB_TMP/err"
is "$?" 1 "rollback to an unknown version fails"
like "$(cat "$TB_TMP/err")" "version 99 does not exist" "and says so"

# Flags that weaken every connection where the preview shows nothing: a
# raw string with one is refused, and the site keeps what a client checks.
ems() {
    timeout 10 openssl s_client -connect "127.0.0.1:$P1" -tls1_2 </dev/null 2>/dev/null |
        sed -n 's/^ *Extended master secret: *//p; s/^Secure Renegotiation IS \(.*\)supported$/renegotiation \1ok/p' |
        tr '\n' ' '
}
is "$(ems)" "renegotiation ok yes " "openssl s_client: secure renegotiation and the extended master secret"
before=$(db 'SELECT count(*) FROM policy_versions')
tb_ctl policy raw "NORMAL:%NO_SESSION_HASH" >/dev/null 2>"$TB_TMP/err"
is "$?" 1 "a raw string with %NO_SESSION_HASH is refused"
like "$(cat "$TB_TMP/err")" "%NO_SESSION_HASH at position 7 is never allowed: it turns off the extended master secret" \
    "  the error names the flag, its position and what it does"
tb_ctl policy raw "SECURE256:%DISABLE_SAFE_RENEGOTIATION" >/dev/null 2>"$TB_TMP/err"
like "$(cat "$TB_TMP/err")" "%DISABLE_SAFE_RENEGOTIATION at position 10 is never allowed" \
    "%DISABLE_SAFE_RENEGOTIATION is refused too"
# GnuTLS skips the spaces after a ':', so a flag behind one is that flag.
tb_ctl policy raw "NORMAL: %NO_SESSION_HASH" >/dev/null 2>"$TB_TMP/err"
is "$?" 1 "a raw string with ' %NO_SESSION_HASH' (after a space) is refused"
like "$(cat "$TB_TMP/err")" "%NO_SESSION_HASH at position 8 is never allowed" "  the error names it"
is "$(db 'SELECT count(*) FROM policy_versions')" "$before" "  nothing stored"
is "$(ems)" "renegotiation ok yes " "  openssl s_client still gets both"

out=$(tb_ctl policy preview)
like "$out" "protocols +TLS1\.3 TLS1\.2" "preview: protocols GnuTLS derives"
like "$out" "ciphers +AES-128-GCM AES-256-GCM CHACHA20-POLY1305" "preview: ciphers"
like "$out" "TLS_ECDHE_ECDSA_AES_128_GCM_SHA256" "preview: cipher suites"
out=$(tb_ctl policy preview --preset compat)
like "$out" "protocols +TLS1\.3 TLS1\.2 TLS1\.1 TLS1\.0" "preview of a candidate preset"
unlike "$out" "3DES|ARCFOUR" "compat has no 3DES or RC4"
is "$(db 'SELECT id FROM policy_versions WHERE active = 1')" 6 "preview stores nothing"
out=$(tb_ctl --json policy preview --raw "NORMAL:-VERS-ALL:+VERS-TLS1.2" |
    python3 -c 'import json,sys; print(",".join(json.load(sys.stdin)["protocols"]))')
is "$out" "TLS1.2" "preview of a raw candidate (JSON)"
# Client families: a GnuTLS handshake each in the daemon, with the
# certificate it serves, against the candidate.
fam() { jq -r --arg f "$2" '.clients[] | select(.family == $f) | '"$3" <<<"$1"; }
j=$(tb_ctl --json policy preview --preset modern)
is "$(jq -r '.clients | length' <<<"$j")" 6 "preview modern: six client families checked"
is "$(fam "$j" modern-browsers '"\(.ok) \(.protocol)"')" "true TLS1.3" \
    "modern: current browsers connect with TLS 1.3"
for f in android-7 android-4.4-ie11 java-8 openssl-1.0.2; do
    is "$(fam "$j" $f '"\(.ok) \(.side) \(.error_code) \(.error)"')" \
        "false server GNUTLS_E_NO_CIPHER_SUITES No supported cipher suites have been found." \
        "modern: $f (TLS 1.2 at most) is refused by GnuTLS, with its reason"
done
is "$(fam "$j" tls1.0-only '"\(.ok) \(.error_code)"')" "false GNUTLS_E_UNSUPPORTED_VERSION_PACKET" \
    "modern: TLS 1.0-only clients are refused for their version"
unlike "$j" "PRIVATE KEY|BEGIN" "the preview carries no key or certificate"
j=$(tb_ctl --json policy preview --preset intermediate)
for f in android-7 android-4.4-ie11 java-8 openssl-1.0.2; do
    is "$(fam "$j" $f '"\(.ok) \(.protocol)"')" "true TLS1.2" "intermediate: $f connects with TLS 1.2"
done
is "$(fam "$j" android-4.4-ie11 .group)" SECP256R1 "intermediate: without X25519 on P-256"
is "$(fam "$j" tls1.0-only .ok)" false "intermediate: TLS 1.0-only clients are refused"
is "$(fam "$(tb_ctl --json policy preview --preset compat)" tls1.0-only '"\(.ok) \(.protocol)"')" \
    "true TLS1.0" "compat: TLS 1.0-only clients connect with TLS 1.0"
like "$(tb_ctl policy preview --preset modern)" "java-8 +refused +No supported cipher suites" \
    "tlsboxctl policy preview lists the refused families with GnuTLS' reason"
is "$(db "SELECT count(*) FROM audit WHERE action = 'policy.set'")" 6 "an audit row per version"

# key_types that allow none of the certificates (the only one is the
# internal ECDSA leaf) are refused: stored, they would be ignored while the
# old bundle served, and serve nothing after a restart.
served() {
    timeout 10 openssl s_client -connect "127.0.0.1:$P1" </dev/null 2>/dev/null |
        openssl x509 -noout -subject 2>/dev/null | sed 's/.*CN *= *//'
}
cn=$(served)
like "$cn" "." "HTTPS serves the internal leaf (CN=$cn)"
before=$(db 'SELECT count(*) FROM policy_versions')
tb_ctl policy set key_types ed25519 >/dev/null 2>"$TB_TMP/err"
is "$?" 1 "key_types ed25519 is refused"
like "$(cat "$TB_TMP/err")" 'key_types: \["ed25519"\] allows none of the active certificates \(their keys: ecdsa-p256\)' \
    "  the error says which key types the certificates have"
is "$(db 'SELECT count(*) FROM policy_versions')" "$before" "  nothing stored"
# Nor a policy no client could complete a handshake with, the certificates
# being what they are: each name compiles, together they would take the
# site off the air.
tb_ctl policy set sigalgs "RSA-SHA256,RSA-PSS-RSAE-SHA256" >/dev/null 2>"$TB_TMP/err"
is "$?" 1 "RSA-only signature algorithms with an ECDSA key are refused"
like "$(cat "$TB_TMP/err")" 'no client could complete a handshake with it and the active certificates \(their keys: ecdsa-p256\): TLS1.3: No supported cipher suites' \
    "  the error says why, with GnuTLS' reason"
api_code() { curl -s -o "$TB_TMP/reply" -w '%{http_code}' --unix-socket "$TB_STATE/control.sock" "$@"; }
is "$(api_code -X PUT http://x/api/v1/policy -d '{"max_version": "TLS1.2", "groups": ["FFDHE2048"]}')" 400 \
    "TLS 1.2 with ECDHE and only FFDHE groups: 400"
like "$(cat "$TB_TMP/reply")" 'TLS1.2: No supported cipher suites' "  saying so for TLS 1.2"
is "$(db 'SELECT count(*) FROM policy_versions')" "$before" "  nothing stored"
is "$(served)" "$cn" "  and HTTPS still serves"
out=$(tb_ctl policy raw "SECURE256:-VERS-TLS1.0:-VERS-TLS1.1")
ok $? "a raw string only TLS 1.2 clients can use with this key is still taken"
tb_ctl policy raw "" >/dev/null
before=$(db 'SELECT count(*) FROM policy_versions')

# A stored raw string that this version refuses (an older one took it; the
# row is edited by hand, as such a version would have left it): after a
# restart the default policy serves instead of no HTTPS at all, the log and
# policy show say so, and tlsboxctl replaces it.
tb_stop_daemon
db "UPDATE policy_versions SET policy_json = json_set(policy_json, '\$.priority_override',
    'NORMAL:%NO_SESSION_HASH') WHERE active = 1"
tb_start_daemon --set site.https_port="$P1" --set site.http_port="$P2"
ok $? "tlsboxd restarts with a stored policy it refuses"
like "$(grep 'stored policy version' "$TB_TMP/daemon.log")" \
    "is refused \(.*%NO_SESSION_HASH at position 7 is never allowed.*serving the default policy" \
    "the log says why the stored policy is refused and that the default serves"
is "$(served)" "$cn" "HTTPS serves the internal leaf under the default policy"
ems=$(timeout 10 openssl s_client -connect "127.0.0.1:$P1" -tls1_2 </dev/null 2>/dev/null |
    grep -c 'Extended master secret: yes')
is "$ems" 1 "  with the extended master secret that the refused string turned off"
like "$(tb_ctl policy show)" "NOT SERVED: .*NO_SESSION_HASH" "policy show says the stored one is not served"
is "$(tb_ctl --json policy show | jq -r '.refused | test("NO_SESSION_HASH")')" true \
    "  and so does the API"
out=$(tb_ctl policy preset intermediate 2>&1)
ok $? "tlsboxctl policy preset intermediate replaces it"
like "$out" "priority_override +-" "  and clears the raw string"
is "$(tb_ctl --json policy show | jq -r '.refused')" null "  and nothing is refused any more"
is "$(served)" "$cn" "HTTPS serves the internal leaf"

# Through the API, a version is a number (or digits), and a comment a line
# of text; anything else is refused, and no version is made.
api_code() { curl -s -o "$TB_TMP/reply" -w '%{http_code}' --unix-socket "$TB_STATE/control.sock" "$@"; }
versions() { db 'SELECT count(*), max(id) FROM policy_versions WHERE active = 1 OR 1'; }
before=$(versions)
is "$(api_code -X POST http://x/api/v1/policy/rollback -d '{"version": "1xyz"}')" 400 \
    'rollback to version "1xyz": 400, not version 1'
is "$(api_code -X PUT http://x/api/v1/policy -d '{"hsts_max_age": 900, "comment": 42}')" 400 \
    "a comment that is not text: 400"
like "$(cat "$TB_TMP/reply")" 'policy/set: \\"comment\\" must be UTF-8 text of at most 200 bytes' "saying what it must be"
is "$(api_code -X PUT http://x/api/v1/policy -d "{\"hsts_max_age\": 900, \"comment\": \"$(printf 'c%.0s' $(seq 1 201))\"}")" \
    400 "a comment of 201 bytes: 400"
# A newline would forge a row of tlsboxctl policy history, an escape
# sequence would reach the terminal that shows it.
is "$(api_code -X PUT http://x/api/v1/policy -d '{"hsts_max_age": 900, "comment": "a\n7 * 2020-01-01 00:00:00 root modern b"}')" \
    400 "a comment with a newline: 400"
like "$(cat "$TB_TMP/reply")" 'contains a control character at byte 2' "  saying what and where"
is "$(api_code -X PUT http://x/api/v1/policy -d '{"hsts_max_age": 900, "comment": "\u001b[2J"}')" 400 \
    "a comment with an escape character: 400"
is "$(versions)" "$before" "no version was made"
is "$(api_code -X PUT http://x/api/v1/policy -d '{"hsts_max_age": 900, "comment": "ticket 12"}')" 200 \
    "a short comment: taken"
is "$(db 'SELECT comment FROM policy_versions ORDER BY id DESC LIMIT 1')" "ticket 12" "and kept in the history"
# tlsboxctl takes a version as digits only: a number past any integer, or
# with a sign, is a usage error (2), not a request for another version.
for v in 99999999999999999999 +1 " 1"; do
    tb_ctl policy rollback "$v" >/dev/null 2>&1
    is "$?" 2 "tlsboxctl policy rollback '$v': a usage error"
done

# A preset named as a field is that preset's content, with the request's
# other fields on top; not its name on the old content (which served TLS 1.2
# as "modern").
tb_ctl policy preset intermediate >/dev/null
out=$(tb_ctl policy set preset modern)
ok $? "policy set preset modern"
like "$out" "min_version +TLS1\.3" "  TLS 1.3 only, as the preset"
like "$out" "priority +NONE:\+VERS-TLS1\.3:\+AES" "  in the priority string"
tb_ctl policy preset intermediate >/dev/null
is "$(api_code -X PUT http://x/api/v1/policy -d '{"preset": "modern", "hsts_max_age": 600}')" 200 \
    "PUT policy with a preset and a field"
is "$(jq -r '"\(.policy.preset) \(.policy.min_version) \(.policy.hsts_max_age)"' "$TB_TMP/reply")" \
    "modern TLS1.3 600" "  applies both"
# Beside "fields", a preset or a field is not dropped unsaid while the
# fields are stored (it was: 200, HSTS stored, the preset not applied).
before=$(versions)
is "$(api_code -X PUT http://x/api/v1/policy -d '{"preset": "intermediate", "fields": {"hsts_max_age": 900}}')" \
    400 'PUT policy {"preset", "fields"}: 400'
is "$(jq -r .error "$TB_TMP/reply")" "policy: 'preset' beside \"fields\" is not applied; put it inside \"fields\"" \
    "  saying which key and where it belongs"
is "$(api_code -X POST http://x/api/v1/policy/preview -d '{"fields": {"hsts_max_age": 900}, "bogus": 1}')" \
    400 "  and so is a preview with an unknown key beside \"fields\""
is "$(versions)" "$before" "  no version was made"
is "$(tb_ctl --json policy show | jq -r '"\(.policy.preset) \(.policy.hsts_max_age)"')" "modern 600" \
    "  the policy is as it was"

# The preview's client families use the certificates the candidate would
# serve, not those the active policy serves: with an RSA certificate
# imported but only ECDSA served, a candidate serving RSA only is previewed
# with RSA, as the site then answers.
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost -keyout "$TB_TMP/rsa.key" -out "$TB_TMP/rsa.pem" 2>/dev/null
tb_ctl cert import --cert "$TB_TMP/rsa.pem" --key "$TB_TMP/rsa.key" --name localhost-rsa >/dev/null
ok $? "an RSA certificate imported"
tb_ctl policy preset intermediate >/dev/null && tb_ctl policy set key_types ecdsa >/dev/null
ok $? "key_types ecdsa: the RSA certificate is not served"
j=$(tb_ctl --json policy preview --set key_types rsa)
is "$(fam "$j" modern-browsers '"\(.ok) \(.sigalg)"')" "true RSA-PSS-RSAE-SHA256" \
    "preview of key_types rsa: browsers get the RSA certificate"
is "$(fam "$j" java-8 .kx)" "ECDHE-RSA" "  and TLS 1.2 clients ECDHE-RSA"
tb_ctl policy set key_types rsa >/dev/null
sleep 1
like "$(timeout 10 openssl s_client -connect "127.0.0.1:$P1" </dev/null 2>/dev/null)" \
    "Peer signature type: RSA-PSS" "  as openssl s_client gets once it is applied"
done_testing
