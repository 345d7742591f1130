#!/usr/bin/env bash
# Builds the image of the hosts booted from dstack's own VM images (`dstack-*`, `dstack-cuda-*` on
# AWS, GCP, Azure and OCI): the `docker` host image (build-host-image.sh) with dstack's base image
# already in its Docker daemon's store. dstack's Packer builds pull its Docker images into those VM
# images (scripts/packer: "they contain pre-pulled dstack Docker images",
# provisioners/pull-docker-images.sh), so a job in the default image starts there without a pull.
# The image pulled here is the test stand-in of dstackai/base (base-image/build-base-image.sh),
# under dstack's name.
#
# The store is made by the host image's own Docker daemon, once: a container of the host image
# loads the stand-in into a volume at /var/lib/docker, and that directory becomes a layer of the
# new image. Each host's /var/lib/docker starts as a copy of it (the emulator's hosts get a copy
# made from it, prepulled-docker-stores.ts), as each VM's disk starts as a copy of its image.
#
# Usage: build-dstack-host-image.sh --from IMAGE --base-image IMAGE --as NAME [--force] -- RUN-OPTIONS...
#   --from        the `docker` emulated host image
#   --base-image  the local stand-in image to pre-pull
#   --as          the name it has in the hosts' store, e.g. dstackai/base:0.15-base-ubuntu24.04
#   --force       rebuild even when the image exists and was built from these inputs
#   RUN-OPTIONS   what `docker run` needs to run the host image's Docker daemon (capabilities,
#                 security options), as the emulator gives its hosts
# Env: DSTACK_EMULATED_HOST_IMAGE (the image to build) and DSTACK_EMULATED_HOST_BUILD (its build
#      hash), both computed by emulated-host-image.ts.
set -euo pipefail

from=''
base_image=''
pulled_as=''
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --from) from="${2:-}"; shift 2 ;;
    --base-image) base_image="${2:-}"; shift 2 ;;
    --as) pulled_as="${2:-}"; shift 2 ;;
    --force) force=1; shift ;;
    --) shift; break ;;
    *) echo "build-dstack-host-image: unknown argument $1" >&2; exit 2 ;;
  esac
done
run_options=("$@")

fail() {
  echo "build-dstack-host-image: $*" >&2
  exit 1
}

[ -n "$from" ] && [ -n "$base_image" ] && [ -n "$pulled_as" ] || fail "--from, --base-image and --as are required"
image="${DSTACK_EMULATED_HOST_IMAGE:?}"
build_hash="${DSTACK_EMULATED_HOST_BUILD:?}"
label="dev.dstack.emulated-host-image"
built_from() {
  docker image inspect -f "{{index .Config.Labels \"$label\"}}" "$image" 2>/dev/null || true
}

# Test files of several checkouts may build at once: one builds, the others find the image.
exec 9>/tmp/dstack-emulated-host-dstack.lock
flock 9
if [ "$force" -eq 0 ] && [ "$(built_from)" = "$build_hash" ]; then
  echo "build-dstack-host-image: $image already exists" >&2
  exit 0
fi

suffix="$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
volume="dstack-test-prepull-$suffix"
loader="dstack-test-prepull-$suffix"
holder=''
cleanup() {
  docker rm --force "$loader" >/dev/null 2>&1 || true
  [ -z "$holder" ] || docker rm --force "$holder" >/dev/null 2>&1 || true
  docker volume rm --force "$volume" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# The host image's daemon loads the stand-in and names it as dstack's image, then stops cleanly.
# (A load needs no running container, so the cgroups stay as Docker gives them.)
docker volume create "$volume" >/dev/null
docker save "$base_image" | docker run --rm -i --name "$loader" "${run_options[@]}" \
  --mount "type=volume,source=$volume,destination=/var/lib/docker" \
  --entrypoint /bin/sh "$from" -c '
    set -e
    dockerd >/var/log/docker.log 2>&1 </dev/null &
    daemon=$!
    tries=0
    until docker info >/dev/null 2>&1; do
      tries=$((tries + 1))
      if [ "$tries" -gt 600 ] || ! kill -0 "$daemon" 2>/dev/null; then
        echo "the daemon did not start:" >&2; tail -20 /var/log/docker.log >&2; exit 1
      fi
      sleep 0.1
    done
    docker load -q
    docker tag "$1" "$2"
    docker rmi "$1" >/dev/null
    kill -TERM "$daemon"
    wait "$daemon" || true
    # What the daemon chose for this container (its bridge network docker0 took a subnet free
    # here) is no host'"'"'s: each host'"'"'s daemon picks its own at first boot.
    rm -rf /var/lib/docker/network /var/lib/docker/engine-id
  ' prepull "$base_image" "$pulled_as" >&2 || fail "loading $base_image into the host image's Docker failed"

# The store becomes /var/lib/docker of the new image, owners and modes as the daemon left them.
holder="$(docker create "$from")"
docker run --rm --mount "type=volume,source=$volume,destination=/var/lib/docker" \
  --entrypoint tar "$from" -C /var/lib --numeric-owner -c docker \
  | docker cp -a - "$holder:/var/lib/" || fail "copying the Docker store into the image failed"
docker commit --change "LABEL $label=$build_hash" "$holder" "$image" >/dev/null
echo "build-dstack-host-image: built $image" >&2
