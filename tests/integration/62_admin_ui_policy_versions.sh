#!/bin/bash
# The TLS policy page's version menus in headless Chromium
# (tests/ui/policy_versions_ui.py): a policy whose highest version is
# TLS1.1, stored with tlsboxctl, is shown as it is and kept when the form
# applies another field; TLS1.0 can be chosen as the highest version.  The
# preset menu shows such a policy as custom.
. "$(dirname "$0")/lib.sh"
tb_setup
tb_need_browser

tb_start_ui_daemon || bail "daemon did not start"
tb_ctl policy preset compat >/dev/null
ok $? "tlsboxctl policy preset compat"
tb_ctl policy set max_version TLS1.1 >/dev/null
ok $? "tlsboxctl policy set max_version TLS1.1 (compat's CBC suites serve it)"
tb_ui_run policy_versions_ui.py 180 12
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
