#!/bin/bash
# The admin web UI in headless Chromium (Debian packages chromium,
# chromium-driver, python3-selenium; run with /usr/bin/python3, which can
# import them): first run with the one-time token, the modern preset applied
# then rolled back (checked with openssl s_client -tls1_2 against the site),
# the dashboard's charts moving under h2load, admin.metrics_token set and set
# empty again from its form (/metrics on, then off), a settings form refusing an
# out-of-range value by the field, "Older entries" of the audit log double-clicked,
# phone width and keyboard use; the ocsp and
# dhparam plugins' pages checked against tlsboxctl ocsp/dh status (with a
# revoked must-staple certificate from a real openssl ocsp responder), and the
# bench plugin's page checked against tlsboxctl bench show/compare.  Full-page
# screenshots of every page and page-weight.txt go to
# $top_builddir/tests/artifacts/admin-ui/.
. "$(dirname "$0")/lib.sh"
tb_setup
tb_need_browser
command -v h2load >/dev/null || bail "h2load missing: run packaging/install-deps.sh"

# A must-staple certificate its responder (the real openssl ocsp) says is
# revoked, for the OCSP page.
. "$(dirname "$0")/ocsp_lib.sh"
oc_make_ca || bail "test CA"
oc_make_leaf revoked.test 30 "tlsfeature=status_request" || bail "must-staple leaf"
oc_start_responder || bail "OCSP responder"
oc_revoke revoked.test || bail "revoking the leaf at the responder"

tb_start_ui_daemon || bail "daemon did not start"
tb_ctl cert import --cert "$OC/revoked.test.pem" --chain "$OC/inter.pem" \
    --key "$OC/revoked.test.key" --name revoked.test >/dev/null || bail "importing revoked.test"
oc_wait_status revoked.test status revoked 20 || bail "the OCSP plugin did not see revoked.test revoked"
UI_ART="$top_builddir/tests/artifacts/admin-ui"
rm -rf "$UI_ART"
tb_ui_run admin_ui.py 300 52 OCSP_REVOKED=revoked.test
shots=$(ls "$UI_ART"/*.png 2>/dev/null | wc -l)
ok $((shots < 16)) "screenshots written ($shots in $UI_ART)"
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
