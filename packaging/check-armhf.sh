#!/bin/sh
# The armhf package (32-bit Raspberry Pi OS; Debian armhf is ARMv7: Pi 2 and
# newer) built in its build chroot, installed and booted in a minimal
# bookworm armhf system under qemu-user: see check-install.sh.
# Run alone: packaging/check-armhf.sh (as root).
exec "$(dirname "$0")/check-install.sh" armhf "$@"
