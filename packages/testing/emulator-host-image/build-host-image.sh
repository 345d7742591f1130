#!/usr/bin/env bash
# Builds an image of the hosts a cloud emulator boots (one container per instance) from the stock
# Debian root filesystem every test image starts from (debian-rootfs/build-debian-rootfs.sh: one
# debootstrap from Debian's mirror per machine), with what the images users boot have and nothing
# the product needs beyond that:
#
#   --kind docker  dstack's VM images (`dstack-*`, `dstack-cuda-*`) and AWS's Deep Learning AMI:
#                  a cloud image with a Docker daemon that starts at boot (no GPU can be emulated,
#                  so no NVIDIA driver or toolkit).
#   --kind plain   Canonical's Ubuntu and the like: a cloud image without Docker.
#
# Both have sshd (host keys made at first boot, keys only), a POSIX shell, bash, coreutils, tar,
# curl and wget, python3, sudo, iproute2, the default user `ubuntu` (uid 1000, passwordless sudo;
# cloud-config `ssh_authorized_keys` go to it, as on Ubuntu's cloud images), and the boot script
# that stands in for cloud-init and systemd (emulated-host-boot.sh, next to this script). No node
# and no dstack file: the VM bootstrap brings its own agent runtime.
#
# Usage: build-host-image.sh --kind docker|plain [--force]
#   --force   rebuild even when the image exists and was built from these scripts
# Env: DSTACK_EMULATED_HOST_IMAGE (default dstack-test/emulated-host-<kind>:<build hash>, the name
#      emulated-host-image.ts computes the same way); those of build-debian-rootfs.sh.
set -euo pipefail

kind=''
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --kind) kind="${2:-}"; shift 2 ;;
    --force) force=1; shift ;;
    *) echo "build-host-image: unknown argument $1" >&2; exit 2 ;;
  esac
done

fail() {
  echo "build-host-image: $*" >&2
  exit 1
}

case "$kind" in
  docker | plain) ;;
  *) fail "--kind must be docker or plain" ;;
esac

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
boot_script="$script_dir/emulated-host-boot.sh"
[ -f "$boot_script" ] || fail "the boot script $boot_script is missing"
rootfs_script="$script_dir/../debian-rootfs/build-debian-rootfs.sh"
keep_only="$script_dir/../debian-rootfs/keep-only-packages.sh"
[ -f "$rootfs_script" ] && [ -f "$keep_only" ] || fail "the root filesystem scripts (debian-rootfs/) are missing"

command -v docker >/dev/null 2>&1 || fail "the docker CLI is missing"
docker info >/dev/null 2>&1 || fail "the Docker daemon does not answer (run scripts/services/ensure-dockerd.sh)"

# The image records which build it came from, so a changed script, boot script or root
# filesystem rebuilds it.
build_hash="$(cat "${BASH_SOURCE[0]}" "$boot_script" "$rootfs_script" "$keep_only" | sha256sum | cut -c1-16)"
image="${DSTACK_EMULATED_HOST_IMAGE:-dstack-test/emulated-host-$kind:$build_hash}"
label="dev.dstack.emulated-host-image"
built_from() {
  docker image inspect -f "{{index .Config.Labels \"$label\"}}" "$image" 2>/dev/null || true
}

# Test files build at the same time: one builds, the others wait for it and find the image.
lock="/tmp/dstack-emulated-host-image-$kind.lock"
exec 9>"$lock"
flock 9
if [ "$force" -eq 0 ] && [ "$(built_from)" = "$build_hash" ]; then
  echo "build-host-image: $image already exists" >&2
  exit 0
fi

base="$(bash "$rootfs_script")" || fail "the Debian root filesystem could not be made"

rootfs="$(mktemp -d /tmp/dstack-emulated-host.XXXXXX)"
trap 'rm -rf "$rootfs" "$rootfs.log"' EXIT
echo "build-host-image: $kind host from $base" >&2
tar -C "$rootfs" --numeric-owner -xf "$base"

# The root filesystem has every image's packages; a host keeps its own (Canonical's plain Ubuntu
# has no Docker), as a debootstrap of only these would have made it.
packages=(openssh-server openssh-sftp-server iproute2 curl wget ca-certificates sudo python3 procps less)
[ "$kind" = docker ] && packages+=(docker.io)
bash "$keep_only" "$rootfs" "${packages[@]}" || fail "trimming the root filesystem failed"
if [ "$kind" = plain ] && chroot "$rootfs" sh -c 'command -v dockerd || command -v containerd' >/dev/null; then
  fail "the plain host image still has Docker"
fi

# The default user, as cloud-init makes it on Ubuntu's images.
chroot "$rootfs" useradd --create-home --uid 1000 --user-group --shell /bin/bash ubuntu
[ "$kind" = docker ] && chroot "$rootfs" usermod --append --groups docker ubuntu
echo 'ubuntu ALL=(ALL) NOPASSWD:ALL' >"$rootfs/etc/sudoers.d/90-cloud-init-users"
chmod 440 "$rootfs/etc/sudoers.d/90-cloud-init-users"

# Host keys are made at first boot (cloud-init's ssh module), not shared by every host.
rm -f "$rootfs"/etc/ssh/ssh_host_*
# Ubuntu's cloud images turn password logins off (60-cloudimg-settings.conf); keys only.
cat >"$rootfs/etc/ssh/sshd_config.d/60-cloudimg-settings.conf" <<'SSHD'
PasswordAuthentication no
PermitRootLogin prohibit-password
SSHD

# Docker's service: a container of this sandbox may lack CAP_SYS_RESOURCE, with which the init
# script raises its limits on a VM; it keeps the limits it has instead of failing to start.
if [ "$kind" = docker ]; then
  sed -i 's/^\([[:space:]]*ulimit -[npu] [0-9a-z]*\)$/\1 || true/' "$rootfs/etc/init.d/docker"
  [ "$(grep -c 'ulimit -[npu] .* || true$' "$rootfs/etc/init.d/docker")" -eq 3 ] \
    || fail "the docker init script's ulimit lines were not found"
fi

mkdir -p "$rootfs/var/lib/cloud/instance/scripts" "$rootfs/var/lib/cloud/scripts/per-boot"
echo "emulated-host-$kind" >"$rootfs/etc/hostname"
cp "$boot_script" "$rootfs/usr/sbin/emulated-host-boot"
chmod 755 "$rootfs/usr/sbin/emulated-host-boot"

# What a running system does not need: package lists, caches, documentation.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
if [ -n "$(find "$rootfs" -name node -type f -perm -u+x -print -quit)" ]; then
  fail "the root filesystem has a node binary: an image users boot has none"
fi

tar -C "$rootfs" --numeric-owner -c . \
  | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV HOME=/root' \
    --change 'WORKDIR /root' \
    --change 'ENTRYPOINT ["/usr/sbin/emulated-host-boot"]' \
    --change "LABEL $label=$build_hash" \
    - "$image" >/dev/null
echo "build-host-image: built $image" >&2
