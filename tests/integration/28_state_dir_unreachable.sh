#!/bin/bash
# Started as root, tlsboxd opens its store as the service user (tlsbox) once
# it has dropped root.  A state directory below a directory that user may
# not pass through (a home directory: 0700 on Debian 12) used to give a
# tlsboxd that said "ready" and then refused every change ("cannot open the
# store").  What a user checks: it refuses to start (exit 1), says which
# directory is in the way, its mode and owner, and what to do, and writes
# nothing there; let through, the same command starts and stores settings.
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then
    echo "1..0 # SKIP tlsboxd drops root only when started as root"
    exit 0
fi
id tlsbox >/dev/null 2>&1 || bail "no tlsbox user (adduser --system --group tlsbox)"
tb_setup

home="$TB_TMP/home"
mkdir -m 0700 "$home"
TB_STATE="$home/tlsbox"
args=(--state-dir "$TB_STATE" --plugin-dir "$TB_PLUGINS" --foreground
    --set admin.port="$(tb_free_port)" --set admin.bind=127.0.0.1
    --set site.https_port="$(tb_free_port)" --set site.http_port=0 --set site.bind=127.0.0.1)

# run_until_ready_or_exit: tlsboxd in the background; $rc is its exit status,
# or "running" once it says ready (then it is stopped).
run_until_ready_or_exit() {
    "$TB_TLSBOXD" "${args[@]}" >"$TB_TMP/out" 2>&1 &
    local pid=$!
    rc=running
    for _ in $(seq 1 200); do
        if ! kill -0 "$pid" 2>/dev/null; then
            wait "$pid"
            rc=$?
            return
        fi
        grep -q " ready (state " "$TB_TMP/out" && break
        sleep 0.1
    done
    TB_PID=$pid tb_stop_daemon
}

run_until_ready_or_exit
is "$rc" 1 "a state directory the service user cannot reach: tlsboxd exits 1"
like "$(cat "$TB_TMP/out")" \
    "$TB_STATE: the service user 'tlsbox' cannot reach the store there: it may not pass through $home \\(mode 700, owner root\\).*chmod o\\+x $home.*--state-dir" \
    "naming the directory in the way, its mode and owner, and what to do"
is "$(ls -A "$home")" "" "and nothing is written there"

# Relative to the working directory, the same.
args[1]=tlsbox
(cd "$home" && run_until_ready_or_exit && echo "$rc") >"$TB_TMP/rel"
is "$(cat "$TB_TMP/rel")" 1 "a relative --state-dir under it: exit 1 too"
args[1]=$TB_STATE

chmod 0711 "$home"
tb_start_daemon || bail "tlsboxd did not start once let through"
ok 0 "let through (chmod o+x), the same state directory serves"
tb_ctl set notify.retry_seconds 77 >/dev/null
is "$?" 0 "and a setting is stored"
is "$(tb_ctl get notify.retry_seconds)" 77 "and reads back"
tb_stop_daemon
ok $? "stops"

done_testing
