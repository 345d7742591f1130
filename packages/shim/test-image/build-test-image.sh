#!/usr/bin/env bash
# Builds dstack-test/runner-base:latest, the image the shim's Docker tests run tasks in, without
# any network: a root filesystem holding a static busybox (with its applets as symlinks), the
# shared libraries the host's node binary links against, /tmp and a root user, imported with
# `docker import`. Node itself and the runner bundle are bind-mounted by the Docker runtime, so
# the image only has to let the host's node binary load.
#
# Usage: build-test-image.sh [--force]
#   --force   rebuild even when the image already exists
# Env: DSTACK_TEST_IMAGE (default dstack-test/runner-base:latest), NODE_BINARY (default: node on PATH).
set -euo pipefail

image="${DSTACK_TEST_IMAGE:-dstack-test/runner-base:latest}"
force=0
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    *) echo "build-test-image: unknown argument $arg" >&2; exit 2 ;;
  esac
done

fail() {
  echo "build-test-image: $*" >&2
  exit 1
}

command -v docker >/dev/null 2>&1 || fail "the docker CLI is missing"
docker info >/dev/null 2>&1 || fail "the Docker daemon does not answer (run scripts/services/ensure-dockerd.sh)"

if [ "$force" -eq 0 ] && docker image inspect "$image" >/dev/null 2>&1; then
  echo "build-test-image: $image already exists" >&2
  exit 0
fi

busybox_path=/bin/busybox
is_static() {
  [ -x "$1" ] || return 1
  local linkage
  linkage="$(ldd "$1" 2>&1 || true)"
  [[ "$linkage" == *"not a dynamic executable"* || "$linkage" == *"statically linked"* ]]
}
if ! is_static "$busybox_path"; then
  # Debian's busybox package is dynamic; only busybox-static works in an image without libc tools.
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    echo "build-test-image: installing busybox-static with apt-get" >&2
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >/dev/null \
      || fail "apt-get install busybox-static failed"
  else
    fail "a static busybox is needed at $busybox_path (Debian package busybox-static)"
  fi
fi

node_binary="${NODE_BINARY:-$(command -v node)}"
[ -x "$node_binary" ] || fail "node binary not found (set NODE_BINARY)"

rootfs="$(mktemp -d /tmp/dstack-runner-base.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT

mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,etc,root,tmp,var/tmp,dstack,proc,sys,dev}
chmod 1777 "$rootfs/tmp" "$rootfs/var/tmp"
cp "$busybox_path" "$rootfs/bin/busybox"
for applet in $("$busybox_path" --list); do
  [ "$applet" = busybox ] && continue
  ln -sf busybox "$rootfs/bin/$applet"
done
# Scripts often name /usr/bin/env in their shebang; job commands may ask for bash, which
# busybox does not provide, so its ash stands in.
ln -sf ../../bin/busybox "$rootfs/usr/bin/env"
printf '#!/bin/sh\nexec /bin/sh "$@"\n' >"$rootfs/bin/bash"
chmod 755 "$rootfs/bin/bash"

# Every library node needs, at the path the dynamic loader looks for it (the loader included).
while read -r library; do
  [ -n "$library" ] || continue
  mkdir -p "$rootfs$(dirname "$library")"
  cp -L "$library" "$rootfs$library"
done < <(ldd "$node_binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')

cat >"$rootfs/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
cat >"$rootfs/etc/group" <<'GROUP'
root:x:0:
nogroup:x:65534:
GROUP

tar -C "$rootfs" --numeric-owner --owner=0 --group=0 -c . \
  | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/sh"]' \
    - "$image" >/dev/null
echo "build-test-image: built $image" >&2
