#!/bin/bash
# A run on this box's own site is checked against the limits the running
# site enforces (GET site/limits), not the stored settings: the site reads
# site.max_connections at start only, a port below 1024 waits for a restart,
# and the open file limit may leave room for fewer connections.  So a run
# the site would cut short is refused naming the limit in effect and the
# stored one, and a run the site takes is not refused for a stored value it
# does not enforce yet.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
. "$top_srcdir/plugins/bench/tests/bench_itest.sh"
tb_setup
site_www
bench_start --set site.max_connections=8
ok $? "tlsboxd serves the site on port $P_HTTPS with site.max_connections 8"

# limits_is JQ WANT WHAT: GET site/limits, through jq, is WANT.
limits_is() {
    is "$(site_api GET site/limits | jq -r "$1")" "$2" "$3"
}
limits_is '[.https_port, .http_port, .max_connections, .max_connections_setting,
    .max_connections_per_ip] | @tsv' "$P_HTTPS	$P_HTTP	8	8	256" \
    "site/limits: the ports served, 8 connections in all, 256 per address"
limits_is '.open_files_budget >= 8' true "the open file limit leaves room for them"

# Stored higher than in effect: a run between the two is refused, naming both.
out=$(tb_ctl set site.max_connections 20 2>&1)
is "$?" 0 "site.max_connections 20 stored ($out)"
limits_is .max_connections 8 "the running site still takes 8 (it reads the setting at start)"
out=$(tb_ctl bench run -s h2 -c 12 -n 24 2>&1)
is "$?" 1 "a run of 12 connections (8 in effect, 20 stored) is refused"
like "$out" "concurrency 12 exceeds site\.max_connections 8 in effect \(20 stored, applied when tlsboxd restarts\): .* restart tlsboxd to apply the stored 20" \
    "the message names 8 in effect, 20 stored, and the restart"
out=$(tb_ctl bench run -s http -c 12 -n 24 --url "http://localhost:$P_HTTP/f16k.txt" 2>&1)
like "$out" "concurrency 12 exceeds site\.max_connections 8 in effect" \
    "so is one by url to the site's plain port"
out=$(tb_ctl bench run -s h2 -c 30 -n 60 2>&1)
like "$out" "concurrency 30 exceeds site\.max_connections 8 in effect \(20 stored.*tlsboxctl set site\.max_connections 30 \(it takes effect when tlsboxd restarts\)" \
    "past the stored 20 too: raise it, then restart"

# Stored lower than in effect: a run within what the site takes runs.
tb_ctl set site.max_connections 4 >/dev/null
run=$(bench_ctl_run -s h2 -c 6 -n 60 --path /f16k.txt)
is "$(jq -r '.results[0].result | "\(.complete) \(.failed) \(.connections)"' <<<"$run")" "60 0 6" \
    "6 connections (4 stored, 8 in effect) run: 60 complete, 0 failed"

# site.max_connections_per_ip is live: in effect once tlsboxctl set returns.
tb_ctl set site.max_connections_per_ip 5 >/dev/null
limits_is .max_connections_per_ip 5 "site/limits: 5 per address right after the change"
out=$(tb_ctl bench run -s h1 -c 6 -n 60 2>&1)
like "$out" "concurrency 6 exceeds site\.max_connections_per_ip 5 in effect: .*tlsboxctl set site\.max_connections_per_ip 6$" \
    "6 connections at 5 per address refused"
tb_ctl set site.max_connections_per_ip 256 >/dev/null

n_runs=1
# A port below 1024 stored for the next start: the run goes where the site
# serves, not to the stored port (tlsboxd started as root can open it later).
if [ "$(id -u)" = 0 ]; then
    low=$(tb_free_low_port)
    out=$(tb_ctl set site.http_port "$low" 2>&1)
    like "$out" "takes effect when tlsboxd restarts" "site.http_port $low stored for the next start"
    limits_is .http_port "$P_HTTP" "site/limits: the plain port served is still $P_HTTP"
    run=$(bench_ctl_run -s http -c 2 -n 20 --path /f16k.txt)
    is "$(jq -r '.results[0].result | "\(.complete) \(.failed) \(.status."3xx")"' <<<"$run")" \
        "20 0 20" "a run on the local site loads port $P_HTTP: 20 answered by its 301"
    like "$(jq -r .results[0].result.options.url <<<"$run")" "^http://127\.0\.0\.1:$P_HTTP/" "its url names $P_HTTP"
    tb_ctl set site.http_port "$P_HTTP" >/dev/null
    n_runs=2
else
    ok 0 "# SKIP a port below 1024 needs tlsboxd started as root"
fi
is "$(site_api GET bench/runs | jq length)" "$n_runs" "nothing refused was stored"
tb_stop_daemon
ok $? "tlsboxd stops"

# Restarted with an open file limit of 400: the site keeps 128 descriptors
# for the rest of the daemon, so it takes 272 connections, not 10000.
printf '#!/bin/sh\nulimit -n 400\nexec "%s" "$@"\n' "$TB_TLSBOXD" >"$TB_TMP/tlsboxd-nofile"
chmod +x "$TB_TMP/tlsboxd-nofile"
TB_TLSBOXD="$TB_TMP/tlsboxd-nofile"
tb_start_daemon --set site.max_connections=10000
ok $? "restarted with site.max_connections 10000 and 400 open files"
limits_is '[.max_connections, .max_connections_setting, .open_files_budget] | @tsv' \
    "272	10000	272" "site/limits: 272 connections in effect (the open file limit), 10000 set"
tb_stop_daemon
ok $? "tlsboxd stops"
done_testing
