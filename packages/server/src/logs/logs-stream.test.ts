/**
 * `logs/stream` through real HTTP on SQLite and Postgres: pushed lines, resume by cursor,
 * the end of the run, heartbeats, disconnects and access checks; and the per-job cursor that
 * `logs/poll` and `logs/stream` share (nothing lost when jobs commit out of id order).
 */
import { randomUUID } from 'node:crypto';
import { getEventListeners } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LogStreamLine, RunStatus } from '@dstack/core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { projectRoutes } from '../accounts/projects-routes.js';
import { userRoutes } from '../accounts/users-routes.js';
import { startServer } from '../app.js';
import type { AppContext } from '../context.js';
import type { JobsTable } from '../db/schema.js';
import { newRunRow } from '../runs/run-rows.js';
import { normalizeRunSpec } from '../runs/stored-run-spec.js';
import { createTestApp, type TestApp } from '../testing/test-app.test.helpers.js';
import { checkPostgresReachable } from '../testing/test-database.test.helpers.js';
import { parseLogCursor } from './log-cursor.js';
import { openLogStream } from './log-stream.js';
import { storeRunnerLogs } from './logs.js';
import { createLogRoutes } from './logs-routes.js';

/** Reads an NDJSON answer line by line. */
class LineReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  #buffer = '';

  constructor(body: ReadableStream<Uint8Array>) {
    this.#reader = body.getReader();
  }

  /** The next line, parsed; null at the end of the answer. */
  async next(): Promise<LogStreamLine | null> {
    for (;;) {
      const newline = this.#buffer.indexOf('\n');
      if (newline >= 0) {
        const text = this.#buffer.slice(0, newline);
        this.#buffer = this.#buffer.slice(newline + 1);
        return JSON.parse(text) as LogStreamLine;
      }
      const { done, value } = await this.#reader.read();
      if (done) {
        expect(this.#buffer).toBe('');
        return null;
      }
      this.#buffer += this.#decoder.decode(value, { stream: true });
    }
  }

  /** Lines up to and including the first that `until` accepts. */
  async readUntil(until: (line: LogStreamLine) => boolean): Promise<LogStreamLine[]> {
    const lines: LogStreamLine[] = [];
    for (;;) {
      const line = await this.next();
      if (line === null) throw new Error(`the stream ended after ${JSON.stringify(lines)}`);
      lines.push(line);
      if (until(line)) return lines;
    }
  }
}

const isEvent = (line: LogStreamLine): line is Extract<LogStreamLine, { message: string }> =>
  'message' in line;
const textOf = (lines: readonly LogStreamLine[]) =>
  lines
    .filter(isEvent)
    .map((line) => Buffer.from(line.message, 'base64').toString())
    .join('');
const hasText = (text: string) => (line: LogStreamLine) =>
  isEvent(line) && Buffer.from(line.message, 'base64').toString() === text;

function runnerLogs(lines: readonly string[], source: 'stdout' | 'stderr' = 'stdout') {
  return {
    job_logs: lines.map((text, index) => ({
      timestamp: Date.now() + index,
      message: Buffer.from(text).toString('base64'),
      source,
    })),
    runner_logs: [],
  };
}

/** A `running` run row in `projectName`, owned by the admin, as if applied (no jobs). */
async function insertRunningRun(
  app: AppContext,
  projectName: string,
  runName: string,
): Promise<{ id: string; projectId: string }> {
  const project = await app.db
    .selectFrom('projects')
    .select('id')
    .where('name', '=', projectName)
    .executeTakeFirstOrThrow();
  const user = await app.db
    .selectFrom('users')
    .select('id')
    .where('name', '=', 'admin')
    .executeTakeFirstOrThrow();
  const id = randomUUID();
  const now = Date.now();
  await app.db
    .insertInto('runs')
    .values({
      ...newRunRow({
        id,
        projectId: project.id,
        userId: user.id,
        runName,
        runSpec: normalizeRunSpec({ configuration: { type: 'task', commands: ['true'] } }),
        now,
      }),
      status: 'running',
    })
    .execute();
  return { id, projectId: project.id };
}

/** Waits for `condition` (polling every 10 ms); fails the test after 10 s. */
async function eventually(condition: () => boolean, what: string): Promise<void> {
  for (let attempt = 0; attempt < 1000; attempt++) {
    if (condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`logs/stream [${dialect}]`, async () => {
    const unreachable = dialect === 'postgres' ? await checkPostgresReachable() : null;
    if (unreachable) {
      it.skip(unreachable, () => {});
      return;
    }
    let server: TestApp;
    let aliceToken: string;
    const openStreams: AbortController[] = [];

    beforeAll(async () => {
      server = await createTestApp({
        dialect,
        // No re-check within a test: lines that arrive were pushed by the in-process notice.
        routes: [...userRoutes, ...projectRoutes, ...createLogRoutes({ recheckIntervalMs: 600_000 })],
      });
      aliceToken = (await server.request('/api/users/create', { username: 'alice' })).body.creds.token;
      await server.request('/api/projects/main/add_members', {
        members: [{ username: 'alice', project_role: 'user' }],
      });
      expect((await server.request('/api/projects/create', { project_name: 'other' })).status).toBe(200);
    });
    afterAll(async () => {
      for (const controller of openStreams) controller.abort();
      // Closing the database under a stream still reading would log a failed query.
      if (server) await eventually(() => server.app.logNotifications.listenerCount() === 0, 'streams to end');
      await server?.close();
    });

    async function insertRun(projectName: string, runName: string) {
      const { id, projectId } = await insertRunningRun(server.app, projectName, runName);
      const project = { id: projectId };
      const job: Pick<JobsTable, 'id' | 'project_id' | 'run_id'> = {
        id: randomUUID(),
        project_id: project.id,
        run_id: id,
      };
      return {
        job,
        store: (lines: readonly string[], source?: 'stdout' | 'stderr') =>
          storeRunnerLogs(server.app, job, runnerLogs(lines, source)),
        /** Marks the run finished, as the run pipeline does, and says so the way new logs do. */
        finish: async (status: RunStatus = 'done') => {
          await server.app.db.updateTable('runs').set({ status }).where('id', '=', id).execute();
          server.app.logNotifications.notify(id);
        },
      };
    }

    async function openStream(body: Record<string, unknown>, token: string | null = server.adminToken) {
      const controller = new AbortController();
      openStreams.push(controller);
      const response = await fetch(`${server.url}/api/project/main/logs/stream`, {
        method: 'POST',
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          'content-type': 'application/json',
        },
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      if (!response.body) throw new Error('no body');
      return { response, lines: new LineReader(response.body), controller };
    }

    it('pushes lines in order as they are stored, then ends once the run is finished', async () => {
      const run = await insertRun('main', 'pushed');
      const stream = await openStream({ run_name: 'pushed' });
      expect(stream.response.status).toBe(200);
      expect(stream.response.headers.get('content-type')).toBe('application/x-ndjson');
      expect(await stream.lines.next()).toEqual({ heartbeat: true, next_token: null });

      // With the re-check interval at 10 minutes, each batch can only arrive through the notice.
      await run.store(['one\n', 'two\n']);
      const first = await stream.lines.readUntil(hasText('two\n'));
      await run.store(['three\n']);
      await run.store(['err\n'], 'stderr');
      const second = await stream.lines.readUntil(hasText('err\n'));
      expect(textOf([...first, ...second])).toBe('one\ntwo\nthree\nerr\n');
      const events = [...first, ...second].filter(isEvent);
      expect(events.map((event) => event.log_source)).toEqual(['stdout', 'stdout', 'stdout', 'stderr']);
      const ids = events.map((event) => parseLogCursor(event.next_token)?.jobs.get(run.job.id));
      expect(ids).toEqual([...ids].sort((a = 0, b = 0) => a - b));
      expect(new Set(ids).size).toBe(ids.length);
      expect(events[0]?.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

      await run.store(['last\n']);
      await run.finish('done');
      const rest = await stream.lines.readUntil((line) => 'end' in line);
      expect(textOf(rest)).toBe('last\n');
      expect(rest.at(-1)).toEqual({
        end: 'run_finished',
        status: 'done',
        next_token: (rest.filter(isEvent).at(-1) as { next_token: string }).next_token,
      });
      expect(await stream.lines.next()).toBeNull();
      await eventually(() => server.app.logNotifications.listenerCount() === 0, 'the listener to go');
    });

    it('resumes from next_token without losing or repeating a line, also from a logs/poll cursor', async () => {
      const run = await insertRun('main', 'resumed');
      const lines = Array.from({ length: 2500 }, (_, index) => `line ${index}\n`);
      await run.store(lines.slice(0, 1200));
      const first = await openStream({ run_name: 'resumed' });
      const before = await first.lines.readUntil(hasText('line 700\n'));
      first.controller.abort();
      const token = (before.filter(isEvent).at(-1) as { next_token: string }).next_token;

      await run.store(lines.slice(1200));
      await run.finish('failed');
      const second = await openStream({ run_name: 'resumed', next_token: token });
      const after = await second.lines.readUntil((line) => 'end' in line);
      expect(after[0]).toEqual({ heartbeat: true, next_token: token });
      expect(after.at(-1)).toMatchObject({ end: 'run_finished', status: 'failed' });
      expect(textOf(before) + textOf(after)).toBe(lines.join(''));

      // The cursors of both endpoints are the same: a poll page's next_token resumes the stream.
      const page = await server.request('/api/project/main/logs/poll', { run_name: 'resumed', limit: 1000 });
      const fromPoll = await openStream({ run_name: 'resumed', next_token: page.body.cursor });
      const pollRest = await fromPoll.lines.readUntil((line) => 'end' in line);
      expect(
        (page.body.logs as Array<{ message: string }>)
          .map((event) => Buffer.from(event.message, 'base64').toString())
          .join('') + textOf(pollRest),
      ).toBe(lines.join(''));
    });

    it('sends a finished run whole and ends; start_time and job_submission_id filter as in logs/poll', async () => {
      const run = await insertRun('main', 'finished');
      await run.store(['a\n', 'b\n']);
      const other = await insertRun('main', 'finished-other');
      await other.store(['not mine\n']);
      await run.finish('terminated');
      const whole = await openStream({ run_name: 'finished' });
      const lines = await whole.lines.readUntil((line) => 'end' in line);
      expect(textOf(lines)).toBe('a\nb\n');
      expect(lines.at(-1)).toMatchObject({ end: 'run_finished', status: 'terminated' });

      const otherJob = await openStream({ run_name: 'finished', job_submission_id: other.job.id });
      expect(textOf(await otherJob.lines.readUntil((line) => 'end' in line))).toBe('');
      const firstEvent = lines.find(isEvent);
      const later = await openStream({ run_name: 'finished', start_time: firstEvent?.timestamp });
      // start_time is exclusive, as in logs/poll (the two lines are 1 ms apart).
      expect(textOf(await later.lines.readUntil((line) => 'end' in line))).toBe('b\n');
    });

    it('stops its work when the client disconnects', async () => {
      await insertRun('main', 'abandoned');
      const before = server.app.logNotifications.listenerCount();
      const appAbortListeners = getEventListeners(server.app.signal, 'abort').length;
      const stream = await openStream({ run_name: 'abandoned' });
      await stream.lines.next();
      expect(getEventListeners(server.app.signal, 'abort')).toHaveLength(appAbortListeners + 1);
      const runId = (
        await server.app.db
          .selectFrom('runs')
          .select('id')
          .where('run_name', '=', 'abandoned')
          .executeTakeFirstOrThrow()
      ).id;
      expect(server.app.logNotifications.listenerCount(runId)).toBe(1);
      stream.controller.abort();
      // The listener goes in the stream's `finally`, together with its abort listeners and wait timer.
      await eventually(() => server.app.logNotifications.listenerCount(runId) === 0, 'cleanup');
      expect(server.app.logNotifications.listenerCount()).toBe(before);
      expect(getEventListeners(server.app.signal, 'abort')).toHaveLength(appAbortListeners);
    });

    it('answers errors before streaming in the JSON error shape, and checks access', async () => {
      await insertRun('other', 'secret');
      const unknown = await server.request('/api/project/main/logs/stream', { run_name: 'nope' });
      expect(unknown).toEqual({
        status: 400,
        body: { detail: [{ msg: 'Run nope not found', code: 'resource_not_exists' }] },
      });
      // A run of another project is not visible through this one.
      expect((await server.request('/api/project/main/logs/stream', { run_name: 'secret' })).status).toBe(
        400,
      );
      const missingField = await server.request('/api/project/main/logs/stream', {});
      expect(missingField.status).toBe(400);
      expect(missingField.body.detail[0]).toMatchObject({ fields: [['run_name']] });
      await insertRun('main', 'cursor');
      const badCursor = await server.request('/api/project/main/logs/stream', {
        run_name: 'cursor',
        next_token: 'abc',
      });
      expect(badCursor.status).toBe(400);
      expect(badCursor.body.detail[0]).toMatchObject({ fields: [['next_token']] });

      expect(
        (await server.request('/api/project/main/logs/stream', { run_name: 'cursor' }, null)).status,
      ).toBe(403);
      // Alice is a member of main only.
      const denied = await server.request(
        '/api/project/other/logs/stream',
        { run_name: 'secret' },
        aliceToken,
      );
      expect(denied.status).toBe(403);
      const allowed = await openStream({ run_name: 'cursor' }, aliceToken);
      expect(allowed.response.status).toBe(200);
      expect(await allowed.lines.next()).toEqual({ heartbeat: true, next_token: null });
      allowed.controller.abort();
    });
  });
}

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`logs/stream heartbeats and re-checks [${dialect}]`, async () => {
    const unreachable = dialect === 'postgres' ? await checkPostgresReachable() : null;
    if (unreachable) {
      it.skip(unreachable, () => {});
      return;
    }
    let server: TestApp;
    beforeAll(async () => {
      server = await createTestApp({
        dialect,
        routes: createLogRoutes({ heartbeatIntervalMs: 50, recheckIntervalMs: 20 }),
      });
    });
    afterAll(async () => {
      if (server) await eventually(() => server.app.logNotifications.listenerCount() === 0, 'streams to end');
      await server?.close();
    });

    function insertRun(runName: string) {
      return insertRunningRun(server.app, 'main', runName);
    }

    it('sends heartbeats while quiet and finds rows stored without a notice (another replica)', async () => {
      const run = await insertRun('quiet');
      const response = await fetch(`${server.url}/api/project/main/logs/stream`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ run_name: 'quiet' }),
      });
      if (!response.body) throw new Error('no body');
      const lines = new LineReader(response.body);
      const heartbeats: LogStreamLine[] = [];
      for (let count = 0; count < 3; count++) heartbeats.push(...(await lines.readUntil(() => true)));
      expect(heartbeats).toEqual(Array(3).fill({ heartbeat: true, next_token: null }));

      // Rows written straight to the database, as another server replica would: no in-process notice.
      await server.app.db
        .insertInto('job_logs')
        .values({
          project_id: run.projectId,
          run_id: run.id,
          job_id: randomUUID(),
          timestamp: Date.now(),
          log_source: 'stdout',
          message: Buffer.from('from the other replica\n').toString('base64'),
        })
        .execute();
      await server.app.db.updateTable('runs').set({ status: 'done' }).where('id', '=', run.id).execute();
      const rest = await lines.readUntil((line) => 'end' in line);
      expect(textOf(rest)).toBe('from the other replica\n');
      expect(rest.at(-1)).toMatchObject({ end: 'run_finished', status: 'done' });
    });

    it('ends with server_stopping and the cursor when the server shuts down', async () => {
      const run = await insertRun('interrupted');
      await storeRunnerLogs(
        server.app,
        { id: randomUUID(), project_id: run.projectId, run_id: run.id },
        runnerLogs(['x\n']),
      );
      const stopping = new AbortController();
      const project = await server.app.db
        .selectFrom('projects')
        .selectAll()
        .where('name', '=', 'main')
        .executeTakeFirstOrThrow();
      // The service with an app whose signal this test controls (the HTTP server cuts connections on close).
      const stream = await openLogStream({ ...server.app, signal: stopping.signal }, project, {
        runName: 'interrupted',
        signal: new AbortController().signal,
      });
      const first = JSON.parse((await stream.next()).value ?? '') as LogStreamLine;
      expect(first).toEqual({ heartbeat: true, next_token: null });
      const event = JSON.parse((await stream.next()).value ?? '') as { next_token: string };
      stopping.abort();
      expect(JSON.parse((await stream.next()).value ?? '')).toEqual({
        end: 'server_stopping',
        next_token: event.next_token,
      });
      expect((await stream.next()).done).toBe(true);
    });
  });
}

for (const dialect of ['sqlite', 'postgres'] as const) {
  describe(`logs cursor across the jobs of a run [${dialect}]`, async () => {
    const unreachable = dialect === 'postgres' ? await checkPostgresReachable() : null;
    if (unreachable) {
      it.skip(unreachable, () => {});
      return;
    }
    let server: TestApp;
    beforeAll(async () => {
      server = await createTestApp({ dialect, routes: createLogRoutes({ recheckIntervalMs: 600_000 }) });
    });
    afterAll(async () => {
      if (server) await eventually(() => server.app.logNotifications.listenerCount() === 0, 'streams to end');
      await server?.close();
    });

    async function poll(body: Record<string, unknown>) {
      const answer = await server.request('/api/project/main/logs/poll', body);
      expect(answer.status).toBe(200);
      return {
        texts: (answer.body.logs as Array<{ message: string }>).map((event) =>
          Buffer.from(event.message, 'base64').toString(),
        ),
        token: answer.body.cursor as string | null,
      };
    }

    /** All lines of a finished run's stream from `token`, up to its end line. */
    async function streamToEnd(runName: string, token: string | null): Promise<LogStreamLine[]> {
      const response = await fetch(`${server.url}/api/project/main/logs/stream`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ run_name: runName, ...(token === null ? {} : { next_token: token }) }),
      });
      if (!response.body) throw new Error('no body');
      return new LineReader(response.body).readUntil((line) => 'end' in line);
    }

    function logRow(run: { id: string; projectId: string }, jobId: string, text: string) {
      return {
        project_id: run.projectId,
        run_id: run.id,
        job_id: jobId,
        timestamp: Date.now(),
        log_source: 'stdout' as const,
        message: Buffer.from(text).toString('base64'),
      };
    }

    async function finish(runId: string) {
      await server.app.db.updateTable('runs').set({ status: 'done' }).where('id', '=', runId).execute();
    }

    /**
     * Job A's row takes the lower id but becomes visible only after job B's row and `between`:
     * two replicas writing two jobs of one run.
     */
    async function commitOutOfOrder(
      run: { id: string; projectId: string },
      jobs: { a: string; b: string },
      between: () => Promise<void>,
    ) {
      const { db } = server.app;
      if (dialect === 'postgres') {
        await db.transaction().execute(async (transaction) => {
          await transaction
            .insertInto('job_logs')
            .values(logRow(run, jobs.a, 'from A\n'))
            .execute();
          await db
            .insertInto('job_logs')
            .values(logRow(run, jobs.b, 'from B\n'))
            .execute();
          await between();
        });
      } else {
        // SQLite has one writer: explicit ids stand in for the late commit.
        const { last } = await db
          .selectFrom('job_logs')
          .select((eb) => eb.fn.coalesce(eb.fn.max('id'), eb.lit(0)).as('last'))
          .executeTakeFirstOrThrow();
        await db
          .insertInto('job_logs')
          .values({ ...logRow(run, jobs.b, 'from B\n'), id: Number(last) + 2 })
          .execute();
        await between();
        await db
          .insertInto('job_logs')
          .values({ ...logRow(run, jobs.a, 'from A\n'), id: Number(last) + 1 })
          .execute();
      }
      const rows = await db
        .selectFrom('job_logs')
        .select(['job_id', 'id'])
        .where('run_id', '=', run.id)
        .orderBy('id')
        .execute();
      expect(rows.map((row) => row.job_id)).toEqual([jobs.a, jobs.b]);
    }

    it('returns a row of one job committed after a later-numbered row of another was read', async () => {
      const run = await insertRunningRun(server.app, 'main', 'out-of-order');
      const jobs = { a: randomUUID(), b: randomUUID() };
      let afterB: string | null = null;
      await commitOutOfOrder(run, jobs, async () => {
        const page = await poll({ run_name: 'out-of-order' });
        expect(page.texts).toEqual(['from B\n']);
        afterB = page.token;
      });
      const rest = await poll({ run_name: 'out-of-order', next_token: afterB });
      expect(rest.texts).toEqual(['from A\n']);
      expect(await poll({ run_name: 'out-of-order', next_token: rest.token })).toEqual({
        texts: [],
        token: rest.token,
      });

      // The stream resumes from the same token and finds the late row too.
      await finish(run.id);
      const lines = await streamToEnd('out-of-order', afterB);
      expect(lines[0]).toEqual({ heartbeat: true, next_token: afterB });
      expect(textOf(lines)).toBe('from A\n');
      expect(lines.at(-1)).toMatchObject({ end: 'run_finished', next_token: rest.token });
    });

    it('resumes a stream that read past a row committed late', async () => {
      const run = await insertRunningRun(server.app, 'main', 'out-of-order-stream');
      const jobs = { a: randomUUID(), b: randomUUID() };
      let afterB: string | null = null;
      await commitOutOfOrder(run, jobs, async () => {
        const project = await server.app.db
          .selectFrom('projects')
          .selectAll()
          .where('name', '=', 'main')
          .executeTakeFirstOrThrow();
        const reading = new AbortController();
        const stream = await openLogStream(server.app, project, {
          runName: 'out-of-order-stream',
          signal: reading.signal,
        });
        await stream.next();
        const event = JSON.parse((await stream.next()).value ?? '') as {
          message: string;
          next_token: string;
        };
        expect(Buffer.from(event.message, 'base64').toString()).toBe('from B\n');
        afterB = event.next_token;
        reading.abort();
        await stream.return();
      });
      await finish(run.id);
      expect(textOf(await streamToEnd('out-of-order-stream', afterB))).toBe('from A\n');
    });

    it('still takes a plain numeric token (older servers) as "after this id" for every job', async () => {
      const run = await insertRunningRun(server.app, 'main', 'legacy');
      const jobs = [randomUUID(), randomUUID()];
      for (const text of ['A0\n', 'B0\n', 'A1\n', 'B1\n']) {
        const jobId = text.startsWith('A') ? jobs[0] : jobs[1];
        await server.app.db
          .insertInto('job_logs')
          .values(logRow(run, jobId as string, text))
          .execute();
      }
      const ids = await server.app.db
        .selectFrom('job_logs')
        .select('id')
        .where('run_id', '=', run.id)
        .orderBy('id')
        .execute();
      const legacy = String(ids[1]?.id);
      const page = await poll({ run_name: 'legacy', next_token: legacy });
      expect(page.texts).toEqual(['A1\n', 'B1\n']);
      expect((await poll({ run_name: 'legacy', next_token: page.token })).texts).toEqual([]);
      expect(await poll({ run_name: 'legacy', next_token: String(ids[3]?.id) })).toEqual({
        texts: [],
        token: String(ids[3]?.id),
      });
      await finish(run.id);
      expect(textOf(await streamToEnd('legacy', legacy))).toBe('A1\nB1\n');
    });

    it('pages backwards with descending through the jobs of a run', async () => {
      const run = await insertRunningRun(server.app, 'main', 'backwards');
      const jobs = [randomUUID(), randomUUID(), randomUUID()];
      const texts = Array.from({ length: 7 }, (_, index) => `line ${index}\n`);
      for (const [index, text] of texts.entries()) {
        await server.app.db
          .insertInto('job_logs')
          .values(logRow(run, jobs[index % jobs.length] as string, text))
          .execute();
      }
      const pages: string[][] = [];
      let token: string | null = null;
      for (;;) {
        const page = await poll({ run_name: 'backwards', descending: true, limit: 2, next_token: token });
        if (page.texts.length === 0) break;
        pages.push(page.texts);
        token = page.token;
      }
      expect(pages).toEqual([
        ['line 6\n', 'line 5\n'],
        ['line 4\n', 'line 3\n'],
        ['line 2\n', 'line 1\n'],
        ['line 0\n'],
      ]);
      // One job alone, backwards from the same kind of cursor.
      const onlyFirst = await poll({
        run_name: 'backwards',
        descending: true,
        job_submission_id: jobs[0],
        limit: 1,
      });
      expect(onlyFirst.texts).toEqual(['line 6\n']);
      expect(
        (
          await poll({
            run_name: 'backwards',
            descending: true,
            job_submission_id: jobs[0],
            next_token: onlyFirst.token,
          })
        ).texts,
      ).toEqual(['line 3\n', 'line 0\n']);
    });

    it('answers a malformed next_token with 400 naming the field, on both endpoints', async () => {
      await insertRunningRun(server.app, 'main', 'malformed');
      for (const path of ['poll', 'stream']) {
        for (const next_token of ['abc', '12~uAAAA', '1.2']) {
          const answer = await server.request(`/api/project/main/logs/${path}`, {
            run_name: 'malformed',
            next_token,
          });
          expect(answer.status).toBe(400);
          expect(answer.body.detail[0]).toMatchObject({ fields: [['next_token']] });
        }
      }
    });
  });
}

describe('logs/stream when the whole server stops', () => {
  it('sends server_stopping with the cursor to a reading client before the database closes', async () => {
    const directory = mkdtempSync(join(tmpdir(), 'dstack-logs-stop-'));
    // A stream still querying when the database closes would log "driver has already been destroyed".
    const errors = vi.spyOn(console, 'error');
    const running = await startServer({
      env: { DSTACK_SERVER_DIR: directory, DSTACK_SERVER_ADMIN_TOKEN: 'stop-test-token' },
      port: 0,
      config: { projects: [{ name: 'main' }] },
      pipelines: false,
    });
    try {
      const { app } = running;
      const { id: runId, projectId } = await insertRunningRun(app, 'main', 'until-shutdown');
      await storeRunnerLogs(
        app,
        { id: randomUUID(), project_id: projectId, run_id: runId },
        runnerLogs(['before shutdown\n']),
      );

      const response = await fetch(`${running.url}/api/project/main/logs/stream`, {
        method: 'POST',
        headers: { authorization: 'Bearer stop-test-token', 'content-type': 'application/json' },
        body: JSON.stringify({ run_name: 'until-shutdown' }),
      });
      expect(response.headers.get('x-accel-buffering')).toBe('no');
      expect(response.headers.get('cache-control')).toBe('no-cache');
      if (!response.body) throw new Error('no body');
      const lines = new LineReader(response.body);
      const before = await lines.readUntil(hasText('before shutdown\n'));
      const event = before.at(-1) as { next_token: string };

      const closing = running.close();
      expect(await lines.readUntil((line) => 'end' in line)).toEqual([
        { end: 'server_stopping', next_token: event.next_token },
      ]);
      expect(await lines.next()).toBeNull();
      await closing;
      expect(errors).not.toHaveBeenCalled();
    } finally {
      await running.close();
      errors.mockRestore();
      rmSync(directory, { recursive: true, force: true });
    }
  });
});
