#!/usr/bin/env bash
# Makes sure a one-node Slurm cluster answers on this machine, with a login node reachable over
# SSH, and prints the settings a `slurm` backend of config.yml takes:
#   SLURM_HOSTNAME=127.0.0.1 SLURM_PORT=<sshd port> SLURM_USER=dstack-slurm SLURM_PRIVATE_KEY=<path>
# Used by CI before the tests (the Slurm tests fail instead of skipping under CI=true when no
# cluster answers) and by a developer who wants to try the backend.
#
# What runs, all on 127.0.0.1, all started by this script and stopped by `--stop` (by the PIDs it
# recorded in the state directory, nothing else):
# - munged, with a key, socket and PID file of its own (not the machine's /etc/munge);
# - slurmctld and slurmd (Debian's 22.05), with a slurm.conf of their own (`SLURM_CONF`, never
#   the machine's /etc/slurm), one node `dstack-node` of this machine's CPUs and memory in one
#   partition `debug`, on free ports;
# - the login node: the machine's OpenSSH server on a free port with its own config and host key,
#   which gives every session `SLURM_CONF` (sshd's SetEnv), so `sinfo` and `sbatch` of the
#   backend's SSH sessions find the cluster;
# - the user `dstack-slurm` (made once) with a key pair in the state directory, authorized to
#   log in. Jobs run as that user; its home is on this machine's file system, which the compute
#   node shares, as a cluster's shared home.
#
# Work-arounds of this sandbox (the cluster, never the backend):
# - no cgroup delegation: `ProctrackType=proctrack/linuxproc` and `TaskPlugin=task/none` (Slurm's
#   defaults are cgroup plugins, which need a writable cgroup tree);
# - no systemd: the daemons are started by hand, in the foreground-less `-D` mode under nohup;
# - a small machine: the node says it has at least 8 CPUs (`SlurmdParameters=config_overrides`),
#   so the Slurm suites' jobs, which run at the same time, do not queue behind each other;
# - no accounting database (slurmdbd needs MySQL): `sacct` has no data, so a finished job is read
#   from `scontrol show job` (kept `MinJobAge` seconds) by the backend, which tries `sacct` after;
# - no pyxis/enroot packages: `srun --container-image` does not exist here, so `image:` is refused.
#
# Usage: scripts/services/ensure-slurm.sh [--stop]
# Env: DSTACK_SLURM_DIR (state directory, default /var/tmp/dstack-slurm), SLURM_WAIT_SECONDS (30).
set -euo pipefail

state_dir="${DSTACK_SLURM_DIR:-/var/tmp/dstack-slurm}"
wait_seconds="${SLURM_WAIT_SECONDS:-30}"
slurm_user=dstack-slurm
node_name=dstack-node
partition=debug
daemons=(sshd slurmd slurmctld munged)

fail() {
  echo "ensure-slurm: $*" >&2
  exit 1
}

pid_of() {
  local file="$state_dir/$1.pid"
  [ -s "$file" ] || return 1
  local pid
  pid="$(cat "$file")"
  # Only while that PID is still our daemon: after a reboot it may be anyone's.
  local command_line
  command_line="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  case "$command_line" in *"$1"*"$state_dir"*) ;; *) return 1 ;; esac
  echo "$pid"
}

# Whether the process runs: an exited one stays a zombie until this machine's init reaps it
# (seconds later here), and `kill -0` still finds a zombie.
alive() {
  local status
  status="$(ps -o stat= -p "$1" 2>/dev/null)" || return 1
  [[ "$status" != Z* ]]
}

stop_all() {
  for daemon in "${daemons[@]}"; do
    if pid="$(pid_of "$daemon")"; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
      if alive "$pid"; then kill -9 "$pid" 2>/dev/null || true; fi
      echo "ensure-slurm: stopped $daemon (pid $pid)" >&2
    fi
    rm -f "$state_dir/$daemon.pid"
  done
}

if [ "${1:-}" = "--stop" ]; then
  stop_all
  exit 0
fi
[ $# -eq 0 ] || fail "unknown argument $1 (usage: ensure-slurm.sh [--stop])"
[ "$(id -u)" -eq 0 ] || fail "run as root: it installs packages, adds a user and starts the daemons"

print_settings() {
  echo "SLURM_HOSTNAME=127.0.0.1 SLURM_PORT=$(cat "$state_dir/sshd.port") SLURM_USER=$slurm_user SLURM_PRIVATE_KEY=$state_dir/id_ed25519"
}

cluster_answers() {
  [ -f "$state_dir/slurm.conf" ] && [ -f "$state_dir/sshd.port" ] || return 1
  for daemon in "${daemons[@]}"; do pid_of "$daemon" >/dev/null || return 1; done
  SLURM_CONF="$state_dir/slurm.conf" sinfo -h -N -o '%N %t' 2>/dev/null | grep -Eq "^$node_name (idle|mix|alloc)" || return 1
  ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR \
    -i "$state_dir/id_ed25519" -p "$(cat "$state_dir/sshd.port")" "$slurm_user@127.0.0.1" \
    'scontrol ping' 2>/dev/null | grep -q UP
}

if cluster_answers; then
  echo "ensure-slurm: the cluster answers (state in $state_dir)" >&2
  print_settings
  exit 0
fi
stop_all

missing=()
command -v slurmctld >/dev/null 2>&1 || missing+=(slurmctld)
command -v slurmd >/dev/null 2>&1 || missing+=(slurmd)
command -v sbatch >/dev/null 2>&1 || missing+=(slurm-client)
command -v munged >/dev/null 2>&1 || missing+=(munge)
[ -x /usr/sbin/sshd ] || missing+=(openssh-server)
command -v ssh >/dev/null 2>&1 || missing+=(openssh-client)
if [ ${#missing[@]} -gt 0 ]; then
  echo "ensure-slurm: installing ${missing[*]} with apt-get" >&2
  apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || fail "apt-get install ${missing[*]} failed"
fi

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

wait_for() {
  local what="$1"
  shift
  for _ in $(seq 1 $((wait_seconds * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  fail "$what did not come up within ${wait_seconds}s; see the logs in $state_dir"
}

mkdir -p "$state_dir"/{spool/ctld,spool/d,munge,munge-socket,log}
chmod 0755 "$state_dir"

# The backend's user and key pair.
if ! id "$slurm_user" >/dev/null 2>&1; then
  useradd --create-home --shell /bin/bash "$slurm_user"
fi
# No password, but not locked: sshd refuses a locked account even with a key (UsePAM no).
usermod -p '*' "$slurm_user"
home="$(getent passwd "$slurm_user" | cut -d: -f6)"
[ -f "$state_dir/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C "$slurm_user@dstack-test-slurm" -f "$state_dir/id_ed25519"
install -d -m 0700 -o "$slurm_user" -g "$slurm_user" "$home/.ssh"
touch "$home/.ssh/authorized_keys"
if ! grep -qF "$(cut -d' ' -f2 "$state_dir/id_ed25519.pub")" "$home/.ssh/authorized_keys"; then
  cat "$state_dir/id_ed25519.pub" >>"$home/.ssh/authorized_keys"
fi
chown "$slurm_user:$slurm_user" "$home/.ssh/authorized_keys"
chmod 0600 "$home/.ssh/authorized_keys"

# munge: its own key and socket.
if [ ! -s "$state_dir/munge/munge.key" ]; then
  dd if=/dev/urandom of="$state_dir/munge/munge.key" bs=1 count=1024 status=none
fi
chmod 0700 "$state_dir/munge"
chmod 0400 "$state_dir/munge/munge.key"
# The socket in a directory every user reaches (sbatch of the backend's user talks to it).
chmod 0755 "$state_dir/munge-socket"
munge_socket="$state_dir/munge-socket/munge.socket"
rm -f "$munge_socket" "$munge_socket.lock"
# --force: munged refuses to run as root otherwise; its key is root's here.
munged --force --key-file "$state_dir/munge/munge.key" --socket "$munge_socket" \
  --pid-file "$state_dir/munged.pid" --log-file "$state_dir/log/munged.log" \
  --seed-file "$state_dir/munge/munge.seed"
wait_for munged pid_of munged

# Slurm: at least 8 CPUs (the test suites' jobs run side by side on this one node; slurmd takes
# the configured count, `config_overrides`) and most of the machine's memory, on free ports.
cpus="$(nproc)"
[ "$cpus" -ge 8 ] || cpus=8
memory_mib="$(awk '/MemTotal/ { print int($2 / 1024 * 0.9) }' /proc/meminfo)"
ctld_port="$(free_port)"
slurmd_port="$(free_port)"
cat >"$state_dir/slurm.conf" <<EOF
# Written by ensure-slurm.sh: a one-node test cluster on 127.0.0.1.
ClusterName=dstack-test
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
SlurmdParameters=config_overrides
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
StateSaveLocation=$state_dir/spool/ctld
SlurmdSpoolDir=$state_dir/spool/d
SlurmctldPidFile=$state_dir/slurmctld.pid
SlurmdPidFile=$state_dir/slurmd.pid
SlurmctldLogFile=$state_dir/log/slurmctld.log
SlurmdLogFile=$state_dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=300
KillWait=5
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$node_name NodeHostname=$(hostname -s) NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory_mib State=UNKNOWN
PartitionName=$partition Nodes=$node_name Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$state_dir/slurm.conf"
# -i: ignore state a previous cluster of this directory saved (its jobs are gone with its slurmd).
nohup slurmctld -D -i -f "$SLURM_CONF" >"$state_dir/log/slurmctld.out" 2>&1 </dev/null &
echo $! >"$state_dir/slurmctld.pid"
wait_for slurmctld scontrol ping
nohup slurmd -D -N "$node_name" -f "$SLURM_CONF" >"$state_dir/log/slurmd.out" 2>&1 </dev/null &
echo $! >"$state_dir/slurmd.pid"
node_ready() {
  sinfo -h -N -o '%N %t' | grep -Eq "^$node_name (idle|mix|alloc)"
}
wait_for "the node $node_name" node_ready

# The login node: this machine's sshd with a config of its own.
[ -f "$state_dir/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$state_dir/ssh_host_ed25519_key"
mkdir -p /run/sshd
ssh_port="$(free_port)"
cat >"$state_dir/sshd_config" <<EOF
# Written by ensure-slurm.sh: the test cluster's login node.
Port $ssh_port
ListenAddress 127.0.0.1
HostKey $state_dir/ssh_host_ed25519_key
PidFile $state_dir/sshd.pid
AuthenticationMethods publickey
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AllowUsers $slurm_user
AllowTcpForwarding yes
Subsystem sftp internal-sftp
SetEnv SLURM_CONF=$state_dir/slurm.conf
EOF
/usr/sbin/sshd -f "$state_dir/sshd_config" -E "$state_dir/log/sshd.log"
echo "$ssh_port" >"$state_dir/sshd.port"
wait_for sshd pid_of sshd
wait_for "the login node" cluster_answers
echo "ensure-slurm: the cluster answers (state in $state_dir)" >&2
print_settings
