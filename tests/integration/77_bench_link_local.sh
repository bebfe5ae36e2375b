#!/bin/bash
# bench never loads a link-local address (169.254.0.0/16, fe80::/10: the
# cloud metadata service at 169.254.169.254, the segment's routers), even
# with bench.allow_public_targets=true: the run is refused up front with a
# message naming the address and the range, and nothing is stored.
# Loopback only: the link-local target is fe80::1 on the loopback interface
# (fe80::1%lo), which nothing answers and no packet leaves the host for; the
# 169.254.169.254 targets are only tried once that refusal is seen.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
. "$top_srcdir/plugins/bench/tests/bench_itest.sh"
tb_setup
site_www
bench_start
ok $? "tlsboxd (bench) is up"
n0=$(site_api GET bench/runs | jq length)
db_n0=$(sqlite3 "$TB_STATE/tlsbox.db" "SELECT count(*) FROM bench_runs")

# refused URL PUBLIC: a run on URL is refused, naming URL's host and the
# range, and nothing is stored; PUBLIC is bench.allow_public_targets.
refused() {
    local url=$1 host=$2 range=$3 public=$4 out rc
    out=$(tb_ctl bench run -s h1 -c 1 -n 1 --timeout 1 --url "$url" 2>&1)
    rc=$?
    is "$rc" 1 "$url (public targets $public): exits 1"
    like "$out" "target $host is a link-local address \\($range" \
        "$url: the message names the address and the range"
    like "$out" "bench never loads link-local addresses" "$url: and the rule"
    is "$(site_api GET bench/runs | jq length) $(sqlite3 "$TB_STATE/tlsbox.db" \
        "SELECT count(*) FROM bench_runs") $(site_api GET bench/status | jq -r .running)" \
        "$n0 $db_n0 false" "$url: no run stored (API and bench_runs), none running"
}

P=$(tb_free_port)
refused "http://[fe80::1%lo]:$P/" "fe80::1%lo" "fe80::/10, link-local" false
if [ "$(site_api GET bench/runs | jq length)" = "$n0" ]; then
    tb_ctl set bench.allow_public_targets true >/dev/null
    ok $? "bench.allow_public_targets set to true"
    refused "http://[fe80::1%lo]:$P/" "fe80::1%lo" "fe80::/10, link-local" true
    refused "http://169.254.169.254/latest/meta-data/" "169.254.169.254" "169.254.0.0/16" true
    refused "http://[::ffff:169.254.169.254]/" "::ffff:169.254.169.254" \
        "::ffff:0:0/96 \\(IPv4-mapped\\) holding 169.254.0.0/16" true
else
    ok 1 "a run on fe80::1%lo was accepted: the targets beyond loopback are not tried"
fi

# A loopback target still runs (nothing listens on $P: its one request fails).
out=$(bench_ctl_run -s h1 -c 1 -n 1 --timeout 1 --url "http://127.0.0.1:$P/")
is "$(jq -r '.results[0].result | "\(.complete) \(.failed)"' <<<"$out") $(site_api GET bench/runs | jq length)" \
    "0 1 $((n0 + 1))" "a loopback target is still accepted: the run took place and is stored"

tb_stop_daemon
ok $? "tlsboxd stops cleanly"
done_testing
