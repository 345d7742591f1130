/**
 * The scale bench (`--only=scale`): N runs alive at once on the instant backend (real shims in
 * processes of their own, one per 2,000 runs, a real runner and job process per run), their jobs
 * running and each printing a log line every few seconds, on one SQLite server and on two server
 * replicas sharing Postgres. Per N it measures runs/s to running and, once every run is alive, the
 * API's p99 of three routes (each called in a loop by a client process of its own), one pass of
 * each steady pipeline, and then releases the jobs and measures runs/s to done; memory and CPU per
 * run; and that each job was provisioned once (two replicas must not both launch it). Printed as a
 * table, one column per N, so the growth shows.
 */

import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type RunningServer, startServer } from '@dstack/server';
import { createInstantBackend, type InstantBackend } from '@dstack/testing/instant-backend';
import { applyFromClientProcess, epochNow } from './apply-client.js';
import { type CheapRouteProbe, startCheapRouteProbe } from './cheap-route-probe.js';
import { measurePipelinePasses, STEADY_PIPELINES, type SteadyPipeline } from './pipeline-passes.js';
import { BENCH_ADMIN_TOKEN, call, processUsage, task } from './server-bench.js';
import { quantile } from './stats.js';

export const DEFAULT_SCALE_RUNS = [100, 1_000, 10_000];
export type ScaleDatabase = 'sqlite' | 'postgres';
/** `DSTACK_BENCH_POSTGRES_URL`: a server where the bench may create and drop a database. */
const POSTGRES_URL = process.env.DSTACK_BENCH_POSTGRES_URL ?? 'postgresql://postgres@127.0.0.1:5432/test';
const APPLY_CONCURRENCY = 50;
/**
 * Runs per shim process, as jobs spread over hosts: each runner holds about five open files in its
 * shim (its socket, the server's connection, its job's pipes), and a process may hold 20,000 here.
 */
const RUNS_PER_SHIM = 2_000;
/** Seconds between two log lines of a job: 10,000 jobs print 5,000 lines a second. */
const LOG_INTERVAL_SECONDS = 2;
/** The routes timed while every run is alive, each by a client process calling it in a loop. */
const PROBED_ROUTES = [
  { name: 'get_my_user', route: '/api/users/get_my_user', body: {} },
  { name: 'runs/list', route: '/api/runs/list', body: { project_name: 'main' } },
  { name: 'runs/get', route: '/api/project/main/runs/get', body: { run_name: 'scale-0' } },
] as const;
const PROBE_PAUSE_MS = 20;
/** The API is timed at least this long, and for as long as the pipelines' passes take. */
const MIN_ALIVE_MS = 15_000;
const PASS_TIMEOUT_MS = 180_000;
const API_TARGET_P99_MS = 100;

export interface ScaleResult {
  runs: number;
  database: ScaleDatabase;
  replicas: number;
  toRunningSeconds: number;
  toDoneSeconds: number;
  applyToRunningMs: number[];
  /** Per probed route: each call's milliseconds while every run was alive. */
  api: Map<string, number[]>;
  passes: Map<SteadyPipeline, number>;
  /** Peak RSS of this process: the server replicas and the bench. */
  peakRssMb: number;
  /** CPU seconds of this process from the first apply to the last run done. */
  cpuSeconds: number;
  shimCpuSeconds: number;
  /** Machines launched for the N jobs, and the jobs launched more than once. */
  provisioned: number;
  provisionedTwice: number;
}

/** The runs' command: a log line every few seconds until the release file appears (or a newline wakes it). */
function jobCommand(fifo: string, release: string): string {
  // bash's `read -t` on a FIFO nobody writes to waits without starting a process (`sleep` would
  // start thousands a second); the bench writes one newline per job to wake them all at release.
  // The job's shell is sh, whose `read` has no timeout: the loop runs in bash, in single quotes.
  const loop = `exec 3<>${fifo}; i=0; while [ ! -e ${release} ]; do i=$((i+1)); echo "tick $i"; read -t ${LOG_INTERVAL_SECONDS} -u 3 || true; done`;
  return `exec bash -c '${loop}'`;
}

/** A fresh database on the bench's Postgres server, dropped by the returned function. */
async function createPostgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `dstack_scale_${randomBytes(4).toString('hex')}`;
  const psql = (statement: string) =>
    execFileSync('psql', [POSTGRES_URL, '-v', 'ON_ERROR_STOP=1', '-qc', statement], { stdio: 'pipe' });
  psql(`CREATE DATABASE ${name}`);
  const url = new URL(POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

async function startReplicas(
  database: ScaleDatabase,
  directory: string,
  backend: InstantBackend,
  databaseUrl: string | undefined,
): Promise<RunningServer[]> {
  const replicas = database === 'sqlite' ? 1 : 2;
  const servers: RunningServer[] = [];
  // One after the other: the first creates the schema, the admin and the project.
  for (let index = 0; index < replicas; index++) {
    servers.push(
      await startServer({
        env: {
          DSTACK_SERVER_DIR: path.join(directory, `server-${index}`),
          DSTACK_SERVER_ADMIN_TOKEN: BENCH_ADMIN_TOKEN,
          ...(databaseUrl ? { DSTACK_DATABASE_URL: databaseUrl } : {}),
        },
        port: 0,
        config: { projects: [{ name: 'main', backends: [{ type: 'instant', creds: { type: 'default' } }] }] },
        plugins: [backend.plugin],
        webConsoleDirectory: null,
      }),
    );
  }
  return servers;
}

/** Run name → status of every run, read from the database. */
async function runStatuses(server: RunningServer): Promise<Map<string, string>> {
  const rows = await server.app.db
    .selectFrom('runs')
    .select(['run_name', 'status'])
    .where('deleted', '=', 0)
    .execute();
  return new Map(rows.map((row) => [row.run_name, row.status]));
}

/** Polls until `reached(status)` holds for every run; calls `onReached` once per run as it does. */
async function waitForEveryRun(
  server: RunningServer,
  names: readonly string[],
  reached: (status: string) => boolean,
  options: { pollMs: number; timeoutMs: number; onReached?: (name: string, at: number) => void },
): Promise<void> {
  const pending = new Set(names);
  const deadline = epochNow() + options.timeoutMs;
  while (pending.size > 0) {
    const statuses = await runStatuses(server);
    const now = epochNow();
    for (const name of pending) {
      const status = statuses.get(name);
      if (status === 'failed' || status === 'terminated') {
        const job = await server.app.db
          .selectFrom('jobs')
          .innerJoin('runs', 'runs.id', 'jobs.run_id')
          .select(['jobs.termination_reason', 'jobs.termination_reason_message'])
          .where('runs.run_name', '=', name)
          .executeTakeFirst();
        throw new Error(
          `run ${name} ended ${status}: ${job?.termination_reason} ${job?.termination_reason_message ?? ''}`,
        );
      }
      if (status !== undefined && reached(status)) {
        pending.delete(name);
        options.onReached?.(name, now);
      }
    }
    if (pending.size === 0) return;
    if (now > deadline) {
      const jobs = await server.app.db
        .selectFrom('jobs')
        .select(['status', (eb) => eb.fn.countAll<number>().as('count')])
        .groupBy('status')
        .execute();
      const counts = jobs.map((row) => `${row.count} ${row.status}`).join(', ');
      throw new Error(`${pending.size} of ${names.length} runs did not get there in time (jobs: ${counts})`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.pollMs));
  }
}

/** The CPU seconds of every shim process so far. */
async function shimsCpuSeconds(backend: InstantBackend): Promise<number> {
  const usages = await Promise.all(backend.shimPids.map((pid) => processUsage(pid)));
  return usages.reduce((sum, usage) => sum + usage.cpuSeconds, 0);
}

/** N runs alive at once on `database`; see the module's comment. */
export async function scaleRound(runs: number, database: ScaleDatabase): Promise<ScaleResult> {
  const directory = await mkdtemp(path.join(tmpdir(), 'dstack-bench-scale-'));
  const fifo = path.join(directory, 'wake');
  const release = path.join(directory, 'release');
  execFileSync('mkfifo', [fifo]);
  const postgres = database === 'postgres' ? await createPostgresDatabase() : undefined;
  const backend = await createInstantBackend({
    homeDir: path.join(directory, 'shim'),
    shimProcess: true,
    shimProcesses: Math.ceil(runs / RUNS_PER_SHIM),
  });
  let servers: RunningServer[] = [];
  try {
    servers = await startReplicas(database, directory, backend, postgres?.url);
    const first = servers[0]!;
    await call(first, '/api/project/main/fleets/apply', {
      plan: { spec: { configuration: { type: 'fleet', name: 'pool', nodes: '0..', idle_duration: '1h' } } },
    });
    let peakRss = process.memoryUsage().rss;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
    }, 200);
    const shimCpuBefore = await shimsCpuSeconds(backend);
    const cpuBefore = process.cpuUsage();
    const names = Array.from({ length: runs }, (_, index) => `scale-${index}`);
    const pollMs = Math.min(500, Math.max(20, runs / 20));
    // Generous: the machine may be shared, and a stuck run is reported with the jobs' states.
    const timeoutMs = 300_000 + runs * 500;
    const applyToRunningMs: number[] = [];
    let begin = epochNow();
    try {
      // Applies go to every replica in turn, as behind a load balancer.
      const appliedAt = await applyFromClientProcess({
        urls: servers.map((server) => server.url),
        token: BENCH_ADMIN_TOKEN,
        names,
        configuration: task('', [jobCommand(fifo, release)]),
        concurrency: APPLY_CONCURRENCY,
      });
      begin = Math.min(...appliedAt.values());
      await waitForEveryRun(first, names, (status) => status === 'running', {
        pollMs,
        timeoutMs,
        onReached: (name, at) => applyToRunningMs.push(at - appliedAt.get(name)!),
      });
      const toRunningSeconds = (epochNow() - begin) / 1000;

      const aliveSince = performance.now();
      const probes = new Map<string, CheapRouteProbe>(
        PROBED_ROUTES.map(({ name, route, body }) => [
          name,
          startCheapRouteProbe({
            url: first.url + route,
            token: BENCH_ADMIN_TOKEN,
            pauseMs: PROBE_PAUSE_MS,
            maxCalls: 0,
            body: JSON.stringify(body),
          }),
        ]),
      );
      const passes = await measurePipelinePasses(first.app.db, { pollMs, timeoutMs: PASS_TIMEOUT_MS });
      const remaining = MIN_ALIVE_MS - (performance.now() - aliveSince);
      if (remaining > 0) await new Promise((resolve) => setTimeout(resolve, remaining));
      const api = new Map<string, number[]>();
      for (const [name, probe] of probes) api.set(name, await probe.stop());

      const releasedAt = performance.now();
      await writeFile(release, '');
      // One newline per job wakes each from its wait (O_RDWR: opening never blocks on a FIFO).
      const wake = await open(fifo, 'r+');
      await wake.write(Buffer.alloc(Math.min(runs, 60_000), '\n'));
      await wake.close();
      await waitForEveryRun(first, names, (status) => status === 'done', { pollMs, timeoutMs });
      const toDoneSeconds = (performance.now() - releasedAt) / 1000;
      const cpu = process.cpuUsage(cpuBefore);
      const launched = backend.provisioned.length;
      return {
        runs,
        database,
        replicas: servers.length,
        toRunningSeconds,
        toDoneSeconds,
        applyToRunningMs,
        api,
        passes,
        peakRssMb: peakRss / 1024 / 1024,
        cpuSeconds: (cpu.user + cpu.system) / 1e6,
        shimCpuSeconds: (await shimsCpuSeconds(backend)) - shimCpuBefore,
        provisioned: launched,
        provisionedTwice: launched - new Set(backend.provisioned).size,
      };
    } finally {
      clearInterval(sampler);
    }
  } finally {
    // Wake any job still waiting, so that closing the shim does not wait on them.
    await writeFile(release, '').catch(() => {});
    for (const server of servers.reverse()) await server.close();
    await backend.close();
    await postgres?.drop();
    await rm(directory, { recursive: true, force: true });
  }
}

/** The figures of one round as table cells, in the order of {@link SCALE_FIGURES}. */
const SCALE_FIGURES: ReadonlyArray<readonly [string, (result: ScaleResult) => string]> = [
  ['runs/s to running (apply of all → all running)', (r) => (r.runs / r.toRunningSeconds).toFixed(1)],
  ['runs/s to done (release → all done)', (r) => (r.runs / r.toDoneSeconds).toFixed(1)],
  ['apply→running p50 (ms)', (r) => quantile(r.applyToRunningMs, 0.5).toFixed(0)],
  ['apply→running p99 (ms)', (r) => quantile(r.applyToRunningMs, 0.99).toFixed(0)],
  ...PROBED_ROUTES.map(
    ({ name }) =>
      [
        `${name} p99 while all alive (ms)`,
        (r: ScaleResult) => {
          const calls = r.api.get(name) ?? [];
          return `${quantile(calls, 0.99).toFixed(1)} (${calls.length})`;
        },
      ] as const,
  ),
  ['peak RSS, server(s) + bench (MB)', (r) => r.peakRssMb.toFixed(0)],
  ['CPU s per run, server(s) + bench', (r) => (r.cpuSeconds / r.runs).toFixed(4)],
  ['CPU s per run, the shim (runners)', (r) => (r.shimCpuSeconds / r.runs).toFixed(4)],
  ...STEADY_PIPELINES.map(
    ({ name }) =>
      [
        `one pass of ${name} (ms)`,
        (r: ScaleResult) => {
          const ms = r.passes.get(name) ?? Number.NaN;
          return Number.isNaN(ms) ? '-' : ms.toFixed(0);
        },
      ] as const,
  ),
  [
    'jobs provisioned more than once',
    (r) => `${r.provisionedTwice} (${r.provisioned} machines for ${r.runs} jobs)`,
  ],
];

/** The growth table of one database: a row per figure, a column per number of runs alive. */
export function formatScaleTable(results: readonly ScaleResult[]): string {
  const header = ['runs alive →', ...results.map((result) => result.runs.toLocaleString('en-US'))];
  const lines = SCALE_FIGURES.map(([name, cell]) => [name, ...results.map(cell)]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...lines.map((line) => (line[column] as string).length)),
  );
  const format = (cells: readonly string[]) =>
    cells
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[0]!) : cell.padStart(widths[column]!)))
      .join('  ');
  return [format(header), ...lines.map(format)].join('\n');
}

/** `--scale-runs=100,1000` (default 100, 1,000 and 10,000). */
export function scaleRunsOf(argv: readonly string[]): number[] {
  const flag = argv.find((argument) => argument.startsWith('--scale-runs='));
  if (!flag) return DEFAULT_SCALE_RUNS;
  const value = flag.slice('--scale-runs='.length);
  const sizes = value.split(',').map(Number);
  if (sizes.length === 0 || sizes.some((size) => !Number.isInteger(size) || size < 1)) {
    throw new Error(`--scale-runs: expected whole numbers >= 1 separated by commas, got "${value}"`);
  }
  return sizes;
}

/** `--scale-db=sqlite` or `postgres` (default both). */
export function scaleDatabasesOf(argv: readonly string[]): ScaleDatabase[] {
  const value = argv.find((argument) => argument.startsWith('--scale-db='))?.slice('--scale-db='.length);
  if (value === undefined) return ['sqlite', 'postgres'];
  if (value !== 'sqlite' && value !== 'postgres') {
    throw new Error(`--scale-db: expected sqlite or postgres, got "${value}"`);
  }
  return [value];
}

export async function benchmarkScale(options: { runs: number[]; databases: ScaleDatabase[] }): Promise<void> {
  for (const database of options.databases) {
    const label = database === 'sqlite' ? 'one server on SQLite' : 'two replicas on Postgres';
    console.log(
      `\nScale, ${label} (instant backend; real shim processes, one per ${RUNS_PER_SHIM.toLocaleString('en-US')} runs, a runner and a job process per run, a log line every ${LOG_INTERVAL_SECONDS} s per job):`,
    );
    const results: ScaleResult[] = [];
    for (const runs of options.runs) {
      try {
        results.push(await scaleRound(runs, database));
        console.log(`  ${runs} runs: done`);
      } catch (error) {
        // The other sizes still say something; this one is reported, not hidden.
        console.log(`  ${runs} runs: FAILED: ${(error as Error).message}`);
      }
    }
    if (results.length === 0) continue;
    console.log(formatScaleTable(results));
    const slowest = Math.max(
      ...results.flatMap((result) =>
        PROBED_ROUTES.map(({ name }) => quantile(result.api.get(name) ?? [], 0.99)),
      ),
    );
    const twice = results.reduce((sum, result) => sum + result.provisionedTwice, 0);
    console.log(
      `targets: API p99 < ${API_TARGET_P99_MS} ms for the three routes: ${slowest < API_TARGET_P99_MS ? 'ok' : 'MISSED'}; no job provisioned twice: ${twice === 0 ? 'ok' : 'MISSED'}`,
    );
  }
}
