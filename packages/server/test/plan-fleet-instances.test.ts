/**
 * The plan lists the fleet instances a run could take, before the backends' offers, as dstack
 * does: a real server (SQLite, then Postgres) with the local backend and a fleet of one instance.
 */
import type { Fleet, RunPlan } from '@dstack/core';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import {
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

describeEachDatabase('the plan of a run with a fleet instance to take', (databaseUrl) => {
  const temp = makeTempDir();
  let harness: HarnessServer;

  async function offersFor(extra: Record<string, unknown>) {
    const plan = await harness.call<RunPlan>('/api/project/main/runs/get_plan', {
      run_spec: { configuration: task('planned', ['true'], extra) },
    });
    expect(plan.status).toBe(200);
    const jobPlan = plan.body.job_plans[0];
    if (!jobPlan) throw new Error('the plan has no job');
    return jobPlan;
  }

  beforeAll(async () => {
    harness = await startHarnessServer({
      databaseUrl: databaseUrl(),
      dir: temp.dir,
      config: localBackendConfig(temp.dir),
    });
    const applied = await harness.call('/api/project/main/fleets/apply', {
      plan: { spec: { configuration: { type: 'fleet', name: 'pool', nodes: 1, resources: HOST_RESOURCES } } },
    });
    expect(applied.status).toBe(200);
    await waitFor('the fleet instance to be idle', async () => {
      const fleet = (await harness.call<Fleet>('/api/project/main/fleets/get', { name: 'pool' })).body;
      return fleet.instances[0]?.status === 'idle' ? true : null;
    });
  });

  afterAll(async () => {
    await harness.terminateFleetsAndClose();
    temp.remove();
  });

  it('offers the idle instance first, then what the backends could launch', async () => {
    const plan = await offersFor({ fleets: ['pool'] });
    expect(plan.offers[0]).toMatchObject({ backend: 'remote', availability: 'idle' });
    expect(plan.offers.slice(1).map((offer) => offer.availability)).not.toContain('idle');
    expect(plan.offers.length).toBeGreaterThan(1);
    expect(plan.total_offers).toBe(plan.offers.length);
  });

  it('offers only fleet instances with creation_policy reuse', async () => {
    const plan = await offersFor({ fleets: ['pool'], creation_policy: 'reuse' });
    expect(plan.offers.map((offer) => offer.availability)).toEqual(['idle']);
  });

  it('leaves out instances of other fleets and instances too small for the job', async () => {
    const otherFleet = await offersFor({ fleets: ['elsewhere'], creation_policy: 'reuse' });
    expect(otherFleet.offers).toEqual([]);
    const tooBig = await offersFor({ fleets: ['pool'], resources: { ...HOST_RESOURCES, gpu: 8 } });
    expect(tooBig.offers).toEqual([]);
    // The local offers without the GPU count: the share of the host the run asks for, and the whole host.
    expect(tooBig.exclusions).toEqual([{ requirement: 'gpu count 8', excluded: 2 }]);
  });
});
