#!/bin/bash
# The whole test suite, as README's quick start and .ci/run call it:
# dependencies, a normal build with every test, README's first command on
# it (tests/quick_start.sh), a sanitizer (ASan + UBSan) build with every
# test, and the formatting check.  Ends with one summary line
# "N passed, N failed".
#   tests/run-all.sh            everything
#   tests/run-all.sh --quick    the normal build and the quick start only
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

# Wall time of each phase, printed as a table before the summary line.
timings=""
t0=$SECONDS
phase_start() { t0=$SECONDS; }
phase_end() { timings="$timings$(printf '  %-20s %4d s' "$1" $((SECONDS - t0)))"$'\n'; }

phase_start
"$top/packaging/install-deps.sh" || { echo "install-deps failed"; echo "0 passed, 1 failed"; exit 1; }
./autogen.sh >/dev/null 2>&1 || { echo "autogen.sh failed"; ./autogen.sh; echo "0 passed, 1 failed"; exit 1; }
phase_end "deps + autogen"

jobs=$(nproc)
pass=0
fail=0
status=0

# run_build NAME CONFIGURE-ARGS...: configure, build, make check in _build/NAME
run_build() {
    local name=$1
    shift
    local dir="$top/_build/$name"
    echo "=== $name build: configure $* ==="
    phase_start
    mkdir -p "$dir"
    # A build or configure failure is one failed result, so the summary line
    # never says "0 failed" for a run that exits non-zero.
    (cd "$dir" && "$top/configure" --enable-werror "$@" >configure.log 2>&1) ||
        { echo "not ok - $name: configure failed:"; tail -30 "$dir/configure.log"; fail=$((fail + 1)); status=1; return; }
    make -C "$dir" -j"$jobs" >"$dir/build.log" 2>&1 ||
        { echo "not ok - $name: build failed:"; grep -E 'error|warning' "$dir/build.log" | head -40; fail=$((fail + 1)); status=1; return; }
    phase_end "$name build"
    echo "=== $name build: make check ==="
    phase_start
    # Results of an earlier run (tests since renamed or removed) are not counted.
    find "$dir" \( -name '*.trs' -o -name 'test-suite.log' \) -delete
    make -C "$dir" -j"$jobs" check 2>&1 | tee "$dir/check.log" |
        grep --line-buffered -E '^(PASS|FAIL|XPASS|ERROR|SKIP|XFAIL|#)'
    local rc=${PIPESTATUS[0]}
    phase_end "$name check"
    if [ "$rc" -ne 0 ] && [ ! -f "$dir/test-suite.log" ]; then
        # make check stopped before any test ran (a test program did not build)
        echo "not ok - $name: make check failed before the tests:"
        grep -E 'error|warning|\*\*\*' "$dir/check.log" | head -40
        fail=$((fail + 1))
        status=1
        return
    fi
    [ "$rc" -eq 0 ] || status=1
    local log="$dir/test-suite.log"
    if [ -f "$log" ]; then
        # tap-driver writes one .trs per test with a :test-result: line per TAP result.
        local p f
        f=$(find "$dir" -name '*.trs' -exec cat {} + 2>/dev/null |
            grep -cE '^:test-result: (FAIL|ERROR|XPASS)')
        p=$(find "$dir" -name '*.trs' -exec cat {} + 2>/dev/null | grep -c '^:test-result: PASS')
        pass=$((pass + p))
        fail=$((fail + f))
        if grep -qE '^# (FAIL|ERROR|XPASS): +[1-9]' "$log"; then
            status=1
            echo "--- failures in the $name build ---"
            grep -E '^(FAIL|ERROR|XPASS|not ok)' "$log" | head -60
        fi
    else
        echo "no test-suite.log: make check did not run"
        status=1
    fi
}

run_build default CFLAGS="-O2 -g"

# A test script left out of TESTS would never run and never fail: each one
# must have left its results in the default build (when make check ran).
if [ -f _build/default/test-suite.log ]; then
    unrun=""
    for t in tests/integration/[0-9]*.sh; do
        [ -f "_build/default/${t%.sh}.trs" ] || unrun="$unrun $t"
    done
    if [ -z "$unrun" ]; then
        echo "ok - every tests/integration script ran in make check"
        pass=$((pass + 1))
    else
        echo "not ok - not in TESTS, so never run:$unrun"
        fail=$((fail + 1))
        status=1
    fi
fi

# README's first command (packaging/demo.sh) on the default build: a TAP
# script outside make check, since it builds in _build/default itself.
echo "=== quick start: packaging/demo.sh ==="
phase_start
tests/quick_start.sh >_build/quick_start.log 2>&1
qs_rc=$?
grep -E '^(ok|not ok|#|Bail out!)' _build/quick_start.log
p=$(grep -c '^ok ' _build/quick_start.log)
f=$(grep -cE '^not ok |^Bail out!' _build/quick_start.log)
[ "$qs_rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
pass=$((pass + p))
fail=$((fail + f))
[ "$f" -eq 0 ] || status=1
phase_end "quick start"
if [ "${1:-}" != "--quick" ]; then
    run_build sanitizers --enable-asan --enable-ubsan CFLAGS="-O1 -g"
    echo "=== clang build (warnings as errors) ==="
    phase_start
    mkdir -p _build/clang
    if (cd _build/clang && "$top/configure" --enable-werror CC=clang >configure.log 2>&1 &&
        make -j"$jobs" >build.log 2>&1 &&
        make -j"$jobs" check TESTS= >>build.log 2>&1); then
        pass=$((pass + 1))
        echo "ok - clang -Wall -Wextra build (programs, plugins and tests) is clean"
    else
        fail=$((fail + 1))
        status=1
        echo "not ok - clang build:"
        grep -E 'error|warning' _build/clang/build.log | head -30
    fi
    phase_end "clang build"
    echo "=== format check ==="
    phase_start
    if git ls-files '*.c' '*.h' | xargs clang-format --dry-run --Werror >/dev/null 2>&1; then
        pass=$((pass + 1))
        echo "ok - every .c/.h file is clang-formatted"
    else
        fail=$((fail + 1))
        status=1
        echo "not ok - not clang-formatted:"
        git ls-files '*.c' '*.h' | while read -r f; do
            clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "  $f"
        done
    fi
    phase_end "format check"
fi

echo "=== wall time per phase ==="
printf '%s' "$timings"
printf '  %-20s %4d s\n' total "$SECONDS"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$status" -eq 0 ]
