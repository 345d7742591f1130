/**
 * No orphaned machines after a crash: a server that claimed a launch and died after the
 * cloud started the machine (the fake backend records the machine, then its call never
 * returns) leaves the claim to expire; the server that claims the row next launches the
 * same dstack instance id again, and the backend hands back the machine it already has.
 * Two sets of pipelines on one database play the two servers; only `Date` is faked, so the
 * claim expires when the test moves the clock. The fake cloud boots real agents, so the run
 * goes all the way to `done`.
 */
import { hasCapability, type RunJobParams, type RunSpec } from '@dstack/core';
import type { FakeBackend, FakeBackendOptions } from '@dstack/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { getOffers } from '../backends/offers.js';
import type { InstancesTable } from '../db/schema.js';
import { fleetRequirementsOf } from '../fleets/fleet-provisioning.js';
import { applyFleet, createRunFleet, deleteFleets } from '../fleets/fleets.js';
import {
  abandonPendingInstance,
  insertPendingInstance,
  launchOnFirstOffer,
} from '../fleets/instance-launch.js';
import type { PipelineName } from '../pipelines/wake-ups.js';
import {
  createFakeBackendPipelineHarness,
  EVERY_PIPELINE,
  type PipelineHarness,
  type PipelineServer,
  type StepUntilOptions,
} from '../testing/pipeline-harness.test.helpers.js';
import { applyRun, stopRuns } from './runs.js';

vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

/** Longer than a claim lasts without a heartbeat (the pipelines' 30 s). */
const CLAIM_EXPIRY_MS = 31_000;
/** Longer than the instance pipeline leaves a pending row to its owner. */
const PENDING_OWNER_GRACE_MS = 61_000;
/** Each round of `stepUntil` steps the fleets too: a fleet's instance is launched there. */
const EVERY_ROUND: StepUntilOptions = { pipelines: EVERY_PIPELINE };

type Setup = PipelineHarness<FakeBackend>;

let setup: Setup | undefined;

afterEach(async () => {
  await setup?.close();
  setup = undefined;
});

async function start(options: Pick<FakeBackendOptions, 'provisioningPolls'> = {}): Promise<Setup> {
  setup = await createFakeBackendPipelineHarness({
    capacity: { spot: 'on-demand' },
    bootAgents: true,
    ...options,
  });
  return setup;
}

/** Starts `name` on `server` and does not wait for it: its launch never returns, as if the server had died. */
async function abandonMidLaunch(
  s: Setup,
  server: PipelineServer,
  name: PipelineName,
  launches: () => number,
) {
  server.abandon(name);
  for (let attempt = 0; launches() === 0; attempt++) {
    if (attempt > 500) throw new Error('the first server never called the backend');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  expect(s.backend.liveInstances()).toHaveLength(1);
  s.advance(CLAIM_EXPIRY_MS);
}

/**
 * Applies a task and lets a first server die in the middle of its job's launch (the fake
 * cloud records the machine, then the call never returns); returns the run and the second
 * server that takes over.
 */
async function crashMidJobLaunch(s: Setup, name: string, command: string) {
  const spec = { configuration: { type: 'task', name, commands: [command] } };
  const run = await applyRun(s.app, s.project, s.admin, spec as unknown as RunSpec);
  const first = s.server();
  const second = s.server();
  s.backend.hangNextLaunch();
  await first.step('runs');
  await abandonMidLaunch(s, first, 'jobs-submitted', () => s.backend.callsOf('runJob').length);
  return { run, second };
}

async function instancesOf(s: Setup): Promise<InstancesTable[]> {
  return s.app.db.selectFrom('instances').selectAll().orderBy('instance_num').execute();
}

describe('a launch retried after a crash reuses its dstack instance id', () => {
  it('runs the job on the one machine the dead server launched', async () => {
    const s = await start();
    const { run, second } = await crashMidJobLaunch(s, 'crash', 'echo survived');
    await second.stepUntil(() => runStatusIs(s, run.id, 'done'), EVERY_ROUND);

    const launches = s.backend.callsOf('runJob').map((call) => (call.args[0] as RunJobParams).instanceId);
    expect(launches).toHaveLength(2);
    expect(launches[1]).toBe(launches[0]);
    // The machine's agent requires the token of the first launch: the retry hands over the same.
    const tokens = s.backend.callsOf('runJob').map((call) => (call.args[0] as RunJobParams).agentToken);
    expect(tokens[1]).toBe(tokens[0]);
    expect(s.backend.instances.size).toBe(1);
    const instances = await instancesOf(s);
    expect(instances.map((row) => row.id)).toEqual([launches[0]]);
    const [machine] = [...s.backend.instances.values()];
    expect(JSON.parse(instances[0]?.job_provisioning_data ?? '{}').instance_id).toBe(machine?.instanceId);
    const job = await s.app.db
      .selectFrom('jobs')
      .selectAll()
      .where('run_id', '=', run.id)
      .executeTakeFirstOrThrow();
    expect(job).toMatchObject({ status: 'done', instance_id: launches[0], instance_assigned: 1 });
  });

  it("provisions a fleet's pending instance on the one machine the dead server launched", async () => {
    const s = await start();
    await applyFleet(s.app, s.project, { type: 'fleet', name: 'pool', nodes: 1 });
    const first = s.server();
    const second = s.server();
    s.backend.hangNextLaunch();

    await abandonMidLaunch(s, first, 'fleets', () => s.backend.callsOf('createInstance').length);
    await second.stepUntil(
      async () => (await instancesOf(s)).some((row) => row.status === 'idle'),
      EVERY_ROUND,
    );

    const launches = s.backend
      .callsOf('createInstance')
      .map((call) => (call.args[1] as { instance_id: string }).instance_id);
    expect(launches).toHaveLength(2);
    expect(launches[1]).toBe(launches[0]);
    expect(s.backend.instances.size).toBe(1);
    const instances = await instancesOf(s);
    expect(instances.map((row) => [row.id, row.name, row.status])).toEqual([[launches[0], 'pool-0', 'idle']]);
  });
});

async function runNameOf(s: Setup, runId: string): Promise<string> {
  return (await s.run(runId)).run_name;
}

async function runStatusIs(s: Setup, runId: string, status: string): Promise<boolean> {
  return (await s.run(runId)).status === status;
}

async function allInstancesTerminated(s: Setup): Promise<boolean> {
  const instances = await instancesOf(s);
  return instances.length > 0 && instances.every((row) => row.status === 'terminated');
}

/** The one machine the fake cloud launched, after checking both launches were keyed by one id. */
function onlyMachine(s: Setup, launches: readonly string[]) {
  expect(launches).toHaveLength(2);
  expect(launches[1]).toBe(launches[0]);
  expect(s.backend.instances.size).toBe(1);
  const [machine] = [...s.backend.instances.values()];
  if (!machine) throw new Error('the fake cloud launched no machine');
  return machine;
}

function terminatedMachines(s: Setup): unknown[] {
  return s.backend.callsOf('terminateInstance').map((call) => call.args[0]);
}

describe('a launch nobody will retry is given up without leaving its machine behind', () => {
  it('terminates the one machine of a run stopped while its launch is stranded', async () => {
    const s = await start();
    const { run, second } = await crashMidJobLaunch(s, 'stopped', 'sleep 600');

    await stopRuns(s.app, s.project, s.admin, [await runNameOf(s, run.id)], false);
    await second.stepUntil(
      async () => (await runStatusIs(s, run.id, 'terminated')) && (await allInstancesTerminated(s)),
      EVERY_ROUND,
    );

    const launches = s.backend.callsOf('runJob').map((call) => (call.args[0] as RunJobParams).instanceId);
    const machine = onlyMachine(s, launches);
    expect(terminatedMachines(s)).toEqual([machine.instanceId]);
    expect(s.backend.liveInstances()).toEqual([]);
    const instances = await instancesOf(s);
    expect(instances.map((row) => [row.id, row.status, row.termination_reason])).toEqual([
      [launches[0], 'terminated', 'job_finished'],
    ]);
    const job = await s.app.db
      .selectFrom('jobs')
      .selectAll()
      .where('run_id', '=', run.id)
      .executeTakeFirstOrThrow();
    expect(job).toMatchObject({ status: 'terminated', termination_reason: 'terminated_by_user' });
  });

  it('ends the pending row of a stopped run without a backend call when no offer was recorded', async () => {
    const s = await start();
    const spec = { configuration: { type: 'task', name: 'early', commands: ['sleep 600'] } };
    const run = await applyRun(s.app, s.project, s.admin, spec as unknown as RunSpec);
    const second = s.server();
    await s.server().step('runs');
    // What a server leaves when it dies between recording the pending instance on the job it
    // claimed and recording the first offer: the job's claim runs out, no backend was called.
    const app = s.app;
    const job = await app.db
      .selectFrom('jobs')
      .selectAll()
      .where('run_id', '=', run.id)
      .executeTakeFirstOrThrow();
    const fleet = await createRunFleet(app, s.project.id, await runNameOf(s, run.id));
    const instance = await insertPendingInstance(app, {
      projectId: s.project.id,
      fleet,
      requirements: JSON.parse(job.job_spec_data).requirements,
      terminationIdleTime: null,
      busyBlocks: 1,
    });
    await app.db
      .updateTable('jobs')
      .set({
        instance_id: instance.id,
        lock_token: 'dead-server',
        lock_owner: 'dead-server',
        lock_expires_at: Date.now() + 30_000,
      })
      .where('id', '=', job.id)
      .execute();
    vi.setSystemTime(Date.now() + CLAIM_EXPIRY_MS);

    await stopRuns(app, s.project, s.admin, [await runNameOf(s, run.id)], false);
    await second.stepUntil(
      async () => (await runStatusIs(s, run.id, 'terminated')) && (await allInstancesTerminated(s)),
      EVERY_ROUND,
    );

    const launchesOrTerminations = s.backend.calls.filter((call) =>
      ['runJob', 'createInstance', 'terminateInstance'].includes(call.method),
    );
    expect(launchesOrTerminations).toEqual([]);
    const instances = await instancesOf(s);
    expect(instances.map((row) => [row.id, row.status, row.deleted])).toEqual([
      [instance.id, 'terminated', 1],
    ]);
  });

  it('terminates the machine of a pending row whose job finished without giving it up', async () => {
    const s = await start();
    const { run, second } = await crashMidJobLaunch(s, 'orphan', 'sleep 600');
    // A job finished by a server that did not give its pending instance up: only the
    // instance pipeline can still find the row.
    const app = s.app;
    await app.db
      .updateTable('jobs')
      .set({ status: 'terminated', termination_reason: 'terminated_by_user', finished_at: Date.now() })
      .where('run_id', '=', run.id)
      .execute();
    await app.db.updateTable('runs').set({ status: 'terminated' }).where('id', '=', run.id).execute();

    // Young pending rows belong to their owner.
    await second.step('instances');
    expect((await instancesOf(s)).map((row) => row.status)).toEqual(['pending']);
    vi.setSystemTime(Date.now() + PENDING_OWNER_GRACE_MS);
    await second.stepUntil(() => allInstancesTerminated(s), EVERY_ROUND);

    const launches = s.backend.callsOf('runJob').map((call) => (call.args[0] as RunJobParams).instanceId);
    const machine = onlyMachine(s, launches);
    expect(terminatedMachines(s)).toEqual([machine.instanceId]);
    expect(s.backend.liveInstances()).toEqual([]);
  });

  it("terminates the one machine of a fleet deleted while its instance's launch is stranded", async () => {
    const s = await start();
    await applyFleet(s.app, s.project, { type: 'fleet', name: 'pool', nodes: 1 });
    const first = s.server();
    const second = s.server();
    s.backend.hangNextLaunch();
    await abandonMidLaunch(s, first, 'fleets', () => s.backend.callsOf('createInstance').length);

    await deleteFleets(s.app, s.project, ['pool']);
    await second.stepUntil(async () => {
      const fleet = await s.app.db
        .selectFrom('fleets')
        .select('status')
        .where('name', '=', 'pool')
        .executeTakeFirstOrThrow();
      return fleet.status === 'terminated' && (await allInstancesTerminated(s));
    }, EVERY_ROUND);

    const launches = s.backend
      .callsOf('createInstance')
      .map((call) => (call.args[1] as { instance_id: string }).instance_id);
    const machine = onlyMachine(s, launches);
    expect(terminatedMachines(s)).toEqual([machine.instanceId]);
    expect(s.backend.liveInstances()).toEqual([]);
  });
});

describe('a launch given up while it runs', () => {
  /** A pending row of a fresh fleet and two offers for it, with the launch function the test drives. */
  async function givenUpDuringLaunch(s: Setup) {
    const app = s.app;
    const fleet = await createRunFleet(app, s.project.id, 'given-up');
    const requirements = fleetRequirementsOf({});
    const instance = await insertPendingInstance(app, {
      projectId: s.project.id,
      fleet,
      requirements,
      terminationIdleTime: null,
      busyBlocks: 0,
    });
    const backends = await app.backends.getProjectBackends(s.project.id);
    const { offers } = await getOffers(backends, requirements);
    expect(offers.length).toBeGreaterThan(1);
    const rowOf = () =>
      app.db.selectFrom('instances').selectAll().where('id', '=', instance.id).executeTakeFirstOrThrow();
    return { app, instance, offers, rowOf };
  }

  it('stores no result on a row given up during the call: its terminator ends that machine', async () => {
    const s = await start();
    const { app, instance, offers, rowOf } = await givenUpDuringLaunch(s);
    let launches = 0;
    const result = await launchOnFirstOffer(app, instance, offers, async ({ backend, offer }) => {
      launches += 1;
      if (!hasCapability(backend.compute, 'create-instance'))
        throw new Error('the fake backend creates instances');
      const machine = await backend.compute.createInstance(
        offer,
        {
          project_name: s.project.name,
          instance_name: instance.name,
          instance_id: instance.id,
          agent_token: 'test-agent-token',
          user: s.admin.name,
          ssh_keys: [],
          volumes: [],
          reservation: null,
          tags: null,
        },
        null,
      );
      await abandonPendingInstance(app, instance.id, 'terminated_by_user', 'the fleet was deleted');
      return machine;
    });

    expect(launches).toBe(1);
    expect(s.backend.liveInstances()).toHaveLength(1);
    expect(result.launched).toBe(false);
    expect(await rowOf()).toMatchObject({ status: 'terminating', job_provisioning_data: null });
  });

  it('tries no further offer once the row was given up', async () => {
    const s = await start();
    const { app, instance, offers, rowOf } = await givenUpDuringLaunch(s);
    const tried: string[] = [];
    const result = await launchOnFirstOffer(app, instance, offers, async (entry) => {
      tried.push(entry.offer.instance.name);
      await abandonPendingInstance(app, instance.id, 'terminated_by_user', 'the fleet was deleted');
      throw new Error('no capacity here');
    });

    expect(result.launched).toBe(false);
    expect(tried).toHaveLength(1);
    const row = await rowOf();
    expect(row).toMatchObject({ status: 'terminating', job_provisioning_data: null });
    expect(JSON.parse(row.offer ?? 'null')?.instance.name).toBe(tried[0]);
  });
});

describe('a job stopped while its instance is still provisioning', () => {
  it('frees its block, so the instance comes up idle rather than busy with no job', async () => {
    const s = await start({ provisioningPolls: 20 });
    const spec = { configuration: { type: 'task', name: 'early-stop', commands: ['sleep 600'] } };
    const run = await applyRun(s.app, s.project, s.admin, spec as unknown as RunSpec);
    const server = s.server();
    await server.step('runs', 'jobs-submitted');
    expect((await instancesOf(s)).map((row) => [row.status, row.busy_blocks])).toEqual([['provisioning', 1]]);

    await stopRuns(s.app, s.project, s.admin, [await runNameOf(s, run.id)], false);
    await server.stepUntil(async () => {
      const [instance] = await instancesOf(s);
      return (await runStatusIs(s, run.id, 'terminated')) && instance?.status !== 'provisioning';
    }, EVERY_ROUND);

    const [instance] = await instancesOf(s);
    expect([instance?.status, instance?.busy_blocks]).toEqual(['idle', 0]);
  });
});
