#!/bin/bash
# Benchmark: tlsboxd's memory, store and log while ACME keeps failing.  Users of
# other ACME clients report memory that grows while a renewal retries
# (doc/performance.md).  pebble validates http-01 on a port where nobody
# listens, so every order fails at its challenge; a forced renew starts the
# next attempt at once instead of after the backoff.  After each block of
# attempts it prints tlsboxd's RSS and PSS, the store's size (with its WAL) and acme_events
# rows, and the log's size; then the growth per attempt after a warm-up.
# Numbers only; never part of make check.
#   top_builddir=... tests/perf/acme_retry_mem.sh [ATTEMPTS]    (default 300)
top_srcdir="${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}"
. "$top_srcdir/tests/integration/lib.sh"
. "$top_srcdir/tests/integration/pebble.sh"
ATTEMPTS=${1:-300}
case $ATTEMPTS in
'' | *[!0-9]* | 0*) bail "ATTEMPTS must be a positive number, not '$ATTEMPTS'" ;;
esac
[ "$ATTEMPTS" -ge 20 ] || bail "ATTEMPTS must be at least 20 (10 are warm-up)"
tb_setup
SITE_HTTP=$(tb_free_port)
SITE_HTTPS=$(tb_free_port)
# pebble validates on a free port nobody listens on: connection refused.
PB_HTTP_PORT=$(tb_free_port) pb_start || bail "pebble did not start"
pb_start_tlsbox --set acme.challenge=http-01 --set acme.domains=fail.test ||
    bail "tlsboxd did not start"

# The attempts recorded so far: the newest acme_events id.  (The status's
# failure count cannot serve: it counts the kept rows, at most 500.)
attempts() { sqlite3 -cmd '.timeout 5000' "$TB_STATE/tlsbox.db" 'select ifnull(max(id), 0) from acme_events where ok = 0'; }
# wait_failures N: until N attempts have failed (each takes well under a second
# against pebble on loopback; 60 s is a hang, not a slow attempt).
wait_failures() {
    local i
    for i in $(seq 1 1200); do
        [ "$(attempts)" -ge "$1" ] && return 0
        sleep 0.05
    done
    bail "attempt $1 did not fail within 60 s (failures recorded: $(attempts))"
}
kb() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$TB_PID/$1"; }
sample() {
    local db=$TB_STATE/tlsbox.db
    printf '%8s %9s %9s %10s %8s %10s\n' "$1" "$(kb status VmRSS)" "$(kb smaps_rollup Pss)" \
        "$((($(stat -c %s "$db") + $(stat -c %s "$db-wal" 2>/dev/null || echo 0)) / 1024))" \
        "$(sqlite3 -cmd '.timeout 5000' "$db" 'select count(*) from acme_events')" \
        "$(($(stat -c %s "$TB_TMP/daemon.log") / 1024))"
}

wait_failures 1
printf 'tlsboxd while ACME fails (http-01 refused), %s attempts against pebble on loopback\n' "$ATTEMPTS"
printf '%8s %9s %9s %10s %8s %10s\n' attempts "RSS kB" "PSS kB" "store kB" events "log kB"
sample 1
t0=$(date +%s.%N)
for n in $(seq 2 "$ATTEMPTS"); do
    tb_ctl acme renew --force >/dev/null || bail "tlsboxctl acme renew --force failed"
    wait_failures "$n"
    [ "$n" = 10 ] && rss10=$(kb status VmRSS) pss10=$(kb smaps_rollup Pss)
    case $n in
    10 | 25 | 50 | 100 | 200 | 500 | 1000 | "$ATTEMPTS") sample "$n" ;;
    esac
done
t1=$(date +%s.%N)
rss=$(kb status VmRSS)
pss=$(kb smaps_rollup Pss)
printf 'growth per attempt from attempt 10 to %s: RSS %s bytes, PSS %s bytes\n' "$ATTEMPTS" \
    "$(((rss - rss10) * 1024 / (ATTEMPTS - 10)))" "$(((pss - pss10) * 1024 / (ATTEMPTS - 10)))"
printf 'attempts ran at %.1f per second (order, challenge refused, failure recorded)\n' \
    "$(echo "($ATTEMPTS - 1) / ($t1 - $t0)" | bc -l)"
tb_stop_daemon
exit 0
