/**
 * End to end: a local fleet split into 2 blocks runs two tasks at once on its one instance
 * (each waits for a file, so both must run together to finish), then gives the blocks back.
 */
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import type { Fleet } from '@dstack/core';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import {
  applyTask,
  describeEachDatabase,
  type HarnessServer,
  HOST_RESOURCES,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
  task,
  waitFor,
} from './server-harness.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

// The local instance is this host: 2 blocks need an even number of CPUs.
const oddCpuCount = availableParallelism() % 2 !== 0;
describeEachDatabase.skipIf(oddCpuCount)('a local fleet with blocks: 2', (databaseUrl) => {
  const temp = makeTempDir();
  let harness: HarnessServer;

  beforeAll(async () => {
    harness = await startHarnessServer({
      databaseUrl: databaseUrl(),
      dir: temp.dir,
      config: localBackendConfig(temp.dir),
    });
  });

  afterAll(async () => {
    await harness.terminateFleetsAndClose();
    temp.remove();
  });

  async function poolInstance() {
    const fleet = (await harness.call<Fleet>('/api/project/main/fleets/get', { name: 'pool' })).body;
    return fleet.instances[0] ?? null;
  }

  it('runs two tasks at once on its one instance, then is idle again', async () => {
    const applied = await harness.call<Fleet>('/api/project/main/fleets/apply', {
      plan: {
        spec: {
          configuration: { type: 'fleet', name: 'pool', nodes: 1, blocks: 2, resources: HOST_RESOURCES },
        },
      },
    });
    expect(applied.status, JSON.stringify(applied.body)).toBe(200);
    await waitFor('the fleet instance to be idle', async () => {
      const instance = await poolInstance();
      return instance?.status === 'idle' ? instance : null;
    });
    expect(await poolInstance()).toMatchObject({ total_blocks: 2, busy_blocks: 0 });

    const go = join(temp.dir, 'go');
    const waitForGo = [`while [ ! -f ${go} ]; do sleep 0.05; done`, 'echo released'];
    await applyTask(harness, task('first', waitForGo, { fleets: ['pool'], creation_policy: 'reuse' }));
    await applyTask(harness, task('second', waitForGo, { fleets: ['pool'], creation_policy: 'reuse' }));
    await harness.waitForRun('first', ['running']);
    await harness.waitForRun('second', ['running']);
    expect(await poolInstance()).toMatchObject({ status: 'busy', busy_blocks: 2 });

    writeFileSync(go, '');
    for (const name of ['first', 'second']) {
      const run = await harness.waitForRun(name, ['done', 'failed', 'terminated']);
      expect(run.status).toBe('done');
      expect(run.latest_job_submission?.instance_name).toBe('pool-0');
      expect(await harness.logs(name)).toBe('released\n');
    }
    await waitFor('the instance to be idle again', async () => {
      const instance = await poolInstance();
      return instance?.status === 'idle' && instance.busy_blocks === 0 ? true : null;
    });
  });
});
