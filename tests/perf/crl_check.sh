#!/bin/bash
# Benchmark: what a CRL check costs tlsboxd (the ocsp plugin, for leaves with
# no OCSP URL, only a CRL distribution point), by the CRL's size.  Prints
# numbers; not part of make check.
#
#   tests/perf/crl_check.sh [--sizes "0 1000 10000 100000"] [--rounds N]   (make perf-crl)
#
# One test CA (tests/integration/ocsp_lib.sh); CRLs with N revoked serials
# (not the leaf's: the whole list is read) made by `openssl ca -gencrl` and
# served by python3's http.server on loopback.  For each size, N rounds of
# `tlsboxctl ocsp refresh` (the fetch, the signature, every serial): the
# daemon's CPU time (utime + stime of /proc/PID/stat) and the wall time per
# check, and the daemon's peak RSS (VmHWM) above its RSS before the first
# check.  The reference is OpenSSL reading and verifying the same CRL
# (`openssl crl -CAfile -noout`), CPU per run, as a ratio.
set -u
SIZES="0 1000 10000 100000"
ROUNDS=5
while [ $# -gt 0 ]; do
    case $1 in
    --sizes) SIZES=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    *) echo "usage: $0 [--sizes \"N ...\"] [--rounds N]" >&2; exit 2 ;;
    esac
done
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
: "${top_builddir:=$SRC}"
: "${top_srcdir:=$SRC}"
export top_builddir top_srcdir
. "$SRC/tests/integration/lib.sh"
tb_setup
. "$SRC/tests/integration/ocsp_lib.sh"
ok() { :; }

CP=$(tb_free_port)
WWW="$OC/www"
URL="http://127.0.0.1:$CP/inter.crl"
mkdir -p "$WWW"
oc_make_ca && OC_AIA=0 oc_make_leaf crl.test 30 "crlDistributionPoints=URI:$URL" ||
    { echo "test CA failed"; exit 1; }
oc_crl_ca "$URL"

# make_crl N: a CRL listing N serials (16 random bytes each, as a CA's are).
make_crl() {
    openssl rand -hex $((16 * $1)) 2>/dev/null | fold -w 32 | head -n "$1" |
        awk '{ printf "R\t301231000000Z\t261201000000Z,keyCompromise\t%s\tunknown\t/CN=r%d\n", toupper($0), NR }' \
            >"$OC/crl.idx"
    openssl ca -config "$OC/crl.cnf" -gencrl -keyfile "$OC/inter.key" -cert "$OC/inter.pem" \
        -crlexts idp -out "$OC/big.pem" >/dev/null 2>&1 &&
        openssl crl -in "$OC/big.pem" -outform DER -out "$WWW/.next" &&
        mv "$WWW/.next" "$WWW/inter.crl"
}

timeout 3600 python3 -m http.server --bind 127.0.0.1 --directory "$WWW" "$CP" \
    >/dev/null 2>&1 &
server=$!
tb_wait_port "$CP" || { echo "the CRL server did not listen"; exit 1; }
make_crl 0
tb_start_daemon --set "site.https_port=$(tb_free_port)" --set "site.http_port=$(tb_free_port)" \
    --set ocsp.max_crl_kib=65536 --set ocsp.timeout_seconds=60 ||
    { echo "tlsboxd did not start"; exit 1; }
tb_ctl cert import --cert "$OC/crl.test.pem" --chain "$OC/inter.pem" --key "$OC/crl.test.key" \
    --name crl.test >/dev/null
oc_wait_status crl.test status good 20 || { echo "no first CRL check"; exit 1; }

tck=$(getconf CLK_TCK)
cpu_ms() { awk -v t="$tck" '{ print int(($14 + $15) * 1000 / t) }' "/proc/$TB_PID/stat"; }
kb() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$TB_PID/status"; }
now_ms() { date +%s%3N; }
rss0=$(kb VmRSS)

printf '# %s, %s cores, tlsbox %s; %d rounds per size\n' "$(uname -m)" "$(nproc)" \
    "$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo '?')" "$ROUNDS"
printf '%9s %10s %11s %11s %14s %15s %12s\n' entries "CRL bytes" "wall ms" "CPU ms" \
    "openssl CPU ms" "CPU / openssl" "peak RSS +kB"
for n in $SIZES; do
    make_crl "$n" || { echo "openssl ca -gencrl failed for $n"; exit 1; }
    size=$(stat -c %s "$WWW/inter.crl")
    c0=$(cpu_ms)
    t0=$(now_ms)
    for _ in $(seq 1 "$ROUNDS"); do
        tb_ctl ocsp refresh crl.test >/dev/null
    done
    t1=$(now_ms)
    c1=$(cpu_ms)
    st=$(oc_status crl.test status)
    [ "$st" = good ] || { echo "after $n entries the status is $st: $(oc_status crl.test last_error)"; exit 1; }
    ref=$( { TIMEFORMAT='%U %S'; time (for _ in $(seq 1 "$ROUNDS"); do
        openssl crl -inform DER -in "$WWW/inter.crl" -CAfile "$OC/inter.pem" -noout 2>/dev/null
    done); } 2>&1 | awk -v r="$ROUNDS" '{ printf "%.1f", ($1 + $2) * 1000 / r }')
    cpu=$(awk -v a="$c0" -v b="$c1" -v r="$ROUNDS" 'BEGIN { printf "%.1f", (b - a) / r }')
    ratio=$(awk -v a="$cpu" -v b="$ref" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
    printf '%9d %10d %11.1f %11s %14s %15s %12d\n' "$n" "$size" \
        "$(awk -v a="$t0" -v b="$t1" -v r="$ROUNDS" 'BEGIN { print (b - a) / r }')" "$cpu" "$ref" \
        "$ratio" $(($(kb VmHWM) - rss0))
done
printf '# RSS after the last check: %d kB above the RSS before the first\n' $(($(kb VmRSS) - rss0))
kill "$server" 2>/dev/null
tb_stop_daemon
