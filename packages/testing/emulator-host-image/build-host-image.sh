#!/usr/bin/env bash
# Builds dstack-test/emulated-host:<hash of this script and the boot script>, the image of the
# hosts a cloud emulator boots (one
# container per instance), without any network: a root filesystem assembled from this machine's
# files and imported with `docker import`, as packages/shim/test-image/build-test-image.sh does.
#
# The image is a small VM as the server sees one over SSH: OpenSSH's sshd (with sftp-server and
# ssh-keygen, host keys made at boot), a static busybox for the POSIX shell and coreutils the
# server's deploy runs (uname, nproc, df, awk, mkdir, cat, nohup, kill, tr, grep, tail, ...),
# bash, a root user with /root, the default user `ubuntu`
# (uid 1000, /home/ubuntu; cloud-config `ssh_authorized_keys` go to it, as on Ubuntu's cloud
# images, where dstack's AWS backend logs in as `ubuntu`), and the boot script that
# stands in for cloud-init (emulated-host-boot.sh, next to this script). No node, as on the images
# users boot (Ubuntu's, AWS's Deep Learning AMIs, GCP's): the VM bootstrap brings its own.
#
# Usage: build-host-image.sh [--force]
#   --force   rebuild even when the image already exists and was built from these scripts
# Env: DSTACK_EMULATED_HOST_IMAGE (default dstack-test/emulated-host:<build hash>, the name
#      emulated-host-image.ts computes the same way).
set -euo pipefail

force=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    *) echo "build-host-image: unknown argument $arg" >&2; exit 2 ;;
  esac
done

fail() {
  echo "build-host-image: $*" >&2
  exit 1
}

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
boot_script="$script_dir/emulated-host-boot.sh"
[ -f "$boot_script" ] || fail "the boot script $boot_script is missing"

command -v docker >/dev/null 2>&1 || fail "the docker CLI is missing"
docker info >/dev/null 2>&1 || fail "the Docker daemon does not answer (run scripts/services/ensure-dockerd.sh)"

# The image records which build it came from, so a changed script or boot script rebuilds it.
build_hash="$(cat "${BASH_SOURCE[0]}" "$boot_script" | sha256sum | cut -c1-16)"
image="${DSTACK_EMULATED_HOST_IMAGE:-dstack-test/emulated-host:$build_hash}"
existing_hash="$(docker image inspect -f '{{index .Config.Labels "dev.dstack.emulated-host-image"}}' "$image" 2>/dev/null || true)"
if [ "$force" -eq 0 ] && [ "$existing_hash" = "$build_hash" ]; then
  echo "build-host-image: $image already exists" >&2
  exit 0
fi

busybox_path=/bin/busybox
linkage="$(ldd "$busybox_path" 2>&1 || true)"
[[ -x "$busybox_path" && ("$linkage" == *"not a dynamic executable"* || "$linkage" == *"statically linked"*) ]] \
  || fail "a static busybox is needed at $busybox_path (Debian package busybox-static)"

sshd_path=/usr/sbin/sshd
keygen_path="$(command -v ssh-keygen || true)"
[ -x "$sshd_path" ] || fail "OpenSSH's sshd is needed at $sshd_path (Debian package openssh-server)"
[ -n "$keygen_path" ] || fail "ssh-keygen is needed (Debian package openssh-client)"
# Debian keeps sftp-server (and, from OpenSSH 9.8, sshd-session) here; sshd execs them by path.
openssh_libexec=/usr/lib/openssh
[ -d "$openssh_libexec" ] || fail "$openssh_libexec (sftp-server) is missing"
bash_path="$(command -v bash)"

rootfs="$(mktemp -d /tmp/dstack-emulated-host.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT

mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,usr/lib,etc/ssh,root,home/ubuntu,tmp,var/tmp,var/log,run/sshd,proc,sys,dev}
mkdir -p "$rootfs"/var/lib/cloud/instance/scripts "$rootfs"/var/lib/cloud/scripts/per-boot
chmod 1777 "$rootfs/tmp" "$rootfs/var/tmp"
chmod 700 "$rootfs/root"
chmod 755 "$rootfs/run/sshd"
ln -s ../run "$rootfs/var/run"

cp "$busybox_path" "$rootfs/bin/busybox"
for applet in $("$busybox_path" --list); do
  case "$applet" in busybox | bash) continue ;; esac
  ln -sf busybox "$rootfs/bin/$applet"
done
ln -sf ../../bin/busybox "$rootfs/usr/bin/env"

# The binaries, then every library they link against at the path the loader looks for it.
binaries=("$sshd_path" "$keygen_path" "$bash_path")
cp "$sshd_path" "$rootfs/usr/sbin/sshd"
cp "$keygen_path" "$rootfs/usr/bin/ssh-keygen"
cp "$bash_path" "$rootfs/bin/bash"
ln -sf ../../bin/bash "$rootfs/usr/bin/bash"
mkdir -p "$rootfs$openssh_libexec"
for helper in "$openssh_libexec"/*; do
  [ -f "$helper" ] && [ -x "$helper" ] || continue
  cp "$helper" "$rootfs$helper"
  binaries+=("$helper")
done
# Tools a host has and Debian's busybox lacks, nohup first (the server's deploy starts the shim
# with it), from this machine's coreutils and libc-bin.
for tool in nohup getconf nice install printenv stdbuf split join comm cksum fmt base32 b2sum \
  sha224sum sha384sum numfmt tsort csplit; do
  "$busybox_path" --list | grep -qx "$tool" && continue
  tool_path="$(command -v "$tool" || true)"
  [ -n "$tool_path" ] || continue
  cp "$tool_path" "$rootfs/usr/bin/$tool"
  binaries+=("$tool_path")
done
[ -x "$rootfs/usr/bin/nohup" ] || fail "nohup is needed (Debian package coreutils)"
if [ -f /usr/libexec/coreutils/libstdbuf.so ]; then
  mkdir -p "$rootfs/usr/libexec/coreutils"
  cp /usr/libexec/coreutils/libstdbuf.so "$rootfs/usr/libexec/coreutils/"
fi
for binary in "${binaries[@]}"; do
  ldd "$binary" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' || true
done | sort -u | while read -r library; do
  [ -n "$library" ] || continue
  mkdir -p "$rootfs$(dirname "$library")"
  cp -L "$library" "$rootfs$library"
done

cat >"$rootfs/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/bash
sshd:x:100:65534:sshd privilege separation:/run/sshd:/usr/sbin/nologin
ubuntu:x:1000:1000:Ubuntu:/home/ubuntu:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
PASSWD
# `*` is no password, not a locked account: sshd refuses even keys for a locked (`!`) root.
cat >"$rootfs/etc/shadow" <<'SHADOW'
root:*:19000:0:99999:7:::
sshd:*:19000:0:99999:7:::
ubuntu:*:19000:0:99999:7:::
nobody:*:19000:0:99999:7:::
SHADOW
chmod 640 "$rootfs/etc/shadow"
cat >"$rootfs/etc/group" <<'GROUP'
root:x:0:
ubuntu:x:1000:
nogroup:x:65534:
GROUP
printf 'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n' >"$rootfs/etc/nsswitch.conf"
printf '/bin/sh\n/bin/bash\n/usr/bin/bash\n' >"$rootfs/etc/shells"
ln -sf ../bin/busybox "$rootfs/usr/sbin/nologin"
cat >"$rootfs/etc/os-release" <<'RELEASE'
NAME="dstack emulated host"
ID=dstack-emulated-host
PRETTY_NAME="dstack emulated host (a cloud emulator's instance)"
RELEASE

cat >"$rootfs/etc/ssh/sshd_config" <<'SSHD'
# A cloud VM's sshd: keys only, root may log in with a key, TCP forwarding on (the server
# tunnels to the shim and the runner through it).
Port 22
ListenAddress 0.0.0.0
HostKey /etc/ssh/ssh_host_ed25519_key
HostKey /etc/ssh/ssh_host_ecdsa_key
PermitRootLogin prohibit-password
PubkeyAuthentication yes
AuthorizedKeysFile .ssh/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
UseDNS no
AllowTcpForwarding yes
PrintMotd no
PidFile /run/sshd.pid
Subsystem sftp /usr/lib/openssh/sftp-server
SSHD

cp "$boot_script" "$rootfs/usr/sbin/emulated-host-boot"
chmod 755 "$rootfs/usr/sbin/emulated-host-boot"

tar -C "$rootfs" --numeric-owner --owner=0 --group=0 -c . \
  | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV HOME=/root' \
    --change 'WORKDIR /root' \
    --change 'ENTRYPOINT ["/usr/sbin/emulated-host-boot"]' \
    --change "LABEL dev.dstack.emulated-host-image=$build_hash" \
    - "$image" >/dev/null
echo "build-host-image: built $image" >&2
