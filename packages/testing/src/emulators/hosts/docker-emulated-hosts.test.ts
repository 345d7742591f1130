import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { generateEd25519KeyPair } from '@dstack/core';
import { defaultJobImage } from '@dstack/core/agent-protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_IMAGE_MARKER_PATH } from './default-image-registry.js';
import {
  DockerEmulatedHosts,
  EMULATED_HOST_EMULATOR_LABEL,
  EMULATED_HOST_INSTANCE_LABEL,
  EMULATED_HOST_LABEL,
  HostTerminatedError,
} from './docker-emulated-hosts.js';
import { emulatedHostImage } from './emulated-host-image.js';
import {
  connectAsRoot,
  docker,
  execOverSsh,
  prepareDockerForHostTests,
  sshAs,
  sshAsRoot,
} from './emulated-hosts.test.helpers.js';
import { HostUserDataError } from './instance-boot-files.js';
import { prepulledStoresRoot } from './prepulled-docker-stores.js';

const run = promisify(execFile);
const environment = await prepareDockerForHostTests();
if (!environment.available) console.warn(`skipping the emulated hosts tests: ${environment.reason}`);

const EMULATOR = 'hosts-test';
const key = generateEd25519KeyPair();
const authorizeKeyScript = [
  '#!/bin/sh',
  'mkdir -p /root/.ssh && chmod 700 /root/.ssh',
  `echo '${key.publicKey}' >> /root/.ssh/authorized_keys`,
  'chmod 600 /root/.ssh/authorized_keys',
].join('\n');

let sequence = 0;
function instanceId(): string {
  sequence += 1;
  return `i-${process.pid.toString(16)}${sequence.toString(16).padStart(4, '0')}`;
}

async function containersLabelled(label: string): Promise<string[]> {
  const output = await docker(['ps', '--all', '--quiet', '--filter', `label=${label}`]);
  return output.split('\n').filter((line) => line.trim() !== '');
}

/** Whether sshd at address:22 can be reached; a removed host's address answers nothing (bounded by a timeout). */
function reachable(address: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: address, port: 22 });
    socket.setTimeout(3_000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe.skipIf(!environment.available)(
  'DockerEmulatedHosts against the real daemon',
  { timeout: 60_000 },
  () => {
    const hosts = new DockerEmulatedHosts({ emulator: EMULATOR });

    beforeAll(async () => {
      await hosts.prepare();
    }, 300_000);

    afterAll(async () => {
      await hosts.close();
    });

    it('boots a host that runs the user-data script as root, and lets the key it authorized in over SSH', async () => {
      const id = instanceId();
      const host = await hosts.launch({
        instanceId: id,
        userData: `${authorizeKeyScript}\necho "booted $(id -u)" > /root/user-data-ran\necho from the user data\n`,
      });
      expect(host.instanceId).toBe(id);
      expect(host.address).toMatch(/^\d+\.\d+\.\d+\.\d+$/);

      const client = await connectAsRoot(host.address, key.privateKey);
      try {
        const whoami = await execOverSsh(client, 'id -u; echo "$HOME"');
        expect(whoami).toMatchObject({ code: 0, stdout: '0\n/root\n' });
        // The script runs beside sshd; its file is there once it finished.
        const ran = await execOverSsh(
          client,
          'i=0; while [ ! -s /root/user-data-ran ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; cat /root/user-data-ran',
        );
        expect(ran.stdout).toBe('booted 0\n');
        const log = await execOverSsh(client, 'cat /var/log/cloud-init-output.log');
        expect(log.stdout).toContain('from the user data');
        const exact = await execOverSsh(client, 'cat /var/lib/cloud/instance/user-data.txt');
        expect(exact.stdout).toContain(key.publicKey);
      } finally {
        client.end();
      }
    });

    it("runs what the server's SSH deploy runs: the probe's tools, no node, SFTP, tar and a detached process", async () => {
      const host = await hosts.launch({ instanceId: instanceId(), userData: authorizeKeyScript });
      const client = await connectAsRoot(host.address, key.privateKey);
      try {
        const probe = await execOverSsh(
          client,
          [
            'echo "cpus=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)"',
            `echo "memory_kib=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"`,
            `echo "disk_kib=$(df -Pk / | awk 'NR==2 {print $2}')"`,
            'echo "arch=$(uname -m)"',
          ].join('\n'),
        );
        expect(probe.code).toBe(0);
        expect(probe.stdout).toMatch(/^cpus=\d+\nmemory_kib=\d+\ndisk_kib=\d+\narch=\S+\n$/);

        // No node, as on the images users boot: the agents bring their own.
        const node = await execOverSsh(client, 'command -v node');
        expect(node).toMatchObject({ code: 1, stdout: '' });

        // The deploy uploads the agent runtime (a .tar.gz) over SFTP, unpacks it, and starts the
        // shim from it with nohup, detached from the channel.
        const directory = await mkdtemp(join(tmpdir(), 'emulated-host-'));
        try {
          await mkdir(join(directory, 'app'));
          await writeFile(join(directory, 'app', 'app.sh'), 'printf up > "$1"\n');
          await run('tar', ['-czf', join(directory, 'app.tar.gz'), '-C', directory, 'app']);
          await new Promise<void>((resolve, reject) => {
            client.sftp((error, sftp) => {
              if (error) return reject(error);
              sftp.fastPut(join(directory, 'app.tar.gz'), '/root/app.tar.gz', { mode: 0o755 }, (putError) => {
                sftp.end();
                if (putError) reject(putError);
                else resolve();
              });
            });
          });
        } finally {
          await rm(directory, { recursive: true, force: true });
        }
        const started = await execOverSsh(
          client,
          'cd /root && tar -xzf app.tar.gz && nohup sh /root/app/app.sh /root/app.out > /root/app.log 2>&1 < /dev/null & echo $!',
        );
        expect(Number(started.stdout.trim())).toBeGreaterThan(0);
        const output = await execOverSsh(
          client,
          'i=0; while [ ! -s /root/app.out ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; cat /root/app.out',
        );
        expect(output.stdout).toBe('up');
        // The token is sent through the channel's input, into a file the deploy reads back.
        const piped = await new Promise<string>((resolve, reject) => {
          client.exec(
            'umask 077 && cat > /root/token && stat -c %a /root/token && cat /root/token',
            (error, stream) => {
              if (error) return reject(error);
              let text = '';
              stream.on('data', (chunk: Buffer) => {
                text += chunk.toString('utf8');
              });
              stream.once('close', () => resolve(text));
              stream.end('secret-token');
            },
          );
        });
        expect(piped).toBe('600\nsecret-token');
      } finally {
        client.end();
      }
    });

    it('applies #cloud-config: ssh_authorized_keys for the default user ubuntu and write_files before sshd, per-boot scripts then runcmd beside it', async () => {
      const userData = [
        '#cloud-config',
        'ssh_authorized_keys:',
        `  - ${key.publicKey}`,
        'write_files:',
        '  - path: /etc/dstack/settings.env',
        '    permissions: "0640"',
        '    owner: ubuntu:ubuntu',
        '    content: |',
        '      ANSWER=42',
        '  - path: /opt/binary.dat',
        '    encoding: b64',
        `    content: ${Buffer.from([0, 1, 2, 255]).toString('base64')}`,
        // cloud-init runs per-boot scripts at every boot, the first included, before runcmd.
        '  - path: /var/lib/cloud/scripts/per-boot/early-bird',
        '    permissions: "0700"',
        '    content: |',
        '      #!/bin/sh',
        '      echo "per-boot as $(id -un)" > /tmp/runcmd-ran',
        'runcmd:',
        '  - echo "runcmd as $(id -un)" >> /tmp/runcmd-ran',
        "  - [sh, -c, 'echo argv form >> /tmp/runcmd-ran']",
        'package_update: true',
        '',
      ].join('\n');
      const host = await hosts.launch({ instanceId: instanceId(), userData });
      const result = await sshAs(
        host.address,
        key.privateKey,
        'ubuntu',
        [
          'id -un',
          'cat /etc/dstack/settings.env',
          'stat -c %a /etc/dstack/settings.env',
          'od -An -tu1 /opt/binary.dat | tr -s " " | sed "s/^ //"',
          'i=0; while ! grep -q argv /tmp/runcmd-ran 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done',
          'cat /tmp/runcmd-ran',
          'grep -c "ignoring cloud-config key package_update" /var/log/cloud-init-output.log',
        ].join('\n'),
      );
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(
        `ubuntu\nANSWER=42\n640\n0 1 2 255\nper-boot as root\nruncmd as root\nargv form\n1\n`,
      );
    });

    it('gives each host its own address on an internal network, with no route beyond it', async () => {
      const [first, second] = await Promise.all([
        hosts.launch({ instanceId: instanceId(), userData: authorizeKeyScript, kind: 'plain' }),
        hosts.launch({ instanceId: instanceId(), userData: authorizeKeyScript }),
      ]);
      expect(first.address).not.toBe(second.address);

      const network = JSON.parse(
        await docker(['network', 'inspect', '--format', '{{json .}}', hosts.network]),
      ) as {
        Internal: boolean;
        Driver: string;
      };
      expect(network).toMatchObject({ Internal: true, Driver: 'bridge' });

      // 198.51.100.1 is a documentation address (TEST-NET-2): without a route the kernel refuses
      // the connection at once, and even a wrongly routed attempt would reach nothing real.
      const result = await sshAsRoot(
        first.address,
        key.privateKey,
        [
          'ip route',
          // bash's /dev/tcp (the hosts have no nc): its error goes to stdout here.
          "timeout 2 bash -c 'exec 3<>/dev/tcp/198.51.100.1/80' 2>&1",
          `timeout 2 bash -c 'exec 3<>/dev/tcp/${second.address}/22; head -c 7 <&3'`,
        ].join('\n'),
      );
      expect(result.stdout).not.toMatch(/^default/m);
      expect(result.stdout).toContain('Network is unreachable');
      // The neighbour's sshd greets.
      expect(result.stdout).toContain('SSH-2.0');
      // A plain host cannot give itself a route back (a host with Docker has NET_ADMIN, as a VM's
      // root does, and the internal network still drops what leaves it).
      const addRoute = await sshAsRoot(first.address, key.privateKey, 'ip route add default dev eth0');
      expect(addRoute.code).not.toBe(0);
    });

    it("boots the image's kind: Docker's daemon answers on a docker host (its services restart as on a VM), a plain host has none", async () => {
      const [withDocker, plain] = await Promise.all([
        hosts.launch({ instanceId: instanceId(), userData: authorizeKeyScript }),
        hosts.launch({ instanceId: instanceId(), userData: authorizeKeyScript, kind: 'plain' }),
      ]);
      const answer = await sshAsRoot(
        withDocker.address,
        key.privateKey,
        [
          'i=0; until docker info >/dev/null 2>&1 || [ $i -ge 300 ]; do sleep 0.1; i=$((i+1)); done',
          "docker info --format '{{.Driver}}'",
          'command -v node || echo no node',
        ].join('\n'),
      );
      expect(answer).toMatchObject({ code: 0, stdout: 'overlay2\nno node\n' });
      // User data restarts sshd and dockerd by their services (dstack's Nebius setup commands): the
      // host stays up, a new daemon with the new daemon.json answers, and sshd lets a new login in.
      const restarted = await sshAsRoot(
        withDocker.address,
        key.privateKey,
        [
          'before=$(cat /var/run/docker.pid)',
          `echo '{"labels": ["restarted=by-its-service"]}' > /etc/docker/daemon.json`,
          'service ssh restart >/dev/null && service docker restart >/dev/null || exit 1',
          'i=0; until docker info >/dev/null 2>&1 || [ $i -ge 300 ]; do sleep 0.1; i=$((i+1)); done',
          '[ "$(cat /var/run/docker.pid)" != "$before" ] && echo new daemon',
          "docker info --format '{{.Labels}}'",
        ].join('\n'),
      );
      expect(restarted).toMatchObject({ code: 0, stdout: 'new daemon\n[restarted=by-its-service]\n' });
      const again = await sshAsRoot(
        withDocker.address,
        key.privateKey,
        'service ssh status >/dev/null && echo up',
      );
      expect(again).toMatchObject({ code: 0, stdout: 'up\n' });
      const none = await sshAsRoot(plain.address, key.privateKey, 'command -v docker dockerd node');
      expect(none).toMatchObject({ code: 1, stdout: '' });
    });

    it("gives each host of dstack's images its own store with dstack's base image pre-pulled, gone with the host", async () => {
      const waitForDocker =
        'i=0; until docker info >/dev/null 2>&1 || [ $i -ge 300 ]; do sleep 0.1; i=$((i+1)); done';
      const image = defaultJobImage();
      const ids = [instanceId(), instanceId()];
      const [first, second] = await Promise.all(
        ids.map((id) => hosts.launch({ instanceId: id, userData: authorizeKeyScript, kind: 'dstack' })),
      );
      if (!first || !second) throw new Error('two hosts were launched');
      // One host deletes the image; the other still runs it, and a host booted after still has it.
      const removed = await sshAsRoot(
        first.address,
        key.privateKey,
        `${waitForDocker}\ndocker rmi -f ${image}`,
      );
      expect(removed.code).toBe(0);
      const runs = await sshAsRoot(
        second.address,
        key.privateKey,
        `${waitForDocker}\ndocker run --rm --pull never ${image} cat ${TEST_IMAGE_MARKER_PATH}`,
      );
      expect(runs).toMatchObject({ code: 0 });
      expect(runs.stdout.trim()).not.toBe('');
      const thirdId = instanceId();
      const third = await hosts.launch({ instanceId: thirdId, userData: authorizeKeyScript, kind: 'dstack' });
      const listed = await sshAsRoot(
        third.address,
        key.privateKey,
        `${waitForDocker}\ndocker image ls --format '{{.Repository}}:{{.Tag}}'`,
      );
      expect(listed.stdout.split('\n')).toContain(image);

      const storesOf = async (id: string) =>
        (
          await run('find', [join(prepulledStoresRoot(), 'hosts'), '-maxdepth', '3', '-name', `*${id}`])
        ).stdout.trim();
      expect(await storesOf(thirdId)).not.toBe('');
      await Promise.all([...ids, thirdId].map((id) => hosts.terminate(id)));
      for (const id of [...ids, thirdId]) expect(await storesOf(id)).toBe('');
    }, 180_000);

    it('terminate removes the host with everything it ran, and is idempotent', async () => {
      const id = instanceId();
      const host = await hosts.launch({ instanceId: id, userData: authorizeKeyScript });
      expect(await containersLabelled(`${EMULATED_HOST_INSTANCE_LABEL}=${id}`)).toHaveLength(1);
      expect(await reachable(host.address)).toBe(true);

      await hosts.terminate(id);
      expect(await containersLabelled(`${EMULATED_HOST_INSTANCE_LABEL}=${id}`)).toEqual([]);
      expect(await reachable(host.address)).toBe(false);
      await hosts.terminate(id);
      await hosts.terminate('i-never-launched');
    });

    it('a host terminated while it boots fails its launch and leaves no container', async () => {
      const id = instanceId();
      const launching = hosts.launch({ instanceId: id, userData: authorizeKeyScript });
      const refused = expect(launching).rejects.toBeInstanceOf(HostTerminatedError);
      await hosts.terminate(id);
      await refused;
      expect(await containersLabelled(`${EMULATED_HOST_INSTANCE_LABEL}=${id}`)).toEqual([]);
    });

    it('refuses user data it cannot run, naming the field, before any container exists', async () => {
      const id = instanceId();
      const launch = hosts.launch({
        instanceId: id,
        userData: '#cloud-config\nwrite_files:\n  - content: no path\n',
      });
      await expect(launch).rejects.toBeInstanceOf(HostUserDataError);
      await expect(launch).rejects.toMatchObject({ field: 'write_files[0].path' });
      expect(await containersLabelled(`${EMULATED_HOST_INSTANCE_LABEL}=${id}`)).toEqual([]);
    });

    it('close removes every host it made and the network it made; later launches are refused', async () => {
      const emulator = 'hosts-test-close';
      const network = `dstack-emulated-hosts-test-${process.pid}`;
      const own = new DockerEmulatedHosts({ emulator, network });
      const hostsOfOwn = await Promise.all([
        own.launch({ instanceId: instanceId(), userData: '' }),
        own.launch({ instanceId: instanceId(), userData: authorizeKeyScript }),
      ]);
      expect(hostsOfOwn).toHaveLength(2);
      expect(await containersLabelled(`${EMULATED_HOST_EMULATOR_LABEL}=${emulator}`)).toHaveLength(2);

      await own.close();
      expect(await containersLabelled(`${EMULATED_HOST_EMULATOR_LABEL}=${emulator}`)).toEqual([]);
      await expect(docker(['network', 'inspect', network])).rejects.toThrow(/no such network|not found/i);
      await expect(own.launch({ instanceId: instanceId(), userData: '' })).rejects.toBeInstanceOf(
        HostTerminatedError,
      );
    });

    it('removes the hosts an emulator left when its process died, and keeps those of live ones', async () => {
      const deadPid = await new Promise<number>((resolve) => {
        const child = spawn(process.execPath, ['-e', '']);
        child.once('exit', () => resolve(child.pid as number));
      });
      const create = (name: string, owner: string) =>
        docker([
          'create',
          '--name',
          name,
          '--label',
          `${EMULATED_HOST_LABEL}=1`,
          '--label',
          `dev.dstack.emulated-host.owner=${owner}`,
          emulatedHostImage('plain'),
        ]);
      const orphan = `dstack-hosts-test-orphan-${process.pid}`;
      const alive = `dstack-hosts-test-alive-${process.pid}`;
      await create(orphan, `${hostname()}:${deadPid}`);
      await create(alive, `${hostname()}:${process.pid}`);
      const orphanStore = join(prepulledStoresRoot(), 'hosts', String(deadPid), 'session', orphan);
      await mkdir(orphanStore, { recursive: true });
      try {
        await new DockerEmulatedHosts({ emulator: EMULATOR }).prepare();
        const names = await docker(['ps', '--all', '--format', '{{.Names}}']);
        expect(names.split('\n')).not.toContain(orphan);
        expect(names.split('\n')).toContain(alive);
        expect(existsSync(join(prepulledStoresRoot(), 'hosts', String(deadPid)))).toBe(false);
      } finally {
        await docker(['rm', '--force', orphan, alive]).catch(() => undefined);
      }
    });
  },
);
