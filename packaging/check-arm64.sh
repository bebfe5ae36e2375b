#!/bin/sh
# The arm64 package (64-bit Raspberry Pi OS is bookworm) installed and booted
# in a minimal bookworm arm64 system under qemu-user: see check-install.sh.
# About 6 minutes on 2 cores.  Run alone: packaging/check-arm64.sh (as root).
exec "$(dirname "$0")/check-install.sh" arm64 "$@"
