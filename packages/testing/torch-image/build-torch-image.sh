#!/usr/bin/env bash
# Builds the image of the multi-node PyTorch test: the Debian bookworm root filesystem every test
# image starts from (debian-rootfs/build-debian-rootfs.sh, one debootstrap per machine) with its
# python3 (3.11) and PyTorch's CPU build installed offline from wheels on this machine, nothing
# from PyPI. Jobs pull it from a test registry, as they pull any `image:`. The hosts' packages
# are removed from its copy (keep-only-packages.sh): a job's image has no daemon or sshd of its own.
#
# Kept small, as it is pushed to a registry and pulled by every node: no pip in the image, no pip
# cache, no documentation; PyTorch's C++ headers, its own test suite and test binaries go (a
# training run loads none of them; torch_shm_manager, which DataLoader workers use, stays), and so
# does the bytecode of the packages `import torch` does not load (sympy, networkx, mpmath: torch's
# compiler imports them). torch's own bytecode stays: without it every start compiles it again.
#
# Usage: build-torch-image.sh [--force]
#   --force   rebuild even when the image exists and was built from this script and these wheels
# Env: DSTACK_TORCH_WHEEL (default /opt/wheels/torch-*+cpu-cp311-*.whl, the one there);
#      DSTACK_TORCH_DEPENDENCY_WHEELS (a folder with the wheels of torch's dependencies and pip's
#      own wheel; default /opt/pypi/files); DSTACK_TORCH_TEST_IMAGE (default
#      dstack-test/python-torch:<build hash>, the name torch-test-image.ts computes the same way);
#      those of build-debian-rootfs.sh.
set -euo pipefail

force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1; shift ;;
    *) echo "build-torch-image: unknown argument $1" >&2; exit 2 ;;
  esac
done

fail() {
  echo "build-torch-image: $*" >&2
  exit 1
}

wheel="${DSTACK_TORCH_WHEEL:-}"
if [ -z "$wheel" ]; then
  wheel="$(ls /opt/wheels/torch-*+cpu-cp311-*.whl 2>/dev/null | head -1 || true)"
fi
[ -n "$wheel" ] && [ -f "$wheel" ] || fail "no PyTorch CPU wheel for Python 3.11 (set DSTACK_TORCH_WHEEL)"
dependencies="${DSTACK_TORCH_DEPENDENCY_WHEELS:-/opt/pypi/files}"
[ -d "$dependencies" ] || fail "the dependency wheels folder $dependencies is missing"
pip_wheel="$(ls "$dependencies"/pip-*-py3-none-any.whl 2>/dev/null | sort -V | tail -1 || true)"
[ -n "$pip_wheel" ] || fail "no pip wheel in $dependencies"

command -v docker >/dev/null 2>&1 || fail "the docker CLI is missing"
docker info >/dev/null 2>&1 || fail "the Docker daemon does not answer (run scripts/services/ensure-dockerd.sh)"
rootfs_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../debian-rootfs"
rootfs_script="$rootfs_dir/build-debian-rootfs.sh"
keep_only="$rootfs_dir/keep-only-packages.sh"
[ -f "$rootfs_script" ] && [ -f "$keep_only" ] || fail "the root filesystem scripts ($rootfs_dir) are missing"
command -v python3 >/dev/null 2>&1 || fail "python3 is missing (it resolves the wheels to copy)"

# The image records which build it came from (this script, the root filesystem's, the wheel's
# name and size), so a changed script or another wheel rebuilds it.
build_hash="$({ cat "${BASH_SOURCE[0]}" "$rootfs_script" "$keep_only"; echo "$(basename "$wheel") $(stat -c %s "$wheel")"; } | sha256sum | cut -c1-16)"
image="${DSTACK_TORCH_TEST_IMAGE:-dstack-test/python-torch:$build_hash}"
label="dev.dstack.torch-test-image"
built_from() {
  docker image inspect -f "{{index .Config.Labels \"$label\"}}" "$image" 2>/dev/null || true
}

# Test files build at the same time: one builds, the others wait for it and find the image.
exec 9>/tmp/dstack-torch-test-image.lock
flock 9
if [ "$force" -eq 0 ] && [ "$(built_from)" = "$build_hash" ]; then
  echo "build-torch-image: $image already exists" >&2
  exit 0
fi

base="$(bash "$rootfs_script")" || fail "the Debian root filesystem could not be made"

rootfs="$(mktemp -d /tmp/dstack-torch-image.XXXXXX)"
trap 'rm -rf "$rootfs" "$rootfs.log"' EXIT
echo "build-torch-image: from $base" >&2
tar -C "$rootfs" --numeric-owner -xf "$base"
# A job's image: python3 and what Debian requires, no daemon, no sshd (as a debootstrap of python3 alone).
bash "$keep_only" "$rootfs" python3 || fail "trimming the root filesystem failed"
python="$(chroot "$rootfs" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
[ "$python" = 3.11 ] || fail "bookworm's python3 is $python, not the wheel's 3.11"

# The wheels torch needs, resolved offline by pip (run from its own wheel) for the image's Python
# and platform, copied into the root filesystem where the image's python3 installs them.
wheels="$rootfs/tmp/wheels"
mkdir -p "$wheels"
echo "build-torch-image: installing $(basename "$wheel") and its dependencies" >&2
python3 "$pip_wheel/pip" download --quiet --disable-pip-version-check --no-index \
  --find-links "$(dirname "$wheel")" --find-links "$dependencies" \
  --only-binary=:all: --python-version 3.11 --implementation cp --abi cp311 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --dest "$wheels" "$wheel" >"$rootfs.log" 2>&1 || { tail -20 "$rootfs.log" >&2; fail "resolving torch's wheels failed"; }
cp "$pip_wheel" "$wheels/"
chroot "$rootfs" python3 "/tmp/wheels/$(basename "$pip_wheel")/pip" install --quiet \
  --disable-pip-version-check --root-user-action=ignore --break-system-packages --no-cache-dir \
  --no-index --find-links /tmp/wheels "/tmp/wheels/$(basename "$wheel")" \
  >"$rootfs.log" 2>&1 || { tail -20 "$rootfs.log" >&2; fail "pip install failed"; }
rm -rf "$wheels"

site="$rootfs/usr/local/lib/python3.11/dist-packages"
[ -x "$rootfs/usr/local/bin/torchrun" ] || fail "torchrun is not in /usr/local/bin"
find "$site/torch/bin" -mindepth 1 -maxdepth 1 ! -name torch_shm_manager -exec rm -rf {} +
rm -rf "$site/torch/include" "$site/torch/test"
find "$site/sympy" "$site/networkx" "$site/mpmath" -name __pycache__ -type d -prune -exec rm -rf {} +
chroot "$rootfs" python3 -c 'import torch, torch.distributed as dist; assert dist.is_gloo_available()' \
  || fail "torch does not import, or has no gloo, in the image"

# What a running system does not need: package lists, caches, documentation.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/root/.cache

tar -C "$rootfs" --numeric-owner -c . \
  | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV HOME=/root' \
    --change 'WORKDIR /root' \
    --change 'CMD ["python3"]' \
    --change "LABEL $label=$build_hash" \
    - "$image" >/dev/null
echo "build-torch-image: built $image" >&2
