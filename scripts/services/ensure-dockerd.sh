#!/usr/bin/env bash
# Makes sure a Docker daemon answers on this machine and that the shim's offline test image
# exists. Used by CI before the tests and by the Docker tests themselves when the socket is
# missing. The daemon runs without iptables and without a bridge: this machine has no network
# beyond the package registries, so containers use host networking and nothing is pulled.
#
# Usage: scripts/services/ensure-dockerd.sh [--no-image]
#   --no-image   only ensure the daemon; do not build dstack-test/runner-busybox
# Env: DOCKERD_LOG (default /tmp/dockerd.log), DOCKERD_WAIT_SECONDS (default 30).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
log_file="${DOCKERD_LOG:-/tmp/dockerd.log}"
wait_seconds="${DOCKERD_WAIT_SECONDS:-30}"
build_image=1
for arg in "$@"; do
  case "$arg" in
    --no-image) build_image=0 ;;
    *) echo "ensure-dockerd: unknown argument $arg" >&2; exit 2 ;;
  esac
done

fail() {
  echo "ensure-dockerd: $*" >&2
  exit 1
}

daemon_answers() {
  docker info >/dev/null 2>&1
}

# How to run a command as root: directly, or through password-less sudo.
root_prefix=()
can_be_root=1
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    root_prefix=(sudo -n)
  else
    can_be_root=0
  fi
fi

as_root() {
  [ "$can_be_root" -eq 1 ] || return 1
  "${root_prefix[@]}" "$@"
}

install_docker() {
  command -v apt-get >/dev/null 2>&1 || fail "dockerd is not installed and apt-get is not available"
  echo "ensure-dockerd: installing docker.io with apt-get" >&2
  # The package lists may be missing on a fresh machine; an update failure is reported by install.
  as_root apt-get update -qq >/dev/null 2>&1 || true
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null \
    || fail "apt-get install docker.io failed"
}

start_daemon() {
  command -v dockerd >/dev/null 2>&1 || install_docker
  command -v dockerd >/dev/null 2>&1 || fail "dockerd is still missing after installing docker.io"
  command -v docker >/dev/null 2>&1 || fail "the docker CLI is missing"
  echo "ensure-dockerd: starting dockerd (log: $log_file)" >&2
  # setsid keeps the daemon alive after this script (and the test run that called it) exits.
  [ "$can_be_root" -eq 1 ] || fail "Docker is not running and starting dockerd needs root"
  "${root_prefix[@]}" setsid dockerd --iptables=false --bridge=none >"$log_file" 2>&1 </dev/null &
  local dockerd_pid=$!
  local waited=0
  until daemon_answers; do
    if ! kill -0 "$dockerd_pid" 2>/dev/null; then
      tail -n 20 "$log_file" >&2 || true
      fail "dockerd exited at start (see $log_file)"
    fi
    if [ "$waited" -ge "$wait_seconds" ]; then
      tail -n 20 "$log_file" >&2 || true
      fail "dockerd did not answer within ${wait_seconds}s (see $log_file)"
    fi
    sleep 1
    waited=$((waited + 1))
  done
}

if ! command -v docker >/dev/null 2>&1 && ! command -v dockerd >/dev/null 2>&1; then
  install_docker
fi

if daemon_answers; then
  echo "ensure-dockerd: the Docker daemon answers" >&2
else
  start_daemon
  echo "ensure-dockerd: dockerd started" >&2
fi

if [ "$build_image" -eq 1 ]; then
  bash "$repo_root/packages/shim/test-image/build-test-image.sh"
fi
