#!/bin/bash
# The admin web UI after a change, in headless Chromium
# (tests/ui/admin_ui_stale.py): a saved secret is not sent again by the
# next Save; a plugin's Disable/Enable starts from core.plugins_disabled as
# stored now, keeping what the core's form or tlsboxctl changed meanwhile;
# a Log out that never reached the box does not show the login form.
. "$(dirname "$0")/lib.sh"
tb_setup
tb_need_browser

tb_start_ui_daemon || bail "daemon did not start"
tb_ui_run admin_ui_stale.py 240 18
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
