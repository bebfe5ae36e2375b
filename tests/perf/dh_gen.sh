#!/bin/bash
# Benchmark: how long the dhparam plugin takes to generate DH parameters of
# each size on this machine, through the real daemon (the child process, at
# normal priority so other load on the machine counts as little as it can).
# A benchmark, not a test: it prints numbers and is never part of make check.
#
#   tests/perf/dh_gen.sh [RUNS] [SIZES]      default: 3 runs of 2048 3072 4096
#
# The generator looks for random primes: times vary a lot between runs, so it
# prints each run, then the median.  Expect about 20x longer on a Raspberry Pi.
set -u
RUNS=${1:-3}
SIZES=${2:-2048 3072 4096}
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
. "$(dirname "$0")/../integration/lib.sh"
tb_setup
P1=$(tb_free_port)
P2=$(tb_free_port)
tb_start_daemon --set site.https_port="$P1" --set site.http_port="$P2" \
    --set dhparam.priority=normal >/dev/null || bail "tlsboxd did not start"
status() {
    tb_ctl --json dh status | python3 -c "import json,sys; v=json.load(sys.stdin)$1; print('' if v is None else v)"
}
echo "DH parameter generation (GnuTLS gnutls_dh_params_generate2 in a child), $(nproc) CPUs"
for bits in $SIZES; do
    times=""
    for r in $(seq 1 "$RUNS"); do
        id=$(tb_ctl --json dh generate --bits "$bits" |
            python3 -c 'import json,sys; print(json.load(sys.stdin)["run_id"])')
        while [ "$(status '["last_run"]["id"]')" != "$id" ]; do sleep 0.2; done
        s=$(status '["params"]["generated"]["generation_seconds"]')
        printf '  %s bits, run %d: %.2f s\n' "$bits" "$r" "$s"
        times="$times $s"
    done
    printf '%s bits: median %s s over %d runs\n' "$bits" \
        "$(printf '%s\n' $times | sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]}')" "$RUNS"
done
tb_stop_daemon
