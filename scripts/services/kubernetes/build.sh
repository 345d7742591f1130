#!/usr/bin/env bash
# Builds the test cluster's Kubernetes binaries once per machine, from Debian's `kubernetes`
# source package with sandbox.patch applied, and prints the directory holding them.
#
# The build is cached outside the repository, keyed by the package version and the hash of the
# patch and this script (its comments aside): /var/cache/dstack-test/kubernetes-<version>-<hash>/bin.
# A second run with the same key prints the cached directory at once. The source comes through a private sources list
# (a deb-src line under the cache directory) so the machine's own apt set-up is left alone.
#
# The build is niced and single-job (GOMAXPROCS=1, go build -p 1): the machine is shared, and
# one core takes about 10 minutes and 1.4 GB of memory. Measured on this 2-core machine while
# other helpers built and tested (load 9-17): 25 minutes. Go's cache (2 GB or so) sits beside the
# builds, so an attempt that died leaves its work to the next; it goes with the sources on success.
#
# Usage: scripts/services/kubernetes/build.sh        (prints the bin directory on stdout)
# Env: DSTACK_TEST_CACHE (default /var/cache/dstack-test), KUBERNETES_BUILD_LOG.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache_root="${DSTACK_TEST_CACHE:-/var/cache/dstack-test}"
patch_file="$here/sandbox.patch"
components=(kube-apiserver kube-controller-manager kube-scheduler kubelet)
# Kubernetes 1.20 vendors reflect2 1.0.1, whose unsafe map iteration crashes on Go 1.18 and later
# ("unexpected fault address" in mapiterinit: the API server dies in its first seconds). Debian's
# Go is 1.19, so the vendored copy is replaced by Debian's reflect2 1.0.2, which supports it.
reflect2_source=/usr/share/gocode/src/github.com/modern-go/reflect2

fail() {
  echo "kubernetes/build: $*" >&2
  exit 1
}

apt_source_dir="$cache_root/apt-src"
apt_options=(
  -o "Dir::Etc::SourceList=$apt_source_dir/sources.list"
  -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::State::Lists=$apt_source_dir/lists"
  -o "DPkg::Lock::Timeout=600"
)

install_build_tools() {
  local missing=()
  command -v go >/dev/null 2>&1 || missing+=(golang-go)
  command -v dpkg-source >/dev/null 2>&1 || missing+=(dpkg-dev)
  command -v make >/dev/null 2>&1 || missing+=(make)
  command -v patch >/dev/null 2>&1 || missing+=(patch)
  [ -d "$reflect2_source" ] || missing+=(golang-github-modern-go-reflect2-dev)
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null \
      || fail "apt-get install ${missing[*]} failed"
  fi
}

# The package version the private deb-src list offers (the same suite as the machine's binaries).
refresh_source_list() {
  mkdir -p "$apt_source_dir/lists/partial"
  local suite
  suite="$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")"
  cat >"$apt_source_dir/sources.list" <<EOF
deb-src http://deb.debian.org/debian $suite main
deb-src http://deb.debian.org/debian-security $suite-security main
EOF
  apt-get "${apt_options[@]}" update -qq >/dev/null 2>&1 || fail "apt-get update of the private deb-src list failed"
}

source_version() {
  apt-cache "${apt_options[@]}" showsrc kubernetes 2>/dev/null | awk '/^Version:/ { print $2 }' | sort -V | tail -n 1
}

# Comments are left out of the key: rewording this header rebuilds nothing.
patch_hash="$( { cat "$patch_file"; grep -v '^[[:space:]]*#' "${BASH_SOURCE[0]}"; } | sha256sum | cut -c1-12)"

# A cached build for any version with this patch is reused without asking apt (no network needed).
cached="$(ls -d "$cache_root"/kubernetes-*-"$patch_hash"/bin 2>/dev/null | sort -V | tail -n 1 || true)"
if [ -n "$cached" ] && [ -f "$cached/.complete" ]; then
  echo "$cached"
  exit 0
fi

install_build_tools
refresh_source_list
version="$(source_version)"
[ -n "$version" ] || fail "no kubernetes source package in the deb-src list"
build_dir="$cache_root/kubernetes-${version//[:+~]/_}-$patch_hash"
bin_dir="$build_dir/bin"
log_file="${KUBERNETES_BUILD_LOG:-$build_dir/build.log}"
go_cache="$cache_root/go-build"
mkdir -p "$build_dir"

echo "kubernetes/build: building Kubernetes $version with sandbox.patch in $build_dir (log: $log_file)" >&2
{
  rm -rf "$build_dir/download" "$build_dir/tree"
  mkdir -p "$build_dir/download"
  (cd "$build_dir/download" && apt-get "${apt_options[@]}" source --download-only "kubernetes=$version")
  dpkg-source -x "$build_dir"/download/*.dsc "$build_dir/tree"
  (cd "$build_dir/tree" && patch -p1 <"$patch_file")
  rm -rf "$build_dir/tree/vendor/github.com/modern-go/reflect2"
  mkdir -p "$build_dir/tree/vendor/github.com/modern-go/reflect2"
  cp "$reflect2_source"/*.go "$reflect2_source"/*.s "$build_dir/tree/vendor/github.com/modern-go/reflect2/"
  # Vendored sources only (GOPROXY=off: nothing is fetched), static binaries as Debian builds
  # them (CGO_ENABLED=0). hack/lib/golang.sh copies any `-tags=` of GOFLAGS into its own tag
  # list and takes the whole of GOFLAGS when there is none, so GOFLAGS names a tag it has anyway.
  # Kubernetes' make sets GOCACHE to _output/local/go/cache inside the tree, which each attempt
  # starts afresh: that directory is a link to a cache beside the builds, so an attempt that died
  # (killed, out of memory) leaves its compiled packages to the next one.
  mkdir -p "$go_cache" "$build_dir/tree/_output/local/go"
  ln -sfn "$go_cache" "$build_dir/tree/_output/local/go/cache"
  (cd "$build_dir/tree" && GOMAXPROCS=1 GOFLAGS="-p=1 -tags=notest" GOPROXY=off CGO_ENABLED=0 \
    nice -n 10 make WHAT="$(printf 'cmd/%s ' "${components[@]}")")
} >"$log_file" 2>&1 || { tail -n 30 "$log_file" >&2; fail "the build failed (see $log_file)"; }

mkdir -p "$bin_dir"
for component in "${components[@]}"; do
  built="$(find "$build_dir/tree/_output" -type f -name "$component" -perm -u+x | head -n 1)"
  [ -n "$built" ] || fail "$component was not built (see $log_file)"
  cp "$built" "$bin_dir/$component"
done
# The sources and Go's object files are 2+ GB: keep only the binaries.
rm -rf "$build_dir/tree" "$build_dir/download" "$build_dir"/*.tar.* "$build_dir"/*.dsc "$go_cache"
touch "$bin_dir/.complete"
echo "$bin_dir"
