#!/bin/bash
# A first user's journey through the admin web UI in headless Chromium
# (tests/ui/journey_ui.py): the demo daemon, the first run with the setup
# token, then one step for each thing such a user met that was wrong (a page
# scrolling sideways on a phone, a menu entry left to a stopped plugin, ...).
. "$(dirname "$0")/lib.sh"
tb_setup
tb_need_browser

tb_start_ui_daemon || bail "daemon did not start"
tb_ui_run journey_ui.py 300 26
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
