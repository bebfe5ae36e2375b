#!/bin/bash
# tlsboxd --set, when tlsboxd then does not start for a reason that is no
# plugin's: the store is left as it was (tlsboxd(8): "When tlsboxd does not
# start ..., the values given are undone too.  Either way the store is left
# as it was").  Before, only a failed plugin's own keys were undone: a
# control socket path taken by a file, a service user that does not exist
# (--set core.user=NAME as root, which then failed every later start), or a
# site port held with another plugin's key beside it kept the --set values.
. "$(dirname "$0")/lib.sh"
tb_setup

# tb_start_daemon, then stopped: a store with known values.
tb_start_daemon --set site.https_port="$(tb_free_port)" --set site.http_port=0 \
    --set site.root="$TB_TMP"
ok $? "tlsboxd starts"
tb_stop_daemon
ok $? "and stops"

settings() { sqlite3 "$TB_STATE/tlsbox.db" "SELECT key || '=' || value FROM settings ORDER BY key"; }
before=$(settings)
changes=$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM settings_changes")

# fails ARGS...: tlsboxd on $TB_STATE that must not start; its log in $log.
fails() {
    timeout 30 "$TB_TLSBOXD" --state-dir "$TB_STATE" --plugin-dir "$TB_PLUGINS" --foreground \
        --set admin.port="$TB_ADMIN_PORT" --data-dir "$top_builddir/build-data" "$@" \
        >"$TB_TMP/fail.log" 2>&1
    rc=$?
    log=$(cat "$TB_TMP/fail.log")
}

# 1. The control socket's path holds a file.
: >"$TB_TMP/not-a-socket"
fails --control-socket "$TB_TMP/not-a-socket" --set site.workers=3 --set dhparam.rotate_days=9
is "$rc" 1 "a control socket path holding a file: tlsboxd does not start (status 1)"
like "$log" "not a socket is there" "and says why"
is "$(settings)" "$before" "the --set values are not kept in the store"
like "$log" "tlsboxd --set: tlsboxd is not starting: the values given to .*site.workers.* undone" \
    "the log says they were undone"

# 2. A site port held by another process, and a key of another plugin.
held=$(tb_free_port)
tb_bg python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(); time.sleep(60)' "$held"
for _ in $(seq 1 50); do
    ss -ltn "sport = :$held" | grep -q LISTEN && break
    sleep 0.1
done
fails --set site.https_port="$held" --set dhparam.rotate_days=9 --set core.log_level=debug
is "$rc" 1 "a site port held by another process: tlsboxd does not start (status 1)"
like "$log" "held by another process.*not starting" "and says why"
is "$(settings)" "$before" "neither the site's nor another plugin's nor the core's --set value is kept"
kill "$TB_BG_PID" 2>/dev/null

# 3. As root: a service user that does not exist.
if [ "$(id -u)" -eq 0 ]; then
    fails --set core.user=tlsbox-no-such-user --set site.workers=3
    is "$rc" 1 "core.user naming no user: tlsboxd does not start (status 1)"
    like "$log" "no such user" "and says why"
    is "$(settings)" "$before" "core.user is not kept: the next start is not refused the same way"
else
    for _ in 1 2 3; do ok 0 "# SKIP core.user needs root"; done
fi

# The settings history tells: the undos are changes of their own.
like "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM settings_changes WHERE id > $changes AND actor = 'tlsboxd --set undone'")" \
    "^[1-9]" "the settings history records the undos"

# And the store starts as before.
tb_start_daemon
ok $? "tlsboxd starts again on that store without --set"
is "$(tb_ctl get site.workers) $(tb_ctl get dhparam.rotate_days)" "0 30" "with the values stored before"
tb_stop_daemon
ok $? "and stops"

done_testing
