#!/bin/sh
# The amd64 package: installed over the previous one, upgraded with its
# state, restarted, purged, in a minimal bookworm system booted with
# systemd-nspawn: see check-install.sh.  Run alone: packaging/check-amd64.sh.
exec "$(dirname "$0")/check-install.sh" amd64 --upgrade "$@"
