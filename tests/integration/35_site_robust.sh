#!/bin/bash
# The site under stress it cannot avoid: running out of file descriptors
# must not make a worker spin on accept(), and it serves again afterwards.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
tb_setup
site_www
site_start --set site.workers=1
ok $? "tlsboxd serves the site"

# ---- out of file descriptors ------------------------------------------------------------
# Lower the running daemon's limit to a few above what it has open, then hold
# more connections than that.  The kernel completes them (backlog) and keeps
# the listener readable; a worker that retried accept() at once would burn a
# whole core for the 2 s window.
nfd=$(ls /proc/"$TB_PID"/fd | wc -l)
prlimit --pid "$TB_PID" --nofile=$((nfd + 8)):$((nfd + 8))
ok $? "open file limit lowered to $((nfd + 8)) ($nfd open)"
python3 - "$TB_PID" "$P_HTTP" <<'PY' >"$TB_TMP/emfile"
import os, socket, sys, time
pid, port = int(sys.argv[1]), int(sys.argv[2])
tck = os.sysconf("SC_CLK_TCK")
def cpu():
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / tck  # utime + stime
held = []
for i in range(40):
    held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
time.sleep(0.3)
c0, t0 = cpu(), time.monotonic()
time.sleep(2)
print("cpu=%.2f wall=%.2f" % (cpu() - c0, time.monotonic() - t0))
for s in held:
    s.close()
PY
out=$(cat "$TB_TMP/emfile")
cpu=$(echo "$out" | sed -n 's/^cpu=\([0-9.]*\).*/\1/p')
ok "$(echo "${cpu:-99} < 0.5" | bc -l | grep -q 1; echo $?)" \
    "no busy loop while out of descriptors ($out)"
like "$(cat "$TB_TMP/daemon.log")" "accept: Too many open files" "the shortage is logged"
n=$(grep -c "accept: Too many open files" "$TB_TMP/daemon.log")
ok "$([ "$n" -le 4 ]; echo $?)" "at most once a second ($n lines)"
sleep 0.5
code=$(curl -s --cacert "$CA" -o /dev/null -w '%{http_code}' --max-time 5 "$URL/sub/")
is "$code" 200 "serves again once the connections are closed"
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$P_HTTP/")
like "$code" "^30[178]$" "the plain port answers again ($code)"

tb_stop_daemon
ok $? "tlsboxd stops"
done_testing
