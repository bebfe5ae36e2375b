#!/bin/bash
# Install what tlsbox needs, build it, and run the appliance in demo mode:
# HTTPS on https://localhost:8443 (HTTP 8080 redirects), certificates from the
# box's own CA, state in ./demo-state.  Ctrl-C stops it.
#   packaging/demo.sh [STATE_DIR]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
state=${1:-$top/demo-state}
"$top/packaging/install-deps.sh" --build
cd "$top"
./autogen.sh >/dev/null
mkdir -p _build/default
cd _build/default
[ -f Makefile ] || "$top/configure" CFLAGS="-O2 -g" >configure.log
make -j"$(nproc)" >build.log 2>&1 || { tail -40 build.log; exit 1; }
echo "tlsbox demo: https://localhost:8443/  (state in $state)"
echo "  trust its CA:  $PWD/cli/tlsboxctl --state-dir $state cert root > tlsbox-root.pem"
echo "  status:        $PWD/cli/tlsboxctl --state-dir $state status"
exec ./core/tlsboxd --state-dir "$state" --plugin-dir build-plugins --data-dir build-data \
    --demo --foreground
