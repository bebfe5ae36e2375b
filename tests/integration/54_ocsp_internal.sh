#!/bin/bash
# The internal CA staples too, with no network: the daemon runs in a network
# namespace that has nothing but lo; its leaf names an OCSP URL, the core
# signs the leaf's OCSP answer with the internal root, openssl s_client and
# gnutls-cli --ocsp (which checks the staple's signature) see it on the first
# connection, and again on the first connection after a restart.
. "$(dirname "$0")/lib.sh"
tb_setup

NS="tbocspi$$"
ip netns add "$NS" || bail "cannot create network namespace (root needed)"
ip netns exec "$NS" ip link set lo up
trap '_rc=$?; ip netns del "$NS" 2>/dev/null; (exit $_rc); _tb_cleanup' EXIT
printf '#!/bin/sh\nexec ip netns exec %s %s "$@"\n' "$NS" "$TB_TLSBOXD" >"$TB_TMP/tlsboxd-netns"
chmod +x "$TB_TMP/tlsboxd-netns"
TB_TLSBOXD="$TB_TMP/tlsboxd-netns"

links=$(ip netns exec "$NS" ip -o link show | awk -F': ' '{print $2}' | tr '\n' ' ')
is "$links" "lo " "the daemon's namespace has no interface but lo"

P=$(tb_free_port)
H=$(tb_free_port)
tb_start_daemon --set site.https_port="$P" --set site.http_port="$H" --set core.hostname=box.test ||
    bail "tlsboxd did not start"
tb_ctl cert root >"$TB_TMP/root.pem"
sc() {
    ip netns exec "$NS" timeout 10 openssl s_client -connect "127.0.0.1:$P" -servername box.test \
        -CAfile "$TB_TMP/root.pem" -status "$@" </dev/null 2>&1
}
gc() {
    ip netns exec "$NS" timeout 10 gnutls-cli --ocsp --x509cafile "$TB_TMP/root.pem" --port "$P" \
        --sni-hostname box.test --verify-hostname box.test 127.0.0.1 </dev/null 2>&1
}
st() {
    tb_ctl --json ocsp status internal | /usr/bin/python3 -c \
        'import json,sys; v=json.load(sys.stdin).get(sys.argv[1]); print(str(v).lower() if isinstance(v,bool) else v)' "$1"
}
for i in $(seq 1 50); do [ "$(st stapled)" = true ] && break; sleep 0.2; done
is "$(st stapled)" true "the internal leaf is stapled"
is "$(st status)" good "status good"
is "$(st responder)" internal "answered by the core's internal CA"
is "$(st failures)" 0 "no failure"
nu=$(st next_update)
tu=$(st this_update)
is "$((nu - tu))" $((4 * 86400 + 300)) "valid four days (from five minutes back)"

out=$(sc)
like "$out" "Verify return code: 0 \(ok\)" "s_client verifies the leaf against the internal root"
like "$out" "OCSP Response Status: successful" "s_client: successful"
like "$out" "Cert Status: good" "s_client: good"
uri=$(printf '%s\n' "$out" | openssl x509 -noout -ocsp_uri 2>/dev/null)
is "$uri" "http://box.test/.well-known/tlsbox-ocsp" "the leaf names its OCSP URL"
g=$(gc)
like "$g" "Options: OCSP status request" "gnutls-cli --ocsp checked the staple against the root"
like "$g" "Status: The certificate is trusted" "gnutls-cli: trusted"

# The OCSP URL answers too (site HTTP port, RFC 6960 GET form), for clients
# that ask the responder themselves.
printf '%s\n' "$out" | openssl x509 >"$TB_TMP/leaf.pem"
openssl ocsp -issuer "$TB_TMP/root.pem" -cert "$TB_TMP/leaf.pem" -no_nonce \
    -reqout "$TB_TMP/req.der" >/dev/null 2>&1
req=$(base64 -w0 "$TB_TMP/req.der" | sed 's|+|%2B|g; s|/|%2F|g; s|=|%3D|g')
code=$(ip netns exec "$NS" curl -s -o "$TB_TMP/resp.der" -w '%{http_code}' \
    "http://127.0.0.1:$H/.well-known/tlsbox-ocsp/$req")
is "$code" 200 "GET on the leaf's OCSP URL path: 200"
v=$(openssl ocsp -respin "$TB_TMP/resp.der" -issuer "$TB_TMP/root.pem" -cert "$TB_TMP/leaf.pem" \
    -CAfile "$TB_TMP/root.pem" 2>&1)
like "$v" "Response verify OK" "openssl ocsp verifies that answer against the internal root"
like "$v" "leaf.pem: good" "and it says good"
# The POST form, as `openssl ocsp -url` (and Firefox) ask a responder.
v=$(ip netns exec "$NS" timeout 10 openssl ocsp -url "http://127.0.0.1:$H/.well-known/tlsbox-ocsp" \
    -issuer "$TB_TMP/root.pem" -cert "$TB_TMP/leaf.pem" -CAfile "$TB_TMP/root.pem" -no_nonce 2>&1)
like "$v" "Response verify OK" "openssl ocsp -url (POST) gets an answer that verifies"
like "$v" "leaf.pem: good" "and it says good"

tb_stop_daemon
ok $? "daemon stops"
tb_start_daemon --set site.https_port="$P" --set site.http_port="$H" || bail "no restart"
out=$(sc)
like "$out" "Cert Status: good" "first connection after the restart is stapled"
for i in $(seq 1 25); do
    code=$(ip netns exec "$NS" curl -s -o "$TB_TMP/resp2.der" -w '%{http_code}' \
        "http://127.0.0.1:$H/.well-known/tlsbox-ocsp/$req")
    [ "$code" = 200 ] && break
    sleep 0.2
done
is "$code" 200 "the OCSP URL answers after the restart too"
cmp -s "$TB_TMP/resp.der" "$TB_TMP/resp2.der"
ok $? "with the stored answer (no new signature needed)"
tb_stop_daemon
done_testing
