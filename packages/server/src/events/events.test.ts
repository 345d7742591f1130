/**
 * Events on both databases: a volume's life recorded by its service (the user) and its pipeline
 * (the system, through the engine's releases), `events/list` with dstack's filters, keyset pages
 * and validation, members seeing only their projects' events, and bounded retention.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Event } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allRoutes } from '../api-routes.js';
import { Pipeline } from '../pipelines/pipeline.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { describeEachDialect } from '../testing/test-database.test.helpers.js';
import { volumePipeline } from '../volumes/volume-pipeline.js';
import {
  type EventTargetRef,
  eventTargets,
  recordEvents,
  SYSTEM_ACTOR,
  userActor,
} from './event-recorder.js';
import { deleteExpiredEvents } from './event-retention.js';
import { mayBeEventful, rowChangeEvents, statusChangeEvent } from './status-events.js';

describeEachDialect('events', (getDb) => {
  let server: TestApp;
  let temp: string;
  let memberToken: string;
  let outsiderToken: string;
  let mainId: string;
  let otherId: string;

  beforeAll(async () => {
    temp = mkdtempSync(join(tmpdir(), 'dstack-events-'));
    server = await createTestApp({
      dialect: getDb().dialect,
      routes: allRoutes,
      config: {
        projects: [
          {
            name: 'main',
            backends: [
              { type: 'local', instances_dir: join(temp, 'instances'), volumes_dir: join(temp, 'volumes') },
            ],
          },
          { name: 'other' },
        ],
      },
    });
    const createUser = async (username: string) => {
      const answer = await server.request('/api/users/create', { username, global_role: 'user' });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      return answer.body.creds.token as string;
    };
    memberToken = await createUser('member');
    outsiderToken = await createUser('outsider');
    const added = await server.request('/api/projects/other/add_members', {
      members: [{ username: 'member', project_role: 'user' }],
    });
    expect(added.status).toBe(200);
    const projects = await server.app.db.selectFrom('projects').select(['id', 'name']).execute();
    mainId = projects.find((project) => project.name === 'main')?.id as string;
    otherId = projects.find((project) => project.name === 'other')?.id as string;
  });

  afterAll(async () => {
    await server?.close();
    rmSync(temp, { recursive: true, force: true });
  });

  async function list(body: Record<string, unknown> = {}, token?: string): Promise<Event[]> {
    const answer = await server.request('/api/events/list', body, token);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body as Event[];
  }

  /** A run of `projectId` with one job, and one fleet with one instance: targets only, no rows. */
  function entities(projectId: string) {
    const runId = randomUUID();
    const fleetId = randomUUID();
    return {
      run: eventTargets.run({ id: runId, project_id: projectId, run_name: `run-${runId.slice(0, 4)}` }),
      job: eventTargets.job({ id: randomUUID(), project_id: projectId, job_name: 'job-0', run_id: runId }),
      fleet: eventTargets.fleet({ id: fleetId, project_id: projectId, name: 'fleet' }),
      instance: eventTargets.instance({
        id: randomUUID(),
        project_id: projectId,
        name: 'fleet-0',
        fleet_id: fleetId,
      }),
    };
  }

  async function record(message: string, targets: EventTargetRef[], actor = SYSTEM_ACTOR): Promise<void> {
    await recordEvents(server.app.db, server.app.settings.events, [{ message, actor, targets }]);
  }

  it("records a volume's life: created by its user, moved on by its pipeline", async () => {
    const created = await server.request('/api/project/main/volumes/create', {
      configuration: { type: 'volume', name: 'data', backend: 'local', region: 'local', size: 1 },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    await new Pipeline(server.app, volumePipeline(server.app)).processDue();

    const events = await list({ target_volumes: [created.body.id], ascending: true });
    expect(events.map((event) => [event.message, event.actor_user])).toEqual([
      ['Volume created. Status: SUBMITTED', 'admin'],
      ['Volume status changed SUBMITTED -> PROVISIONING', null],
      ['Volume status changed PROVISIONING -> ACTIVE', null],
    ]);
    expect(events[0]).toMatchObject({
      actor_user_id: expect.any(String),
      is_actor_user_deleted: false,
      targets: [
        {
          type: 'volume',
          project_id: mainId,
          project_name: 'main',
          is_project_deleted: false,
          id: created.body.id,
          name: 'data',
        },
      ],
    });
    expect(Date.parse(events[0]?.recorded_at as string)).not.toBeNaN();
    expect(events[1]).toMatchObject({ actor_user_id: null, is_actor_user_deleted: null });
  });

  it('filters by target, by parent (within_*), by target type and by actor', async () => {
    const { run, job, fleet, instance } = entities(otherId);
    const admin = await server.app.db
      .selectFrom('users')
      .selectAll()
      .where('name', '=', 'admin')
      .executeTakeFirstOrThrow();
    await record('Run submitted. Status: SUBMITTED', [run], userActor(admin));
    await record('Job status changed SUBMITTED -> PROVISIONING', [job]);
    await record('Fleet created. Status: ACTIVE', [fleet]);
    await record('Job assigned to instance. Instance blocks: 1/1 busy', [job, instance]);

    const messages = (events: Event[]) => events.map((event) => event.message);
    expect(messages(await list({ target_runs: [run.id] }))).toEqual(['Run submitted. Status: SUBMITTED']);
    expect(messages(await list({ within_runs: [run.id], ascending: true }))).toEqual([
      'Run submitted. Status: SUBMITTED',
      'Job status changed SUBMITTED -> PROVISIONING',
      'Job assigned to instance. Instance blocks: 1/1 busy',
    ]);
    expect(messages(await list({ within_fleets: [fleet.id], ascending: true }))).toEqual([
      'Fleet created. Status: ACTIVE',
      'Job assigned to instance. Instance blocks: 1/1 busy',
    ]);
    expect(messages(await list({ within_projects: [otherId], include_target_types: ['instance'] }))).toEqual([
      'Job assigned to instance. Instance blocks: 1/1 busy',
    ]);
    expect(messages(await list({ within_runs: [run.id], actors: [admin.id] }))).toEqual([
      'Run submitted. Status: SUBMITTED',
    ]);
    expect(messages(await list({ within_runs: [run.id], actors: [null], ascending: true }))).toEqual([
      'Job status changed SUBMITTED -> PROVISIONING',
      'Job assigned to instance. Instance blocks: 1/1 busy',
    ]);
    // Every target of an event comes with it, in the order recorded, whichever one matched.
    const [assigned] = await list({ target_instances: [instance.id] });
    expect(assigned?.targets.map((target) => [target.type, target.name])).toEqual([
      ['job', 'job-0'],
      ['instance', 'fleet-0'],
    ]);
  });

  it('pages newest first and oldest first with prev_recorded_at and prev_id', async () => {
    const { run } = entities(otherId);
    for (let index = 0; index < 5; index += 1) await record(`Event ${index}`, [run]);
    const all = (await list({ target_runs: [run.id] })).map((event) => event.message);
    expect(all).toEqual(['Event 4', 'Event 3', 'Event 2', 'Event 1', 'Event 0']);

    for (const ascending of [false, true]) {
      const seen: string[] = [];
      let last: Event | undefined;
      for (;;) {
        const page = await list({
          target_runs: [run.id],
          limit: 2,
          ascending,
          ...(last ? { prev_recorded_at: last.recorded_at, prev_id: last.id } : {}),
        });
        seen.push(...page.map((event) => event.message));
        last = page.at(-1);
        if (page.length < 2) break;
      }
      expect(seen).toEqual(ascending ? [...all].reverse() : all);
    }
  });

  it("shows members their projects' events only; global admins all of them", async () => {
    const main = entities(mainId);
    const other = entities(otherId);
    await record('Run submitted. Status: SUBMITTED', [main.run]);
    await record('Run submitted. Status: SUBMITTED', [other.run]);

    const ids = (events: Event[]) => events.map((event) => event.targets[0]?.id);
    expect(ids(await list({ target_runs: [main.run.id, other.run.id] }))).toHaveLength(2);
    expect(ids(await list({ target_runs: [main.run.id, other.run.id] }, memberToken))).toEqual([
      other.run.id,
    ]);
    expect(await list({ target_runs: [main.run.id, other.run.id] }, outsiderToken)).toEqual([]);
    expect((await list({}, outsiderToken)).length).toBe(0);
    expect((await list({ within_projects: [mainId] }, memberToken)).length).toBe(0);
    expect((await server.request('/api/events/list', {}, null)).status).toBe(403);
  });

  it('refuses two target_* filters, bad ids and limits, naming the field', async () => {
    const two = await server.request('/api/events/list', {
      target_runs: [randomUUID()],
      target_fleets: [randomUUID()],
    });
    expect(two.status).toBe(400);
    expect(JSON.stringify(two.body)).toContain('At most one target_* filter');
    const badId = await server.request('/api/events/list', { target_runs: ['not-a-uuid'] });
    expect(badId.status).toBe(400);
    expect(JSON.stringify(badId.body)).toContain('target_runs');
    const badLimit = await server.request('/api/events/list', { limit: 101 });
    expect(badLimit.status).toBe(400);
    expect(JSON.stringify(badLimit.body)).toContain('limit');
    // dstack's client sends every field, unset ones as null.
    const nulls = await server.request('/api/events/list', {
      target_projects: null,
      target_runs: null,
      within_runs: null,
      include_target_types: null,
      actors: null,
      prev_recorded_at: null,
      prev_id: null,
      limit: 5,
      ascending: false,
    });
    expect(nulls.status, JSON.stringify(nulls.body)).toBe(200);
  });

  it('keeps events for the TTL, and records none with a TTL of 0', async () => {
    const { run } = entities(otherId);
    await record('Run submitted. Status: SUBMITTED', [run]);
    const retention = {
      db: server.app.db,
      settings: { ...server.app.settings, events: { ttlSeconds: 3600 } },
    };
    expect(await deleteExpiredEvents(retention)).toBe(0);
    expect(await deleteExpiredEvents(retention, Date.now() + 3601_000)).toBeGreaterThan(0);
    expect(await list({ target_runs: [run.id] })).toEqual([]);
    const orphans = await server.app.db
      .selectFrom('event_targets')
      .select('id')
      .where('entity_id', '=', run.id)
      .execute();
    expect(orphans).toEqual([]);

    await recordEvents(server.app.db, { ttlSeconds: 0 }, [
      { message: 'Run submitted', actor: SYSTEM_ACTOR, targets: [run] },
    ]);
    expect(await list({ target_runs: [run.id] })).toEqual([]);
  });
});

describe("status changes in dstack's words", () => {
  const job = {
    id: 'j',
    project_id: 'p',
    run_id: 'r',
    job_name: 'hello-0-0',
    status: 'running',
    termination_reason: null,
    termination_reason_message: null,
  } as never;

  it('names the termination reason and its message when a job goes terminating', () => {
    expect(
      statusChangeEvent('jobs', job, {
        status: 'terminating',
        termination_reason: 'done_by_runner',
        termination_reason_message: 'exited',
      })?.message,
    ).toBe('Job status changed RUNNING -> TERMINATING. Termination reason: DONE_BY_RUNNER (exited)');
    expect(statusChangeEvent('jobs', job, { status: 'running' })).toBeNull();
  });

  it('says when a job or an instance stops or starts answering, once', () => {
    const reachable = { ...(job as object), disconnected_at: null } as never;
    expect(
      rowChangeEvents('jobs', reachable, { disconnected_at: 1000 }).map((event) => event.message),
    ).toEqual(['Job became unreachable']);
    expect(mayBeEventful(reachable, { disconnected_at: null })).toBe(false);
    const unreachable = { ...(job as object), disconnected_at: 1000 } as never;
    expect(
      rowChangeEvents('jobs', unreachable, { disconnected_at: null }).map((event) => event.message),
    ).toEqual(['Job became reachable']);
    const instance = {
      id: 'i',
      project_id: 'p',
      fleet_id: 'f',
      name: 'fleet-0',
      status: 'idle',
      unreachable: 1,
    } as never;
    expect(rowChangeEvents('instances', instance, { unreachable: 0 }).map((event) => event.message)).toEqual([
      'Instance became reachable',
    ]);
    expect(rowChangeEvents('instances', instance, { unreachable: 1 })).toEqual([]);
  });
});
