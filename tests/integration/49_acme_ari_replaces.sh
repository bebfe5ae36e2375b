#!/bin/bash
# ARI "replaces" (RFC 9773) that the CA refuses does not stop a renewal.
# acme_forward.py in front of the real pebble gives it ARI (renewalInfo) and
# refuses any newOrder that carries "replaces", as Let's Encrypt does for a
# certificate another account ordered.  An imported certificate (another
# CA's, as certbot's would be) that ARI says to renew now: the newOrder
# replacing it is refused 403 unauthorized, asked again at once without
# "replaces", and the new certificate is installed and served.  Then, after
# a switch of directory (a new account, as from staging to production), a
# forced renewal refused 400 malformed goes the same way.  A refusal the flow
# got past is not told as the reason of a later failure (an order that turns
# invalid after a 409 alreadyReplaced).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pebble.sh"
tb_setup

pb_setup_forward

# The RFC 9773 id of a PEM certificate: base64url(AKI key id) "."
# base64url(serial as DER integer content, with its leading zero if any).
ari_id() {
    local aki serial
    aki=$(openssl x509 -in "$1" -noout -ext authorityKeyIdentifier | tail -n +2 | tr -d ' :\n')
    serial=$(openssl x509 -in "$1" -noout -serial | sed 's/^serial=//')
    python3 -c '
import base64,sys
aki,s=sys.argv[1],sys.argv[2]
s="0"*(len(s)%2)+s
if int(s[0],16)>=8: s="00"+s
b=lambda h: base64.urlsafe_b64encode(bytes.fromhex(h)).decode().rstrip("=")
print(b(aki)+"."+b(s))' "${aki#keyid}" "$serial"
}
# The certificate served for a name, PEM.
served_pem() {
    openssl s_client -connect "127.0.0.1:$SITE_HTTPS" -servername "$1" </dev/null 2>/dev/null |
        openssl x509 2>/dev/null
}
# "KIND STATUS" of each newOrder request the front saw after line $1,
# comma-separated; a plain newOrder answered 400 is pebble's badNonce
# (retried at once by design) and left out.
new_orders_after() {
    tail -n +"$(($1 + 1))" "$FW/requests.log" |
        awk '$2 ~ /^newOrder/ && !($2 == "newOrder" && $5 == 400) { printf "%s%s %s", sep, $2, $5; sep = "," }'
}
# Another CA's certificate for ari.test, imported as one from certbot would be.
imp=$TB_TMP/imported
mkdir -p "$imp"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$imp/ca.key" \
    -out "$imp/ca.pem" -days 30 -subj "/CN=tlsbox test other CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$imp/leaf.key" \
        -out "$imp/leaf.csr" -subj "/CN=ari.test" 2>/dev/null &&
    printf 'subjectAltName=DNS:ari.test\nauthorityKeyIdentifier=keyid\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
        >"$imp/ext.cnf" &&
    openssl x509 -req -in "$imp/leaf.csr" -CA "$imp/ca.pem" -CAkey "$imp/ca.key" -days 30 \
        -extfile "$imp/ext.cnf" -out "$imp/leaf.pem" 2>/dev/null || bail "could not make the imported certificate"
imp_id=$(ari_id "$imp/leaf.pem")
imp_serial=$(openssl x509 -in "$imp/leaf.pem" -noout -serial | sed 's/^serial=//')
like "$imp_id" '^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$' "the imported certificate's ARI id ($imp_id)"

# ARI says: renew the imported certificate now.  Any "replaces" is refused.
echo "$imp_id" >"$FW/ari"
echo "403 unauthorized" >"$FW/replaces_refuse"
PB_DIRECTORY=$FW_DIRECTORY pb_start_tlsbox || bail "tlsboxd did not start"
tb_ctl cert import --cert "$imp/leaf.pem" --chain "$imp/ca.pem" --key "$imp/leaf.key" \
    --name ari.test >/dev/null
ok $? "the other CA's certificate is imported as ari.test"
is "$(pb_served_serial ari.test)" "$imp_serial" "and served"

mark=$(wc -l <"$FW/requests.log")
tb_ctl set acme.domains ari.test >/dev/null
s1=$(pb_wait_new_serial ari.test "$imp_serial" 60)
ok $? "the imported certificate is renewed: $imp_serial -> $s1"
pb_wait_served ari.test 5
ok $? "the new certificate is pebble's (verifies against its root)"
pb_st_wait 'e["cert"] == "ari.test" and e["step"] == "done"' 30
ok $? "the success is recorded"
is "$(pb_st_get 'e["ok"], e["detail"], c["failures"], c["serial"].upper().replace(":", "")')" \
    "(True, \"inside the CA's renewal window (ARI)\", 0, '$s1')" \
    "renewed because ARI said so, no failure, and the status names the served certificate"
is "$(new_orders_after "$mark")" "newOrder+replaces 403,newOrder 201" \
    "the newOrder replacing it was refused 403, then the one without replaces placed"
is "$(cut -d' ' -f2- "$FW/replaces.log")" "$imp_id 403" \
    "the refused newOrder named the imported certificate's ARI id"
like "$(grep 'refused the order replacing' "$TB_TMP/daemon.log")" \
    "ari.test: the CA refused the order replacing $imp_id \(HTTP 403, urn:ietf:params:acme:error:unauthorized: the certificate being replaced .* was not issued to the requester account\); ordering again without \"replaces\"" \
    "the log says what the CA refused and that the order went without it"

# Another directory (another account at the CA, as production after
# staging): a forced renewal replaces a certificate that account never
# ordered; refused 400 malformed (an unknown issuer, say).
served_pem ari.test >"$TB_TMP/s1.pem"
s1_id=$(ari_id "$TB_TMP/s1.pem")
acct1=$(pb_st_get 's["account"]')
echo "400 malformed" >"$FW/replaces_refuse"
dir2=${FW_DIRECTORY/127.0.0.1/localhost}
tb_ctl set acme.directory "$dir2" >/dev/null
pb_st_wait "s[\"directory\"] == \"$dir2\"" 30
ok $? "acme.directory is now $dir2"
mark=$(wc -l <"$FW/requests.log")
tb_ctl acme renew --force >/dev/null
s2=$(pb_wait_new_serial ari.test "$s1" 60)
ok $? "after a refused replaces (400 malformed) the forced renewal installs $s2"
pb_wait_served ari.test 5
ok $? "and it verifies against pebble's root"
pb_st_wait 'e["cert"] == "ari.test" and e["step"] == "done" and e["detail"] == "renewal forced"' 30
ok $? "the forced renewal is recorded as a success"
acct2=$(pb_st_get 's["account"]')
ok "$([ -n "$acct2" ] && [ "$acct2" != "$acct1" ] && echo 0 || echo 1)" \
    "by another account ($acct1 -> $acct2)"
is "$(new_orders_after "$mark")" "newOrder+replaces 400,newOrder 201" \
    "the newOrder replacing it was refused 400, then the one without replaces placed"
is "$(tail -n 1 "$FW/replaces.log" | cut -d' ' -f2-)" "$s1_id 400" \
    "the refused newOrder named the replaced certificate's ARI id"

# 409 alreadyReplaced, then the order turns invalid: the failure recorded is
# the order's, not the refusal the flow got past.
echo "409 alreadyReplaced" >"$FW/replaces_refuse"
touch "$FW/order_invalid"
mark=$(wc -l <"$FW/requests.log")
tb_ctl acme renew --force >/dev/null
pb_st_wait 'e["cert"] == "ari.test" and not e["ok"]' 30
ok $? "an order that turns invalid fails the attempt"
is "$(pb_st_get 'e["step"], e.get("problem_type"), e.get("detail")')" \
    "('order', 'tlsbox:invalid', 'order is invalid')" \
    "the failure recorded is the invalid order, not the refused replaces"
is "$(new_orders_after "$mark")" "newOrder+replaces 409,newOrder 201" \
    "after the 409 the order without replaces was placed"
is "$(pb_served_serial ari.test)" "$s2" "the certificate served is still the last one"
unlike "$(cat "$TB_TMP/daemon.log" "$FW/requests.log" "$FW/replaces.log")" "PRIVATE KEY" \
    "no private key in the daemon log or the front's logs"
tb_stop_daemon
ok $? "daemon stops promptly"
done_testing
