# Shared helpers for integration tests (bash).  A test sources this file,
# calls tb_setup, runs real programs, reports with ok/is/like and ends with
# done_testing.  Output is TAP, read by automake's tap-driver.sh.
#
#   tb_setup                 temp dir $TB_TMP (removed at exit), state dir $TB_STATE
#   tb_netns ARGS            run this test again in a network namespace of its own
#   tb_free_port             print a free loopback TCP port
#   tb_free_low_port         the same below 1024 (for CAP_NET_BIND_SERVICE)
#   tb_start_daemon [ARGS]   start tlsboxd on $TB_STATE; waits for the control socket
#                            (admin web UI on 127.0.0.1:$TB_ADMIN_PORT)
#   tb_ctl ARGS...           tlsboxctl --state-dir $TB_STATE ARGS
#   tb_as_daemon CMD...      CMD as the daemon's user (tlsbox when started as root)
#   tb_stop_daemon [SIG [S]] SIGTERM (or SIG) and wait; returns 1 if it takes > 5 s (or S s)
#   tb_bg CMD...             start a helper process, killed at exit; pid in $TB_BG_PID
#   tb_ui_results OUT RC ERR MIN  a browser run's PASS/FAIL lines (tests/ui/*.py) as TAP
#   tb_need_browser          bail unless headless Chromium can be driven (selenium)
#   ok STATUS DESC | is GOT WANT DESC | like GOT ERE DESC | diag MSG | done_testing

set -u

: "${top_builddir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${top_srcdir:=$top_builddir}"
TB_TLSBOXD="${TB_TLSBOXD:-$top_builddir/core/tlsboxd}"
TB_TLSBOXCTL="$top_builddir/cli/tlsboxctl"
TB_PLUGINS="$top_builddir/build-plugins"

# The store is live: a test's read may meet a writer's lock for a moment
# (CI once saw "Error: in prepare, database is locked (5)" and an empty
# answer), so the CLI waits for it, as the daemon's own connections do.
sqlite3() { command sqlite3 -cmd ".timeout 5000" "$@"; }

_tb_n=0
_tb_failed=0
_tb_pids=""
TB_PID=""

ok() {
    local status=$1
    shift
    _tb_n=$((_tb_n + 1))
    if [ "$status" -eq 0 ]; then
        echo "ok $_tb_n - $*"
    else
        echo "not ok $_tb_n - $*"
        _tb_failed=$((_tb_failed + 1))
    fi
}

is() {
    local got=$1 want=$2
    shift 2
    if [ "$got" = "$want" ]; then
        ok 0 "$*"
    else
        ok 1 "$*"
        diag "  got '$got', want '$want'"
    fi
}

like() {
    local got=$1 re=$2
    shift 2
    if printf '%s' "$got" | grep -Eq -- "$re"; then
        ok 0 "$*"
    else
        ok 1 "$*"
        diag "  '$(printf '%s' "$got" | head -c 600)' does not match /$re/"
    fi
}

unlike() {
    local got=$1 re=$2
    shift 2
    if printf '%s' "$got" | grep -Eq -- "$re"; then
        ok 1 "$*"
        diag "  matched /$re/: $(printf '%s' "$got" | grep -E -- "$re" | head -3)"
    else
        ok 0 "$*"
    fi
}

diag() {
    printf '%s\n' "$*" | sed 's/^/# /'
}

bail() {
    echo "Bail out! $*"
    exit 1
}

done_testing() {
    echo "1..$_tb_n"
    [ "$_tb_failed" -eq 0 ]
    exit $?
}

_tb_cleanup() {
    local p rc=$?
    for p in $TB_PID $_tb_pids; do
        kill -TERM "$p" 2>/dev/null
    done
    for p in $TB_PID $_tb_pids; do
        for _ in $(seq 1 50); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$p" 2>/dev/null
    done
    _tb_release_ports
    # A sanitizer report fails the test even when no result caught it (the
    # daemon stopped here, or tb_stop_daemon's status went unchecked): one
    # more, unplanned result.
    if [ "$_tb_failed" -eq 0 ] && _tb_sanitizer_report; then
        _tb_failed=$((_tb_failed + 1))
        echo "not ok $((_tb_n + 1)) - the daemon log has no sanitizer report"
        _tb_sanitizer_diag
        rc=1
    fi
    # Keep the daemon log of a failed test for the person reading CI output.
    if [ "$_tb_failed" -ne 0 ] && [ -f "${TB_TMP:-/nonexistent}/daemon.log" ]; then
        diag "---- daemon log (last 40 lines) ----"
        tail -n 40 "$TB_TMP/daemon.log" | sed 's/^/# /'
    fi
    [ -n "${TB_TMP:-}" ] && [ -z "${TB_KEEP:-}" ] && rm -rf "$TB_TMP"
    exit "$rc"
}

# tb_netns "$@": before tb_setup, run the test again (with its ARGS) in a
# network namespace of its own, with lo up, where it may add addresses (IPv6
# ones to stand for many clients); a skip without root or unshare -n.
tb_netns() {
    if [ -n "${TB_NETNS:-}" ]; then
        ip link set lo up || bail "lo up in the test's network namespace"
        return
    fi
    if [ "$(id -u)" != 0 ] || ! unshare -n true 2>/dev/null; then
        echo "1..0 # SKIP needs root and unshare -n to add test addresses"
        exit 0
    fi
    exec env TB_NETNS=1 unshare -n bash "$0" "$@"
}

tb_setup() {
    [ -x "$TB_TLSBOXD" ] || bail "no $TB_TLSBOXD: build first"
    TB_TMP=$(mktemp -d "${TMPDIR:-/tmp}/tlsbox-test.XXXXXX")
    # Started as root (CI), tlsboxd becomes the tlsbox user once its ports
    # are bound: it must pass through to its state and site directories.
    chmod 0711 "$TB_TMP"
    TB_STATE="$TB_TMP/state"
    export TB_TMP TB_STATE
    trap _tb_cleanup EXIT
    trap 'exit 1' INT TERM
}

# A free loopback TCP port that no other running test holds.  Not bind(0):
# the kernel may hand the same ephemeral port out twice in a row (pebble once
# got one port for two listeners), and clients' outgoing connections take
# their local ports from that range too.  So ports come from below the
# ephemeral range, each claimed with an atomic mkdir in a directory every
# test shares (make check -j runs tests in parallel), and must bind on
# 0.0.0.0 and ::1.  A test's claims go at its exit; a claim whose owner died
# without cleaning up is freed by the next test that meets it.
TB_PORT_DIR="${TMPDIR:-/tmp}/tlsbox-test-ports"
tb_free_port() {
    python3 - "$TB_PORT_DIR" "$$" <<'PY'
import os, random, shutil, socket, sys, time
d, owner = sys.argv[1], sys.argv[2]
os.makedirs(d, exist_ok=True)
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError):
    low = 32768
lo, hi = (20000, low - 1) if low > 21000 else (low, 65535)

def stale(claim):
    try:
        pid = int(open(os.path.join(claim, "owner")).read())
        os.kill(pid, 0)
        return False
    except ProcessLookupError:
        return True
    except (OSError, ValueError):  # being created, or never finished
        try:
            return time.time() - os.stat(claim).st_mtime > 60
        except OSError:
            return False

def bindable(port):
    for fam, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::1")):
        try:
            s = socket.socket(fam, socket.SOCK_STREAM)
        except OSError:
            continue  # no IPv6 here
        try:
            s.bind((addr, port))
        except OSError:
            if fam == socket.AF_INET:
                return False
            # ::1 missing (IPv6 disabled) is fine; in use is not
            if sys.exc_info()[1].errno == 98:
                return False
        finally:
            s.close()
    return True

for _ in range(5000):
    port = random.randint(lo, hi)
    claim = os.path.join(d, str(port))
    try:
        os.mkdir(claim)
    except FileExistsError:
        if stale(claim):
            # rename is atomic: one test frees it, the others see it gone
            try:
                gone = "%s.gone.%d" % (claim, os.getpid())
                os.rename(claim, gone)
                shutil.rmtree(gone, ignore_errors=True)
            except OSError:
                pass
        continue
    with open(os.path.join(claim, "owner"), "w") as f:
        f.write(owner)
    if bindable(port):
        print(port)
        sys.exit(0)
    # in use by something else: keep the claim so nobody retries it now
sys.exit("tb_free_port: no free port in %d-%d" % (lo, hi))
PY
}

# A free port below 1024 on 127.0.0.1, for a daemon that binds it with
# CAP_NET_BIND_SERVICE; claimed in the same directory as tb_free_port's.
tb_free_low_port() {
    python3 - "$TB_PORT_DIR" "$$" <<'PY'
import os, random, socket, sys
d, owner = sys.argv[1], sys.argv[2]
os.makedirs(d, exist_ok=True)
for p in random.sample(range(600, 1000), 400):
    try:
        os.mkdir(os.path.join(d, str(p)))
    except FileExistsError:
        continue
    with open(os.path.join(d, str(p), "owner"), "w") as f:
        f.write(owner)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p))
        print(p)
        sys.exit(0)
    except OSError:
        pass
    finally:
        s.close()
sys.exit("tb_free_low_port: no free port in 600-999")
PY
}

_tb_release_ports() {
    local f
    for f in "$TB_PORT_DIR"/*/owner; do
        [ -f "$f" ] && [ "$(cat "$f" 2>/dev/null)" = "$$" ] && rm -rf "$(dirname "$f")"
    done
    return 0
}

# Sanitizer reports (ASan, LeakSanitizer, UBSan, TSan) in the daemon's log: a
# sanitized tlsboxd writes them to stderr, which is the log.  TSan's begin
# with "WARNING: ThreadSanitizer" and end with a SUMMARY line.
_tb_sanitizer_report() {
    [ -f "${TB_TMP:-/nonexistent}/daemon.log" ] &&
        grep -Eq '==[0-9]+==ERROR: [A-Za-z]+Sanitizer|^SUMMARY: [A-Za-z]+Sanitizer|: runtime error: ' \
            "$TB_TMP/daemon.log"
}

_tb_sanitizer_diag() {
    diag "sanitizer report in the daemon log:"
    grep -E -A25 '==[0-9]+==ERROR: [A-Za-z]+Sanitizer|^WARNING: ThreadSanitizer|: runtime error: ' \
        "$TB_TMP/daemon.log" |
        head -n 60 | sed 's/^/#   /'
}

tb_bg() {
    "$@" &
    TB_BG_PID=$!
    _tb_pids="$_tb_pids $TB_BG_PID"
}

# tb_wait_file FILE PID: wait (<= 30 s) until FILE has content, or until
# process PID (the one that writes it) has ended.
tb_wait_file() {
    for _ in $(seq 1 300); do
        [ -s "$1" ] || ! kill -0 "$2" 2>/dev/null && return 0
        sleep 0.1
    done
}

tb_start_daemon() {
    : >>"$TB_TMP/daemon.log"
    # The admin web UI on a free loopback port (kept across restarts), so
    # parallel tests never meet on 9443 and nothing listens beyond loopback.
    : "${TB_ADMIN_PORT:=$(tb_free_port)}"
    # TB_DAEMON_CPUS pins the daemon (and every thread and child it makes)
    # to those CPUs from its first instruction; taskset execs, so $! is
    # still the daemon's pid.
    local pin=()
    [ -n "${TB_DAEMON_CPUS:-}" ] && pin=(taskset -c "$TB_DAEMON_CPUS")
    # TB_DAEMON_RESOLV=FILE: the daemon sees FILE as /etc/resolv.conf, in a
    # mount namespace of its own (the machine's file is untouched).  unshare
    # and sh exec, so $! is still the daemon's pid.
    [ -n "${TB_DAEMON_RESOLV:-}" ] &&
        pin=(unshare -m --propagation private /bin/sh -c 'mount --bind "$0" /etc/resolv.conf && exec "$@"'
            "$TB_DAEMON_RESOLV" "${pin[@]}")
    # TB_LOG_LEVEL set but empty: no --log-level, the core.log_level setting rules.
    local level=(--log-level "${TB_LOG_LEVEL:-info}")
    [ -n "${TB_LOG_LEVEL-info}" ] || level=()
    "${pin[@]}" "$TB_TLSBOXD" --state-dir "$TB_STATE" --plugin-dir "$TB_PLUGINS" --foreground \
        "${level[@]}" --set admin.port="$TB_ADMIN_PORT" \
        --set admin.bind=127.0.0.1 --data-dir "${TB_DATA_DIR:-$top_builddir/build-data}" \
        "$@" >>"$TB_TMP/daemon.log" 2>&1 &
    TB_PID=$!
    local i
    # The control socket answers before the plugins have started (their
    # routes, states and ports): wait for "ready", as systemd does.
    # TB_START_ANSWERS=1: only until the control socket answers.
    local want='"ready": ?true'
    [ -n "${TB_START_ANSWERS:-}" ] && want='"ready"'
    for i in $(seq 1 100); do
        if [ -S "$TB_STATE/control.sock" ] &&
            "$TB_TLSBOXCTL" --state-dir "$TB_STATE" --json status 2>/dev/null |
            grep -Eq "$want"; then
            return 0
        fi
        kill -0 "$TB_PID" 2>/dev/null || break
        sleep 0.1
    done
    diag "tlsboxd did not come up; log:"
    sed 's/^/#   /' "$TB_TMP/daemon.log" | tail -n 30
    return 1
}

# tb_start_ui_daemon [ARGS...]: the daemon the browser tests drive: demo
# mode, the site's HTTPS on $SITE_PORT (a free one, set here), a free plain
# port, and a cheap password hash (the browser logs in several times).
tb_start_ui_daemon() {
    SITE_PORT=$(tb_free_port)
    tb_start_daemon --demo --set site.https_port="$SITE_PORT" --set site.http_port="$(tb_free_port)" \
        --set admin.pbkdf2_iterations=10000 "$@"
}

# Run a command as the daemon's user and group: started as root, tlsboxd
# runs as tlsbox, and some things only its own user may do to it (prlimit
# without CAP_SYS_RESOURCE).
tb_as_daemon() {
    local u g
    u=$(awk '/^Uid:/ { print $2 }' "/proc/$TB_PID/status")
    g=$(awk '/^Gid:/ { print $2 }' "/proc/$TB_PID/status")
    if [ "$u" = "$(id -u)" ]; then
        "$@"
    else
        setpriv --reuid "$u" --regid "$g" --clear-groups "$@"
    fi
}

tb_ctl() {
    "$TB_TLSBOXCTL" --state-dir "$TB_STATE" "$@"
}

# Stop the daemon with SIGTERM; returns 1 if it needed more than 5 s, or
# if the daemon log holds a sanitizer report (leaks are found at exit).
tb_stop_daemon() {
    [ -n "$TB_PID" ] || return 0
    kill -"${1:-TERM}" "$TB_PID" 2>/dev/null
    local i
    for i in $(seq 1 $((${2:-5} * 10))); do
        if ! kill -0 "$TB_PID" 2>/dev/null; then
            wait "$TB_PID" 2>/dev/null
            TB_EXIT=$?
            TB_PID=""
            if [ -z "${_tb_san_seen:-}" ] && _tb_sanitizer_report; then
                _tb_san_seen=1
                _tb_sanitizer_diag
                return 1
            fi
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# tb_wait_says SECONDS WANT CMD...: run CMD every 0.1 s until it prints
# WANT, at most SECONDS; prints what it printed last (for is to compare).
tb_wait_says() {
    local secs=$1 want=$2 got i
    shift 2
    for i in $(seq 1 $((secs * 10))); do
        got=$("$@")
        [ "$got" = "$want" ] && break
        sleep 0.1
    done
    echo "$got"
}

# tb_wait_like SECONDS RE CMD...: run CMD every 0.1 s until what it prints
# matches the extended regex RE, at most SECONDS; prints what it printed last
# (for like to check).  For values a daemon publishes on a timer (counters
# flushed once a second): a fixed sleep races a loaded machine.
tb_wait_like() {
    local secs=$1 re=$2 got i
    shift 2
    for i in $(seq 1 $((secs * 10))); do
        got=$("$@")
        printf '%s' "$got" | grep -Eq -- "$re" && break
        sleep 0.1
    done
    printf '%s\n' "$got"
}

# Wait until a TCP port on 127.0.0.1 accepts connections (max ~5 s).
tb_wait_port() {
    local port=$1 i
    for i in $(seq 1 50); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

# tb_ui_run SCRIPT SECONDS MIN [NAME=VALUE]...: run tests/ui/SCRIPT in
# headless Chromium (at most SECONDS) against this test's daemon and its site
# on $SITE_PORT, with the extra NAME=VALUE in its environment and a private
# HOME (Chromium keeps its profile there); screenshots go to $UI_ART
# ($TB_TMP/art unless set).  Its results as TAP: tb_ui_results, MIN checks.
tb_ui_run() {
    local script=$1 secs=$2 min=$3
    shift 3
    export HOME="$TB_TMP/home"
    : "${UI_ART:=$TB_TMP/art}"
    mkdir -p "$HOME" "$UI_ART"
    env ADMIN_URL="https://127.0.0.1:$TB_ADMIN_PORT" SITE_PORT="$SITE_PORT" \
        TLSBOXCTL="$TB_TLSBOXCTL" TB_STATE="$TB_STATE" UI_ARTIFACTS="$UI_ART" "$@" \
        timeout "$secs" /usr/bin/python3 "$top_srcdir/tests/ui/$script" >"$TB_TMP/ui.out" 2>"$TB_TMP/ui.err"
    tb_ui_results "$TB_TMP/ui.out" $? "$TB_TMP/ui.err" "$min"
}

# A browser run's output (tests/ui/*.py: "PASS what", "FAIL what", "# ...")
# as TAP results, then two more: at least MIN checks made, and the run's
# exit status RC 0 (else the last lines of ERRFILE as diagnostics).
tb_ui_results() {
    local out=$1 rc=$2 err=$3 min=$4 line n=0
    while IFS= read -r line; do
        case $line in
        "PASS "*) ok 0 "${line#PASS }"; n=$((n + 1)) ;;
        "FAIL "*) ok 1 "${line#FAIL }"; n=$((n + 1)) ;;
        "# "*) echo "$line" ;;
        esac
    done <"$out"
    ok $((n < min)) "the browser run made its checks ($n)"
    is "$rc" 0 "the browser run ended cleanly"
    [ "$rc" = 0 ] || sed 's/^/# /' "$err" | tail -n 20
}

# tb_admin_login FROM USER PASSWORD [OUT]: the HTTP status of a login to the
# admin at $B (the tests' base URL) from local address FROM; the reply body
# in OUT ($TB_TMP/login).
tb_admin_login() {
    curl -sk --max-time 30 -H "Content-Type: application/json" --interface "$1" \
        -o "${4:-$TB_TMP/login}" -w '%{http_code}' -X POST "$B/api/v1/session/login" \
        -d "{\"user\":\"$2\",\"password\":\"$3\"}"
}
# tb_admin_login_waiting FROM USER PASSWORD: tb_admin_login, and once more
# after retry_after when it was told to back off; sleeping the whole
# retry_after (rounded up to seconds) outlasts the backoff.
tb_admin_login_waiting() {
    local code
    code=$(tb_admin_login "$@")
    if [ "$code" = 429 ] && jq -e '.error | test("wait")' "$TB_TMP/login" >/dev/null; then
        sleep "$(jq -r .retry_after "$TB_TMP/login")"
        code=$(tb_admin_login "$@")
    fi
    echo "$code"
}
# tb_admin_setup JAR USER PASSWORD: the HTTP status of the admin's first-run
# setup at $B with the token tlsboxctl admin setup-url gives; the new
# session's cookie in JAR.
tb_admin_setup() {
    local url
    url=$(tb_ctl admin setup-url | head -1)
    curl -sk --max-time 10 -H "Content-Type: application/json" -c "$1" -o /dev/null \
        -w '%{http_code}' -X POST "$B/api/v1/session/setup" \
        -d "{\"token\":\"${url##*#setup=}\",\"user\":\"$2\",\"password\":\"$3\"}"
}
# tb_admin_call JAR METHOD PATH [BODY]: the HTTP status of an API call at $B
# with JAR's session and its CSRF token; the reply in $TB_TMP/reply.
tb_admin_call() {
    local csrf
    csrf=$(curl -sk --max-time 10 -b "$1" "$B/api/v1/session" | jq -r .csrf)
    curl -sk --max-time 10 -H "Content-Type: application/json" -b "$1" -H "X-CSRF-Token: $csrf" \
        -o "$TB_TMP/reply" -w '%{http_code}' -X "$2" "$B/api/v1/$3" ${4:+-d "$4"}
}

# Bail out unless headless Chromium can be driven (Debian's chromium,
# chromium-driver and python3-selenium, for /usr/bin/python3).
tb_need_browser() {
    local need
    for need in /usr/bin/chromium /usr/bin/chromedriver; do
        command -v "$need" >/dev/null || bail "$need missing: run packaging/install-deps.sh"
    done
    /usr/bin/python3 -c 'import selenium' 2>/dev/null ||
        bail "python3-selenium missing: run packaging/install-deps.sh"
}
