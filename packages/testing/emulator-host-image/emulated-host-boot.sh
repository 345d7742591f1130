#!/bin/sh
# The boot of an emulated cloud host (the entrypoint of dstack-test/emulated-host-*), standing in
# for systemd and cloud-init. The emulator copies the instance's user data into /var/lib/cloud/instance
# before the container starts: user-data.txt (the exact bytes the backend sent), early.sh (what
# cloud-init does before sshd: write_files, ssh_authorized_keys) and scripts/* (what it runs late
# in boot: a user-data shell script, or runcmd); scripts in /var/lib/cloud/scripts/per-boot run
# late too, first. Output goes to /var/log/cloud-init-output.log,
# as on a real instance. On an image with Docker, its daemon starts beside them, as docker.service
# does. sshd and dockerd are started by their services (/etc/init.d, which `service` runs where
# systemd is not), so `service ssh restart` or `service docker restart` in user data (dstack's
# Nebius setup commands) restarts them as on a real instance; this script stays as the container's
# init, reaping orphans, for the container's lifetime.
set -u

log=/var/log/cloud-init-output.log
instance=/var/lib/cloud/instance

has_default_route() {
  ip route 2>/dev/null | grep -q '^default' || ip -6 route 2>/dev/null | grep -q '^default'
}

# A VM's init has its cgroups writable; a container gets them read-only, which Docker's daemon
# cannot run containers under. Each hierarchy is mounted again, writable.
make_cgroups_writable() {
  if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
    mount -o remount,rw /sys/fs/cgroup
    return
  fi
  for dir in /sys/fs/cgroup/*; do
    [ -d "$dir" ] && [ ! -L "$dir" ] || continue
    controllers="$(basename "$dir")"
    [ "$controllers" = systemd ] && controllers=none,name=systemd
    umount "$dir" && mount -t cgroup -o "$controllers" cgroup "$dir"
  done
}

# Nothing runs before the emulator has cut the host off from everything beyond its network: it
# removes the default route Docker gives even an internal network's containers.
waited=0
while has_default_route; do
  if [ "$waited" -ge 600 ]; then
    echo "emulated-host-boot: the emulator did not remove the default route within 30 s" >&2
    exit 1
  fi
  sleep 0.05
  waited=$((waited + 1))
done

# First boot: the host's own keys (cloud-init's ssh module), Ed25519 and ECDSA: cloud-init makes an
# RSA key too, whose 3072 bits cost a second of CPU per host (a loaded test run's minute), and every
# SSH client here negotiates one of these first.
for type in ed25519 ecdsa; do
  [ -f "/etc/ssh/ssh_host_${type}_key" ] || ssh-keygen -q -t "$type" -N '' -f "/etc/ssh/ssh_host_${type}_key" || exit 1
done
mkdir -p /run/sshd

echo "emulated-host-boot: booting $(hostname) at $(date -u '+%Y-%m-%dT%H:%M:%SZ')" >>"$log"
if command -v dockerd >/dev/null 2>&1; then
  if make_cgroups_writable >>"$log" 2>&1; then
    service docker start >>"$log" 2>&1 </dev/null \
      || echo "emulated-host-boot: docker did not start (status $?)" >>"$log"
  else
    echo "emulated-host-boot: the cgroups cannot be made writable; Docker does not start" >>"$log"
  fi
fi
if [ -f "$instance/early.sh" ]; then
  /bin/sh "$instance/early.sh" >>"$log" 2>&1 </dev/null \
    || echo "emulated-host-boot: early.sh failed with status $?" >>"$log"
fi

service ssh start >>"$log" 2>&1 </dev/null || {
  echo "emulated-host-boot: sshd did not start" >&2
  exit 1
}

# Late scripts run beside sshd, as cloud-init's final stage runs after ssh.service is up: the
# per-boot scripts (written by write_files, say) first, then the instance's (runcmd), as
# cloud-init's scripts_per_boot comes before scripts_user.
(
  cd /root || exit 1
  for script in /var/lib/cloud/scripts/per-boot/* "$instance"/scripts/*; do
    [ -f "$script" ] || continue
    chmod 700 "$script"
    "$script" </dev/null
    echo "emulated-host-boot: $(basename "$script") exited with status $?"
  done
) >>"$log" 2>&1 &

# The container's init: a `docker stop` ends it at once; `wait` reaps the orphans it inherits.
trap 'exit 0' TERM INT
while :; do
  sleep 3600 &
  wait $!
done
