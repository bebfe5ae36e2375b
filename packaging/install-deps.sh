#!/bin/sh
# The one list of tlsbox's build and test dependencies (Debian 12 packages).
# Idempotent: safe to run again; used by README's quick start and by .ci/run.
#   packaging/install-deps.sh          build + test dependencies
#   packaging/install-deps.sh --build  build dependencies only
#   packaging/install-deps.sh --package  also the Debian package builds and
#                                        checks (arm64 cross, qemu, nspawn)
set -eu

APT="apt-get -o DPkg::Lock::Timeout=600 -y --no-install-recommends"

BUILD="build-essential autoconf automake libtool pkg-config
  libgnutls28-dev libnghttp2-dev libmicrohttpd-dev libsqlite3-dev
  libcurl4-gnutls-dev libjansson-dev libgmp-dev libssl-dev"
# (libssl-dev: libcrypto makes the ECDSA handshake signatures, core/tls_sign.h.)
# intel-ipsec-mb seals the site's AES-GCM records on x86-64; Debian builds it
# for amd64 only, and elsewhere GnuTLS seals them.
if [ "$(dpkg --print-architecture)" = amd64 ]; then
  BUILD="$BUILD libipsec-mb-dev"
fi

# Real clients and peers the tests start themselves (bind9: the DNS server
# that takes ACME dns-01 records by RFC 2136 updates; bind9-dnsutils: dig);
# clang for the second compiler and the sanitizer runtime; clang-format for
# the format check.
TEST="clang libclang-rt-14-dev clang-format
  curl nghttp2-client gnutls-bin openssl sqlite3 ca-certificates
  procps iproute2 python3 python3-cryptography python3-hpack jq bc
  testssl.sh
  pebble certbot bind9 bind9-dnsutils
  nginx h2o apache2-utils
  chromium chromium-driver python3-selenium
  libjs-chart.js nodejs zbar-tools python3-aiosmtpd
  brotli zstd"
# (python3-hpack reads HTTP/2 answers in plugins/site/tests/h2_streams.py.
# libjs-chart.js is also a run-time dependency: the admin UI serves its Chart.js.
# nodejs renders plugin pages with a stub DOM in 62_webui_no_inline.
# brotli and zstd make the precompressed siblings 30_site_basic serves.)

# packaging/build-deb.sh and packaging/check-*.sh (make check-package): the
# arm64 cross build, a bookworm root file system booted under qemu-user.
PACKAGE="debhelper lintian mmdebstrap arch-test systemd systemd-container
  qemu-user-static binfmt-support crossbuild-essential-arm64
  libgnutls28-dev:arm64 libnghttp2-dev:arm64 libmicrohttpd-dev:arm64
  libsqlite3-dev:arm64 libcurl4-gnutls-dev:arm64 libjansson-dev:arm64
  libssl-dev:arm64"

pkgs="$BUILD"
case "${1:-}" in
--build) ;;
--package)
  pkgs="$BUILD $TEST $PACKAGE"
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    dpkg --add-architecture arm64
    NEED_UPDATE=1
  fi
  ;;
*) pkgs="$BUILD $TEST" ;;
esac

missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing="$missing $p"
done
if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  # An empty package list (fresh machine) finds nothing: update once first.
  if [ -n "${NEED_UPDATE:-}" ] ||
    [ -z "$(ls /var/lib/apt/lists/ 2>/dev/null | grep -v -e lock -e partial)" ]; then
    $APT update
  fi
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
