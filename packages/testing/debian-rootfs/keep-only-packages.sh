#!/usr/bin/env bash
# Trims a copy of the Debian root filesystem (build-debian-rootfs.sh) to the packages an image
# asks for, with what they depend on and what Debian requires: the same set a debootstrap asked
# for only these would have made, offline. Every package not of priority `required` (nor
# essential) is marked automatic, the wanted ones and apt manual, then apt removes the rest.
#
# Usage: keep-only-packages.sh ROOTFS PACKAGE...
set -euo pipefail

fail() {
  echo "keep-only-packages: $*" >&2
  exit 1
}

[ $# -ge 2 ] || fail "usage: keep-only-packages.sh ROOTFS PACKAGE..."
rootfs="$1"
shift
[ -x "$rootfs/usr/bin/apt-get" ] || fail "$rootfs is not a Debian root filesystem"

# No maintainer script may start or stop a daemon here (101: "not allowed", as in any chroot).
printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
chmod 755 "$rootfs/usr/sbin/policy-rc.d"
log="$(mktemp)"
trap 'rm -f "$rootfs/usr/sbin/policy-rc.d" "$log"' EXIT

chroot "$rootfs" dpkg-query -W -f '${Package} ${Priority} ${Essential}\n' \
  | awk '$2 != "required" && $3 != "yes" { print $1 }' \
  | xargs chroot "$rootfs" apt-mark auto >/dev/null
chroot "$rootfs" apt-mark manual apt "$@" >/dev/null
# sudo refuses its own removal unless told (a root password may be unset).
chroot "$rootfs" env DEBIAN_FRONTEND=noninteractive SUDO_FORCE_REMOVE=yes apt-get autoremove --purge -y -qq \
  >"$log" 2>&1 || { tail -20 "$log" >&2; fail "removing the other packages failed"; }
for package in "$@"; do
  chroot "$rootfs" dpkg-query -W -f '${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' \
    || fail "$package is not in the root filesystem"
done
