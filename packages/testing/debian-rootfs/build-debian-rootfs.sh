#!/usr/bin/env bash
# Makes the one Debian root filesystem every test image starts from (the emulated cloud hosts'
# images, the torch image): debootstrap bookworm (minbase) from Debian's mirror with what the
# images between them need, once per machine, kept as a tarball named after this script's hash.
# A debootstrap takes minutes on a loaded machine; three of them (one per image) took most of a
# fresh machine's image builds. Each image trims its copy to its own packages, offline
# (keep-only-packages.sh: the `plain` host has no Docker, the torch image only python3, the base
# image's stand-in no Docker).
#
# Prints the tarball's path on stdout.
#
# Usage: build-debian-rootfs.sh [--force]
#   --force   debootstrap again even when the tarball of this script exists
# Env: DSTACK_DEBIAN_MIRROR (default http://deb.debian.org/debian); DSTACK_DEBOOTSTRAP_CACHE (the
#      downloaded packages, kept between builds; default /var/cache/dstack-test/debootstrap);
#      DSTACK_DEBIAN_ROOTFS_CACHE (where the tarballs are kept; default /var/cache/dstack-test/rootfs).
set -euo pipefail

force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1; shift ;;
    *) echo "build-debian-rootfs: unknown argument $1" >&2; exit 2 ;;
  esac
done

fail() {
  echo "build-debian-rootfs: $*" >&2
  exit 1
}

command -v debootstrap >/dev/null 2>&1 || fail "debootstrap is missing (apt-get install debootstrap)"

# The hosts' packages (sshd, a shell's tools, python3, sudo, Docker for the `docker` kind), the
# torch image's (python3) and the stand-in of dstack's base image's (git, the venv module of
# python3, ssh's client). Changing the list changes this script's hash, hence the tarball's name.
packages=openssh-server,openssh-sftp-server,openssh-client,iproute2,curl,wget,ca-certificates,sudo,python3,python3-venv,git,procps,less,docker.io

build_hash="$(sha256sum <"${BASH_SOURCE[0]}" | cut -c1-16)"
cache_dir="${DSTACK_DEBIAN_ROOTFS_CACHE:-/var/cache/dstack-test/rootfs}"
tarball="$cache_dir/bookworm-$build_hash.tar"
mkdir -p "$cache_dir"

# Image builds run at the same time (a test run alone builds its own): one debootstraps, the
# others wait for it and find the tarball.
exec 9>/tmp/dstack-debian-rootfs.lock
flock 9
if [ "$force" -eq 0 ] && [ -f "$tarball" ]; then
  echo "$tarball"
  exit 0
fi

mirror="${DSTACK_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
debootstrap_cache="${DSTACK_DEBOOTSTRAP_CACHE:-/var/cache/dstack-test/debootstrap}"
mkdir -p "$debootstrap_cache"

rootfs="$(mktemp -d /tmp/dstack-debian-rootfs.XXXXXX)"
trap 'rm -rf "$rootfs" "$rootfs.log" "$tarball.partial"' EXIT

echo "build-debian-rootfs: debootstrap bookworm from $mirror" >&2
debootstrap --variant=minbase --cache-dir="$debootstrap_cache" --include="$packages" bookworm "$rootfs" "$mirror" \
  >"$rootfs.log" 2>&1 || { tail -20 "$rootfs.log" >&2; fail "debootstrap failed"; }

# What no image needs: downloaded packages, documentation. The package lists stay: an image that
# purges a package needs none, and apt's state stays as debootstrap left it.
rm -rf "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*

# Written aside and renamed: a build killed half way leaves no tarball that looks complete.
tar -C "$rootfs" --numeric-owner -cf "$tarball.partial" .
mv "$tarball.partial" "$tarball"
echo "build-debian-rootfs: made $tarball" >&2
echo "$tarball"
