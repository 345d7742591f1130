#!/usr/bin/env bash
# Builds the images the shim's Docker tests run tasks in, without any network: a root filesystem
# imported with `docker import`. The runner comes into a container as a portable runtime (node
# with its own loader and libraries), so the images need no libraries for it: they are the kinds
# of image a job may name that the host's node could not load in.
#
#   busybox (dstack-test/runner-busybox:v2): a static busybox (its applets as symlinks), /tmp,
#            /etc/passwd and /etc/group; no shared library at all.
#   musl    (dstack-test/runner-musl:v2): the same, plus musl's loader and libc at Alpine's
#            paths and /usr/bin/hello-musl, a program linked against that libc (built with gcc).
# Both carry an /etc/os-release naming the flavour, and the users root, nobody and worker (uid
# 1000, supplementary group extra, 2000). The tag is the images' format, bumped when their
# contents change (v1 was dstack-test/runner-base:latest, which carried the host node's libraries).
#
# Usage: build-test-image.sh [--force] [--flavor busybox|musl]
#   --force    rebuild even when the image exists
#   --flavor   which image (default busybox)
# Env: DSTACK_TEST_IMAGE (default: the flavour's name above).
set -euo pipefail

flavor=busybox
force=0
while [ "$#" -gt 0 ]; do
  case "$1" in
    --force) force=1 ;;
    --flavor)
      [ "$#" -ge 2 ] || { echo "build-test-image: --flavor needs a value" >&2; exit 2; }
      flavor="$2"
      shift
      ;;
    --flavor=*) flavor="${1#--flavor=}" ;;
    *) echo "build-test-image: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
case "$flavor" in
  busybox) default_image=dstack-test/runner-busybox:v2 ;;
  musl) default_image=dstack-test/runner-musl:v2 ;;
  *) echo "build-test-image: unknown --flavor $flavor (expected busybox or musl)" >&2; exit 2 ;;
esac
image="${DSTACK_TEST_IMAGE:-$default_image}"

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
apt_install() {
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    echo "build-test-image: installing $1 with apt-get" >&2
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1" >/dev/null || fail "apt-get install $1 failed"
  else
    fail "$2"
  fi
}
if ! is_static "$busybox_path"; then
  # Debian's busybox package is dynamic; only busybox-static works in an image without libc tools.
  apt_install busybox-static "a static busybox is needed at $busybox_path (Debian package busybox-static)"
fi

rootfs="$(mktemp -d /tmp/dstack-test-image.XXXXXX)"
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

if [ "$flavor" = musl ]; then
  machine="$(uname -m)"
  musl_libc="/usr/lib/$machine-linux-musl/libc.so"
  [ -f "$musl_libc" ] || apt_install musl "musl's libc is needed at $musl_libc (Debian package musl)"
  command -v gcc >/dev/null 2>&1 || fail "gcc is needed to build the musl image's test program"
  # Alpine's layout: the loader is libc itself.
  mkdir -p "$rootfs/lib"
  cp -L "$musl_libc" "$rootfs/lib/ld-musl-$machine.so.1"
  ln -sf "ld-musl-$machine.so.1" "$rootfs/lib/libc.musl-$machine.so.1"
  # Without musl's headers and start files (musl-dev): the program declares what it calls and
  # brings its own entry point, which hands over to musl's __libc_start_main as crt1 would.
  case "$machine" in
    x86_64) entry='.text\n.global _start\n_start:\n xor %rbp,%rbp\n mov %rsp,%rdi\n andq $-16,%rsp\n call _start_c\n' ;;
    aarch64) entry='.text\n.global _start\n_start:\n mov x29,#0\n mov x30,#0\n mov x0,sp\n and sp,x0,#-16\n b _start_c\n' ;;
    *) fail "no musl test program for $machine" ;;
  esac
  cat >"$rootfs/hello-musl.c" <<C
int printf(const char *, ...);
int __libc_start_main(int (*)(int, char **, char **), int, char **, void (*)(void), void (*)(void), void (*)(void));
static int hello(int argc, char **argv, char **envp) {
  (void)argv; (void)envp;
  printf("hello from musl with %d argument(s)\n", argc - 1);
  return 0;
}
__attribute__((noreturn)) void _start_c(long *stack) {
  __libc_start_main(hello, (int)stack[0], (char **)(stack + 1), 0, 0, 0);
  for (;;) {}
}
__asm__("$entry");
C
  gcc -O2 -fno-stack-protector -nostdlib -nostartfiles -fno-pie -no-pie \
    -o "$rootfs/usr/bin/hello-musl" "$rootfs/hello-musl.c" \
    -L"$(dirname "$musl_libc")" -l:libc.so "-Wl,--dynamic-linker=/lib/ld-musl-$machine.so.1" \
    || fail "cannot build the musl test program"
  rm "$rootfs/hello-musl.c"
fi

cat >"$rootfs/etc/os-release" <<OS
NAME="dstack test image ($flavor)"
ID=dstack-test-$flavor
OS
cat >"$rootfs/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
worker:x:1000:1000:worker:/home/worker:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
cat >"$rootfs/etc/group" <<'GROUP'
root:x:0:
worker:x:1000:
extra:x:2000:worker
nogroup:x:65534:
GROUP

tar -C "$rootfs" --numeric-owner --owner=0 --group=0 -c . \
  | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/sh"]' \
    - "$image" >/dev/null
echo "build-test-image: built $image" >&2
