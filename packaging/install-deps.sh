#!/bin/sh
# The one list of tlsbox's build and test dependencies (Debian 12 packages).
# Idempotent: safe to run again; used by README's quick start and by .ci/run.
#   packaging/install-deps.sh          build + test dependencies
#   packaging/install-deps.sh --build  build dependencies only
set -eu

APT="apt-get -o DPkg::Lock::Timeout=600 -y --no-install-recommends"

BUILD="build-essential autoconf automake libtool pkg-config
  libgnutls28-dev libnghttp2-dev libmicrohttpd-dev libsqlite3-dev
  libcurl4-gnutls-dev libjansson-dev"

# Real clients and peers the tests start themselves; clang for the second
# compiler and the sanitizer runtime; clang-format for the format check.
TEST="clang libclang-rt-14-dev clang-format
  curl nghttp2-client gnutls-bin openssl sqlite3 ca-certificates
  procps iproute2 python3 jq bc
  testssl.sh
  pebble certbot
  nginx h2o"

pkgs="$BUILD"
[ "${1:-}" = "--build" ] || pkgs="$BUILD $TEST"

missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing="$missing $p"
done
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  # An empty package list (fresh machine) finds nothing: update once first.
  [ -n "$(ls /var/lib/apt/lists/ 2>/dev/null | grep -v -e lock -e partial)" ] || $APT update
  $APT install $missing || { $APT update && $APT install $missing; }
fi

# Started as root (CI runs the tests as root), tlsboxd becomes the tlsbox user
# once its ports are bound, as the packaged service runs: the tests need it.
if [ "$(id -u)" = 0 ] && ! getent passwd tlsbox >/dev/null; then
  useradd --system --user-group --no-create-home --home-dir /nonexistent \
    --shell /usr/sbin/nologin tlsbox
fi

# Debian starts nginx and h2o on install where it can; the benchmark starts its
# own instances on loopback ports, so the system ones are not wanted.
for svc in nginx h2o; do
  if [ -x "/etc/init.d/$svc" ]; then "/etc/init.d/$svc" stop >/dev/null 2>&1 || true; fi
done
