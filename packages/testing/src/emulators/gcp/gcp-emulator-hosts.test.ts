/**
 * The GCP emulator with real hosts: an inserted instance boots a Docker container that runs the
 * exact startup script, its natIP answers SSH, and a delete takes the host away.
 */
import { generateEd25519KeyPair } from '@dstack/core';
import { afterAll, describe, expect, it } from 'vitest';
import { DockerEmulatedHosts, EMULATED_HOST_INSTANCE_LABEL } from '../hosts/docker-emulated-hosts.js';
import { docker, prepareDockerForHostTests, sshAsRoot } from '../hosts/emulated-hosts.test.helpers.js';
import { type GcpEmulator, startGcpEmulator } from './gcp-emulator.js';
import { accessToken, compute, instanceBody } from './gcp-emulator.test.helpers.js';

const environment = await prepareDockerForHostTests();
if (!environment.available) console.warn(`skipping the GCP emulator hosts test: ${environment.reason}`);

const ZONE = 'us-central1-a';

/** Polls `read` until `done` says so; bounded. */
async function pollUntil<T>(read: () => Promise<T>, done: (value: T) => boolean, attempts = 120): Promise<T> {
  let value = await read();
  for (let attempt = 0; attempt < attempts && !done(value); attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    value = await read();
  }
  return value;
}

describe.skipIf(!environment.available)('the GCP emulator with Docker hosts', { timeout: 120_000 }, () => {
  const hosts = new DockerEmulatedHosts({ emulator: `gcp-test-${process.pid}` });
  let emulator: GcpEmulator | undefined;

  afterAll(async () => {
    await emulator?.close();
    await hosts.close();
  });

  it('runs the startup script on a real host reachable at the natIP; delete removes the host', async () => {
    emulator = await startGcpEmulator({
      hosts,
      timeline: {
        operationPendingMs: 0,
        provisioningMs: 100,
        stagingMs: 100,
        stoppingMs: 100,
        terminatedVisibleMs: 100,
      },
    });
    const token = await accessToken(emulator);
    const key = generateEd25519KeyPair();
    const script = [
      '#!/bin/sh',
      'mkdir -p /root/.ssh && chmod 700 /root/.ssh',
      `echo '${key.publicKey}' >> /root/.ssh/authorized_keys`,
      'chmod 600 /root/.ssh/authorized_keys',
      'echo "startup script ran" > /root/startup-marker',
    ].join('\n');
    const insert = await compute(
      emulator,
      token,
      'POST',
      `zones/${ZONE}/instances`,
      instanceBody('dstack-real', ZONE, {
        metadata: { items: [{ key: 'startup-script', value: script }] },
      }),
    );
    expect(insert.status).toBe(200);
    const running = await pollUntil(
      () => compute(emulator as GcpEmulator, token, 'GET', `zones/${ZONE}/instances/dstack-real`),
      (answer) =>
        answer.body.status === 'RUNNING' &&
        answer.body.networkInterfaces[0].accessConfigs[0].natIP !== undefined,
    );
    expect(running.body.status).toBe('RUNNING');
    const address = running.body.networkInterfaces[0].accessConfigs[0].natIP as string;
    const marker = await pollUntil(
      () =>
        sshAsRoot(address, key.privateKey, 'cat /root/startup-marker').catch(() => ({
          stdout: '',
          stderr: '',
          code: 1,
        })),
      (result) => result.code === 0,
      80,
    );
    expect(marker.stdout.trim()).toBe('startup script ran');
    const instanceId = running.body.id as string;
    expect(
      await docker(['ps', '--quiet', '--filter', `label=${EMULATED_HOST_INSTANCE_LABEL}=${instanceId}`]),
    ).not.toBe('');

    await compute(emulator, token, 'DELETE', `zones/${ZONE}/instances/dstack-real`);
    const gone = await pollUntil(
      () =>
        docker(['ps', '--all', '--quiet', '--filter', `label=${EMULATED_HOST_INSTANCE_LABEL}=${instanceId}`]),
      (output) => output.trim() === '',
    );
    expect(gone.trim()).toBe('');
  });
});
