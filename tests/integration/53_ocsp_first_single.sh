#!/bin/bash
# A good answer that lists the leaf's SingleResponse after another one (a
# responder answering for more certificates than asked, the leaf second):
# GnuTLS staples only a response whose first SingleResponse is for the
# certificate, and drops any other when the bundle loads it.  It must be
# refused before it is stored, so that the status never says "stapled"
# while clients are sent nothing.
. "$(dirname "$0")/lib.sh"
tb_setup
. "$(dirname "$0")/ocsp_lib.sh"

SITE_HTTPS=$(tb_free_port)
SITE_HTTP=$(tb_free_port)
oc_make_ca || bail "test CA"
oc_make_leaf ocsp.test 30 || bail "leaf"
oc_make_leaf other.test 30 || bail "other leaf"
(
    cd "$OC" || exit 1
    set -e
    # One request for both, the other certificate first: openssl answers
    # in the order asked, both good, signed by the issuer.
    openssl ocsp -issuer inter.pem -cert other.test.pem -cert ocsp.test.pem -no_nonce \
        -reqout both.req
    openssl ocsp -index index.txt -CA inter.pem -rsigner inter.pem -rkey inter.key \
        -reqin both.req -respout second.der -ndays 1
) >>"$OC/setup.log" 2>&1 || bail "responses: $(tail -3 "$OC/setup.log")"
oc_start_responder || bail "responder"
cp "$OC/second.der" "$OC/override.der"
oc_start_tlsbox || bail "tlsboxd did not start"
tb_wait_port "$SITE_HTTPS" || bail "site not listening"
tb_ctl cert import --cert "$OC/ocsp.test.pem" --chain "$OC/inter.pem" --key "$OC/ocsp.test.key" \
    --name ocsp.test >/dev/null
ok $? "leaf imported"
for i in $(seq 1 50); do
    [ "$(oc_requests)" -ge 1 ] && [ "$(oc_status ocsp.test fetched_at)" != null ] && break
    sleep 0.2
done
ok "$([ "$(oc_status ocsp.test fetched_at)" != null ] && echo 0 || echo 1)" \
    "the answer with the leaf second was fetched"
sleep 1
served=$(oc_staple ocsp.test)
stapled=$(oc_status ocsp.test stapled)
like "$served" "OCSP response: no response sent" "s_client is sent no staple"
is "$stapled" false "and the status does not say stapled"
like "$(oc_status ocsp.test last_error)" "refused" "the failure is shown"

# The responder's own answer (one SingleResponse) is stapled.
rm -f "$OC/override.der"
tb_ctl ocsp refresh ocsp.test >/dev/null
oc_wait_status ocsp.test stapled true 20
ok $? "a plain good answer is stapled"
like "$(oc_staple ocsp.test)" "Cert Status: good" "and sent"
tb_stop_daemon
ok $? "daemon stops"
done_testing
