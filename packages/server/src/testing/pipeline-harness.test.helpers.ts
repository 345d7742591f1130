/**
 * Steps the real pipelines by hand on a real database, with a backend the test
 * chooses (the instant backend by default: a real shim and runners on this
 * host; or the fake backend of `@dstack/testing`, whose capacity and failures
 * the test sets) and a clock the test moves: only `Date` is faked, so timers,
 * sockets and child processes run as usual while every deadline, backoff and
 * due time the pipelines compute follows the test.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BackendPlugin, RunSpec } from '@dstack/core';
import {
  createFakeBackend,
  createInstantBackend,
  FAKE_BACKEND_TYPE,
  FAKE_BACKEND_VALID_API_KEY,
  type FakeBackend,
  type FakeBackendOptions,
  INSTANT_BACKEND_TYPE,
  type InstantBackend,
  type InstantBackendOptions,
} from '@dstack/testing';
import { vi } from 'vitest';
import type { AgentConnector } from '../agents/index.js';
import type { ServerConfigInput } from '../config/server-config.js';
import type { AppContext, SqlDialect } from '../context.js';
import type { InstancesTable, JobsTable, ProjectsTable, RunsTable, UsersTable } from '../db/schema.js';
import { fleetPipeline } from '../fleets/fleet-pipeline.js';
import { instancePipeline } from '../fleets/instance-pipeline.js';
import { gatewayPipeline } from '../gateways/gateway-pipeline.js';
import { type AnyPipelineDefinition, Pipeline, type PipelineTable } from '../pipelines/pipeline.js';
import type { PipelineName } from '../pipelines/wake-ups.js';
import { jobRunningPipeline } from '../runs/job-running.js';
import { jobSubmittedPipeline } from '../runs/job-submitted.js';
import { jobTerminatingPipeline } from '../runs/job-terminating.js';
import { runPipeline } from '../runs/run-pipeline.js';
import { applyRun } from '../runs/runs.js';
import { volumePipeline } from '../volumes/volume-pipeline.js';
import { createTestApp, type TestApp } from './test-app.test.helpers.js';

/** 2026-01-01T00:00:00Z: where the test clock starts. */
const START_TIME = Date.UTC(2026, 0, 1);

const FACTORIES: Record<PipelineName, (app: AppContext) => AnyPipelineDefinition> = {
  runs: runPipeline,
  'jobs-submitted': jobSubmittedPipeline,
  'jobs-running': jobRunningPipeline,
  'jobs-terminating': jobTerminatingPipeline,
  instances: instancePipeline,
  fleets: fleetPipeline,
  gateways: gatewayPipeline,
  volumes: volumePipeline,
};

/** What `stepUntil` steps by default: every pipeline a run goes through, fleets left out. */
const RUN_PIPELINES: readonly PipelineName[] = [
  'runs',
  'jobs-submitted',
  'instances',
  'jobs-running',
  'jobs-terminating',
];

/** Every pipeline, in the order a run and its fleet go through them. */
export const EVERY_PIPELINE: readonly PipelineName[] = [
  'runs',
  'jobs-submitted',
  'fleets',
  'instances',
  'jobs-running',
  'jobs-terminating',
  'volumes',
];

/** One entry of a project's `backends` in config.yml. */
export type ProjectBackendInput = NonNullable<
  NonNullable<ServerConfigInput['projects']>[number]['backends']
>[number];

/** A backend the harness's app uses: its plugin is registered, and it is closed after the pipelines. */
export interface HarnessBackend {
  readonly plugin: BackendPlugin;
  close(): Promise<void>;
}

export interface PipelineHarnessSettings<Backend extends HarnessBackend> {
  /** Creates the backend; called once `Date` is faked, so the backend sees the test clock from the start. */
  createBackend(): Backend | Promise<Backend>;
  /** The backend entry of project `main` in config.yml, naming the backend's type and creds. */
  projectBackend: ProjectBackendInput;
  /** Runs last when the harness closes (or fails to start), e.g. to remove a directory the backend used. Default: nothing. */
  cleanUp?: () => Promise<void>;
  /** The database: a SQLite file (default) or a fresh Postgres schema. */
  dialect?: SqlDialect;
}

export interface StepUntilOptions {
  /** How far the clock moves after each round; default 200 ms. */
  tickMs?: number;
  /** How many rounds before giving up; default 500. */
  rounds?: number;
  /** The pipelines each round steps, in order; default every pipeline but `fleets`. */
  pipelines?: readonly PipelineName[];
}

/**
 * One server's pipelines, stepped by hand. Several on one harness play several servers sharing
 * one database: each claims rows on its own, so a claim one holds blocks the others until it expires.
 */
export interface PipelineServer {
  /** One claim-and-process round of each named pipeline, in order; returns how many rows were processed. */
  step(...pipelines: PipelineName[]): Promise<number>;
  /**
   * Steps the pipelines, moving the clock by `tickMs` each round, until `done` holds
   * (real agents answer in their own time, so rounds are repeated; the limit only catches hangs).
   */
  stepUntil(done: () => Promise<boolean>, options?: StepUntilOptions): Promise<void>;
  /**
   * Starts one round of `pipeline` and does not wait for it, as a server that dies mid-round
   * (its claims expire with no heartbeat). The harness does not wait for it when closing either.
   */
  abandon(pipeline: PipelineName): void;
}

export interface PipelineHarness<Backend extends HarnessBackend = InstantBackend> extends PipelineServer {
  app: AppContext;
  backend: Backend;
  /** Project `main`. */
  project: ProjectsTable;
  /** The admin user the server created at start. */
  admin: UsersTable;
  /** Milliseconds since the epoch on the test clock. */
  now(): number;
  /** Moves the test clock forward. */
  advance(ms: number): void;
  /** Another server on the same app, with pipelines of its own; `step` and `stepUntil` above use a default one. */
  server(): PipelineServer;
  /** Applies a task as the admin in project `main`; returns its run row. */
  applyTask(name: string, fields: Record<string, unknown>): Promise<RunsTable>;
  run(runId: string): Promise<RunsTable>;
  /** The run's job submissions, oldest first. */
  jobs(runId: string): Promise<JobsTable[]>;
  instance(instanceId: string | null): Promise<InstancesTable>;
  close(): Promise<void>;
}

/** A harness on the instant backend, which gets a temporary home for its shim. */
export async function createPipelineHarness(
  options: Omit<InstantBackendOptions, 'homeDir'> & { dialect?: SqlDialect } = {},
): Promise<PipelineHarness<InstantBackend>> {
  const { dialect, ...backendOptions } = options;
  const shimHome = await mkdtemp(join(tmpdir(), 'dstack-pipelines-shim-'));
  return createPipelineHarnessOn({
    dialect,
    createBackend: () => createInstantBackend({ ...backendOptions, homeDir: shimHome }),
    projectBackend: { type: INSTANT_BACKEND_TYPE, creds: { type: 'default' } },
    cleanUp: () => rm(shimHome, { recursive: true, force: true }),
  });
}

/** A harness on the fake backend of `@dstack/testing`, made with `options` (its defaults otherwise). */
export function createFakeBackendPipelineHarness(
  options: FakeBackendOptions & {
    dialect?: SqlDialect;
    /** The project backend's `regions` (default: the fake backend's, `fake-region-1`). */
    regions?: string[];
  } = {},
): Promise<PipelineHarness<FakeBackend>> {
  const { dialect, regions, ...backendOptions } = options;
  return createPipelineHarnessOn({
    dialect,
    createBackend: () => createFakeBackend(backendOptions),
    projectBackend: {
      type: FAKE_BACKEND_TYPE,
      creds: { type: 'api_key', api_key: FAKE_BACKEND_VALID_API_KEY },
      ...(regions ? { regions } : {}),
    },
  });
}

/** A harness on the backend `settings` create, registered for project `main`. */
export async function createPipelineHarnessOn<Backend extends HarnessBackend>(
  settings: PipelineHarnessSettings<Backend>,
): Promise<PipelineHarness<Backend>> {
  vi.useFakeTimers({ toFake: ['Date'], now: START_TIME });
  let testApp: TestApp | undefined;
  let backend: Backend | undefined;
  let agents: AgentConnector | undefined;
  try {
    backend = await settings.createBackend();
    testApp = await createTestApp({
      dialect: settings.dialect ?? 'sqlite',
      routes: [],
      plugins: [backend.plugin],
      config: { projects: [{ name: 'main', backends: [settings.projectBackend] }] },
    });
    agents = testApp.app.agents;
    const project = (await testApp.app.db
      .selectFrom('projects')
      .selectAll()
      .where('name', '=', 'main')
      .executeTakeFirstOrThrow()) as ProjectsTable;
    const admin = (await testApp.app.db
      .selectFrom('users')
      .selectAll()
      .where('global_role', '=', 'admin')
      .executeTakeFirstOrThrow()) as UsersTable;
    return harnessOf({ testApp, backend, agents, project, admin, cleanUp: settings.cleanUp });
  } catch (error) {
    try {
      await agents?.close();
      await backend?.close();
      await testApp?.close();
      await settings.cleanUp?.();
    } finally {
      vi.useRealTimers();
    }
    throw error;
  }
}

interface HarnessParts<Backend extends HarnessBackend> {
  testApp: TestApp;
  backend: Backend;
  agents: AgentConnector;
  project: ProjectsTable;
  admin: UsersTable;
  cleanUp: (() => Promise<void>) | undefined;
}

function harnessOf<Backend extends HarnessBackend>(parts: HarnessParts<Backend>): PipelineHarness<Backend> {
  const { testApp, backend, agents, project, admin } = parts;
  const { app } = testApp;
  const advance = (ms: number) => vi.setSystemTime(Date.now() + ms);
  /** Pipelines of servers that may still be waiting on work they abandoned: not stopped at close. */
  const live = new Set<Map<PipelineName, Pipeline<PipelineTable>>>();

  const server = (): PipelineServer => {
    const pipelines = new Map<PipelineName, Pipeline<PipelineTable>>();
    live.add(pipelines);
    const pipelineOf = (name: PipelineName) => {
      let pipeline = pipelines.get(name);
      if (!pipeline) {
        pipeline = new Pipeline(app, FACTORIES[name](app));
        pipelines.set(name, pipeline);
      }
      return pipeline;
    };
    const step = async (...names: PipelineName[]) => {
      let processed = 0;
      for (const name of names) processed += await pipelineOf(name).processDue();
      return processed;
    };
    return {
      step,
      async stepUntil(done, { tickMs = 200, rounds = 500, pipelines: names = RUN_PIPELINES } = {}) {
        for (let round = 0; round < rounds; round++) {
          if (await done()) return;
          await step(...names);
          advance(tickMs);
          // Give the agents (real HTTP servers and processes) a moment of real time.
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        throw new Error(`the pipelines did not reach the expected state in ${rounds} rounds`);
      },
      abandon(name) {
        const pipeline = pipelineOf(name);
        live.delete(pipelines);
        void pipeline.processDue();
      },
    };
  };

  const defaultServer = server();
  return {
    app,
    backend,
    project,
    admin,
    now: () => Date.now(),
    advance,
    server,
    step: defaultServer.step,
    stepUntil: defaultServer.stepUntil,
    abandon: defaultServer.abandon,
    async applyTask(name, fields) {
      const spec: RunSpec = { configuration: { type: 'task', name, ...fields } };
      const run = await applyRun(app, project, admin, spec);
      return app.db.selectFrom('runs').selectAll().where('id', '=', run.id).executeTakeFirstOrThrow();
    },
    run: (runId) => app.db.selectFrom('runs').selectAll().where('id', '=', runId).executeTakeFirstOrThrow(),
    jobs: (runId) =>
      app.db.selectFrom('jobs').selectAll().where('run_id', '=', runId).orderBy('submission_num').execute(),
    async instance(instanceId) {
      if (!instanceId) throw new Error('the job has no instance');
      return app.db
        .selectFrom('instances')
        .selectAll()
        .where('id', '=', instanceId)
        .executeTakeFirstOrThrow();
    },
    async close() {
      try {
        const pipelines = [...live].flatMap((server) => [...server.values()]);
        await Promise.all(pipelines.map((pipeline) => pipeline.stop()));
        await agents.close();
        await backend.close();
        await testApp.close();
        await parts.cleanUp?.();
      } finally {
        vi.useRealTimers();
      }
    },
  };
}
