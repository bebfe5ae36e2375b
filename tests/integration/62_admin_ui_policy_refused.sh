#!/bin/bash
# The TLS policy page in headless Chromium (tests/ui/policy_refused_ui.py)
# when the stored policy is one this version refuses: a raw string with
# %NO_SESSION_HASH, written into the store as an older version would have
# left it.  The default serves; the page must load, say so, and replace it.
. "$(dirname "$0")/lib.sh"
tb_setup
tb_need_browser

tb_start_ui_daemon || bail "daemon did not start"
tb_stop_daemon
sqlite3 "$TB_STATE/tlsbox.db" "UPDATE policy_versions SET policy_json =
    json_set(policy_json, '\$.priority_override', 'NORMAL:%NO_SESSION_HASH') WHERE active = 1"
ok $? "the stored policy's raw string set to NORMAL:%NO_SESSION_HASH"
tb_start_ui_daemon || bail "daemon did not start again"
like "$(tb_ctl policy show)" "NOT SERVED: .*NO_SESSION_HASH" "tlsboxd refuses it (policy show)"
tb_ui_run policy_refused_ui.py 180 5
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
