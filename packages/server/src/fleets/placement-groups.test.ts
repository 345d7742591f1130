/**
 * Cluster fleets on a backend with placement groups (the fake cloud of `@dstack/testing` with the
 * `placement-groups` capability): the master's launch makes the group, the other instances go into
 * it at the master's region, a group made for an offer that failed goes at once, and the fleet's
 * group is deleted at the backend once the fleet has ended.
 */

import type { FakeBackend } from '@dstack/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createFakeBackendPipelineHarness,
  type PipelineHarness,
} from '../testing/pipeline-harness.test.helpers.js';
import { applyFleet, deleteFleets } from './fleets.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let harness: PipelineHarness<FakeBackend> | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

async function start(regions: string[] = ['fake-region-1']): Promise<PipelineHarness<FakeBackend>> {
  harness = await createFakeBackendPipelineHarness({
    capabilities: ['create-instance', 'multinode', 'placement-groups'],
    capacity: { spot: 'on-demand', regions },
    regions,
  });
  return harness;
}

const live = (h: PipelineHarness<FakeBackend>) => h.backend.liveInstances();

describe('placement groups of a cluster fleet', () => {
  it('puts every instance in the group the master made, and deletes it with the fleet', async () => {
    const h = await start();
    await applyFleet(h.app, h.project, { type: 'fleet', name: 'pool', nodes: 2, placement: 'cluster' });
    await h.step('fleets');
    expect(h.backend.callsOf('createPlacementGroup')).toHaveLength(1);
    const instances = live(h);
    expect(instances).toHaveLength(2);
    const [group] = [...h.backend.placementGroups.values()];
    expect(group?.name).toMatch(/^dstack-main-pool-pg-[a-z0-9]{8}$/);
    expect(instances.map((instance) => instance.placementGroup)).toEqual([group?.name, group?.name]);

    await deleteFleets(h.app, h.project, ['pool']);
    await h.stepUntil(
      async () =>
        (await h.app.db.selectFrom('fleets').select('status').where('name', '=', 'pool').executeTakeFirst())
          ?.status === 'terminated',
      { pipelines: ['fleets', 'instances'] },
    );
    expect(live(h)).toEqual([]);
    expect(group?.deleted).toBe(true);
    const rows = await h.app.db.selectFrom('placement_groups').selectAll().execute();
    expect(rows.map((row) => [row.name, row.deleted])).toEqual([[group?.name, 1]]);
  });

  it("drops the group of an offer whose launch failed and keeps the other nodes in the master's region", async () => {
    const h = await start(['fake-region-1', 'fake-region-2']);
    h.backend.failNextLaunchWithNoCapacity(1);
    await applyFleet(h.app, h.project, { type: 'fleet', name: 'pool', nodes: 3, placement: 'cluster' });
    await h.step('fleets');
    const groups = [...h.backend.placementGroups.values()];
    expect(groups.map((group) => [group.region, group.deleted])).toEqual([
      ['fake-region-1', true],
      ['fake-region-2', false],
    ]);
    const instances = live(h);
    expect(instances).toHaveLength(3);
    expect(new Set(instances.map((instance) => instance.offer.region))).toEqual(new Set(['fake-region-2']));
    expect(new Set(instances.map((instance) => instance.placementGroup))).toEqual(new Set([groups[1]?.name]));
  });

  it("puts a single-node run's new instance in a cluster fleet at the master's region and in its group", async () => {
    const h = await start(['fake-region-1', 'fake-region-2']);
    // The cheaper region fails the master, so it lands in the other one.
    h.backend.failNextLaunchWithNoCapacity(1);
    await applyFleet(h.app, h.project, { type: 'fleet', name: 'pool', nodes: '1..2', placement: 'cluster' });
    await h.step('fleets');
    const group = [...h.backend.placementGroups.values()].find((each) => !each.deleted);
    expect(live(h).map((instance) => instance.offer.region)).toEqual(['fake-region-2']);

    // Bigger than the fleet's instance: the run gets a new one in the fleet.
    await h.applyTask('single', { commands: ['true'], resources: { cpu: '2..', memory: '4GB..' } });
    await h.step('jobs-submitted');
    // Launched once, at the master's region: not tried first where the group cannot be.
    expect(h.backend.callsOf('runJob')).toHaveLength(1);
    const instances = live(h);
    expect(instances.map((instance) => [instance.offer.region, instance.placementGroup])).toEqual([
      ['fake-region-2', group?.name],
      ['fake-region-2', group?.name],
    ]);
  });

  it("launches a multi-node run's nodes into one group", async () => {
    const h = await start();
    const run = await h.applyTask('pair', {
      commands: ['true'],
      nodes: 2,
      resources: { cpu: '2..', memory: '4GB..' },
    });
    await h.step('jobs-submitted');
    await h.step('jobs-submitted');
    const jobs = await h.jobs(run.id);
    expect(jobs.map((job) => job.status)).toEqual(['provisioning', 'provisioning']);
    const runJobs = h.backend.callsOf('runJob');
    expect(runJobs).toHaveLength(2);
    const groups = [...h.backend.placementGroups.values()];
    expect(groups).toHaveLength(1);
    expect(live(h).map((instance) => instance.placementGroup)).toEqual([groups[0]?.name, groups[0]?.name]);
  });
});
