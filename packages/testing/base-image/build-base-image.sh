#!/usr/bin/env bash
# Builds the test stand-in of dstack's base image (dstackai/base:0.15-base-ubuntu24.04): what a
# job without `image:` runs in. Nothing can be pulled from Docker Hub here, so a test registry
# serves this image under dstack's name. It models what dstack's image (docker/base/Dockerfile
# in dstack's repository) gives a job, from the Debian bookworm root filesystem every test image
# starts from (debian-rootfs/build-debian-rootfs.sh) instead of Ubuntu 24.04 with CUDA:
#   - bash, sudo, git, curl, wget, ca-certificates, openssh's client and server (host keys removed,
#     password logins off, /run/sshd), as dstack installs them;
#   - the user `dstack` (uid and gid 1001, in group sudo, sudo without a password), and the
#     working directory /dstack/run, writable by all;
#   - Python: Debian's python3 (3.11) with its venv module and pip's wheel, where dstack's has a
#     uv-managed Python (3.12 by default), and at /opt/uv/bin (on PATH, as dstack's UV_INSTALL_DIR)
#     a stand-in for uv (base-image/uv: no uv binary can be had here) that makes the venv dstack's
#     job commands ask for: `uv venv -q --prompt dstack -p <python> --seed $DSTACK_VENV_DIR`.
#   - no CUDA, NCCL or Open MPI (no GPU here), and nothing the product needs of its own;
#     /etc/dstack-test-image says what it is (the marker every test registry's image has).
#
# Usage: build-base-image.sh [--force]
#   --force   rebuild even when the image exists and was built from these scripts
# Env: DSTACK_BASE_IMAGE_STAND_IN (default dstack-test/base:<build hash>, the name
#      base-image-stand-in.ts computes the same way); those of build-debian-rootfs.sh.
set -euo pipefail

force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1; shift ;;
    *) echo "build-base-image: unknown argument $1" >&2; exit 2 ;;
  esac
done

fail() {
  echo "build-base-image: $*" >&2
  exit 1
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
rootfs_script="$here/../debian-rootfs/build-debian-rootfs.sh"
keep_only="$here/../debian-rootfs/keep-only-packages.sh"
uv_stand_in="$here/uv"
command -v docker >/dev/null 2>&1 || fail "the docker CLI is missing"
docker info >/dev/null 2>&1 || fail "the Docker daemon does not answer (run scripts/services/ensure-dockerd.sh)"

build_hash="$(cat "${BASH_SOURCE[0]}" "$rootfs_script" "$keep_only" "$uv_stand_in" | sha256sum | cut -c1-16)"
image="${DSTACK_BASE_IMAGE_STAND_IN:-dstack-test/base:$build_hash}"
label="dev.dstack.base-image-stand-in"
built_from() {
  docker image inspect -f "{{index .Config.Labels \"$label\"}}" "$image" 2>/dev/null || true
}

# Test files build at the same time: one builds, the others wait for it and find the image.
exec 9>/tmp/dstack-base-image-stand-in.lock
flock 9
if [ "$force" -eq 0 ] && [ "$(built_from)" = "$build_hash" ]; then
  echo "build-base-image: $image already exists" >&2
  exit 0
fi

base="$(bash "$rootfs_script")" || fail "the Debian root filesystem could not be made"
rootfs="$(mktemp -d /tmp/dstack-base-image.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT
echo "build-base-image: from $base" >&2
tar -C "$rootfs" --numeric-owner -xf "$base"
bash "$keep_only" "$rootfs" bash sudo git curl wget ca-certificates openssh-client openssh-server \
  python3 python3-venv || fail "trimming the root filesystem failed"

# As dstack's Dockerfile: sshd without passwords and without host keys, the dstack user.
sed -i 's/.*PasswordAuthentication.*/PasswordAuthentication no/' "$rootfs/etc/ssh/sshd_config"
mkdir -p "$rootfs/run/sshd"
rm -f "$rootfs"/etc/ssh/ssh_host_*
mkdir -p "$rootfs/root/.ssh" && chmod 700 "$rootfs/root/.ssh"
touch "$rootfs/root/.ssh/authorized_keys" && chmod 600 "$rootfs/root/.ssh/authorized_keys"
chroot "$rootfs" groupadd -g 1001 dstack
chroot "$rootfs" useradd -u 1001 -g 1001 -G sudo -s /bin/bash -m dstack
echo 'dstack ALL=(ALL) NOPASSWD: ALL' >"$rootfs/etc/sudoers.d/dstack"
chmod 440 "$rootfs/etc/sudoers.d/dstack"
mkdir -p "$rootfs/dstack/run" && chmod a+rwx "$rootfs/dstack/run"
install -D -m 755 "$uv_stand_in" "$rootfs/opt/uv/bin/uv"
# Says what the image is, as /etc/os-release does: a job that prints it proves where it ran.
echo 'the test stand-in of dstackai/base' >"$rootfs/etc/dstack-test-image"
chroot "$rootfs" /opt/uv/bin/uv venv -q --prompt dstack -p 3.11 --seed /tmp/venv-check \
  || fail "the uv stand-in cannot make a venv"
[ -x "$rootfs/tmp/venv-check/bin/pip" ] || fail "the venv has no pip"
rm -rf "$rootfs/tmp/venv-check"

# What a running system does not need: package lists, caches, documentation; and the messages'
# translations, which Ubuntu's container images (dstack's base) leave out too (their dpkg excludes
# /usr/share/locale but locale.alias): a fifth of the image, pulled by every host that pulls it.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +

tar -C "$rootfs" --numeric-owner -c . \
  | docker import \
    --change 'ENV PATH=/opt/uv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV LC_ALL=C.UTF-8' \
    --change 'WORKDIR /dstack/run' \
    --change 'CMD ["/bin/bash"]' \
    --change "LABEL $label=$build_hash" \
    - "$image" >/dev/null
echo "build-base-image: built $image" >&2
