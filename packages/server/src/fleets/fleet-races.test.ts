/**
 * Races that only Postgres lets happen: there the statements of an API request and of the
 * pipelines interleave (each is a round trip, and the event loop runs others meanwhile), while
 * SQLite runs one request's statements back to back. Each test forces its interleaving: a
 * transaction of its own holds a lock until the racing statements wait on it, then lets go.
 */
import type { FakeBackend } from '@dstack/testing';
import { type RawBuilder, sql } from 'kysely';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AppContext } from '../context.js';
import type { InstancesTable } from '../db/schema.js';
import {
  createFakeBackendPipelineHarness,
  type PipelineHarness,
} from '../testing/pipeline-harness.test.helpers.js';
import { applyFleet } from './fleets.js';

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

let setup: PipelineHarness<FakeBackend> | undefined;

afterEach(async () => {
  await setup?.close();
  setup = undefined;
});

/** One type with 4 GPUs (16 CPUs, 64 GB), on demand in one region. */
async function start(): Promise<PipelineHarness<FakeBackend>> {
  setup = await createFakeBackendPipelineHarness({
    dialect: 'postgres',
    capacity: {
      spot: 'on-demand',
      regions: ['fake-region-1'],
      instanceTypes: [
        {
          name: 'fake.4xa100',
          cpus: 16,
          memoryGib: 64,
          price: 4,
          gpu: { name: 'A100', memoryGib: 80, count: 4 },
        },
      ],
    },
  });
  return setup;
}

interface HeldLock {
  /** The backend pid of the transaction holding the lock. */
  pid: number;
  /** Runs `statement` in the holding transaction (before letting go). */
  run(statement: RawBuilder<unknown>): Promise<void>;
  /** Commits the transaction: whatever waited on its lock goes on. */
  letGo(): Promise<void>;
}

/** Takes `lock` in a transaction on a connection of its own, and holds it until `letGo`. */
async function holdLock(app: AppContext, lock: RawBuilder<unknown>): Promise<HeldLock> {
  let statements: Array<{ statement: RawBuilder<unknown> | null; done: () => void }> = [];
  let wake = () => {};
  let ready!: (pid: number) => void;
  const pid = new Promise<number>((resolve) => {
    ready = resolve;
  });
  const holding = app.db.connection().execute(async (connection) => {
    await sql`BEGIN`.execute(connection);
    await lock.execute(connection);
    ready((await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(connection)).rows[0]!.pid);
    for (;;) {
      if (statements.length === 0) await new Promise<void>((resolve) => (wake = resolve));
      const [next, ...rest] = statements;
      statements = rest;
      if (!next) continue;
      if (next.statement === null) {
        await sql`COMMIT`.execute(connection);
        next.done();
        return;
      }
      await next.statement.execute(connection);
      next.done();
    }
  });
  const send = (statement: RawBuilder<unknown> | null) =>
    new Promise<void>((done) => {
      statements.push({ statement, done });
      wake();
    });
  return {
    pid: await pid,
    run: (statement) => send(statement),
    letGo: async () => {
      await send(null);
      await holding;
    },
  };
}

/** Waits (real time) until `count` other backends wait for a lock the transaction `pid` holds. */
async function waitUntilBlocked(app: AppContext, pid: number, count: number): Promise<void> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const { rows } = await sql<{ blocked: number }>`
      SELECT COUNT(*)::int AS blocked FROM pg_stat_activity WHERE ${pid} = ANY(pg_blocking_pids(pid))
    `.execute(app.db);
    if ((rows[0]?.blocked ?? 0) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`fewer than ${count} statements waited for the lock of backend ${pid}`);
}

async function liveInstances(h: PipelineHarness<FakeBackend>): Promise<InstancesTable[]> {
  return h.app.db
    .selectFrom('instances')
    .selectAll()
    .where('deleted', '=', 0)
    .where('status', 'not in', ['terminating', 'terminated'])
    .orderBy('instance_num')
    .execute();
}

describe('a fleet sized by its apply and its pipeline at once, on Postgres', () => {
  it('gets the instances its nodes ask for, not that many from each', async () => {
    const h = await start();
    // Reads of the instances wait: the apply has recorded the fleet (due at once) and waits to
    // count its instances, and the fleet pipeline claims it and waits to count them too.
    const held = await holdLock(h.app, sql`LOCK TABLE instances IN ACCESS EXCLUSIVE MODE`);
    const applying = applyFleet(h.app, h.project, { type: 'fleet', name: 'pool', nodes: 1, blocks: 2 });
    await waitUntilBlocked(h.app, held.pid, 1);
    const sizing = h.step('fleets');
    await waitUntilBlocked(h.app, held.pid, 2);
    await held.letGo();
    await Promise.all([applying, sizing]);
    await h.step('fleets');

    const instances = await liveInstances(h);
    expect(instances.map((instance) => instance.name)).toEqual(['pool-0']);
    expect(h.backend.callsOf('createInstance')).toHaveLength(1);
  });
});

describe('a job whose claim is taken over while it takes blocks of an instance, on Postgres', () => {
  it('leaves the blocks free: the instance counts only the jobs placed on it', async () => {
    const h = await start();
    await applyFleet(h.app, h.project, { type: 'fleet', name: 'pool', nodes: 1, blocks: 2 });
    await h.step('fleets');
    const [launched] = await liveInstances(h);
    if (!launched) throw new Error('the fleet launched no instance');
    await h.app.db
      .updateTable('instances')
      .set({ status: 'idle', idle_since: h.now() })
      .where('id', '=', launched.id)
      .execute();
    const run = await h.applyTask('half', {
      commands: ['true'],
      fleets: ['pool'],
      creation_policy: 'reuse',
      resources: { gpu: 2, cpu: '1..', memory: '1GB..' },
    });

    // The first server claims the job and waits to take its blocks; meanwhile its claim is taken
    // over (it expired: the server stalled), as another server's claim would take it.
    const held = await holdLock(h.app, sql`SELECT id FROM instances WHERE id = ${launched.id} FOR UPDATE`);
    const stalled = h.step('jobs-submitted');
    await waitUntilBlocked(h.app, held.pid, 1);
    await held.run(
      sql`UPDATE jobs SET lock_token = 'taken-over', lock_owner = 'another-server', lock_expires_at = ${h.now() + 30_000} WHERE run_id = ${run.id}`,
    );
    await held.letGo();
    await stalled;
    const [afterStall] = await h.jobs(run.id);
    expect(afterStall).toMatchObject({ status: 'submitted', instance_id: null, lock_token: 'taken-over' });
    expect(await h.instance(launched.id)).toMatchObject({ status: 'idle', busy_blocks: 0 });

    // The other server's claim expires in its turn, and a server places the job.
    h.advance(31_000);
    await h.server().step('jobs-submitted');
    const [placed] = await h.jobs(run.id);
    expect(placed).toMatchObject({ status: 'provisioning', instance_id: launched.id });
    expect(await h.instance(launched.id)).toMatchObject({ status: 'busy', busy_blocks: 1, total_blocks: 2 });
  });
});
