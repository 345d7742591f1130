#!/bin/sh
# The boot of an emulated cloud host (the entrypoint of dstack-test/emulated-host), standing in
# for cloud-init. The emulator copies the instance's user data into /var/lib/cloud/instance
# before the container starts: user-data.txt (the exact bytes the backend sent), early.sh (what
# cloud-init does before sshd: write_files, ssh_authorized_keys) and scripts/* (what it runs late
# in boot: a user-data shell script, or runcmd); scripts in /var/lib/cloud/scripts/per-boot run
# late too, first. Output goes to /var/log/cloud-init-output.log,
# as on a real instance. sshd then runs in the foreground for the container's lifetime.
set -u

log=/var/log/cloud-init-output.log
instance=/var/lib/cloud/instance

has_default_route() {
  # busybox's ip lists every route for `ip route show default`, hence the grep.
  ip route 2>/dev/null | grep -q '^default' || ip -6 route 2>/dev/null | grep -q '^default'
}

# Nothing runs before the emulator has cut the host off from everything beyond its network: it
# removes the default route Docker gives even an internal network's containers (that needs
# NET_ADMIN, which this container does not have).
waited=0
while has_default_route; do
  if [ "$waited" -ge 600 ]; then
    echo "emulated-host-boot: the emulator did not remove the default route within 30 s" >&2
    exit 1
  fi
  sleep 0.05
  waited=$((waited + 1))
done

for type in ed25519 ecdsa; do
  key="/etc/ssh/ssh_host_${type}_key"
  [ -e "$key" ] || ssh-keygen -q -t "$type" -N '' -f "$key" || exit 1
done

# The image is imported with every file owned by root; the default user owns its home.
chown 1000:1000 /home/ubuntu && chmod 755 /home/ubuntu

echo "emulated-host-boot: booting $(hostname) at $(date -u '+%Y-%m-%dT%H:%M:%SZ')" >>"$log"
if [ -f "$instance/early.sh" ]; then
  /bin/sh "$instance/early.sh" >>"$log" 2>&1 </dev/null \
    || echo "emulated-host-boot: early.sh failed with status $?" >>"$log"
fi

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

exec /usr/sbin/sshd -D -e
