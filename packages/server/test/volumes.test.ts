/**
 * End to end on the local backend's Docker runtime: a volume is a directory under the server's
 * data directory, created by the volume pipeline; a task writes a file to it and a second run
 * reads it back (the name interpolated from `${{ dstack.node_rank }}`); deleting a volume a
 * running job holds is refused naming the run, and succeeds once the run ended and the
 * volume was detached. The CLI applies, lists and deletes volumes (`dstack apply`, `dstack
 * volume list|delete`, `dstack delete -f`).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Volume } from '@dstack/core';
import { ensureRunnerTestImages, RUNNER_BUSYBOX_TEST_IMAGE } from '@dstack/testing/emulators';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { stringify } from 'yaml';
import { killRunningDstack, requireBuiltDstack, runDstack } from './dstack-cli.js';
import { dockerMissing } from './emulated-hosts-harness.js';
import {
  ADMIN_TOKEN,
  applyTask,
  type HarnessServer,
  makeTempDir,
  startHarnessServer,
  task,
  waitFor,
} from './server-harness.js';

vi.setConfig({ testTimeout: 120_000, hookTimeout: 300_000 });

describe.skipIf(dockerMissing)('volumes on the local backend (Docker runtime)', () => {
  const temp = makeTempDir('dstack-volumes-');
  let harness: HarnessServer;
  const volumesDir = join(temp.dir, 'data', 'volumes');

  const cliEnvironment = { DSTACK_CLI_CONFIG_DIR: join(temp.dir, 'cli') };

  beforeAll(async () => {
    requireBuiltDstack();
    await ensureRunnerTestImages();
    harness = await startHarnessServer({
      dir: temp.dir,
      config: {
        projects: [
          {
            name: 'main',
            backends: [
              {
                type: 'local',
                runtime: 'docker',
                instances_dir: join(temp.dir, 'instances'),
                volumes_dir: volumesDir,
              },
            ],
          },
        ],
      },
    });
  });

  afterAll(async () => {
    killRunningDstack();
    await harness?.terminateFleetsAndClose();
    temp.remove();
  });

  async function createVolume(name: string): Promise<Volume> {
    const created = await harness.call<Volume>('/api/project/main/volumes/create', {
      configuration: { type: 'volume', name, backend: 'local', region: 'local', size: '1GB' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.status).toBe('submitted');
    return waitFor(`volume ${name} to be active`, async () => {
      const volume = (await harness.call<Volume>('/api/project/main/volumes/get', { name })).body;
      return volume.status === 'active' ? volume : null;
    });
  }

  async function finished(name: string, configuration: Record<string, unknown>) {
    await applyTask(harness, configuration);
    const run = await harness.waitForRun(name, ['done', 'failed', 'terminated'], 120_000);
    return { run, output: await harness.logs(name) };
  }

  it('a file written to a new volume by one run is read back by the next', async () => {
    const volume = await createVolume('data-0');
    // The local backend is dstack's `remote` on the wire.
    expect(volume.provisioning_data?.backend).toBe('remote');
    expect(volume.external).toBe(false);
    const directory = join(volumesDir, volume.volume_id as string);
    expect(existsSync(directory)).toBe(true);

    // biome-ignore lint/suspicious/noTemplateCurlyInString: dstack's variable, interpolated by the server.
    const mounts = { image: RUNNER_BUSYBOX_TEST_IMAGE, volumes: ['data-${{ dstack.node_rank }}:/data'] };
    const writer = await finished(
      'volume-writer',
      task('volume-writer', ['echo written-by-the-first-run > /data/greeting.txt'], mounts),
    );
    expect(writer.run.status, writer.output).toBe('done');
    expect(readFileSync(join(directory, 'greeting.txt'), 'utf8')).toBe('written-by-the-first-run\n');

    const reader = await finished('volume-reader', task('volume-reader', ['cat /data/greeting.txt'], mounts));
    expect(reader.run.status, reader.output).toBe('done');
    expect(reader.output).toContain('written-by-the-first-run');
    // Detached when the job ended: nothing holds the volume.
    const after = (await harness.call<Volume>('/api/project/main/volumes/get', { name: 'data-0' })).body;
    expect(after.attachments).toEqual([]);
  });

  it('refuses to delete a volume a running job holds, naming the run; deletes it once the run ended', async () => {
    const volume = await createVolume('held-volume');
    await applyTask(
      harness,
      task('volume-holder', ['touch /held/here', 'sleep 300'], {
        image: RUNNER_BUSYBOX_TEST_IMAGE,
        volumes: [{ name: 'held-volume', path: '/held' }],
      }),
    );
    await harness.waitForRun('volume-holder', ['running'], 120_000);
    const attached = (await harness.call<Volume>('/api/project/main/volumes/get', { name: 'held-volume' }))
      .body;
    expect(attached.attachments?.length).toBe(1);

    const refused = await harness.call<{ detail: Array<{ msg: string }> }>(
      '/api/project/main/volumes/delete',
      {
        names: ['held-volume'],
      },
    );
    expect(refused.status).toBe(400);
    expect(refused.body.detail[0]?.msg).toContain('run volume-holder');
    const directory = join(volumesDir, volume.volume_id as string);
    expect(existsSync(directory)).toBe(true);

    await harness.call('/api/project/main/runs/stop', { runs_names: ['volume-holder'], abort: false });
    await harness.waitForRun('volume-holder', ['terminated', 'failed', 'done'], 120_000);
    const deleted = await harness.call('/api/project/main/volumes/delete', { names: ['held-volume'] });
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(200);
    expect(existsSync(directory)).toBe(false);
    const gone = await harness.call('/api/project/main/volumes/get', { name: 'held-volume' });
    expect(gone.status).toBe(400);
    const listed = (await harness.call<Volume[]>('/api/project/main/volumes/list')).body.map((v) => v.name);
    expect(listed).not.toContain('held-volume');
    expect(readdirSync(volumesDir)).not.toContain(volume.volume_id);
  });

  it('the CLI applies a volume file, lists the volume, and deletes it', async () => {
    mkdirSync(cliEnvironment.DSTACK_CLI_CONFIG_DIR, { recursive: true });
    writeFileSync(
      join(cliEnvironment.DSTACK_CLI_CONFIG_DIR, 'config.yml'),
      stringify({ projects: [{ name: 'main', url: harness.server.url, token: ADMIN_TOKEN, default: true }] }),
    );
    const file = join(temp.dir, 'volume.dstack.yml');
    writeFileSync(
      file,
      stringify({ type: 'volume', name: 'cli-volume', backend: 'local', region: 'local', size: '10GB' }),
    );

    const applied = await runDstack(['apply', '-f', file, '-y'], { env: cliEnvironment });
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toMatch(/NAME\s+BACKEND\s+STATUS\s+CREATED/);
    expect(applied.stdout).toMatch(/cli-volume\s+remote \(local\)\s+active/);

    const unchanged = await runDstack(['apply', '-f', file, '-y'], { env: cliEnvironment });
    expect(unchanged.stdout).toContain(
      'Volume configuration has not changed. Use --force to recreate the volume.',
    );

    const listed = await runDstack(['volume', 'list', '-v'], { env: cliEnvironment });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/NAME\s+BACKEND\s+REGION\s+STATUS\s+ATTACHED\s+CREATED\s+ERROR/);
    expect(listed.stdout).toMatch(/cli-volume\s+remote\s+local\s+active\s+-/);

    const deleted = await runDstack(['delete', '-f', file, '-y'], { env: cliEnvironment });
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toContain('Volume cli-volume deleted');
    const again = await runDstack(['volume', 'delete', 'cli-volume', '-y'], { env: cliEnvironment });
    expect(again.stdout).toContain('Volume cli-volume does not exist');
  });
});
