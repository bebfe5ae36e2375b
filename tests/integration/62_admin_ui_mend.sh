#!/bin/bash
# A site that could not start (site.bind names an address this machine does
# not have, as after an address change) is mended from the web UI in
# headless Chromium (tests/ui/admin_ui_mend.py): the Plugins page says why it
# failed, and saving a bind address it has starts it without a restart;
# its card's Disable and Enable stop and start it at once; the Recent
# settings changes card lists those changes and undoes one with a click.
. "$(dirname "$0")/lib.sh"
tb_setup
tb_need_browser

tb_start_ui_daemon || bail "daemon did not start"
tb_stop_daemon
sqlite3 "$TB_STATE/tlsbox.db" \
    "INSERT INTO settings (key, value, updated_at) VALUES ('site.bind', '192.0.2.1', 0)"
tb_start_daemon --demo || bail "daemon did not start again"
is "$(curl -s --unix-socket "$TB_STATE/control.sock" http://x/api/v1/plugins |
    jq -r '.[] | select(.name == "site") | .state')" failed "the site failed to start, as set up"
tb_ui_run admin_ui_mend.py 240 42
like "$(cat "$TB_TMP/daemon.log")" "plugin site: starting again \\(its settings changed\\)" \
    "the log says the site was started again"
is "$(grep -o 'plugin site stopped: core.plugins_disabled names it now\|plugin site: starting (core.plugins_disabled no longer names it)' \
    "$TB_TMP/daemon.log" | tr '\n' ';')" \
    "plugin site stopped: core.plugins_disabled names it now;plugin site: starting (core.plugins_disabled no longer names it);" \
    "the log says it was stopped, then started, by core.plugins_disabled"
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
