/**
 * End to end: an SSH fleet whose host is what a team brings — a Debian machine with sshd, Docker
 * and a sudo-capable default user, and no node (an emulated host, asserted before the deploy) —
 * runs a task in the image it names, pulled by the host's own Docker daemon from a registry of
 * the test's. The deploy brings the agent runtime over SSH; `fleet delete` stops the shim and
 * leaves the host as it was, but for the runtime kept for the next deploy.
 */
import { generateEd25519KeyPair } from '@dstack/core';
import {
  DockerEmulatedHosts,
  ensureRunnerTestImages,
  type LocalDockerRegistry,
  RUNNER_BUSYBOX_TEST_IMAGE,
  startLocalDockerRegistry,
  TEST_IMAGE_MARKER_PATH,
} from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { connectToHost, execOnHost } from '../src/agents/ssh-host-probe.js';
import { dockerMissing } from './emulated-hosts-harness.js';
import {
  applyTask,
  type HarnessServer,
  makeTempDir,
  startHarnessServer,
  task,
  waitFor,
} from './server-harness.js';

vi.setConfig({ testTimeout: 240_000, hookTimeout: 300_000 });

const EMULATOR = `ssh-fleet-${process.pid}`;

describe.skipIf(dockerMissing)('an SSH fleet host with Docker and without node', () => {
  const temp = makeTempDir('dstack-ssh-image-host-');
  const key = generateEd25519KeyPair();
  let hosts: DockerEmulatedHosts;
  let registry: LocalDockerRegistry;
  let harness: HarnessServer;
  let address: string;
  let image: string;

  /** Runs `command` on the host as ubuntu; its stdout (a non-zero exit rejects). */
  async function onHost(command: string): Promise<string> {
    const client = await connectToHost({
      hostname: address,
      port: 22,
      username: 'ubuntu',
      privateKey: key.privateKey,
    });
    try {
      return await execOnHost(client, command);
    } finally {
      client.end();
    }
  }

  beforeAll(async () => {
    hosts = new DockerEmulatedHosts({ emulator: EMULATOR });
    await ensureRunnerTestImages();
    registry = await startLocalDockerRegistry({ anonymous: true, hosts });
    await registry.push(RUNNER_BUSYBOX_TEST_IMAGE, 'team/app:v1', {
      [TEST_IMAGE_MARKER_PATH]: 'the team image\n',
    });
    image = `${registry.hostsAddress}/team/app:v1`;
    const host = await hosts.launch({
      instanceId: `ssh-host-${process.pid}`,
      // The default user ubuntu (passwordless sudo, as on cloud images) and a user without sudo.
      userData: [
        '#!/bin/sh',
        'useradd --create-home --shell /bin/bash nosudo',
        'for home in /home/ubuntu /home/nosudo; do',
        '  mkdir -p $home/.ssh',
        `  echo '${key.publicKey}' > $home/.ssh/authorized_keys`,
        '  chown -R $(stat -c %u:%g $home) $home/.ssh',
        'done',
        'touch /tmp/users-ready',
      ].join('\n'),
    });
    address = host.address;
    // The user data runs beside sshd: its users are ready once it is done.
    await waitFor('the user data to finish', async () =>
      (await onHost('test -f /tmp/users-ready && echo yes || echo no').catch(() => 'no')).trim() === 'yes'
        ? true
        : null,
    );
    harness = await startHarnessServer({
      dir: temp.dir,
      config: { projects: [{ name: 'main', backends: [] }] },
    });
  });

  afterAll(async () => {
    await harness?.terminateFleetsAndClose();
    await hosts?.close();
    await registry?.stop();
    temp.remove();
  });

  /** Applies an SSH fleet of the host, logging in as `user` with the test's key. */
  function applySshFleet(name: string, user: string) {
    const ssh_config = { user, ssh_key: { private: key.privateKey }, hosts: [address] };
    return harness.call<{ detail: Array<{ msg: string }> }>('/api/project/main/fleets/apply', {
      plan: { spec: { configuration: { type: 'fleet', name, ssh_config } } },
    });
  }

  it('refuses a user who is not root and has no passwordless sudo, naming the user', async () => {
    const refused = await applySshFleet('no-sudo', 'nosudo');
    expect(refused.status).toBe(400);
    expect(refused.body.detail[0]?.msg).toContain(
      'nosudo is not root and cannot use sudo without a password; the shim runs as root',
    );
  });

  it('deploys to it, runs a task in its image through the host Docker, and stops cleanly', async () => {
    expect(await onHost('command -v node; echo "status=$?"')).toBe('status=1\n');

    const applied = await applySshFleet('team-box', 'ubuntu');
    expect(applied.status).toBe(200);

    await applyTask(
      harness,
      task('in-image', [`cat ${TEST_IMAGE_MARKER_PATH}`, 'echo "user=$(id -un)"'], { image }),
    );
    const finished = await harness.waitForRun('in-image', ['done', 'failed', 'terminated'], 180_000);
    expect(finished.status, finished.latest_job_submission?.termination_reason_message ?? '').toBe('done');
    const output = await harness.logs('in-image');
    expect(output).toContain('the team image');
    expect(output).toContain('user=root');

    const deleted = await harness.call('/api/project/main/fleets/delete', { names: ['team-box'] });
    expect(deleted.status).toBe(200);
    await waitFor('the fleet to be gone', async () => {
      const fleets = await harness.call<unknown[]>('/api/project/main/fleets/list');

      return fleets.body.length === 0 ? true : null;
    });
    await waitFor('the shim to stop', async () => {
      // The bracket keeps pgrep from counting the shell that runs it.
      const shims = await onHost("pgrep -fc '[a]gent-runtime' || true");
      return shims.trim() === '0' ? true : null;
    });
    // The host's Docker kept no container of the task.
    expect((await onHost('docker ps -aq | wc -l')).trim()).toBe('0');
  });
});
