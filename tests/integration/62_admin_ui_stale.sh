#!/bin/bash
# The admin web UI after a change, in headless Chromium
# (tests/ui/admin_ui_stale.py): a saved secret is not sent again by the
# next Save.
. "$(dirname "$0")/lib.sh"
tb_setup
tb_need_browser

tb_start_ui_daemon || bail "daemon did not start"
tb_ui_run admin_ui_stale.py 240 6
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
