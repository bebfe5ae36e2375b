#!/bin/bash
# The admin web UI open in headless Chromium while tlsboxd is upgraded
# (tests/ui/admin_ui_upgrade.py): the web UI installed from a copy, which
# gets a new shared module and a page using it, then the daemon restarts;
# the page opened next must be the new version's, not fail on the old
# shared module the open document still holds.
. "$(dirname "$0")/lib.sh"
tb_setup
tb_need_browser

export TB_DATA_DIR="$TB_TMP/data"
mkdir -p "$TB_DATA_DIR"
cp -r "$top_srcdir/webui" "$TB_DATA_DIR/webui"
ln -s "$top_srcdir/plugins/site/www" "$TB_DATA_DIR/www"
SITE_PORT=$(tb_free_port)
ARGS=(--demo --set site.https_port="$SITE_PORT" --set site.http_port=0 --set admin.pbkdf2_iterations=10000)
tb_start_daemon "${ARGS[@]}" || bail "daemon did not start"
export HOME="$TB_TMP/home"
mkdir -p "$HOME" "$TB_TMP/art"

PHASE="$TB_TMP/phase"
ADMIN_URL="https://127.0.0.1:$TB_ADMIN_PORT" SITE_PORT="$SITE_PORT" TLSBOXCTL="$TB_TLSBOXCTL" \
    TB_STATE="$TB_STATE" UI_ARTIFACTS="$TB_TMP/art" UI_PHASE="$PHASE" \
    tb_bg timeout 240 /usr/bin/python3 "$top_srcdir/tests/ui/admin_ui_upgrade.py" >"$TB_TMP/ui.out" 2>"$TB_TMP/ui.err"
UI=$TB_BG_PID
for _ in $(seq 1 600); do
    [ -e "$PHASE.ready" ] && break
    kill -0 "$UI" 2>/dev/null || break
    sleep 0.2
done
# The new version: ui.js exports something new, the audit page uses it.
W="$TB_DATA_DIR/webui/js"
echo 'export const uiVersion = "2";' >>"$W/ui.js"
sed -i -e 's|^import { el, status, when } from "../ui.js";|import { el, status, uiVersion, when } from "../ui.js";|' \
    -e 's|^  const body = el("tbody", { id: "audit-rows" });|  const body = el("tbody", { id: "audit-rows", "data-ui": uiVersion });|' "$W/pages/audit.js"
is "$(grep -c uiVersion "$W/pages/audit.js")" 2 "the new version's audit page uses the new export"
tb_stop_daemon
ok $? "the old daemon stops"
tb_start_daemon "${ARGS[@]}"
ok $? "the new one starts on the same state and port"
touch "$PHASE.go"
wait "$UI"
tb_ui_results "$TB_TMP/ui.out" $? "$TB_TMP/ui.err" 4
tb_stop_daemon
ok $? "daemon stops cleanly"
done_testing
