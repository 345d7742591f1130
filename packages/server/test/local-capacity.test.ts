/**
 * End to end: the local backend's instances take their share of the host (injected: 2 CPUs),
 * runs beyond it wait for capacity or fail with no capacity, and idle instances are reused
 * (or make room) before new ones are made.
 */

import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createLocalBackendPlugin, type HostResources } from '@dstack/backend-local';
import type { Run } from '@dstack/core';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  applyTask,
  type HarnessServer,
  localBackendConfig,
  makeTempDir,
  startHarnessServer,
  task,
} from './server-harness.js';

// Real processes start and stop here; nothing is timed, the limits only catch hangs.
vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

/** A host with room for two instances of one CPU. */
const SMALL_HOST: HostResources = { cpuCount: 2, cpuArch: 'x86', memoryGib: 4, diskGib: 100, gpus: [] };
const WAIT_FOR_CAPACITY = { retry: { on_events: ['no-capacity'], duration: '10m' } };

describe('the local backend on a host of 2 CPUs', () => {
  let temp: ReturnType<typeof makeTempDir>;
  let harness: HarnessServer;

  beforeEach(async () => {
    temp = makeTempDir();
    harness = await startHarnessServer({
      dir: temp.dir,
      config: localBackendConfig(temp.dir),
      plugins: [createLocalBackendPlugin({ hostResources: SMALL_HOST })],
    });
  });

  afterEach(async () => {
    await harness.terminateFleetsAndClose();
    temp.remove();
  });

  /** The instances that were launched (their placeholders aside), terminated ones included. */
  async function launchedInstances(): Promise<number> {
    const rows = await harness.server.app.db
      .selectFrom('instances')
      .select('id')
      .where('job_provisioning_data', 'is not', null)
      .execute();
    return rows.length;
  }

  /** Instance homes in the instances directory: one per shim started and not yet terminated. */
  async function instanceHomes(): Promise<string[]> {
    return (await readdir(join(temp.dir, 'instances'))).filter((name) => !name.startsWith('.'));
  }

  it('makes runs beyond the host wait for capacity, then runs them on the instances freed', async () => {
    const names = ['wait-0', 'wait-1', 'wait-2', 'wait-3', 'wait-4'];
    for (const name of names) {
      await applyTask(harness, task(name, ['sleep 0.5', `echo ${name}`], WAIT_FOR_CAPACITY));
    }

    const runs: Run[] = [];
    for (const name of names)
      runs.push(await harness.waitForRun(name, ['done', 'failed', 'terminated'], 80_000));

    expect(runs.map((run) => run.status)).toEqual(names.map(() => 'done'));
    expect(await harness.logs('wait-4')).toBe('wait-4\n');
    // Two instances of one CPU fill the host: the other runs took them once idle.
    expect(await launchedInstances()).toBeLessThanOrEqual(2);
    expect((await instanceHomes()).length).toBeLessThanOrEqual(2);
    const instanceNames = new Set(runs.map((run) => run.latest_job_submission?.instance_name));
    expect(instanceNames.size).toBeLessThanOrEqual(2);
  });

  it('fails a run the host has no room for when its retry does not cover no-capacity', async () => {
    await applyTask(harness, task('whole-host', ['sleep 60'], { resources: { cpu: 2, memory: '1GB..' } }));
    await harness.waitForRun('whole-host', ['running']);

    await applyTask(harness, task('no-room', ['true']));
    const run = await harness.waitForRun('no-room', ['done', 'failed', 'terminated']);

    expect(run.status).toBe('failed');
    expect(run.latest_job_submission?.termination_reason).toBe('failed_to_start_due_to_no_capacity');
    expect(run.latest_job_submission?.termination_reason_message).toContain(
      'The host has no room for another local instance (it needs 1 CPUs, 0 of 2 are free)',
    );
    await harness.call('/api/project/main/runs/stop', { runs_names: ['whole-host'], abort: true });
  });

  it('reuses one idle instance for short runs one after another', async () => {
    const names = ['one-0', 'one-1', 'one-2', 'one-3'];
    const instanceNames: Array<string | null | undefined> = [];
    for (const name of names) {
      await applyTask(harness, task(name, ['true']));
      const run = await harness.waitForRun(name, ['done', 'failed', 'terminated']);
      expect(run.status).toBe('done');
      instanceNames.push(run.latest_job_submission?.instance_name);
    }

    expect(new Set(instanceNames).size).toBe(1);
    expect(await launchedInstances()).toBe(1);
  });

  it('terminates idle instances a larger run does not fit, to make room for it', async () => {
    // Two idle instances of one CPU hold the host...
    await applyTask(harness, task('small-0', ['sleep 1'], WAIT_FOR_CAPACITY));
    await applyTask(harness, task('small-1', ['sleep 1'], WAIT_FOR_CAPACITY));
    await harness.waitForRun('small-0', ['done']);
    await harness.waitForRun('small-1', ['done']);
    const smallInstances = await launchedInstances();

    // ...and a run of two CPUs fits neither: they make way, without a retry policy.
    await applyTask(harness, task('large', ['echo large'], { resources: { cpu: 2, memory: '1GB..' } }));
    const large = await harness.waitForRun('large', ['done', 'failed', 'terminated'], 60_000);

    expect(large.status).toBe('done');
    expect(await harness.logs('large')).toBe('large\n');
    expect(await launchedInstances()).toBe(smallInstances + 1);
  });
});
