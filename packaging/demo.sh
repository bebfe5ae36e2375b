#!/bin/bash
# Install what tlsbox needs, build it, and run the appliance in demo mode:
# HTTPS on https://localhost:8443 (HTTP 8080 redirects), certificates from the
# box's own CA, state in ./demo-state.  Ctrl-C stops it.
#   packaging/demo.sh [STATE_DIR]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
state=${1:-$top/demo-state}
# A relative STATE_DIR is where demo.sh was run from, not the build tree it
# runs tlsboxd in (nor where the tlsboxctl line below would look).
case $state in /*) ;; *) state=$PWD/$state ;; esac
"$top/packaging/install-deps.sh" --build
cd "$top"
mkdir -p _build/default
# Tools' chatter goes to logs, shown only when a step fails.  configure runs
# once (a build tree's make re-runs autoconf and automake when their inputs
# change); it prints "rm: cannot remove 'core'" for our core/ directory.
if [ ! -x configure ]; then
    ./autogen.sh >_build/default/autogen.log 2>&1 || { tail -40 _build/default/autogen.log; exit 1; }
fi
cd _build/default
if [ ! -f Makefile ]; then
    "$top/configure" CFLAGS="-O2 -g" >configure.log 2>&1 || { tail -40 configure.log; exit 1; }
fi
make -j"$(nproc)" >build.log 2>&1 || { tail -40 build.log; exit 1; }
plugins=build-plugins
data=build-data
# Started as root, tlsboxd drops to the tlsbox user once its ports are bound
# and must still reach its state and files then.  A checkout that user cannot
# enter (under /root, 0700) runs from a staged copy in /var/lib/tlsbox-demo.
if [ "$(id -u)" = 0 ] && ! runuser -u tlsbox -- test -r "$PWD/build-data/www/index.html" 2>/dev/null; then
    stage=/var/lib/tlsbox-demo
    mkdir -p "$stage"
    chmod 755 "$stage"
    rm -rf "$stage/plugins" "$stage/data"
    cp -RL build-plugins "$stage/plugins"
    cp -RL build-data "$stage/data"
    plugins=$stage/plugins
    data=$stage/data
    [ -n "${1:-}" ] || state=$stage/state
    echo "note: the tlsbox user cannot enter $top: running from $stage"
fi
echo "tlsbox demo: https://localhost:8443/  (state in $state)"
echo "  trust its CA:  $PWD/cli/tlsboxctl --state-dir $state cert root > tlsbox-root.pem"
echo "  status:        $PWD/cli/tlsboxctl --state-dir $state status"
exec ./core/tlsboxd --state-dir "$state" --plugin-dir "$plugins" --data-dir "$data" \
    --demo --foreground
