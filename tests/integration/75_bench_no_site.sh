#!/bin/bash
# bench without the site plugin (core.plugins_disabled=site): nothing of the
# box serves the local site.  The daemon log says why runs on it cannot be
# checked against the running site (GET site/limits has no route); a run on
# the local site is refused up front, naming why, and nothing is stored; a
# run by url to a peer that serves (nginx on loopback) still runs.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
. "$top_srcdir/plugins/bench/tests/bench_itest.sh"
tb_setup
command -v nginx >/dev/null || bail "nginx is not installed (packaging/install-deps.sh)"
site_www
# Stored site ports that nothing serves: the stored settings alone would
# send a run there.
P_HTTPS=$(tb_free_port)
P_HTTP=$(tb_free_port)
tb_start_daemon --set core.plugins_disabled=site --set site.https_port="$P_HTTPS" \
    --set site.http_port="$P_HTTP" --set site.root="$TB_TMP/www"
ok $? "tlsboxd starts with the site plugin disabled"
is "$(site_api GET plugins | jq -r '[.[] | select(.name == "site" or .name == "bench") |
    "\(.name)=\(.state)"] | sort | join(" ")')" "bench=running site=disabled" \
    "bench runs, site is disabled"

# 1. The log names the fallback and its reason, once bench looked (a run).
n0=$(site_api GET bench/runs | jq length)
db_n0=$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM bench_runs")
out=$(tb_ctl bench run -s h2 -c 2 -n 20 2>&1)
rc=$?
is "$(grep -c 'WARN.*GET site/limits: no such route (the site plugin is not loaded): runs on the local site are refused, runs by url go ahead' "$TB_TMP/daemon.log")" \
    1 "the daemon log has the WARN line naming the missing site plugin, once"

# 2. A run on the local site is refused up front, saying what and where.
is "$rc" 1 "a run on the local site exits 1"
like "$out" "the local site is not served: the site plugin is not loaded" \
    "the message says the local site is not served and why"
like "$out" "give a url" "and what to do instead"
is "$(site_api GET bench/runs | jq length)" "$n0" "no run stored (API: $n0 before and after)"
is "$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM bench_runs")" "$db_n0" \
    "no row in bench_runs ($db_n0 before and after)"
is "$(site_api GET bench/status | jq -r .running)" false "no job is running"
out=$(tb_ctl bench run -s http -c 2 -n 20 2>&1)
like "$out" "the local site is not served: the site plugin is not loaded" \
    "a plain-HTTP run on the local site is refused the same way"

# 3. A run by url to a peer that serves still runs.
bench_peer_prepare
ok $? "a P-256 certificate for the peer"
start_nginx
ok $? "nginx serves on port $NGINX_PORT"
run=$(bench_ctl_run -s h2 -c 2 -n 40 --url "https://localhost:$NGINX_PORT/f16k.txt")
is "$(jq -r '.results[0].result | "\(.complete) \(.failed) \(.status."2xx") \(.tls.alpn)"' <<<"$run")" \
    "40 0 40 h2" "a run by url to nginx: 40 complete, 0 failed, 40 answered 200, over h2"
is "$(site_api GET bench/runs | jq length)" "$((n0 + 1))" "that run is stored: one more run"
tb_stop_daemon
ok $? "tlsboxd stops"
done_testing
