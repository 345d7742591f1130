#!/usr/bin/env bash
# Makes sure a one-node Kubernetes 1.20 cluster answers on this machine, on loopback, and prints
# the settings a user puts in the kubernetes backend's config.yml entry:
#   KUBECONFIG=<kubeconfig file>  PROXY_JUMP_HOSTNAME=127.0.0.1  POD_NETWORK_GATEWAY=<bridge IP>
# (`kubeconfig: {filename: $KUBECONFIG}`, `proxy_jump: {hostname: $PROXY_JUMP_HOSTNAME}`; the pod
# network's gateway is this host as pods see it, where tests serve the runner for pods to fetch).
#
# etcd (Debian's etcd-server), kube-apiserver, kube-controller-manager, kube-scheduler and a
# kubelet on the machine's Docker (dockershim), the last four built once per machine from
# Debian's `kubernetes` source package by kubernetes/build.sh (cached under
# /var/cache/dstack-test, keyed by version and patch; the first build took 25 minutes on this
# 2-core machine shared with other builds, about 10 on an idle core). Pods get addresses from a
# CNI bridge (Debian's containernetworking-plugins). Once built, the cluster starts in about 10 s.
# Run again, it reuses what runs (a tenth of a second) unless the cluster was started from other
# scripts, which it restarts; `--stop` stops what it started, by the PIDs it recorded, and removes
# its pods' containers and mounts.
#
# What it leaves to the rest of the machine: processes on 127.0.0.1 only (ports chosen free at
# start; NodePorts 30000-32767, below Linux's ephemeral range), the bridge dstk8s0 with
# 10.233.64.0/24, no iptables rule (kube-proxy does not run, the kubelet's chains and the bridge's
# masquerade are off), and Docker containers named k8s_* with io.kubernetes.* labels only while
# their pods exist (the emulated-host tests list containers by their own labels). Test files that
# launch pods take turns through a lock (holdKubernetesTestCluster of @dstack/testing): the node
# has this machine's CPUs.
#
# What this sandbox lacks, and how the test cluster works around it (never the backend):
# - no CAP_SYS_RESOURCE, so Docker refuses negative OOM score adjustments: sandbox.patch sets
#   the kubelet's pod sandbox and guaranteed-QoS adjustments to 0, and the kubelet runs with
#   --oom-score-adj=0; the backend adds SYS_RESOURCE to job pods only when told to
#   (DSTACK_KUBERNETES_ADD_SYS_RESOURCE), off by default;
# - the host's kernel settings (vm.overcommit_memory, kernel.panic, ...) cannot be changed:
#   sandbox.patch makes the kubelet only warn about them instead of setting them;
# - no loopback node address: the kubelet refuses one, so the node may have no address the server
#   reaches; PROXY_JUMP_HOSTNAME (the backend's `proxy_jump.hostname`, dstack's field) names it;
# - kube-proxy must not run (it rewrites the host's iptables; the kubelet's own iptables chains
#   are off too): pods are reached by pod IP over the CNI bridge, never by a ClusterIP, and
#   kubernetes/node-port-proxy.mjs stands in for kube-proxy's NodePorts on 127.0.0.1 only;
#   nothing is masqueraded, so pods send nothing off the machine;
# - no image can be pulled: the pod sandbox ("pause") image is a local tag built here from
#   busybox-static (exiting on SIGTERM, as the real pause does: else every deleted pod waits out
#   the sandbox's 10 s grace), and test pods use local tags with imagePullPolicy: IfNotPresent;
# - no cgroup of its own to manage: the kubelet runs without QoS cgroups
#   (--cgroups-per-qos=false, no enforced node allocatable), on Docker's cgroupfs driver.
# Every component talks TLS with certificates made here (one CA; one admin client certificate
# in system:masters that every component uses), as a real cluster's kubeconfig would carry.
#
# Usage: scripts/services/ensure-kubernetes.sh [--check | --stop]
#   --check  print the settings if the cluster runs, else fail; start nothing
#   --stop   stop what an earlier run started (by the PIDs it recorded)
# Env: DSTACK_TEST_KUBERNETES_DIR (default /var/lib/dstack-test/kubernetes),
#      KUBERNETES_WAIT_SECONDS (default 180).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
state="${DSTACK_TEST_KUBERNETES_DIR:-/var/lib/dstack-test/kubernetes}"
wait_seconds="${KUBERNETES_WAIT_SECONDS:-180}"
node_name="dstack-test-node"
bridge="dstk8s0"
pod_subnet="10.233.64.0/24"
pod_gateway="10.233.64.1"
pause_image="dstack-test/kubernetes-pause:2"
components=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet node-port-proxy)

fail() {
  echo "ensure-kubernetes: $*" >&2
  exit 1
}
log() { echo "ensure-kubernetes: $*" >&2; }

pid_of() { cat "$state/pids/$1" 2>/dev/null || true; }
# Whether the process runs: an exited one stays a zombie until this machine's init reaps it
# (seconds later here), and `kill -0` still finds a zombie.
alive() {
  local status
  status="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
  [[ "$status" != Z* ]]
}
running() {
  local pid
  pid="$(pid_of "$1")"
  [ -n "$pid" ] && alive "$pid"
}

stop_all() {
  local component pid index
  # Clients before the API server and etcd last: an API server whose etcd is gone waits a
  # minute for its requests to drain, and the other components keep retrying it.
  for ((index = ${#components[@]} - 1; index >= 0; index--)); do
    component="${components[index]}"
    pid="$(pid_of "$component")"
    if [ -n "$pid" ] && alive "$pid"; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.2; done
      if alive "$pid"; then kill -9 "$pid" 2>/dev/null || true; fi
    fi
    rm -f "$state/pids/$component"
  done
  # The kubelet's pods are Docker containers named k8s_*; remove those of this cluster.
  local containers
  containers="$(docker ps -aq --filter "label=io.kubernetes.docker.type" 2>/dev/null || true)"
  [ -z "$containers" ] || docker rm -f $containers >/dev/null 2>&1 || true
  # The kubelet mounts pods' secret volumes (tmpfs) under its root directory, and the directory
  # on itself (made a shared mount for mount propagation).
  awk -v root="$state/kubelet" '$2 == root || index($2, root "/") == 1 { print $2 }' /proc/mounts | sort -r |
    while read -r mount; do umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || true; done
}

case "${1:-}" in
  "") ;;
  --stop) stop_all; log "stopped"; exit 0 ;;
  --check) ;;
  *) fail "unknown argument $1 (usage: ensure-kubernetes.sh [--check | --stop])" ;;
esac

print_settings() {
  echo "KUBECONFIG=$state/admin.kubeconfig"
  echo "PROXY_JUMP_HOSTNAME=127.0.0.1"
  echo "POD_NETWORK_GATEWAY=$pod_gateway"
}

# The admin client's call to the API server, for readiness checks.
api_get() {
  # shellcheck disable=SC1091
  . "$state/ports.env"
  curl -fsS --max-time 5 --cacert "$state/pki/ca.crt" --cert "$state/pki/admin.crt" --key "$state/pki/admin.key" \
    "https://127.0.0.1:$API_PORT$1"
}

# The API server pretty-prints JSON for curl: compare without blanks.
node_ready() {
  # Read whole before matching: under pipefail, `grep -q` leaving early fails the writer (SIGPIPE).
  local node
  node="$(api_get "/api/v1/nodes/$node_name" 2>/dev/null | tr -d ' \n')" || return 1
  [[ "$node" == *'"type":"Ready","status":"True"'* ]]
}

all_running() {
  local component
  for component in "${components[@]}"; do running "$component" || return 1; done
  node_ready
}

# What the running cluster was started from: a cluster of other scripts (another pause image,
# other flags, another build) is started afresh by a run of these, never by --check.
fingerprint="$(cat "${BASH_SOURCE[0]}" "$here/kubernetes/build.sh" "$here/kubernetes/sandbox.patch" \
  "$here/kubernetes/node-port-proxy.mjs" | sha256sum | cut -c1-16)"
same_scripts() { [ "$(cat "$state/fingerprint" 2>/dev/null || true)" = "$fingerprint" ]; }

if [ -f "$state/ports.env" ] && all_running && { [ "${1:-}" = "--check" ] || same_scripts; }; then
  print_settings
  exit 0
fi
[ "${1:-}" != "--check" ] || fail "the test cluster is not running (or its node is not Ready)"

install_missing() {
  local missing=()
  command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v openssl >/dev/null 2>&1 || missing+=(openssl)
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  [ -x /bin/busybox ] || missing+=(busybox-static)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 "${missing[@]}" >/dev/null ||
      fail "apt-get install ${missing[*]} failed"
  fi
}

install_missing
docker info >/dev/null 2>&1 || fail "Docker does not answer: run scripts/services/ensure-dockerd.sh first"
bin="$(bash "$here/kubernetes/build.sh")" || fail "building Kubernetes failed"

# A partial cluster (a component died) starts over: fresh state, fresh ports.
stop_all
rm -rf "$state/etcd" "$state/kubelet" "$state/cni-ipam" "$state/logs"
mkdir -p "$state/pids" "$state/pki" "$state/logs" "$state/cni" "$state/cni-ipam" "$state/kubelet"

free_ports() {
  node -e '
    const net = require("node:net");
    const count = Number(process.argv[1]);
    const servers = [];
    const next = () => {
      if (servers.length === count) {
        console.log(servers.map((s) => s.address().port).join(" "));
        servers.forEach((s) => s.close());
        return;
      }
      const server = net.createServer();
      server.listen(0, "127.0.0.1", () => { servers.push(server); next(); });
    };
    next();' "$1"
}
read -r etcd_port etcd_peer_port api_port cm_port scheduler_port kubelet_port kubelet_healthz_port <<<"$(free_ports 7)"
cat >"$state/ports.env" <<EOF
ETCD_PORT=$etcd_port
API_PORT=$api_port
EOF

make_pki() {
  local pki="$state/pki"
  [ -f "$pki/admin.crt" ] && [ -f "$pki/sa.key" ] && return 0
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj "/CN=dstack-test-kubernetes-ca"
    openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver"
    printf 'subjectAltName=IP:127.0.0.1,IP:10.233.128.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\n' >apiserver.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 3650 -extfile apiserver.ext
    openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=dstack-test-admin"
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out admin.crt -days 3650
    openssl genrsa -out sa.key 2048
    openssl rsa -in sa.key -pubout -out sa.pub
  ) >"$state/logs/pki.log" 2>&1 || fail "making certificates failed (see $state/logs/pki.log)"
}
make_pki

b64() { base64 -w0 <"$1"; }
cat >"$state/admin.kubeconfig" <<EOF
apiVersion: v1
kind: Config
current-context: dstack-test
clusters:
- name: dstack-test
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority-data: $(b64 "$state/pki/ca.crt")
users:
- name: dstack-test-admin
  user:
    client-certificate-data: $(b64 "$state/pki/admin.crt")
    client-key-data: $(b64 "$state/pki/admin.key")
contexts:
- name: dstack-test
  context:
    cluster: dstack-test
    user: dstack-test-admin
    namespace: default
EOF
chmod 600 "$state/admin.kubeconfig"

# The pod sandbox image: a process that sleeps, from the static busybox (nothing to pull). It
# exits on SIGTERM as Kubernetes' pause does: a first process without a handler ignores it, and
# every deleted pod would wait out the kubelet's sandbox grace period (10 s).
if ! docker image inspect "$pause_image" >/dev/null 2>&1; then
  context="$(mktemp -d)"
  cp /bin/busybox "$context/busybox"
  printf '%s\n' 'FROM scratch' 'COPY busybox /bin/busybox' \
    'ENTRYPOINT ["/bin/busybox", "sh", "-c", "trap \"exit 0\" TERM INT; /bin/busybox sleep 2147483647 & wait"]' \
    >"$context/Dockerfile"
  DOCKER_BUILDKIT=0 docker build -q -t "$pause_image" "$context" >/dev/null 2>&1 || fail "building $pause_image failed"
  rm -rf "$context"
fi

# The pod network's bridge, made up front so that its gateway exists before the first pod (the
# CNI bridge plugin takes it as it is).
if ! ip link show "$bridge" >/dev/null 2>&1; then
  ip link add "$bridge" type bridge || fail "cannot create the bridge $bridge"
fi
[[ "$(ip addr show dev "$bridge")" == *"inet $pod_gateway/"* ]] || ip addr add "$pod_gateway/24" dev "$bridge"
ip link set "$bridge" up
cat >"$state/cni/10-dstack-test.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "dstack-test-pods",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$pod_subnet", "gateway": "$pod_gateway" }]],
        "dataDir": "$state/cni-ipam"
      }
    }
  ]
}
EOF

start() {
  local component="$1"
  shift
  setsid "$@" >"$state/logs/$component.log" 2>&1 </dev/null &
  echo $! >"$state/pids/$component"
}

wait_for() {
  local what="$1" component="$2"
  shift 2
  local waited=0
  until "$@" >/dev/null 2>&1; do
    running "$component" || { tail -n 20 "$state/logs/$component.log" >&2; fail "$component exited (see $state/logs/$component.log)"; }
    [ "$waited" -lt "$wait_seconds" ] || { tail -n 20 "$state/logs/$component.log" >&2; fail "$what within ${wait_seconds}s"; }
    sleep 1
    waited=$((waited + 1))
  done
}

pki="$state/pki"
log "starting etcd, the control plane and the kubelet (logs: $state/logs)"
start etcd etcd --name dstack-test --data-dir "$state/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
  --initial-cluster "dstack-test=http://127.0.0.1:$etcd_peer_port"
wait_for "etcd did not answer" etcd curl -fsS "http://127.0.0.1:$etcd_port/health"

start kube-apiserver "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
  --bind-address 127.0.0.1 --secure-port "$api_port" --insecure-port 0 --advertise-address 127.0.0.1 \
  --endpoint-reconciler-type none --service-cluster-ip-range 10.233.128.0/24 \
  --client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
  --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
  --service-account-issuer https://kubernetes.default.svc --authorization-mode RBAC --allow-privileged=true
wait_for "the API server did not answer" kube-apiserver api_get /readyz

start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig "$state/admin.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$cm_port" --port 0 --leader-elect=false \
  --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" --use-service-account-credentials=false
start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$state/admin.kubeconfig" \
  --bind-address 127.0.0.1 --secure-port "$scheduler_port" --port 0 --leader-elect=false

start kubelet "$bin/kubelet" --kubeconfig "$state/admin.kubeconfig" --hostname-override "$node_name" \
  --root-dir "$state/kubelet" --cert-dir "$state/kubelet/pki" --volume-plugin-dir "$state/kubelet/volume-plugins" \
  --container-runtime docker --pod-infra-container-image "$pause_image" \
  --network-plugin cni --cni-bin-dir /usr/lib/cni --cni-conf-dir "$state/cni" --cni-cache-dir "$state/cni-cache" \
  --address 127.0.0.1 --port "$kubelet_port" --read-only-port 0 \
  --healthz-bind-address 127.0.0.1 --healthz-port "$kubelet_healthz_port" \
  --anonymous-auth=false --authorization-mode AlwaysAllow --client-ca-file "$pki/ca.crt" \
  --fail-swap-on=false --cgroup-driver cgroupfs --cgroups-per-qos=false --enforce-node-allocatable "" \
  --oom-score-adj 0 --make-iptables-util-chains=false \
  --image-gc-high-threshold 100 --image-gc-low-threshold 99 --resolv-conf /etc/resolv.conf

start node-port-proxy node "$here/kubernetes/node-port-proxy.mjs" "https://127.0.0.1:$api_port" \
  "$pki/ca.crt" "$pki/admin.crt" "$pki/admin.key"

wait_for "the node did not become Ready" kubelet node_ready
# Pods need the namespace's default service account, which the controller manager makes.
wait_for "the default service account did not appear" kube-controller-manager api_get /api/v1/namespaces/default/serviceaccounts/default
echo "$fingerprint" >"$state/fingerprint"
print_settings
