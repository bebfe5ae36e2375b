#!/bin/bash
# tlsboxctl bench show lists every status bucket a result counted: a real
# run against nginx over h2 answering ":status 600" (no class of 1xx-5xx,
# counted as "other") shows "other N".  It used to list 2xx-5xx only, so
# those answers were nowhere and the classes shown did not add up to
# "complete".
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
. "$top_srcdir/plugins/bench/tests/bench_itest.sh"
tb_setup
command -v nginx >/dev/null || bail "nginx is not installed (packaging/install-deps.sh)"
site_www
bench_start
ok $? "tlsboxd (bench) is up"
bench_peer_prepare
ok $? "a certificate for nginx"

d="$TB_TMP/nginx-odd"
mkdir -p "$d"
PORT=$(tb_free_port)
peer_nginx_conf "$d" "$PORT" "$TB_TMP/peer.pem" "$TB_TMP/peer.key" "$TB_TMP/www" 256 off |
    sed 's|^        root .*|&\n        location = /odd { return 600 "odd"; }\n        location = /gone { return 404; }|' \
        >"$d/nginx.conf"
tb_bg nginx -e "$d/error.log" -c "$d/nginx.conf" -p "$d/" -g 'daemon off;'
tb_wait_port "$PORT"
ok $? "nginx serves on port $PORT"

out=$(bench_ctl_run -s h2 -n 50 -c 1 --url "https://127.0.0.1:$PORT/odd")
is "$(jq -r '.results[0].result | "\(.complete) \(.failed) \(.status.other) \(.status."2xx")"' <<<"$out")" \
    "50 0 50 0" "h2 :status 600: 50 complete, counted as other"
show=$(tb_ctl bench show "$(jq -r .id <<<"$out")")
is "$(grep -o 'requests .*' <<<"$show")" \
    "requests       50 complete, 0 failed (2xx 0, 3xx 0, 4xx 0, 5xx 0, other 50)" \
    "bench show: the other bucket shown"

# Buckets with nothing stay out: a plain 404 run reads as before.
out=$(bench_ctl_run -s h2 -n 20 -c 1 --url "https://127.0.0.1:$PORT/gone")
is "$(tb_ctl bench show "$(jq -r .id <<<"$out")" | grep -o 'requests .*')" \
    "requests       20 complete, 0 failed (2xx 0, 3xx 0, 4xx 20, 5xx 0)" \
    "bench show: only 2xx-5xx when nothing else was counted"

tb_stop_daemon
ok $? "stops cleanly"
done_testing
