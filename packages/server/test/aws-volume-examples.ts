/**
 * dstack's own volume examples (`examples/dstack/docs__concepts__volume_*`, unchanged), run with
 * the CLI on the emulated AWS as a user runs them, on the server, EC2 emulator and hosts of
 * `aws-emulator.test.ts`: a 100GB EBS volume in eu-central-1, a dev environment that mounts it
 * (reached with `dstack attach` and OpenSSH's `ssh RUN`), a task on a fresh instance that reads
 * what the dev environment wrote, and the register-by-id example whose id EC2 calls malformed.
 * The volume is a sparse file on a loop device: its disk use is measured while it is mounted, and
 * the file must be gone after the volume is deleted.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Volume } from '@dstack/core';
import type { AwsEmulator } from '@dstack/testing/emulators';
import { beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { rootWithLoopDevices } from './aws-clusters-volumes.js';
import { deleteFleet, provisionedInstance } from './cloud-run-helpers.js';
import { requireBuiltDstack, runDstack, startDstack } from './dstack-cli.js';
import { ADMIN_TOKEN, applyTask, type HarnessServer, makeTempDir, waitFor } from './server-harness.js';
import type { VmCloudContext } from './vm-cloud-runs.js';

const EXAMPLES_DIR = fileURLToPath(new URL('../../../examples/dstack/', import.meta.url));
const NEW_VOLUME = join(EXAMPLES_DIR, 'docs__concepts__volume_aws_new.dstack.yml');
const DEV_ENVIRONMENT = join(EXAMPLES_DIR, 'docs__concepts__dev_env_with_volume.dstack.yml');
const EXTERNAL_VOLUME = join(EXAMPLES_DIR, 'docs__concepts__volume_aws_external.dstack.yml');

/** The names the example files give. */
const VOLUME = 'my-volume';
const DEV_RUN = 'vscode-vol';
const MOUNT = '/volume_data';

/** The region the examples name; the test file's emulator and backend serve it. */
export const EXAMPLES_REGION = 'eu-central-1';

/** Bytes the file really takes on disk (its allocated blocks), not its size. */
function allocatedBytes(path: string): number {
  return statSync(path).blocks * 512;
}

/** The file behind a loop device, as the kernel has it. */
function loopBackingFile(loopDevice: string): string {
  return readFileSync(`/sys/block/${basename(loopDevice)}/loop/backing_file`, 'utf8').trim();
}

/** Runs OpenSSH as the user does (`ssh RUN command`), with the ssh config `dstack attach` wrote. */
function ssh(home: string, host: string, command: string): Promise<{ code: number | null; output: string }> {
  const child = spawn('ssh', ['-F', join(home, '.ssh', 'config'), host, command], {
    env: { ...process.env, HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output })));
}

export function describeAwsVolumeExamples(context: VmCloudContext, emulator: () => AwsEmulator): void {
  describe.skipIf(!rootWithLoopDevices)("dstack's volume examples, run with the CLI", () => {
    let harness: HarnessServer;
    let aws: AwsEmulator;
    const temp = makeTempDir('dstack-volume-examples-');
    /** The user's HOME: the CLI's config.yml, its SSH key and the ssh config `attach` writes. */
    const home = join(temp.dir, 'home');
    const cli = { HOME: home };
    const dstack = (args: readonly string[]) => runDstack(args, { env: cli, cwd: home });

    beforeAll(() => {
      requireBuiltDstack();
      harness = context.harness();
      aws = emulator();
      mkdirSync(join(home, '.dstack'), { recursive: true });
      writeFileSync(
        join(home, '.dstack', 'config.yml'),
        stringify({
          projects: [{ name: 'main', url: harness.server.url, token: ADMIN_TOKEN, default: true }],
        }),
      );
      return () => temp.remove();
    });

    async function volumeNamed(name: string): Promise<Volume> {
      const answer = await harness.call<Volume>('/api/project/main/volumes/get', { name });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return answer.body;
    }

    it('creates the 100GB volume, runs the dev environment on it over SSH, reads its file from a task on a fresh instance, and deletes it once free', async () => {
      // 1. The volume, as the docs apply it.
      const created = await dstack(['apply', '-f', NEW_VOLUME, '-y']);
      expect(created.code, created.stderr).toBe(0);
      expect(created.stdout).toMatch(new RegExp(`${VOLUME}\\s+aws \\(${EXAMPLES_REGION}\\)\\s+active`));
      const volume = await volumeNamed(VOLUME);
      const volumeId = volume.provisioning_data?.volume_id ?? '';
      const zone = volume.provisioning_data?.availability_zone ?? '';
      expect(volume.provisioning_data).toMatchObject({ size_gb: 100, backend: 'aws' });
      expect(zone).toMatch(new RegExp(`^${EXAMPLES_REGION}[a-z]$`));
      expect(aws.state().volumes.find((each) => each.id === volumeId)).toMatchObject({
        sizeGiB: 100,
        zone,
        status: 'available',
      });

      // The same EBS volume registered by its real id (as the external example does): active with
      // its size and zone; deleting the registration leaves the EBS volume.
      const registered = await harness.call('/api/project/main/volumes/create', {
        configuration: {
          type: 'volume',
          name: 'my-volume-by-id',
          backend: 'aws',
          region: EXAMPLES_REGION,
          volume_id: volumeId,
        },
      });
      expect(registered.status, JSON.stringify(registered.body)).toBe(200);
      const byId = await waitFor('the registered volume to be active', async () => {
        const each = await volumeNamed('my-volume-by-id');
        return each.status === 'submitted' || each.status === 'provisioning' ? null : each;
      });
      expect(byId.status, byId.status_message ?? '').toBe('active');
      expect(byId.provisioning_data).toMatchObject({
        volume_id: volumeId,
        size_gb: 100,
        availability_zone: zone,
      });
      const unregistered = await dstack(['volume', 'delete', 'my-volume-by-id', '-y']);
      expect(unregistered.code, unregistered.stderr).toBe(0);
      await waitFor('the registration to be gone', async () => {
        const listed = await harness.call<Volume[]>('/api/project/main/volumes/list');
        return listed.body.some((each) => each.name === 'my-volume-by-id') ? null : true;
      });
      expect(aws.state().volumes.map((each) => each.id)).toContain(volumeId);

      // 2. The dev environment, detached as a user applies it with -d, then attached over SSH.
      const started = Date.now();
      const applied = await dstack(['apply', '-f', DEV_ENVIRONMENT, '-y', '-d']);
      expect(applied.code, applied.stderr).toBe(0);
      const running = await harness.waitForRun(DEV_RUN, ['running', 'failed', 'terminated', 'done'], 300_000);
      expect(running.status, running.latest_job_submission?.termination_reason_message ?? '').toBe('running');
      console.log(
        `[volume examples] the dev environment with the 100GB volume ran after ${Date.now() - started} ms`,
      );
      const first = provisionedInstance(running);
      expect({ region: first.region, zone: first.zone }).toEqual({ region: EXAMPLES_REGION, zone });

      const attached = await waitFor('the volume to be attached', () => {
        const state = aws.state();
        const held = state.volumes.find((each) => each.id === volumeId);
        const loop = state.loopDevices.find((each) => each.volumeId === volumeId);
        return held?.attachment?.status === 'attached' && loop
          ? { device: held.attachment.hostDevice, loop }
          : null;
      });
      const backingFile = loopBackingFile(attached.loop.path);
      expect(statSync(backingFile).size).toBe(100 * 1024 ** 3);

      const attach = startDstack(['attach', DEV_RUN], { env: cli, cwd: home });
      try {
        await waitFor('dstack attach to say how to connect', () =>
          attach.output().includes('Press Ctrl+C') ? true : null,
        );
        expect(attach.output()).toContain(`To connect to ${DEV_RUN} via SSH, use: ssh ${DEV_RUN}`);
        const wrote = await ssh(
          home,
          DEV_RUN,
          `echo kept-on-ebs > ${MOUNT}/kept.txt && sync && df -T ${MOUNT} | tail -n 1 && grep " ${MOUNT} " /proc/mounts`,
        );
        expect(wrote.code, wrote.output).toBe(0);
        // The file system the shim made on the EBS device (formatted on first use, as dstack does).
        expect(wrote.output).toMatch(new RegExp(`^${attached.device}\\s+ext4\\s`, 'm'));
        expect(wrote.output).toMatch(new RegExp(`^${attached.device} ${MOUNT} ext4 `, 'm'));
      } finally {
        attach.child.kill('SIGINT');
        await attach.result;
      }
      // The 100GB volume is a sparse file: formatted and mounted, it holds its metadata and the
      // journal's zeroed range (unwritten extents, nothing written), far below its size.
      const used = allocatedBytes(backingFile);
      console.log(
        `[volume examples] the 100GB volume's backing file takes ${(used / 1024 ** 2).toFixed(1)} MiB on disk`,
      );
      expect(used).toBeLessThan(1024 ** 3);

      // 3. Refused while the dev environment holds it.
      const refused = await dstack(['volume', 'delete', VOLUME, '-y']);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain(DEV_RUN);

      const stopped = await dstack(['stop', DEV_RUN, '-y']);
      expect(stopped.code, stopped.stderr).toBe(0);
      await harness.waitForRun(DEV_RUN, ['terminated', 'failed', 'done'], 120_000);
      await deleteFleet(harness, DEV_RUN);

      // A task on a fresh instance reads the file back (in the small image: the dev environment of
      // dstack's example above runs in dstack's base image already).
      const reader = 'volume-example-reader';
      await applyTask(harness, {
        type: 'task',
        name: reader,
        image: context.smallImage(),
        commands: [`cat ${MOUNT}/kept.txt`],
        volumes: [{ name: VOLUME, path: MOUNT }],
      });
      const read = await harness.waitForRun(reader, ['done', 'failed', 'terminated'], 300_000);
      expect(read.status, read.latest_job_submission?.termination_reason_message ?? '').toBe('done');
      const second = provisionedInstance(read);
      expect(second.id).not.toBe(first.id);
      expect(second.zone).toBe(zone);
      expect(await harness.logs(reader)).toContain('kept-on-ebs');
      const fleetDeleted = await dstack(['fleet', 'delete', reader, '-y']);
      expect(fleetDeleted.code, fleetDeleted.stderr).toBe(0);

      await waitFor('the volume to be detached', () =>
        aws.state().volumes.find((each) => each.id === volumeId)?.attachment === null ? true : null,
      );
      const deleted = await dstack(['volume', 'delete', VOLUME, '-y']);
      expect(deleted.code, deleted.stderr).toBe(0);
      expect(deleted.stdout).toContain(`Volume ${VOLUME} deleted`);
      await waitFor('the EBS volume to be deleted', () =>
        aws.state().volumes.some((each) => each.id === volumeId) ? null : true,
      );
      await waitFor('the backing file to be deleted', () => (existsSync(backingFile) ? null : true));
    }, 900_000);

    it('fails the external example (volume_id vol1235) with the error naming volume_id, as EC2 calls the id malformed', async () => {
      const applied = await dstack(['apply', '-f', EXTERNAL_VOLUME, '-y']);
      expect(applied.code).toBe(1);
      expect(applied.stderr).toContain(
        `Volume ${VOLUME} failed: registering the volume failed: volume_id "vol1235" is not an EBS volume id (vol- and hex digits): Invalid id: "vol1235" (expecting "vol-...")`,
      );
      const deleted = await dstack(['volume', 'delete', VOLUME, '-y']);
      expect(deleted.code, deleted.stderr).toBe(0);
    }, 120_000);
  });
}
