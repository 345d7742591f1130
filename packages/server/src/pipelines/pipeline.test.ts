/**
 * The pipeline machinery on both databases: claims take only due, unlocked rows
 * of the pipeline's statuses; results are applied only through a claim that
 * still holds; a row marked due while it is processed is processed again; a
 * processing that hangs is given up, so the other rows keep moving.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FleetStatus } from '@dstack/core';
import { beforeEach, expect, it, vi } from 'vitest';
import { AgentConnector } from '../agents/index.js';
import { createAppContext } from '../app-context.js';
import type { AppContext } from '../context.js';
import type { FleetsTable } from '../db/schema.js';
import { recordEvent, SYSTEM_ACTOR } from '../events/event-recorder.js';
import { createEncryption } from '../security/encryption.js';
import { loadServerSettings } from '../settings.js';
import { describeEachDialect } from '../testing/test-database.test.helpers.js';
import { overrideClaimedRows, Pipeline, type PipelineDefinition, type RowLock } from './pipeline.js';
import { WakeUps } from './wake-ups.js';

vi.setConfig({ testTimeout: 30_000 });

const MIN_INTERVAL_MS = 60_000;

describeEachDialect('Pipeline', (getDb) => {
  let app: AppContext;
  let projectId: string;

  beforeEach(async () => {
    const { db, dialect } = getDb();
    await db.deleteFrom('fleets').execute();
    app = createAppContext({
      db,
      dialect,
      settings: loadServerSettings({}),
      encryption: createEncryption(),
      signal: new AbortController().signal,
      agents: new AgentConnector(),
    });
    projectId = randomUUID();
    await db
      .insertInto('users')
      .values({
        id: projectId,
        name: `u-${projectId}`,
        token_hash: projectId,
        global_role: 'admin',
        created_at: 0,
        active: 1,
      })
      .execute();
    await db
      .insertInto('projects')
      .values({
        id: projectId,
        name: `p-${projectId}`,
        owner_id: projectId,
        ssh_private_key: '',
        ssh_public_key: '',
        created_at: 0,
        deleted: 0,
      })
      .execute();
  });

  async function addFleet(name: string, status: FleetStatus, lastProcessedAt: number): Promise<string> {
    const id = randomUUID();
    await app.db
      .insertInto('fleets')
      .values({
        id,
        project_id: projectId,
        name,
        status,
        status_message: null,
        spec: '{}',
        created_at: 0,
        last_processed_at: lastProcessedAt,
        auto_created: 0,
        deleted: 0,
        lock_expires_at: null,
        lock_token: null,
        lock_owner: null,
      })
      .execute();
    return id;
  }

  function definition(
    process: (row: FleetsTable, lock: RowLock<'fleets'>) => Promise<void>,
  ): PipelineDefinition<'fleets'> {
    return {
      name: 'fleets',
      table: 'fleets',
      statuses: ['active'],
      minIntervalMs: MIN_INTERVAL_MS,
      workers: 5,
      process,
    };
  }

  it('claims only due, unlocked rows of its statuses, and applies what the process releases', async () => {
    const due = await addFleet('due', 'active', 0);
    await addFleet('recent', 'active', Date.now());
    await addFleet('other-status', 'terminating', 0);
    const locked = await addFleet('locked', 'active', 0);
    await app.db
      .updateTable('fleets')
      .set({ lock_token: 'someone', lock_owner: 'elsewhere', lock_expires_at: Date.now() + 60_000 })
      .where('id', '=', locked)
      .execute();
    const seen: string[] = [];
    const pipeline = new Pipeline(
      app,
      definition(async (row, lock) => {
        seen.push(row.name);
        expect(await lock.release({ status_message: 'looked at' })).toBe(true);
      }),
    );
    expect(await pipeline.processDue()).toBe(1);
    expect(seen).toEqual(['due']);
    const row = await app.db.selectFrom('fleets').selectAll().where('id', '=', due).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status_message: 'looked at', lock_token: null, lock_owner: null });
    // Released now: not due again before the interval.
    expect(await pipeline.processDue()).toBe(0);
    // One pass over one row, counted (the throughput bench reports them per run).
    expect(pipeline.passes).toBe(1);
  });

  it('applies the releases of one pass together, undoing only the writes of one refused or failing', async () => {
    const names = ['plain', 'refused', 'failing', 'with-writes'];
    const ids = new Map<string, string>();
    for (const name of names) ids.set(name, await addFleet(name, 'active', 0));
    const marker = await addFleet('marker', 'terminating', Date.now());
    const mark = async (
      transaction: Parameters<Parameters<RowLock<'fleets'>['releaseWith']>[0]>[0],
      by: string,
    ) => {
      await transaction.updateTable('fleets').set({ status_message: by }).where('id', '=', marker).execute();
      // Events recorded through the group's transaction are stored with their release, or not at all.
      await recordEvent(transaction, app.settings.events, {
        message: `Marked by ${by}`,
        actor: SYSTEM_ACTOR,
        targets: [{ type: 'fleet', projectId, id: marker, name: 'marker', fleetId: marker }],
      });
    };
    const outcomes = new Map<string, unknown>();
    const pipeline = new Pipeline(
      app,
      definition(async (row, lock) => {
        if (row.name === 'plain') outcomes.set(row.name, await lock.release({ status_message: 'plain' }));
        if (row.name === 'refused') {
          const refused = async (transaction: Parameters<typeof mark>[0]) => {
            await mark(transaction, 'refused');
            return false;
          };
          outcomes.set(row.name, await lock.releaseWith(refused, { status_message: 'refused' }));
        }
        if (row.name === 'failing') {
          const failing = async (transaction: Parameters<typeof mark>[0]) => {
            await mark(transaction, 'failing');
            throw new Error('alongside failed');
          };
          outcomes.set(
            row.name,
            await lock
              .releaseWith(failing, { status_message: 'failing' })
              .catch((error: Error) => error.message),
          );
        }
        if (row.name === 'with-writes') {
          const writes = async (transaction: Parameters<typeof mark>[0]) => {
            await mark(transaction, 'with-writes');
            return true;
          };
          outcomes.set(row.name, await lock.releaseWith(writes, { status_message: 'with-writes' }));
        }
      }),
    );
    expect(await pipeline.processDue()).toBe(4);
    expect(Object.fromEntries(outcomes)).toEqual({
      plain: true,
      refused: 'refused',
      failing: 'alongside failed',
      'with-writes': 'released',
    });
    const rows = await app.db.selectFrom('fleets').select(['id', 'status_message', 'lock_token']).execute();
    const messageOf = (id: string | undefined) => rows.find((row) => row.id === id)?.status_message ?? null;
    expect(names.map((name) => messageOf(ids.get(name)))).toEqual(['plain', null, null, 'with-writes']);
    expect(messageOf(marker)).toBe('with-writes');
    const events = await app.db
      .selectFrom('events')
      .innerJoin('event_targets', 'event_targets.event_id', 'events.id')
      .select('events.message')
      .where('event_targets.entity_id', '=', marker)
      .execute();
    expect(events.map((event) => event.message)).toEqual(['Marked by with-writes']);
    // Every claim was given back, the refused and failed ones by the engine.
    expect(rows.every((row) => row.lock_token === null)).toBe(true);
  });

  it('drops the result of a claim that another process took over', async () => {
    const id = await addFleet('taken-over', 'active', 0);
    const pipeline = new Pipeline(
      app,
      definition(async (_row, lock) => {
        // Another server claimed the row after this claim expired.
        await app.db.updateTable('fleets').set({ lock_token: 'theirs' }).where('id', '=', id).execute();
        expect(await lock.release({ status_message: 'stale' })).toBe(false);
      }),
    );
    await pipeline.processDue();
    const row = await app.db.selectFrom('fleets').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({ status_message: null, lock_token: 'theirs' });
  });

  it("lets a user's decision written meanwhile stand over a pass in flight", async () => {
    const id = await addFleet('deleted-meanwhile', 'active', 0);
    const pipeline = new Pipeline(
      app,
      definition(async (_row, lock) => {
        // The user deletes the fleet while this pass works from the row as it read it.
        await overrideClaimedRows(app.db, 'fleets', [id], { status: 'terminating' });
        expect(await lock.release({ status: 'active', status_message: 'stale' })).toBe(false);
      }),
    );
    await pipeline.processDue();
    const row = await app.db.selectFrom('fleets').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      status: 'terminating',
      status_message: null,
      lock_token: null,
      last_processed_at: 0,
    });
  });

  it('processes again a row that was marked due while it was being processed', async () => {
    const id = await addFleet('marked', 'active', Date.now());
    const wakeUps = new WakeUps();
    let calls = 0;
    let processedTwice: () => void = () => {};
    const twice = new Promise<void>((resolve) => {
      processedTwice = resolve;
    });
    const pipeline = new Pipeline(
      app,
      definition(async () => {
        calls += 1;
        if (calls === 1) {
          // A service changes the row meanwhile and wakes the pipeline: the row is locked, so the
          // wake-up's claim cannot take it; its release must keep it due.
          await app.db.updateTable('fleets').set({ last_processed_at: 0 }).where('id', '=', id).execute();
          wakeUps.wake('fleets');
        } else {
          processedTwice();
        }
      }),
    );
    await app.db.updateTable('fleets').set({ last_processed_at: 0 }).where('id', '=', id).execute();
    pipeline.start(wakeUps);
    try {
      wakeUps.wake('fleets');
      await twice;
      expect(calls).toBe(2);
    } finally {
      await pipeline.stop();
    }
  });

  it('gives up a row whose processing hangs on an agent, keeps processing the others, and drops the late result', async () => {
    // An agent that accepts requests and never answers them.
    const held: ServerResponse[] = [];
    const agent = createServer((_request, response) => {
      held.push(response);
    });
    await new Promise<void>((resolve) => agent.listen(0, '127.0.0.1', resolve));
    const agentUrl = `http://127.0.0.1:${(agent.address() as AddressInfo).port}/api/pull`;
    const hung = await addFleet('hung', 'active', 0);
    const other = await addFleet('other', 'active', 1);
    const attempts: RowLock<'fleets'>[] = [];
    const lateReleases: Promise<boolean>[] = [];
    let otherDone: () => void = () => {};
    const otherProcessed = new Promise<void>((resolve) => {
      otherDone = resolve;
    });
    let retried: () => void = () => {};
    const hungRetried = new Promise<void>((resolve) => {
      retried = resolve;
    });
    const pipeline = new Pipeline(app, {
      name: 'fleets',
      table: 'fleets',
      statuses: ['active'],
      minIntervalMs: 0,
      // One worker: the other row is processed only if the hung one lets its worker go.
      workers: 1,
      processTimeoutMs: 200,
      async process(row, lock) {
        if (row.id === other) {
          await lock.release({ status_message: 'processed' });
          otherDone();
          return;
        }
        attempts.push(lock);
        if (attempts.length === 2) retried();
        // A call without a deadline of its own (the engine's is the only one) that never settles
        // until the test ends the agent's connections.
        const answered = fetch(agentUrl).then(
          () => 'answered',
          () => 'failed',
        );
        lateReleases.push(answered.then(() => lock.release({ status_message: 'late result' })));
        await answered;
      },
    });
    const wakeUps = new WakeUps();
    pipeline.start(wakeUps);
    try {
      wakeUps.wake('fleets');
      await otherProcessed;
      await hungRetried;
    } finally {
      await pipeline.stop();
      for (const response of held) response.socket?.destroy();
      await new Promise<void>((resolve) => agent.close(() => resolve()));
    }
    // The hung processings were given up: their signals aborted, their late releases dropped.
    expect(attempts[0]?.signal.aborted).toBe(true);
    expect(attempts[0]?.token).not.toBe(attempts[1]?.token);
    expect(await Promise.all(lateReleases)).toEqual(lateReleases.map(() => false));
    const rows = await app.db.selectFrom('fleets').selectAll().where('id', 'in', [hung, other]).execute();
    const byId = new Map(rows.map((row) => [row.id, row]));
    expect(byId.get(other)).toMatchObject({ status_message: 'processed' });
    expect(byId.get(hung)).toMatchObject({ status_message: null, lock_token: null });
  });
});

it("types a release as an update of the row's table: its columns, their types, not the lock columns", () => {
  // The compiler checks this (`pnpm typecheck`): an `@ts-expect-error` that no longer errs fails it.
  const releases = (lock: RowLock<'jobs'>) => [
    lock.release({ status: 'running', termination_reason: null, last_processed_at: 0 }),
    // @ts-expect-error: jobs have no status `idle` (an instance's)
    lock.release({ status: 'idle' }),
    // @ts-expect-error: jobs have no such column
    lock.release({ statuss: 'running' }),
    // @ts-expect-error: not a job termination reason
    lock.release({ termination_reason: 'idle_timeout' }),
    // @ts-expect-error: the claim's columns are the engine's
    lock.release({ lock_token: null }),
  ];
  expect(releases).toBeTypeOf('function');
});
