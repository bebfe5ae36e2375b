#!/bin/sh
# Build tlsbox's Debian packages from this checkout (tracked files as they
# are in the work tree) with packaging/debian/.
#   packaging/build-deb.sh amd64|arm64|armhf [OUTDIR]
# amd64: a native build (on an amd64 host).  arm64: a cross build with
# crossbuild-essential-arm64 and the :arm64 -dev packages
# (packaging/install-deps.sh --package).  armhf: a cross build inside an
# amd64 build chroot made by mmdebstrap (the host's multiarch cannot hold
# the armhf -dev packages next to its newer amd64 libraries), cached in
# $TLSBOX_CACHE (default /var/cache/tlsbox-build).
# TLSBOX_DEB_VERSION=V builds the same tree as version V (the upgrade test's
# "previous" package).  Prints the .deb paths on its last lines.
set -eu

arch=${1:-}
case "$arch" in
amd64 | arm64 | armhf) ;;
*)
    echo "usage: $0 amd64|arm64|armhf [OUTDIR]" >&2
    exit 2
    ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$top/_build/deb/$arch}
cache=${TLSBOX_CACHE:-/var/cache/tlsbox-build}
host=$(dpkg --print-architecture)
mkdir -p "$out"
out=$(cd "$out" && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/tlsbox-deb.XXXXXX")
trap 'rc=$?; rm -rf "$work"; exit $rc' EXIT
src="$work/tlsbox"
mkdir -p "$src"
# The tracked files, with their work-tree contents.
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$top" && git ls-files -z | xargs -0 tar -cf - --no-recursion) | tar -xf - -C "$src"
else
    (cd "$top" && tar -cf - --exclude=./_build --exclude=./.git .) | tar -xf - -C "$src"
fi
cp -r "$top/packaging/debian" "$src/debian"
if [ -n "${TLSBOX_DEB_VERSION:-}" ]; then
    {
        printf 'tlsbox (%s) unstable; urgency=medium\n\n  * Rebuilt as %s.\n\n' \
            "$TLSBOX_DEB_VERSION" "$TLSBOX_DEB_VERSION"
        printf ' -- %s  %s\n\n' "$(sed -n 's/^ -- \(.*>\)  .*/\1/p' "$src/debian/changelog" | head -1)" \
            "$(date -R)"
        cat "$top/packaging/debian/changelog"
    } >"$src/debian/changelog"
fi

build() {
    # dpkg-buildpackage writes next to the source directory.
    (cd "$src" && DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -us -uc -b "$@") ||
        {
            echo "$0: the build failed; missing build dependencies are installed by" \
                "packaging/install-deps.sh --package" >&2
            exit 1
        }
}

# The armhf build chroot: amd64 bookworm with the armhf cross toolchain
# and -dev packages, made once and kept as a tarball.
armhf_chroot() {
    deps="build-essential crossbuild-essential-armhf debhelper pkg-config
      libgnutls28-dev:armhf libnghttp2-dev:armhf libmicrohttpd-dev:armhf
      libsqlite3-dev:armhf libcurl4-gnutls-dev:armhf libjansson-dev:armhf
      libssl-dev:armhf"
    # Named by its package list: a cached chroot made before a dependency
    # was added is not reused.
    tarball="$cache/bookworm-amd64-armhf-cross-$(echo $deps | cksum | cut -d' ' -f1).tar"
    if [ ! -s "$tarball" ]; then
        mkdir -p "$cache"
        # No bookworm-security: its armhf index is often out of step with
        # its Release file (apt then refuses the whole update).
        rm -rf "$tarball.tmp"
        mmdebstrap --variant=buildd --format=tar --architectures=amd64,armhf \
            --include="$(echo $deps | tr ' ' ',')" bookworm "$tarball.tmp" \
            "deb http://deb.debian.org/debian bookworm main" \
            "deb http://deb.debian.org/debian bookworm-updates main" ||
            { echo "$0: mmdebstrap could not make the armhf build chroot" >&2; exit 1; }
        mv "$tarball.tmp" "$tarball"
    fi
    root="$work/chroot"
    mkdir -p "$root"
    tar --numeric-owner -xf "$tarball" -C "$root"
    mv "$src" "$root/tlsbox"
    mount -t proc proc "$root/proc"
    trap 'rc=$?; umount "$root/proc" 2>/dev/null || true; rm -rf "$work"; exit $rc' EXIT
    chroot "$root" sh -c 'cd /tlsbox && DEB_BUILD_OPTIONS="nocheck parallel=2" \
        dpkg-buildpackage -aarmhf -Pcross,nocheck -us -uc -b'
    umount "$root/proc"
    cp "$root"/*.deb "$root"/*.changes "$root"/*.buildinfo "$work"/
}

case "$arch" in
"$host") build ;;
armhf) armhf_chroot ;;
*) build -a"$arch" -Pcross,nocheck ;;
esac

rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
cp "$work"/*.deb "$work"/*.changes "$work"/*.buildinfo "$out"/
ls -1 "$out"/*.deb
