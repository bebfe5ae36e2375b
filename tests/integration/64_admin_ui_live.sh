#!/bin/bash
# The admin web UI's live view and session handling in headless Chromium
# (tests/ui/admin_ui_live.py): what a user sees when the session ends while
# the dashboard is open, dashboards in minimized windows, and a change made
# after logging in again in another window; what was typed in a form when
# the session ended there, after logging in again; a handshake longer than
# the latency histogram's last bound on the dashboard.
. "$(dirname "$0")/lib.sh"
tb_setup
tb_need_browser

tb_start_ui_daemon || bail "daemon did not start"
tb_ui_run admin_ui_live.py 240 36
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
