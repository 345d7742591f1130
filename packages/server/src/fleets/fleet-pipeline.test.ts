/**
 * Cloud fleets with `nodes`, stepped by hand with the instant backend (unlimited
 * capacity, a real shim): apply provisions `target` instances, the fleet keeps
 * `min`, idle instances beyond `min` end after `idle_duration`, re-applying
 * scales, and a run placed in the fleet takes an idle instance.
 */
import { ServerClientError } from '@dstack/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createProjectBackend, deleteProjectBackends } from '../backends/backends.js';
import type { InstancesTable, ProjectsTable } from '../db/schema.js';
import { createPipelineHarness, type PipelineHarness } from '../testing/pipeline-harness.test.helpers.js';
import { applyFleet, deleteFleets, getFleet } from './fleets.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let harness: PipelineHarness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function projectOf(h: PipelineHarness): Promise<ProjectsTable> {
  return h.app.db.selectFrom('projects').selectAll().where('name', '=', 'main').executeTakeFirstOrThrow();
}

function apply(h: PipelineHarness, fields: Record<string, unknown>) {
  return projectOf(h).then((project) =>
    applyFleet(h.app, project, { type: 'fleet', name: 'pool', ...fields }),
  );
}

async function instancesOf(h: PipelineHarness, fleetName = 'pool'): Promise<InstancesTable[]> {
  return h.app.db
    .selectFrom('instances')
    .innerJoin('fleets', 'fleets.id', 'instances.fleet_id')
    .selectAll('instances')
    .where('fleets.name', '=', fleetName)
    .orderBy('instances.instance_num')
    .execute();
}

async function statuses(h: PipelineHarness): Promise<Array<[string, string]>> {
  return (await instancesOf(h)).map((instance) => [instance.name, instance.status]);
}

/** Steps the fleet and instance pipelines until every live instance of the fleet is idle. */
async function untilIdle(h: PipelineHarness, count: number): Promise<void> {
  for (let round = 0; round < 200; round++) {
    await h.step('fleets', 'instances');
    const live = (await instancesOf(h)).filter((instance) => instance.deleted === 0);
    if (live.length === count && live.every((instance) => instance.status === 'idle')) return;
    h.advance(200);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`the fleet did not reach ${count} idle instances: ${JSON.stringify(await statuses(h))}`);
}

describe('cloud fleets with nodes', () => {
  it('provisions target instances named {fleet}-{n}: pending, provisioning, then idle', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const fleet = await apply(h, { nodes: { min: 1, target: 2, max: 3 } });
    expect(fleet.instances.map((instance) => [instance.name, instance.status])).toEqual([
      ['pool-0', 'pending'],
      ['pool-1', 'pending'],
    ]);
    await h.step('fleets');
    expect(await statuses(h)).toEqual([
      ['pool-0', 'provisioning'],
      ['pool-1', 'provisioning'],
    ]);
    expect(h.backend.provisioned).toEqual(['pool-0', 'pool-1']);
    await untilIdle(h, 2);
    const shown = await getFleet(h.app, await projectOf(h), 'pool');
    expect(shown.status).toBe('active');
    expect(shown.instances.map((instance) => [instance.name, instance.status, instance.backend])).toEqual([
      ['pool-0', 'idle', 'instant'],
      ['pool-1', 'idle', 'instant'],
    ]);
  });

  it('replaces terminated instances to keep min, and no more', async () => {
    const h = await createPipelineHarness();
    harness = h;
    await apply(h, { nodes: { min: 1, target: 2, max: 3 } });
    await untilIdle(h, 2);
    await h.app.db
      .updateTable('instances')
      .set({ status: 'terminating', termination_reason: 'unreachable', last_processed_at: 0 })
      .execute();
    await h.step('instances');
    expect((await instancesOf(h)).every((instance) => instance.status === 'terminated')).toBe(true);
    await untilIdle(h, 1);
    const live = (await instancesOf(h)).filter((instance) => instance.deleted === 0);
    expect(live.map((instance) => instance.name)).toEqual(['pool-2']);
    expect(h.backend.provisioned).toEqual(['pool-0', 'pool-1', 'pool-2']);
  });

  it('terminates idle instances beyond min after idle_duration and keeps min', async () => {
    const h = await createPipelineHarness();
    harness = h;
    await apply(h, { nodes: { min: 1, target: 3 }, idle_duration: '1h' });
    await untilIdle(h, 3);
    h.advance(30 * 60_000);
    await h.step('instances');
    expect((await statuses(h)).map(([, status]) => status)).toEqual(['idle', 'idle', 'idle']);
    h.advance(31 * 60_000);
    // Both spare instances time out in the same pass: the fleet still keeps its min.
    await h.step('instances');
    await h.step('instances');
    expect(await statuses(h)).toEqual([
      ['pool-0', 'idle'],
      ['pool-1', 'terminated'],
      ['pool-2', 'terminated'],
    ]);
    expect((await instancesOf(h))[1]?.termination_reason).toBe('idle_timeout');
    await h.step('fleets');
    expect(h.backend.provisioned).toHaveLength(3);
  });

  it('scales to the new target when applied again', async () => {
    const h = await createPipelineHarness();
    harness = h;
    await apply(h, { nodes: 1 });
    await untilIdle(h, 1);
    await apply(h, { nodes: { min: 0, target: 3, max: 4 } });
    await untilIdle(h, 3);
    expect(h.backend.provisioned).toEqual(['pool-0', 'pool-1', 'pool-2']);
    await apply(h, { nodes: '0..2' });
    // `0..2` has target 0: every instance without a job goes, newest first.
    await h.step('instances');
    await h.step('fleets');
    expect((await statuses(h)).map(([, status]) => status)).toEqual([
      'terminated',
      'terminated',
      'terminated',
    ]);
  });

  it('places a run on an idle fleet instance without provisioning', async () => {
    const h = await createPipelineHarness();
    harness = h;
    await apply(h, { nodes: 1 });
    await untilIdle(h, 1);
    const run = await h.applyTask('on-pool', { commands: ['true'], fleets: ['pool'] });
    await h.step('jobs-submitted');
    const [job] = await h.jobs(run.id);
    const [instance] = await instancesOf(h);
    expect(job?.instance_id).toBe(instance?.id);
    expect(instance?.status).toBe('busy');
    expect(h.backend.provisioned).toEqual(['pool-0']);
    await h.stepUntil(async () => (await h.run(run.id)).status === 'done');
    await h.step('jobs-terminating', 'instances');
    expect((await instancesOf(h))[0]?.status).toBe('idle');
  });

  it.each([
    ['1h', false],
    ['0s', true],
  ])(
    'makes an instance that a job left idle due at once only when its idle_duration (%s) is shorter than its passes',
    async (idleDuration, dueAtOnce) => {
      const h = await createPipelineHarness();
      harness = h;
      await apply(h, { nodes: { min: 0, target: 1 }, idle_duration: idleDuration });
      await untilIdle(h, 1);
      const run = await h.applyTask('on-pool', { commands: ['true'], fleets: ['pool'] });
      // Not the instance pipeline: what the job's end left on its instance is looked at.
      await h.stepUntil(async () => (await h.run(run.id)).status === 'done', {
        pipelines: ['jobs-submitted', 'jobs-running', 'jobs-terminating', 'runs'],
      });
      await h.step('jobs-terminating');
      const [instance] = await instancesOf(h);
      expect(instance?.status).toBe('idle');
      expect(instance?.last_processed_at === 0).toBe(dueAtOnce);
      if (dueAtOnce) {
        h.advance(1);
        await h.step('instances');
        expect((await instancesOf(h))[0]?.termination_reason).toBe('idle_timeout');
      }
    },
  );

  it('terminates its instances when deleted', async () => {
    const h = await createPipelineHarness();
    harness = h;
    await apply(h, { nodes: 2 });
    await untilIdle(h, 2);
    await deleteFleets(h.app, await projectOf(h), ['pool']);
    await h.step('fleets', 'instances');
    h.advance(1_000);
    await h.step('fleets');
    expect((await statuses(h)).map(([, status]) => status)).toEqual(['terminated', 'terminated']);
    expect(h.backend.terminated).toHaveLength(2);
    const fleet = await h.app.db
      .selectFrom('fleets')
      .selectAll()
      .where('name', '=', 'pool')
      .executeTakeFirst();
    expect(fleet).toMatchObject({ status: 'terminated', deleted: 1 });
  });

  it('refuses at apply a fleet whose backends the project lacks, naming backends and the type', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const refused = await apply(h, { nodes: 1, backends: ['aws'] }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(ServerClientError.isInstance(refused)).toBe(true);
    expect((refused as ServerClientError).fields).toEqual([['plan', 'spec', 'configuration', 'backends']]);
    expect((refused as Error).message).toBe('backends: the project has no aws backend (configured: instant)');
    expect(await instancesOf(h)).toEqual([]);
    // One of the named backends is enough.
    await apply(h, { nodes: 1, backends: ['aws', 'instant'] });
    await untilIdle(h, 1);
  });

  it('fails its instance once and adds no other when its backend leaves the project, until it is back', async () => {
    const h = await createPipelineHarness();
    harness = h;
    const project = await projectOf(h);
    await apply(h, { nodes: 1, backends: ['instant'] });
    await deleteProjectBackends(h.app, project, ['instant']);
    for (let pass = 0; pass < 5; pass++) {
      await h.step('fleets', 'instances');
      h.advance(20_000);
    }
    const rows = await instancesOf(h);
    expect(rows.map((row) => [row.name, row.status, row.termination_reason])).toEqual([
      ['pool-0', 'terminated', 'error'],
    ]);
    const message =
      'no backend to launch instances on: the project has no instant backend (configured: none)';
    expect(rows[0]?.termination_reason_message).toBe(message);
    expect(h.backend.provisioned).toEqual([]);
    expect((await getFleet(h.app, project, 'pool')).status_message).toBe(message);

    await createProjectBackend(h.app, h.admin, project, { type: 'instant', creds: { type: 'default' } });
    await untilIdle(h, 1);
    expect(h.backend.provisioned).toEqual(['pool-1']);
    expect((await getFleet(h.app, project, 'pool')).status_message).toBeNull();
  });
});
