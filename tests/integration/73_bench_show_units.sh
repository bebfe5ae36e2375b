#!/bin/bash
# The unit of a bench result's transfer_kbps: KiB/s (bytes / 1024 / elapsed_s,
# plugins/bench/bench_stats.c), and so labelled wherever it is shown (bench
# show, the web UI's results table), with the CSV column keeping the field's
# name and value.  They used to say KB/s.
. "$(dirname "$0")/lib.sh"
. "$top_srcdir/plugins/site/tests/site_itest.sh"
. "$top_srcdir/plugins/bench/tests/bench_itest.sh"
tb_setup
site_www
bench_start
ok $? "tlsboxd serves the site on port $P_HTTPS"

run=$(bench_ctl_run -s h1 -n 200 -c 2 --path /f16k.txt)
is "$(jq -r '.results[0].result | "\(.complete) \(.failed)"' <<<"$run")" "200 0" \
    "a run of 200 requests, all complete"
r=$(jq -c '.results[0].result' <<<"$run")
id=$(jq -r .id <<<"$run")
kbps=$(jq -r .transfer_kbps <<<"$r")
is "$(awk -v k="$kbps" -v b="$(jq -r .bytes <<<"$r")" -v e="$(jq -r .elapsed_s <<<"$r")" \
    'BEGIN { printf "%.4f", k / (b / 1024 / e) }')" "1.0000" \
    "transfer_kbps = bytes / 1024 / elapsed_s (not / 1000)"

is "$(tb_ctl bench show "$id" | grep -o 'transfer [0-9.]* [A-Za-z]*/s')" \
    "transfer $(printf '%.1f' "$kbps") KiB/s" "bench show: the transfer in KiB/s"
csv=$(tb_ctl bench show "$id" --csv)
is "$(printf '%s\n' "$csv" | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "transfer_kbps") c = i }
    NR == 2 { print $c }')" "$(printf '%.2f' "$kbps")" "bench show --csv: column transfer_kbps, the same KiB/s"
is "$(grep -o '"Req/s", "[A-Za-z]*/s"' "$top_srcdir/plugins/bench/bench.ui.js")" '"Req/s", "KiB/s"' \
    "the web UI's results table: KiB/s"

tb_stop_daemon
ok $? "stops cleanly"
done_testing
