/**
 * Scheduler benchmarks on a real server (SQLite, in this process):
 * - apply → running on the local backend, with an idle instance in the local fleet
 *   (target p50 < 300 ms) and, for information, with a new instance;
 * - the local host shared: `cpu: 1..` tasks that wait for capacity, on a host of 2 CPUs (its
 *   size given to the backend), at most two at once (target: two at once, no row left behind);
 * - throughput: 500 runs applied at once to a backend with unlimited instant
 *   capacity (one shared real shim, in its own process as on a real host) and a
 *   trivial command, all to `done` (target >= 50 runs/s), with p50/p99
 *   apply → running, peak memory and CPU time, and the latency of a cheap API route
 *   (`users/get_my_user`) called in a loop meanwhile by a client process of its own (target
 *   p99 < 50 ms): the API must stay responsive while the pipelines work.
 * dstack itself is not runnable here (no PyPI), so there is no reference column.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLocalBackendPlugin, type HostResources } from '@dstack/backend-local';
import { type RunningServer, startServer } from '@dstack/server';
import { createInstantBackend } from '@dstack/testing/instant-backend';
import { applyFromClientProcess, epochNow } from './apply-client.js';
import { startCheapRouteProbe } from './cheap-route-probe.js';
import { summarise } from './stats.js';

/** The admin token of the servers the benchmarks start. */
export const BENCH_ADMIN_TOKEN = 'bench-admin-token';
const LATENCY_RUNS = 10;
const THROUGHPUT_RUNS = 500;
/** How often the throughput bench reads the runs' statuses (its precision on a figure of seconds). */
const THROUGHPUT_POLL_MS = 25;
/** How often the throughput bench samples the server's and the shim's memory (in the server's process). */
const MEMORY_SAMPLE_MS = 200;
/** Tasks of `cpu: 1..` applied at once to the local backend of a 2-CPU host, and what each runs. */
const LOCAL_SHARING_RUNS = 40;
const LOCAL_SHARING_COMMAND = 'sleep 0.5';
const APPLY_CONCURRENCY = 50;
/** The cheap route called in a loop while the runs go, and the pause between two calls. */
const CHEAP_ROUTE = '/api/users/get_my_user';
const CHEAP_ROUTE_PAUSE_MS = 20;
const CHEAP_ROUTE_TARGET_P99_MS = 50;
/** Linux's USER_HZ: /proc reports CPU times in these ticks. */
const CLOCK_TICKS_PER_SECOND = 100;

/** POSTs `body` to the server's API as the admin; resolves with the parsed answer (null when empty). */
export async function call<Answer = unknown>(
  server: RunningServer,
  route: string,
  body: unknown,
): Promise<Answer> {
  const response = await fetch(server.url + route, {
    method: 'POST',
    headers: { authorization: `Bearer ${BENCH_ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${route}: ${response.status} ${await response.text()}`);
  const text = await response.text();
  return (text ? JSON.parse(text) : null) as Answer;
}

/** A `cpu: 1..` task's configuration. */
export function task(name: string, commands: string[]) {
  return { type: 'task', name, commands, resources: { cpu: '1..', memory: '0.5GB..', disk: '1GB..' } };
}

/** Applies a `cpu: 1..` task; resolves with `performance.now()` of the moment it was sent. */
export async function apply(
  server: RunningServer,
  name: string,
  commands: string[],
  extra: Record<string, unknown> = {},
): Promise<number> {
  const started = performance.now();
  await call(server, '/api/project/main/runs/apply', {
    plan: { run_spec: { configuration: { ...task(name, commands), ...extra } } },
  });
  return started;
}

/** Milliseconds from `started` until the run's job is running (polled every 5 ms). */
export async function waitForStatus(
  server: RunningServer,
  name: string,
  statuses: string[],
  started: number,
): Promise<number> {
  for (;;) {
    const row = await server.app.db
      .selectFrom('runs')
      .select('status')
      .where('run_name', '=', name)
      .where('deleted', '=', 0)
      .executeTakeFirst();
    if (row && statuses.includes(row.status)) return performance.now() - started;
    if (row && ['failed', 'terminated'].includes(row.status))
      throw new Error(`run ${name} ended ${row.status}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** `withServer`'s configuration of a server whose project `main` has the local backend only. */
export async function localBackendServer(
  dir: string,
): Promise<{ options: Parameters<typeof startServer>[0] }> {
  return {
    options: {
      config: {
        projects: [
          { name: 'main', backends: [{ type: 'local', instances_dir: path.join(dir, 'instances') }] },
        ],
      },
    },
  };
}

export async function withServer<T>(
  configure: (
    dir: string,
  ) => Promise<{ options: Parameters<typeof startServer>[0]; cleanup?: () => Promise<void> }>,
  body: (server: RunningServer) => Promise<T>,
): Promise<T> {
  const dir = await mkdtemp(path.join(tmpdir(), 'dstack-bench-server-'));
  const { options, cleanup } = await configure(dir);
  const server = await startServer({
    env: { DSTACK_SERVER_DIR: dir, DSTACK_SERVER_ADMIN_TOKEN: BENCH_ADMIN_TOKEN },
    port: 0,
    ...options,
  });
  try {
    return await body(server);
  } finally {
    await call<Array<{ name: string }>>(server, '/api/project/main/fleets/list', {}).then(async (fleets) => {
      if (fleets.length > 0)
        await call(server, '/api/project/main/fleets/delete', { names: fleets.map((f) => f.name) });
      const deadline = Date.now() + 30_000;
      while (
        Date.now() < deadline &&
        (await call<unknown[]>(server, '/api/project/main/fleets/list', {})).length > 0
      ) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    });
    await server.close();
    await cleanup?.();
    await rm(dir, { recursive: true, force: true });
  }
}

async function localLatency(): Promise<{ warm: number[]; cold: number }> {
  return withServer(localBackendServer, async (server) => {
    const coldStart = await apply(server, 'cold', ['true']);
    const cold = await waitForStatus(server, 'cold', ['running', 'terminating', 'done'], coldStart);
    await waitForStatus(server, 'cold', ['done'], coldStart);
    const warm: number[] = [];
    for (let i = 0; i < LATENCY_RUNS; i++) {
      const name = `warm-${i}`;
      const started = await apply(server, name, ['true']);
      warm.push(await waitForStatus(server, name, ['running', 'terminating', 'done'], started));
      await waitForStatus(server, name, ['done'], started);
    }
    return { warm, cold };
  });
}

/** Nodes of the cluster benchmark: what the 2-CPU bench host holds at `cpu: 1..` each. */
const CLUSTER_NODES = 2;
const CLUSTER_RUNS = 5;

/** Milliseconds from `started` until every node of run `name` (its latest submissions) is running. */
async function waitForAllNodesRunning(server: RunningServer, name: string, started: number): Promise<number> {
  for (;;) {
    const jobs = await server.app.db
      .selectFrom('jobs')
      .innerJoin('runs', 'runs.id', 'jobs.run_id')
      .select(['jobs.job_num', 'jobs.submission_num', 'jobs.status'])
      .where('runs.run_name', '=', name)
      .where('runs.deleted', '=', 0)
      .execute();
    const latest = new Map<number, { submission_num: number; status: string }>();
    for (const job of jobs) {
      const current = latest.get(job.job_num);
      if (!current || job.submission_num > current.submission_num) latest.set(job.job_num, job);
    }
    const statuses = [...latest.values()].map((job) => job.status);
    if (statuses.length === CLUSTER_NODES && statuses.every((status) => status === 'running')) {
      return performance.now() - started;
    }
    if (statuses.some((status) => ['failed', 'terminated', 'aborted'].includes(status))) {
      throw new Error(`a node of ${name} ended: ${statuses.join(', ')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/**
 * A `nodes: 2` task on the local backend: apply → every node running (the gang: no node starts
 * before both have instances and agents), on new instances of a run-made cluster fleet (cold),
 * then on that fleet's idle instances (warm).
 */
export async function localClusterLatency(): Promise<{ warm: number[]; cold: number }> {
  return withServer(localBackendServer, async (server) => {
    const cluster = { nodes: CLUSTER_NODES };
    const coldStart = await apply(server, 'cluster-cold', ['sleep 1'], cluster);
    const cold = await waitForAllNodesRunning(server, 'cluster-cold', coldStart);
    await waitForStatus(server, 'cluster-cold', ['done'], coldStart);
    const warm: number[] = [];
    for (let i = 0; i < CLUSTER_RUNS; i++) {
      const name = `cluster-warm-${i}`;
      const started = await apply(server, name, ['sleep 1'], cluster);
      warm.push(await waitForAllNodesRunning(server, name, started));
      await waitForStatus(server, name, ['done'], started);
    }
    return { warm, cold };
  });
}

export interface LocalSharingResult {
  seconds: number;
  /** The most jobs seen `running` at once (polled every 20 ms). */
  peakRunning: number;
  /** Instance rows once every run is done: the idle instances, and any placeholder left behind. */
  instanceRows: number;
  /** Runs that did not end `done`. */
  notDone: number;
}

/** `LOCAL_SHARING_RUNS` tasks of `cpu: 1..` (dstack's default memory) waiting for a 2-CPU host. */
async function localSharing(): Promise<LocalSharingResult> {
  const host: HostResources = { cpuCount: 2, cpuArch: 'x86', memoryGib: 32, diskGib: 500, gpus: [] };
  return withServer(
    async (dir) => ({
      options: {
        config: {
          projects: [
            { name: 'main', backends: [{ type: 'local', instances_dir: path.join(dir, 'instances') }] },
          ],
        },
        plugins: [createLocalBackendPlugin({ hostResources: host })],
      },
    }),
    async (server) => {
      const names = Array.from({ length: LOCAL_SHARING_RUNS }, (_, index) => `share-${index}`);
      const started = performance.now();
      for (const name of names) {
        await call(server, '/api/project/main/runs/apply', {
          plan: {
            run_spec: {
              configuration: {
                type: 'task',
                name,
                commands: [LOCAL_SHARING_COMMAND],
                resources: { cpu: '1..' },
                retry: { on_events: ['no-capacity'], duration: '1h' },
              },
            },
          },
        });
      }
      let peakRunning = 0;
      for (;;) {
        const jobs = await server.app.db.selectFrom('jobs').select('status').execute();
        peakRunning = Math.max(peakRunning, jobs.filter((job) => job.status === 'running').length);
        const runs = await server.app.db.selectFrom('runs').select('status').execute();
        if (runs.every((run) => ['done', 'failed', 'terminated'].includes(run.status))) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const seconds = (performance.now() - started) / 1000;
      const runs = await server.app.db.selectFrom('runs').select('status').execute();
      const rows = await server.app.db.selectFrom('instances').select('id').execute();
      return {
        seconds,
        peakRunning,
        instanceRows: rows.length,
        notDone: runs.filter((run) => run.status !== 'done').length,
      };
    },
  );
}

export interface ThroughputResult {
  seconds: number;
  /** Milliseconds from apply to running, one per run. */
  toRunning: number[];
  peakRssMb: number;
  /** CPU seconds (user + system) this process spent: less sensitive than wall time to other load on the machine. */
  cpuSeconds: number;
  /** The same for the shim's process (its runners run inside it; the jobs' own processes are not counted). */
  shimPeakRssMb: number;
  shimCpuSeconds: number;
  /** Milliseconds of each cheap-route call made while the runs went. */
  cheapRoute: number[];
  /** The same before any run was applied. */
  cheapRouteIdle: number[];
  /** Passes over a row per run, by pipeline, while the runs went (what a run costs the scheduler). */
  passesPerRun: Map<string, number>;
}

/** A client process calling the cheap route one call at a time, `maxCalls` times or until stopped. */
function probeCheapRoute(server: RunningServer, maxCalls: number) {
  return startCheapRouteProbe({
    url: server.url + CHEAP_ROUTE,
    token: BENCH_ADMIN_TOKEN,
    pauseMs: CHEAP_ROUTE_PAUSE_MS,
    maxCalls,
  });
}

/** RSS and CPU seconds (user + system) of another process, from /proc. */
export async function processUsage(pid: number): Promise<{ rssMb: number; cpuSeconds: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.split(' ') ?? [];
  const ticks = Number(stat[11] ?? 0) + Number(stat[12] ?? 0);
  return { rssMb: rssKb / 1024, cpuSeconds: ticks / CLOCK_TICKS_PER_SECOND };
}

export async function throughput(options: { shimProcess: boolean }): Promise<ThroughputResult> {
  let shimPid: number | null = null;
  return withServer(
    async (dir) => {
      // By default the shim runs as its own process, as on a real host: its jobs and runners are not the server's work.
      const backend = await createInstantBackend({
        homeDir: path.join(dir, 'shim'),
        shimProcess: options.shimProcess,
      });
      shimPid = backend.shimPids[0] ?? null;
      return {
        options: {
          config: {
            projects: [{ name: 'main', backends: [{ type: 'instant', creds: { type: 'default' } }] }],
          },
          plugins: [backend.plugin],
        },
        cleanup: () => backend.close(),
      };
    },
    async (server) => {
      await call(server, '/api/project/main/fleets/apply', {
        plan: { spec: { configuration: { type: 'fleet', name: 'pool', nodes: '0..', idle_duration: '1h' } } },
      });
      let peakRss = process.memoryUsage.rss();
      let peakShimRssMb = 0;
      const shimCpuBefore = shimPid === null ? 0 : (await processUsage(shimPid)).cpuSeconds;
      const sampler = setInterval(() => {
        peakRss = Math.max(peakRss, process.memoryUsage.rss());
        if (shimPid !== null) {
          void processUsage(shimPid).then(
            (usage) => {
              peakShimRssMb = Math.max(peakShimRssMb, usage.rssMb);
            },
            () => {},
          );
        }
      }, MEMORY_SAMPLE_MS);
      const cheapRouteIdle = await probeCheapRoute(server, 100).calls;
      const cheapRoute = probeCheapRoute(server, 0);
      let cheapRouteCalls: Promise<number[]> = Promise.resolve([]);
      const names = Array.from({ length: THROUGHPUT_RUNS }, (_, index) => `load-${index}`);
      const running = new Map<string, number>();
      // From the first apply sent: the client process's own start-up is not the server's time.
      let begin = epochNow();
      const cpuBefore = process.cpuUsage();
      const passesBefore = server.pipelinePasses();
      try {
        const started = await applyFromClientProcess({
          urls: [server.url],
          token: BENCH_ADMIN_TOKEN,
          names,
          configuration: task('', ['true']),
          concurrency: APPLY_CONCURRENCY,
        });
        begin = Math.min(...started.values());
        // The poll shares the server's process: it reads the runs not running yet and counts the
        // done ones, both from the index of runs by project and status.
        const project = await server.app.db
          .selectFrom('projects')
          .select('id')
          .where('name', '=', 'main')
          .executeTakeFirstOrThrow();
        const toRun = new Set(names);
        for (;;) {
          const rows = await server.app.db
            .selectFrom('runs')
            .select(['run_name', 'status'])
            .where('project_id', '=', project.id)
            .where('status', 'in', ['pending', 'submitted', 'provisioning', 'failed', 'terminated'])
            .execute();
          const { done } = await server.app.db
            .selectFrom('runs')
            .select((eb) => eb.fn.countAll<number>().as('done'))
            .where('project_id', '=', project.id)
            .where('status', '=', 'done')
            .executeTakeFirstOrThrow();
          const now = epochNow();
          const failed = rows.filter((row) => ['failed', 'terminated'].includes(row.status));
          if (failed.length > 0) throw new Error(`${failed.length} runs did not finish done`);
          const waiting = new Set(rows.map((row) => row.run_name));
          for (const name of toRun) {
            if (waiting.has(name)) continue;
            running.set(name, now - (started.get(name) ?? now));
            toRun.delete(name);
          }
          if (Number(done) >= names.length) break;
          await new Promise((resolve) => setTimeout(resolve, THROUGHPUT_POLL_MS));
        }
      } finally {
        // The probe ends with the runs, whatever their outcome; its figures are read below.
        cheapRouteCalls = cheapRoute.stop();
        cheapRouteCalls.catch(() => {});
      }
      const seconds = (epochNow() - begin) / 1000;
      const cpu = process.cpuUsage(cpuBefore);
      const passesPerRun = new Map(
        [...server.pipelinePasses()].map(([name, passes]) => [
          name,
          (passes - (passesBefore.get(name) ?? 0)) / THROUGHPUT_RUNS,
        ]),
      );
      const shimCpuSeconds = shimPid === null ? 0 : (await processUsage(shimPid)).cpuSeconds - shimCpuBefore;
      clearInterval(sampler);
      return {
        seconds,
        toRunning: [...running.values()],
        peakRssMb: peakRss / 1024 / 1024,
        cpuSeconds: (cpu.user + cpu.system) / 1e6,
        shimPeakRssMb: peakShimRssMb,
        shimCpuSeconds,
        cheapRoute: await cheapRouteCalls,
        cheapRouteIdle,
        passesPerRun,
      };
    },
  );
}

function p(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? Number.NaN;
}

export interface ServerBenchmarkOptions {
  /** Measure the local backend's apply → running latency before the throughput. Default true. */
  latency?: boolean;
  /** Run the throughput benchmark's shim as its own process, as on a real host. Default true. */
  shimProcess?: boolean;
}

export async function benchmarkServer(options: ServerBenchmarkOptions = {}): Promise<void> {
  console.log('\nServer (SQLite, in-process; the shim and runner are real):');
  if (options.latency ?? true) {
    await reportLocalLatency();
    await reportLocalClusterLatency();
    reportLocalSharing(await localSharing());
  }
  reportThroughput(await throughput({ shimProcess: options.shimProcess ?? true }));
}

async function reportLocalLatency(): Promise<void> {
  const latency = await localLatency();
  const warm = summarise(latency.warm);
  console.log(
    `  local apply→running, idle instance: median ${warm.medianMs.toFixed(0)} ms, p90 ${warm.p90Ms.toFixed(0)} ms (${warm.runs} runs; target p50 < 300 ms: ${warm.medianMs < 300 ? 'ok' : 'MISSED'})`,
  );
  console.log(
    `  local apply→running, new instance (shim start): ${latency.cold.toFixed(0)} ms (informational)`,
  );
}

async function reportLocalClusterLatency(): Promise<void> {
  const latency = await localClusterLatency();
  const warm = summarise(latency.warm);
  console.log(
    `  local ${CLUSTER_NODES}-node task, apply→all nodes running, idle cluster instances: median ${warm.medianMs.toFixed(0)} ms, p90 ${warm.p90Ms.toFixed(0)} ms (${warm.runs} runs); new instances: ${latency.cold.toFixed(0)} ms (informational)`,
  );
}

function reportLocalSharing(result: LocalSharingResult): void {
  const ok = result.peakRunning === 2 && result.instanceRows <= 2 && result.notDone === 0;
  console.log(
    `  local host of 2 CPUs, ${LOCAL_SHARING_RUNS} \`cpu: 1..\` tasks (${LOCAL_SHARING_COMMAND}) waiting for capacity: ${(LOCAL_SHARING_RUNS / result.seconds).toFixed(2)} runs/s (${result.seconds.toFixed(1)} s), at most ${result.peakRunning} running at once, ${result.instanceRows} instance rows left, ${result.notDone} not done (target: two at once, no placeholder left: ${ok ? 'ok' : 'MISSED'})`,
  );
}

function reportThroughput(load: ThroughputResult): void {
  const rate = THROUGHPUT_RUNS / load.seconds;
  const shim =
    load.shimCpuSeconds > 0 || load.shimPeakRssMb > 0
      ? `; the shim process: peak RSS ${load.shimPeakRssMb.toFixed(0)} MB, CPU ${load.shimCpuSeconds.toFixed(1)} s`
      : '; the shim inside it';
  console.log(
    `  ${THROUGHPUT_RUNS} runs at once, instant backend: ${rate.toFixed(1)} runs/s to done (${load.seconds.toFixed(1)} s; target >= 50: ${rate >= 50 ? 'ok' : 'MISSED'}), apply→running p50 ${p(load.toRunning, 0.5).toFixed(0)} ms, p99 ${p(load.toRunning, 0.99).toFixed(0)} ms, peak RSS ${load.peakRssMb.toFixed(0)} MB, CPU ${load.cpuSeconds.toFixed(1)} s (the server and the bench's status poll in one process, the applies from another${shim})`,
  );
  const passes = [...load.passesPerRun].filter(([, perRun]) => perRun > 0);
  const total = passes.reduce((sum, [, perRun]) => sum + perRun, 0);
  console.log(
    `  passes per run: ${total.toFixed(1)} (${passes.map(([name, perRun]) => `${name} ${perRun.toFixed(2)}`).join(', ')})`,
  );
  const p99 = p(load.cheapRoute, 0.99);
  console.log(
    `  ${CHEAP_ROUTE} during the ${THROUGHPUT_RUNS} runs: p50 ${p(load.cheapRoute, 0.5).toFixed(1)} ms, p99 ${p99.toFixed(1)} ms (${load.cheapRoute.length} calls; target p99 < ${CHEAP_ROUTE_TARGET_P99_MS} ms: ${p99 < CHEAP_ROUTE_TARGET_P99_MS ? 'ok' : 'MISSED'}); idle: p50 ${p(load.cheapRouteIdle, 0.5).toFixed(1)} ms, p99 ${p(load.cheapRouteIdle, 0.99).toFixed(1)} ms`,
  );
}
