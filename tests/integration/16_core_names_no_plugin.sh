#!/bin/bash
# The core names no plugin: tlsboxd's constant data holds no plugin setting
# name and no source-tree path; with no plugin loaded the store holds only
# core tables; demo mode takes its defaults from each plugin's .demo_settings
# and copies the sample site from the data directory (--data-dir points the
# build-tree daemon at build-data/, an installed one finds <prefix>/share/tlsbox).
. "$(dirname "$0")/lib.sh"
tb_setup

# Every setting key of the plugins, from the running daemon.
P1=$(tb_free_port)
P2=$(tb_free_port)
tb_start_daemon --set site.https_port="$P1" --set site.http_port="$P2"
keys=""
for p in $(curl -s --unix-socket "$TB_STATE/control.sock" http://x/api/v1/plugins |
    jq -r '.[].name' | grep -vx core); do
    keys="$keys $(tb_ctl settings "$p" | awk '{print $1}')"
done
tb_stop_daemon
nkeys=$(echo $keys | wc -w)
ok $((nkeys < 20)) "the plugins declare settings ($nkeys keys)"

objcopy -O binary --only-section=.rodata "$TB_TLSBOXD" "$TB_TMP/rodata" &&
    objcopy -O binary --only-section=.data "$TB_TLSBOXD" "$TB_TMP/data"
ok $? "tlsboxd's constant and initialised data extracted"
strings -n 4 "$TB_TMP/rodata" "$TB_TMP/data" >"$TB_TMP/strings"
ok $(($(wc -l <"$TB_TMP/strings") < 100)) "tlsboxd's data has strings ($(wc -l <"$TB_TMP/strings"))"
found=""
for k in $keys; do
    grep -qF -- "$k" "$TB_TMP/strings" && found="$found $k"
done
is "$found" "" "no plugin setting name (plugin.key) in tlsboxd"
# The keys the core used to hard-code for demo mode, even without the prefix.
unlike "$(cat "$TB_TMP/strings")" "https_port|http_port" "nor the site's port keys alone"
srcdir=$(cd "$top_srcdir" && pwd -P)
# Source file names (UBSan/ASan reports and assert() carry them) are not paths
# the daemon reads at run time: only data paths count here.
unlike "$(grep -vE '\.[ch]$' "$TB_TMP/strings")" "$srcdir|plugins/site/www" \
    "no source-tree data path in tlsboxd's data"

# No plugin: only the core's tables.  The old schema's placeholders are
# dropped by the migrations of their plugins: dh_params (tls_dh holds the DH
# parameters the bundle serves), ocsp (tls_staples holds the staple the bundle
# loads) and bench_runs (0006; the bench plugin keeps its own tables).
core_tables="admin_recovery_codes admin_sessions admin_users audit certificates internal_ca
metrics_history plugin_kv plugin_schema policy_versions settings settings_change_items
settings_changes ticket_keys tls_dh tls_staples"
mkdir -p "$TB_TMP/none"
TB_PLUGINS="$TB_TMP/none"
TB_STATE="$TB_TMP/bare"
tb_start_daemon
ok $? "tlsboxd starts with no plugin"
tb_stop_daemon
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT name FROM sqlite_master WHERE type = 'table'
    AND name NOT LIKE 'sqlite_%' ORDER BY name" | tr '\n' ' ')" "$(echo $core_tables) " \
    "the store holds exactly the core's tables"

# Demo mode, site disabled so nothing binds 8443/8080: the defaults are the
# site's .demo_settings.
TB_PLUGINS="$top_builddir/build-plugins"
TB_STATE="$TB_TMP/demo"
tb_start_daemon --demo --data-dir "$top_builddir/build-data" --set core.plugins_disabled=site
ok $? "tlsboxd --demo starts"
is "$(tb_ctl get site.https_port) $(tb_ctl get site.http_port)" "8443 8080" \
    "demo ports come from the site's demo_settings"
is "$(tb_ctl get site.root)" "$TB_STATE/www" "the demo root is \${state_dir}/www, expanded"
cmp -s "$TB_STATE/www/index.html" "$top_srcdir/plugins/site/www/index.html"
ok $? "the sample page was copied from the data directory"
like "$(cat "$TB_TMP/daemon.log")" "demo mode: site.https_port = 8443" "the log says which default"
tb_stop_daemon

# The same store with the site running (ports stored by --set win over the
# demo's): it serves the sample page.
tb_start_daemon --demo --data-dir "$top_builddir/build-data" --set core.plugins_disabled= \
    --set site.https_port="$P1" --set site.http_port="$P2"
body=$(curl -sk --max-time 10 "https://127.0.0.1:$P1/index.html")
is "$body" "$(cat "$top_srcdir/plugins/site/www/index.html")" "the demo site serves the sample page"
tb_stop_daemon

done_testing
