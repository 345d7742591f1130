/**
 * Cloud fleets against the fake backend of `@dstack/testing`, whose capacity
 * and failures the test sets: offers are tried in price order and capacity
 * errors move on, a fleet below `min` tries again later, and `max` holds for
 * runs placed in the fleet. Pipelines are stepped by hand; only `Date` is faked.
 */
import type { RunSpec } from '@dstack/core';
import type { FakeBackend, FakeBackendOptions } from '@dstack/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { InstancesTable } from '../db/schema.js';
import { applyRun } from '../runs/runs.js';
import {
  createFakeBackendPipelineHarness,
  type PipelineHarness,
} from '../testing/pipeline-harness.test.helpers.js';
import { applyFleet } from './fleets.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

type Setup = PipelineHarness<FakeBackend>;

let setup: Setup | undefined;

afterEach(async () => {
  await setup?.close();
  setup = undefined;
});

async function start(options: FakeBackendOptions = {}): Promise<Setup> {
  setup = await createFakeBackendPipelineHarness({ capacity: { spot: 'on-demand' }, ...options });
  return setup;
}

async function instancesOf(s: Setup): Promise<InstancesTable[]> {
  return s.app.db.selectFrom('instances').selectAll().orderBy('instance_num').execute();
}

function launchedTypes(s: Setup): string[] {
  return s.backend
    .callsOf('createInstance')
    .map((call) => (call.args[0] as { instance: { name: string } }).instance.name);
}

describe('fleet provisioning with limited capacity', () => {
  it('tries offers in price order and moves on after a capacity error', async () => {
    const s = await start();
    s.backend.failNextLaunchWithNoCapacity(1);
    await applyFleet(s.app, s.project, { type: 'fleet', name: 'pool', nodes: 1 });
    await s.step('fleets');
    // fake.medium is the cheapest type meeting the default 2 CPUs / 8 GB; it had no capacity.
    expect(launchedTypes(s)).toEqual(['fake.medium', 'fake.large']);
    const [instance] = await instancesOf(s);
    expect(instance).toMatchObject({ name: 'pool-0', status: 'provisioning', backend: 'fake' });
    expect(JSON.parse(instance?.offer ?? '{}').instance.name).toBe('fake.large');
    const config = s.backend.callsOf('createInstance')[1]?.args[1] as {
      instance_name: string;
      ssh_keys: { public: string; private?: string }[];
    };
    expect(config.instance_name).toBe('pool-0');
    expect(config.ssh_keys.map((key) => key.public)).toEqual([s.project.ssh_public_key.trim()]);
    expect(config.ssh_keys[0]?.private).toContain('PRIVATE KEY');
  });

  it('ends an instance no offer could launch as no_offers and retries to keep min', async () => {
    const s = await start();
    s.backend.failNextLaunchWithNoCapacity(1);
    await applyFleet(s.app, s.project, {
      type: 'fleet',
      name: 'pool',
      nodes: 1,
      instance_types: ['fake.medium'],
    });
    await s.step('fleets');
    const [failed] = await instancesOf(s);
    expect(failed).toMatchObject({ name: 'pool-0', status: 'terminated', termination_reason: 'no_offers' });
    expect(failed?.termination_reason_message).toContain('no capacity for fake.medium');
    // Not retried at once: the fleet waits before trying again.
    await s.step('fleets');
    expect(launchedTypes(s)).toEqual(['fake.medium']);
    vi.setSystemTime(Date.now() + 16_000);
    await s.step('fleets');
    expect((await instancesOf(s)).map((row) => [row.name, row.status])).toEqual([
      ['pool-0', 'terminated'],
      ['pool-1', 'provisioning'],
    ]);
  });

  it('provisions what the cloud allows of target, and does not chase it below min', async () => {
    const s = await start({ instanceLimit: 1 });
    await applyFleet(s.app, s.project, {
      type: 'fleet',
      name: 'pool',
      nodes: { min: 0, target: 2, max: 2 },
    });
    await s.step('fleets');
    expect((await instancesOf(s)).map((row) => [row.name, row.status])).toEqual([
      ['pool-0', 'provisioning'],
      ['pool-1', 'terminated'],
    ]);
    vi.setSystemTime(Date.now() + 60_000);
    await s.step('fleets');
    expect(await instancesOf(s)).toHaveLength(2);
  });

  it('does not grow past max for a run placed in the fleet', async () => {
    const s = await start();
    await applyFleet(s.app, s.project, {
      type: 'fleet',
      name: 'pool',
      nodes: { min: 0, target: 1, max: 1 },
    });
    await s.step('fleets');
    // The instance never becomes reachable (no agents): it holds the fleet's only place.
    expect((await instancesOf(s)).map((row) => row.status)).toEqual(['provisioning']);
    const spec = { configuration: { type: 'task', name: 'big', commands: ['true'], fleets: ['pool'] } };
    const run = await applyRun(s.app, s.project, s.admin, spec as unknown as RunSpec);
    await s.step('jobs-submitted');
    const job = await s.app.db
      .selectFrom('jobs')
      .selectAll()
      .where('run_id', '=', run.id)
      .executeTakeFirstOrThrow();
    expect(job).toMatchObject({
      status: 'terminating',
      termination_reason: 'failed_to_start_due_to_no_capacity',
    });
    expect(await instancesOf(s)).toHaveLength(1);
    expect(s.backend.callsOf('createInstance')).toHaveLength(1);
    expect(s.backend.callsOf('runJob')).toHaveLength(0);
  });

  it('rejects nodes whose target exceeds max, naming the field', async () => {
    const s = await start();
    await expect(
      applyFleet(s.app, s.project, {
        type: 'fleet',
        name: 'pool',
        nodes: { min: 0, target: 3, max: 2 },
      }),
    ).rejects.toMatchObject({ path: ['plan', 'spec', 'configuration', 'nodes', 'max'] });
    expect(await instancesOf(s)).toHaveLength(0);
  });
});

describe('fleet max under concurrent jobs', () => {
  it('launches no more than max instances for jobs placed at the same time', async () => {
    const s = await start();
    await applyFleet(s.app, s.project, {
      type: 'fleet',
      name: 'pool',
      nodes: { min: 0, target: 0, max: 1 },
    });
    for (const name of ['first', 'second']) {
      const spec = { configuration: { type: 'task', name, commands: ['true'], fleets: ['pool'] } };
      await applyRun(s.app, s.project, s.admin, spec as unknown as RunSpec);
    }
    // One round claims both jobs: their workers run at the same time.
    await s.step('jobs-submitted');
    const live = (await instancesOf(s)).filter((row) => row.status !== 'terminated');
    expect(live).toHaveLength(1);
    expect(s.backend.callsOf('runJob')).toHaveLength(1);
  });
});

describe('fleet instances that do not answer', () => {
  it('places no job on an unreachable idle instance (as dstack)', async () => {
    const s = await start();
    await applyFleet(s.app, s.project, { type: 'fleet', name: 'pool', nodes: { min: 1, target: 1, max: 1 } });
    await s.step('fleets');
    const [instance] = await instancesOf(s);
    // The instance came up, then its shim stopped answering.
    await s.app.db
      .updateTable('instances')
      .set({ status: 'idle', idle_since: Date.now(), unreachable: 1 })
      .where('id', '=', instance?.id ?? '')
      .execute();
    const spec = {
      configuration: { type: 'task', name: 'needs-host', commands: ['true'], fleets: ['pool'] },
    };
    const run = await applyRun(s.app, s.project, s.admin, spec as unknown as RunSpec);
    await s.step('jobs-submitted');
    const job = await s.app.db
      .selectFrom('jobs')
      .selectAll()
      .where('run_id', '=', run.id)
      .executeTakeFirstOrThrow();
    expect(job.instance_id).toBeNull();
    expect(job.termination_reason).toBe('failed_to_start_due_to_no_capacity');
    expect((await instancesOf(s))[0]).toMatchObject({ status: 'idle', busy_blocks: 0 });
  });
});
