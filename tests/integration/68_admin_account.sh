#!/bin/bash
# The admin web UI's account page (tests/ui/account_ui.py) in headless
# Chromium: the password changed from the browser alone, refusals in place
# that change nothing, the session's end said on the login form; two-factor
# login turned on, used and turned off; then, from the store: one audit row
# for the password change, by admin from the browser's address, and neither
# password in the audit log.
. "$(dirname "$0")/lib.sh"
tb_setup
tb_need_browser

tb_start_ui_daemon || bail "daemon did not start"
tb_ui_run account_ui.py 240 34

db="$TB_STATE/tlsbox.db"
is "$(sqlite3 "$db" "SELECT actor || ' ' || action || ' ' || target || ' ' || source FROM audit
    WHERE action LIKE 'PUT%' AND target LIKE '%password%'")" \
    "admin PUT admin/password admin/password 127.0.0.1" \
    "one audit row: admin changed the password, from 127.0.0.1"
is "$(sqlite3 "$db" "SELECT count(*) FROM audit WHERE action = 'login.failed'")" 2 \
    "two failed logins counted: the wrong current password, the old one after the change"
is "$(sqlite3 "$db" "SELECT count(*) FROM audit
    WHERE coalesce(detail, '') || coalesce(before_state, '') || coalesce(after_state, '')
    LIKE '%ui password%'")" 0 "neither password is in the audit log"
is "$(grep -c 'ui password' "$TB_TMP/daemon.log")" 0 "nor in the daemon's log"
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
