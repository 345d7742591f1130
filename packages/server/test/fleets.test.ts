/**
 * End to end: a cloud fleet with `nodes: 1` on the local backend, through a
 * real server: the fleet provisions its instance (a detached shim process) by
 * itself, a task placed in the fleet runs on it, and deleting the fleet
 * leaves nothing running.
 */
import { readdirSync, readFileSync } from 'node:fs';
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

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describeEachDatabase('a cloud fleet with nodes on the local backend', (databaseUrl) => {
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

  it('provisions its instance, runs a task on it, and leaves nothing running once deleted', async () => {
    const applied = await harness.call<Fleet>('/api/project/main/fleets/apply', {
      plan: { spec: { configuration: { type: 'fleet', name: 'pool', nodes: 1, resources: HOST_RESOURCES } } },
    });
    expect(applied.status).toBe(200);
    expect(applied.body.instances.map((instance) => instance.name)).toEqual(['pool-0']);

    const idle = await waitFor('the fleet instance to be idle', async () => {
      const fleet = (await harness.call<Fleet>('/api/project/main/fleets/get', { name: 'pool' })).body;
      return fleet.instances[0]?.status === 'idle' ? fleet : null;
    });
    expect(idle.status).toBe('active');
    // The local backend is dstack's `remote` on the wire.
    expect(idle.instances[0]).toMatchObject({ name: 'pool-0', backend: 'remote', hostname: '127.0.0.1' });
    const listed = (await harness.call<Fleet[]>('/api/project/main/fleets/list')).body;
    expect(listed.map((fleet) => fleet.name).sort()).toEqual(['local', 'pool']);

    const instancesDir = join(temp.dir, 'instances');
    const [home] = readdirSync(instancesDir).filter((name) => name.startsWith('pool-0-'));
    expect(home).toBeDefined();
    const { pid } = JSON.parse(readFileSync(join(instancesDir, home as string, 'shim.json'), 'utf8')) as {
      pid: number;
    };
    expect(isAlive(pid)).toBe(true);

    await applyTask(harness, task('on-pool', ['echo from-the-fleet'], { fleets: ['pool'] }));
    const run = await harness.waitForRun('on-pool', ['done', 'failed', 'terminated']);
    expect(run.status).toBe('done');
    expect(run.latest_job_submission?.instance_name).toBe('pool-0');
    expect(await harness.logs('on-pool')).toBe('from-the-fleet\n');

    await waitFor('the instance to be idle again', async () => {
      const fleet = (await harness.call<Fleet>('/api/project/main/fleets/get', { name: 'pool' })).body;
      return fleet.instances[0]?.status === 'idle' ? true : null;
    });
    const deleted = await harness.call('/api/project/main/fleets/delete', { names: ['pool'] });
    expect(deleted.status).toBe(200);
    await waitFor('the fleet to be gone', async () => {
      const answer = await harness.call('/api/project/main/fleets/get', { name: 'pool' });
      return answer.status === 400 || answer.status === 404 ? true : null;
    });
    await waitFor('the shim to exit', async () => (isAlive(pid) ? null : true));
    expect(readdirSync(instancesDir).filter((name) => name.startsWith('pool-'))).toEqual([]);
  });
});
