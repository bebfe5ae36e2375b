#!/bin/bash
# README's first quick-start command, run as a user runs it and checked as a
# user would: packaging/demo.sh installs what is missing, builds (reusing
# _build/default when tests/run-all.sh has built it) and runs the appliance
# in demo mode; the page verifies against the root `tlsboxctl cert root`
# prints, HTTP redirects, the admin UI answers, Ctrl-C stops it cleanly and
# a second start keeps the same CA.  The demo binds its fixed ports (8443,
# 8080, 9443) on every address, so it runs in a network namespace of its
# own: there they are loopback only, and free whatever else runs here.
# TAP output; tests/run-all.sh counts it.
#   tests/quick_start.sh
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
top_builddir=$top/_build/default
# The program under test is demo.sh, which builds tlsboxd when it is not
# built yet (tb_setup wants the program to exist).
TB_TLSBOXD=$top/packaging/demo.sh
. "$top/tests/integration/lib.sh"

[ "$(id -u)" = 0 ] || bail "the quick start is for root (it installs packages)"
tb_setup
ns=tlsbox-qs-$$
ip netns add "$ns" || bail "cannot create network namespace $ns"
ip netns exec "$ns" ip link set lo up
qs_cleanup() {
    local rc=$?
    ip netns del "$ns" 2>/dev/null
    (exit "$rc")
    _tb_cleanup
}
trap qs_cleanup EXIT
in_ns() { ip netns exec "$ns" "$@"; }
log=$TB_TMP/daemon.log

# demo_start [STATE]: packaging/demo.sh on $TB_STATE (or STATE), backgrounded; waits until it
# is ready or gone, at most 5 minutes (a build from nothing on 2 cores).
# TB_PID is the daemon's pid: ip execs demo.sh, which execs tlsboxd (not
# through in_ns: a function in the background runs in a subshell).
demo_start() {
    [ -z "$TB_PID" ] || return 1 # the last one never stopped
    : >"$log"
    ip netns exec "$ns" "$top/packaging/demo.sh" "${1:-$TB_STATE}" >>"$log" 2>&1 &
    TB_PID=$!
    for _ in $(seq 1 1500); do
        grep -q 'tlsboxd .* ready' "$log" && return 0
        kill -0 "$TB_PID" 2>/dev/null || return 1
        sleep 0.2
    done
    return 1
}

# demo_interrupt: Ctrl-C (SIGINT, as the terminal sends it); sets stopped
# to the exit status, or to "running" when it has not stopped within 15 s
# (then it stays TB_PID, killed at exit).
demo_interrupt() {
    tb_stop_daemon INT 15
    stopped=${TB_PID:+running}
    stopped=${stopped:-$TB_EXIT}
}

demo_start
ok $? "packaging/demo.sh builds and starts the appliance (log says ready)"
like "$(head -c 4000 "$log")" "tlsbox demo: https://localhost:8443/" "it says where the demo is"

"$TB_TLSBOXCTL" --state-dir "$TB_STATE" cert root >"$TB_TMP/root.pem"
is "$?:$(head -n 1 "$TB_TMP/root.pem")" "0:-----BEGIN CERTIFICATE-----" "tlsboxctl cert root prints the CA to trust"

got=$(in_ns curl -sS --cacert "$TB_TMP/root.pem" -o "$TB_TMP/page.html" \
    -w '%{http_code} %{http_version}' https://localhost:8443/ 2>&1)
is "$got" "200 2" "https://localhost:8443/ verifies against that root and answers over HTTP/2"
cmp -s "$TB_TMP/page.html" "$top/plugins/site/www/index.html"
ok $? "it serves the sample page"

got=$(in_ns curl -sS -o /dev/null -w '%{http_code} %{redirect_url}' \
    'http://localhost:8080/docs/a.html?q=1' 2>&1)
is "$got" "301 https://localhost:8443/docs/a.html?q=1" "HTTP on 8080 redirects to the same URL over HTTPS"

got=$(in_ns curl -sS --cacert "$TB_TMP/root.pem" -o "$TB_TMP/admin.html" -w '%{http_code}' \
    https://localhost:9443/ 2>&1)
is "$got:$(grep -o '<title>[^<]*</title>' "$TB_TMP/admin.html")" "200:<title>tlsbox</title>" \
    "the admin web UI answers on https://localhost:9443/ with the same CA"

got=$("$TB_TLSBOXCTL" --state-dir "$TB_STATE" status 2>&1)
like "$got" "plugin site +running" "tlsboxctl status shows the site running"

# The quick start's output is the demo's banner and the daemon's log: no
# line from a tool that went wrong (configure's "rm: cannot remove 'core'",
# a build error) and no error from the daemon.
unlike "$(cat "$log")" "^rm: |[Ee]rror|ERROR" "demo.sh prints no error"

demo_interrupt
is "$stopped" "0" "Ctrl-C stops it, exit status 0"
like "$(tail -n 5 "$log")" "core: stopped" "it says it stopped"

demo_start
ok $? "started again on the same state directory, it is ready"
"$TB_TLSBOXCTL" --state-dir "$TB_STATE" cert root >"$TB_TMP/root2.pem"
cmp -s "$TB_TMP/root.pem" "$TB_TMP/root2.pem"
ok $? "the CA is the same: the trust the user gave it still holds"
got=$(in_ns curl -sS --cacert "$TB_TMP/root.pem" -o /dev/null -w '%{http_code}' https://localhost:8443/ 2>&1)
is "$got" "200" "the page verifies against the first root after the restart"
demo_interrupt
is "$stopped" "0" "Ctrl-C stops it again, exit status 0"

# A relative STATE_DIR names a directory where demo.sh is run from.
cd "$TB_TMP" || bail "cannot enter $TB_TMP"
demo_start rel-state
ok $? "started as packaging/demo.sh rel-state from $TB_TMP, it is ready"
cd "$top" || bail "cannot enter $top"
is "$(stat -c %a "$TB_TMP/rel-state/tlsbox.db" 2>&1)" 600 "its store is $TB_TMP/rel-state/tlsbox.db"
like "$(head -c 4000 "$log")" "tlsboxctl --state-dir $TB_TMP/rel-state status" \
    "the status line it prints names that directory"
got=$("$TB_TLSBOXCTL" --state-dir "$TB_TMP/rel-state" status 2>&1)
like "$got" "plugin site +running" "and tlsboxctl reaches the demo there"
demo_interrupt
is "$stopped" "0" "Ctrl-C stops it, exit status 0"

done_testing
