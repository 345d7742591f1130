/** Starts real servers on a temporary directory and talks to them over HTTP, for end-to-end tests. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BackendPlugin, Fleet, Run } from '@dstack/core';
import { findFreePort } from '@dstack/shim';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { type RunningServer, startServer } from '../src/app.js';
import type { ServerConfigInput } from '../src/config/server-config.js';
import type { SqlDialect } from '../src/context.js';
import {
  checkPostgresReachable,
  createTestDatabase,
  type TestDatabase,
} from '../src/testing/test-database.test.helpers.js';

export const ADMIN_TOKEN = 'e2e-admin-token';

/** The part of a `logs/poll` answer the harness reads. */
type LogsPage = { logs: Array<{ message: string }>; next_token: string | null };

/** An HTTP answer: the status and the parsed JSON body (null when empty). */
export interface HarnessAnswer<TBody> {
  status: number;
  body: TBody;
}

/** The API of a server at some URL, as the end-to-end tests call it (in-process or a child process). */
export interface ServerApi {
  /**
   * POSTs `body` as JSON with `token` (default the admin's). The answer is parsed but not
   * checked: `TBody` is what the caller expects (e.g. `ApiError` for a 4xx answer).
   */
  call<TBody = unknown>(path: string, body?: unknown, token?: string): Promise<HarnessAnswer<TBody>>;
  waitForRun(runName: string, statuses: readonly string[], timeoutMs?: number): Promise<Run>;
  /** The logs of every job of the run, or of the one job submission given by id. */
  logs(runName: string, jobSubmissionId?: string): Promise<string>;
  /** Creates a user with the global role `user` (a member of no project); resolves with its token. */
  createUser(username: string): Promise<string>;
}

export interface HarnessServer extends ServerApi {
  server: RunningServer;
  /** Aborts the runs of project `main` still going, and waits until they have ended. */
  abortActiveRuns(): Promise<void>;
  /** Deletes every fleet, waits until their instances (detached shims) are terminated, then stops the server. */
  terminateFleetsAndClose(): Promise<void>;
  close(): Promise<void>;
}

export function makeTempDir(prefix = 'dstack-e2e-'): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** `DSTACK_DATABASE_URL` for a server on `database`'s Postgres schema. */
export function postgresServerUrl(database: Pick<TestDatabase, 'url' | 'postgresSchema'>): string {
  const url = new URL(database.url);
  if (database.postgresSchema) url.searchParams.set('options', `-c search_path=${database.postgresSchema}`);
  return url.toString();
}

/** An end-to-end suite, given the `DSTACK_DATABASE_URL` to start its servers with (undefined: SQLite). */
type DatabaseSuite = (databaseUrl: () => string | undefined, dialect: SqlDialect) => void;

function defineEachDatabase(
  title: string,
  suite: DatabaseSuite,
  skip: boolean,
  dialects: readonly SqlDialect[] = ['sqlite', 'postgres'],
): void {
  for (const dialect of dialects) {
    describe.skipIf(skip)(`${title} [${dialect}]`, async () => {
      if (dialect === 'postgres') {
        const unreachable = await checkPostgresReachable();
        if (unreachable) {
          it.skip(unreachable, () => {});
          return;
        }
      }
      let database: TestDatabase | undefined;
      // Registered before the suite's own hooks: the schema exists before its servers start and
      // is dropped after they stopped.
      beforeAll(async () => {
        if (dialect === 'postgres') database = await createTestDatabase('postgres', { migrate: false });
      });
      afterAll(async () => {
        await database?.close();
      });
      suite(() => (database ? postgresServerUrl(database) : undefined), dialect);
    });
  }
}

/**
 * Which to use: `describeEachDatabase` where the database is part of what is tested (state kept
 * across a server's restart, locking, what is stored) or where a second copy costs seconds;
 * `describeOnDatabase('sqlite')` for a slow end-to-end suite whose subject is elsewhere (hosts,
 * SSH, containers, a cloud). Postgres keeps the database suites, the migrations, the two-replica
 * tests, the pipelines' locking and one cloud end to end (aws-emulator.test.ts).
 *
 * Runs an end-to-end suite once per database: `title [sqlite]` on the server directory's own
 * SQLite file, `title [postgres]` on a fresh Postgres schema (dropped after the suite). When
 * Postgres is not reachable (outside CI), the Postgres copy holds one skipped test that says
 * why. `describeEachDatabase.skipIf(condition)` skips both (a host the suite cannot run on).
 */
export const describeEachDatabase = Object.assign(
  (title: string, suite: DatabaseSuite): void => defineEachDatabase(title, suite, false),
  {
    skipIf:
      (skip: boolean) =>
      (title: string, suite: DatabaseSuite): void =>
        defineEachDatabase(title, suite, skip),
  },
);

/**
 * Runs a slow end-to-end suite once, on `dialect` only (`title [dialect]`): the suites of one
 * kind split the databases between them rather than each running twice.
 */
export function describeOnDatabase(
  dialect: SqlDialect,
  options: { skip?: boolean } = {},
): (title: string, suite: DatabaseSuite) => void {
  return (title, suite) => defineEachDatabase(title, suite, options.skip ?? false, [dialect]);
}

export function localBackendConfig(dir: string): ServerConfigInput {
  return {
    projects: [{ name: 'main', backends: [{ type: 'local', instances_dir: join(dir, 'instances') }] }],
  };
}

export async function startHarnessServer(options: {
  dir: string;
  config: ServerConfigInput;
  databaseUrl?: string;
  plugins?: readonly BackendPlugin[];
  /** More server settings, e.g. `DSTACK_SHIM_DOWNLOAD_URL`. */
  env?: Readonly<Record<string, string>>;
  /** The wall clock run schedules, retries' backoff and utilization windows are read against; default `Date.now()`. */
  clock?: () => number;
}): Promise<HarnessServer> {
  const server = await startServer({
    env: {
      // Jobs that end at once are shown ended at once (tests look for themselves); a test of
      // dstack's attaching clients sets the window.
      DSTACK_SERVER_ATTACH_WINDOW_SECONDS: '0',
      ...options.env,
      DSTACK_SERVER_DIR: options.dir,
      DSTACK_SERVER_ADMIN_TOKEN: ADMIN_TOKEN,
      ...(options.databaseUrl ? { DSTACK_DATABASE_URL: options.databaseUrl } : {}),
    },
    port: 0,
    // The bundled snapshot unless a test names a catalog: plans must not follow gpuhunt's live prices.
    config: { catalog: { offline: true }, ...options.config },
    plugins: options.plugins,
    clock: options.clock,
  });
  const api = serverApi(server.url);
  const { call } = api;
  /** Aborts the runs still going and waits until they have ended. */
  const abortActiveRuns = async () => {
    const activeRuns = async () =>
      (await call<Run[]>('/api/runs/list', { project_name: 'main', only_active: true })).body;
    const active = await activeRuns();
    if (active.length === 0) return;
    await call('/api/project/main/runs/stop', {
      runs_names: active.map((run) => run.run_spec.run_name),
      abort: true,
    });
    await waitFor('the runs to end', async () => ((await activeRuns()).length === 0 ? true : null));
  };
  return {
    ...api,
    server,
    abortActiveRuns,
    async terminateFleetsAndClose() {
      // Runs a failed test left going keep their instances busy, and a fleet with a busy
      // instance refuses deletion: abort them first.
      await abortActiveRuns();
      // A run that just ended may hold its instance a moment longer: ask again until every fleet
      // is going, and fail the suite rather than leave a machine behind.
      await waitFor('the fleets and their instances to be gone', async () => {
        const fleets = (await call<Fleet[]>('/api/project/main/fleets/list')).body;
        if (fleets.length === 0) return true;
        const standing = fleets.filter((fleet) => fleet.status !== 'terminating');
        if (standing.length > 0) {
          await call('/api/project/main/fleets/delete', { names: standing.map((fleet) => fleet.name) });
        }
        return null;
      });
      await server.close();
    },
    close: () => server.close(),
  };
}

/** Resources this host always has: what tasks and fleets of the e2e tests ask for. */
export const HOST_RESOURCES = { cpu: '1..', memory: '0.5GB..', disk: '1GB..' };

/** A task configuration running `commands` with requirements the host meets. */
export function task(name: string, commands: string[], extra: Record<string, unknown> = {}) {
  return { type: 'task', name, commands, resources: HOST_RESOURCES, ...extra };
}

/** Polls `probe` every 50 ms until it gives something other than null. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | null> | T | null,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Calls the API of the server at `url` as the admin (`ADMIN_TOKEN`) unless told otherwise. */
export function serverApi(url: string): ServerApi {
  const call = async <TBody = unknown>(
    path: string,
    body: unknown = {},
    token = ADMIN_TOKEN,
  ): Promise<HarnessAnswer<TBody>> => {
    const response = await fetch(url + path, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : null) as TBody };
  };
  return {
    call,
    async waitForRun(runName, statuses, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      let last: Run | null = null;
      while (Date.now() < deadline) {
        const answer = await call<Run>('/api/project/main/runs/get', { run_name: runName });
        last = answer.body;
        if (answer.status === 200 && statuses.includes(last.status)) return last;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(
        `run ${runName} did not reach ${statuses.join('|')}; last: ${JSON.stringify(last?.status)} ${JSON.stringify(last?.latest_job_submission)}`,
      );
    },
    async logs(runName, jobSubmissionId) {
      let text = '';
      let nextToken: string | null = null;
      for (;;) {
        const answer: HarnessAnswer<LogsPage> = await call<LogsPage>('/api/project/main/logs/poll', {
          run_name: runName,
          ...(jobSubmissionId === undefined ? {} : { job_submission_id: jobSubmissionId }),
          next_token: nextToken,
          limit: 1000,
        });
        const logs = answer.body.logs;
        text += logs.map((entry) => Buffer.from(entry.message, 'base64').toString()).join('');
        if (logs.length < 1000) return text;
        nextToken = answer.body.next_token;
      }
    },
    async createUser(username) {
      const created = await call<{ creds: { token: string } }>('/api/users/create', {
        username,
        global_role: 'user',
      });
      if (created.status !== 200) throw new Error(`users/create failed: ${created.status}`);
      return created.body.creds.token;
    },
  };
}

export async function applyTask(
  harness: Pick<ServerApi, 'call'>,
  configuration: Record<string, unknown>,
): Promise<Run> {
  const answer = await harness.call('/api/project/main/runs/apply', {
    plan: { run_spec: { configuration } },
  });
  if (answer.status !== 200) throw new Error(`apply failed: ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body as Run;
}

/**
 * Applies service `name` on the local backend, its one replica the Node program `script` (written
 * to `dir`, started with its port as the only argument), and answers the service's proxy URL
 * (ending in `/`) once the run is running and the replica answers `readyPath` with 200.
 */
export async function applyNodeService(
  harness: HarnessServer,
  options: {
    dir: string;
    name: string;
    script: string;
    /** More of the service's configuration: `auth`, `probes`, `rate_limits`, `model`… */
    fields?: Record<string, unknown>;
    /** Who applies it: the admin unless told. */
    token?: string;
    readyPath?: string;
    timeoutMs?: number;
  },
): Promise<string> {
  const scriptPath = join(options.dir, `${options.name}-replica.cjs`);
  writeFileSync(scriptPath, options.script);
  const port = await findFreePort();
  await applyTask(
    { call: (path, body) => harness.call(path, body, options.token) },
    {
      type: 'service',
      name: options.name,
      port,
      commands: [`exec '${process.execPath}' '${scriptPath}' ${port}`],
      resources: HOST_RESOURCES,
      ...options.fields,
    },
  );
  const url = `${harness.server.url}/proxy/services/main/${options.name}/`;
  await harness.waitForRun(options.name, ['running'], options.timeoutMs);
  await waitFor(
    `service ${options.name} to answer`,
    async () => ((await fetch(`${url}${options.readyPath ?? ''}`)).status === 200 ? true : null),
    options.timeoutMs,
  );
  return url;
}
