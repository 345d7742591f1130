/**
 * The GCP emulator with real hosts: an inserted instance boots a Docker container that runs the
 * exact startup script, its natIP answers SSH, and a delete takes the host away; a persistent disk
 * attached to it is a real block device there (a loop device of this machine), whose data
 * survives a detach and an attach to another instance.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { generateEd25519KeyPair } from '@dstack/core';
import { afterAll, describe, expect, it } from 'vitest';
import { DockerEmulatedHosts, EMULATED_HOST_INSTANCE_LABEL } from '../hosts/docker-emulated-hosts.js';
import { docker, prepareDockerForHostTests, sshAsRoot } from '../hosts/emulated-hosts.test.helpers.js';
import { type GcpEmulator, startGcpEmulator } from './gcp-emulator.js';
import { accessToken, compute, instanceBody } from './gcp-emulator.test.helpers.js';

const environment = await prepareDockerForHostTests();
if (!environment.available) console.warn(`skipping the GCP emulator hosts test: ${environment.reason}`);

const ZONE = 'us-central1-a';
const run = promisify(execFile);

/** The loop devices of this machine whose backing file names `diskName`. */
async function loopsOf(diskName: string): Promise<string[]> {
  const { stdout } = await run('losetup', ['--list', '--noheadings', '--output', 'NAME,BACK-FILE']);
  return stdout.split('\n').filter((line) => line.includes(`-${diskName}-`));
}

/** Polls `read` until `done` says so; bounded. */
async function pollUntil<T>(read: () => Promise<T>, done: (value: T) => boolean, attempts = 120): Promise<T> {
  let value = await read();
  for (let attempt = 0; attempt < attempts && !done(value); attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    value = await read();
  }
  return value;
}

/** Instances move through their states in a tenth of a second: the hosts are what is tested. */
const QUICK_TIMELINE = {
  operationPendingMs: 0,
  provisioningMs: 100,
  stagingMs: 100,
  stoppingMs: 100,
  terminatedVisibleMs: 100,
};

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
      timeline: QUICK_TIMELINE,
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

describe.skipIf(!environment.available)('GCP persistent disks on Docker hosts', { timeout: 180_000 }, () => {
  const emulatorName = `gcp-disk-test-${process.pid}`;
  const hosts = new DockerEmulatedHosts({ emulator: emulatorName });
  let emulator: GcpEmulator | undefined;

  afterAll(async () => {
    await emulator?.close();
    await hosts.close();
  });

  it('attaches a disk as /dev/disk/by-id/google-<deviceName>; its data survives detach and attach elsewhere; nothing is left', async () => {
    emulator = await startGcpEmulator({
      hosts,
      timeline: QUICK_TIMELINE,
    });
    const current = emulator;
    const token = await accessToken(current);
    const call = (method: string, path: string, body?: unknown) =>
      compute(current, token, method, path, body);
    const names = ['disk-vm-a', 'disk-vm-b'];
    for (const name of names) {
      expect((await call('POST', `zones/${ZONE}/instances`, instanceBody(name, ZONE))).status).toBe(200);
    }
    const ids: string[] = [];
    for (const name of names) {
      const running = await pollUntil(
        () => call('GET', `zones/${ZONE}/instances/${name}`),
        (answer) => answer.body.status === 'RUNNING',
      );
      expect(running.body.status).toBe('RUNNING');
      ids.push(running.body.id as string);
    }
    const inHost = (index: number, script: string) =>
      docker(['exec', `dstack-${emulatorName}-${ids[index]}`, 'sh', '-ec', script]);
    const diskName = `data-${process.pid}`;
    await call('POST', `zones/${ZONE}/disks`, {
      name: diskName,
      sizeGb: '10',
      type: `zones/${ZONE}/diskTypes/pd-balanced`,
    });
    const source = `projects/${current.project}/zones/${ZONE}/disks/${diskName}`;
    const device = `/dev/disk/by-id/google-pd-${diskName}`;

    const attachAndWait = async (vm: string) => {
      const attach = await call('POST', `zones/${ZONE}/instances/${vm}/attachDisk`, {
        source,
        deviceName: `pd-${diskName}`,
      });
      expect(attach.status, JSON.stringify(attach.body)).toBe(200);
      const done = await pollUntil(
        () => call('GET', `zones/${ZONE}/operations/${attach.body.name}`),
        (answer) => answer.body.status === 'DONE',
      );
      expect(done.body.error).toBeUndefined();
    };
    const detachAndWait = async (vm: string) => {
      const detach = await call('POST', `zones/${ZONE}/instances/${vm}/detachDisk?deviceName=pd-${diskName}`);
      await pollUntil(
        () => call('GET', `zones/${ZONE}/operations/${detach.body.name}`),
        (answer) => answer.body.status === 'DONE',
      );
    };

    await attachAndWait(names[0] as string);
    expect(await loopsOf(diskName)).toHaveLength(1);
    // udev's link, relative as udev makes it, to a SCSI-named node.
    expect((await inHost(0, `readlink ${device}`)).trim()).toBe('../../sdb');
    await inHost(
      0,
      `mkfs.ext4 -q ${device} && mkdir -p /mnt/data && mount ${device} /mnt/data && echo kept > /mnt/data/file && umount /mnt/data`,
    );
    await detachAndWait(names[0] as string);
    expect(await loopsOf(diskName)).toEqual([]);
    expect((await inHost(0, `test -e ${device} && echo present || echo absent`)).trim()).toBe('absent');

    await attachAndWait(names[1] as string);
    expect(
      (
        await inHost(
          1,
          `mkdir -p /mnt/data && mount ${device} /mnt/data && cat /mnt/data/file && umount /mnt/data`,
        )
      ).trim(),
    ).toBe('kept');
    expect(current.state().disks[0]?.attachedTo).toEqual({
      instance: 'disk-vm-b',
      deviceName: `pd-${diskName}`,
    });

    // Closing the emulator takes the device off the host and frees the loop device.
    await current.close();
    emulator = undefined;
    expect(await loopsOf(diskName)).toEqual([]);
  });
});
