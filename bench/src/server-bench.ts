/**
 * Scheduler benchmarks on a real server (SQLite, in this process):
 * - apply → running on the local backend, with an idle instance in the local fleet
 *   (target p50 < 300 ms) and, for information, with a new instance;
 * - throughput: 500 runs applied at once to a backend with unlimited instant
 *   capacity (one shared real shim) and a trivial command, all to `done`
 *   (target >= 50 runs/s), with p50/p99 apply → running and peak memory.
 * dstack itself is not runnable here (no PyPI), so there is no reference column.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInstantBackend, type RunningServer, startServer } from '@dstack/server';
import { summarise } from './stats.js';

const TOKEN = 'bench-admin-token';
const LATENCY_RUNS = 10;
const THROUGHPUT_RUNS = 500;
const APPLY_CONCURRENCY = 50;

async function call(server: RunningServer, route: string, body: unknown): Promise<any> {
  const response = await fetch(server.url + route, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${route}: ${response.status} ${await response.text()}`);
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

function task(name: string, commands: string[]) {
  return { type: 'task', name, commands, resources: { cpu: '1..', memory: '0.5GB..', disk: '1GB..' } };
}

async function apply(server: RunningServer, name: string, commands: string[]): Promise<number> {
  const started = performance.now();
  await call(server, '/api/project/main/runs/apply', {
    plan: { run_spec: { configuration: task(name, commands) } },
  });
  return started;
}

/** Milliseconds from `started` until the run's job is running (polled every 5 ms). */
async function waitForStatus(
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

async function withServer<T>(
  configure: (
    dir: string,
  ) => Promise<{ options: Parameters<typeof startServer>[0]; cleanup?: () => Promise<void> }>,
  body: (server: RunningServer) => Promise<T>,
): Promise<T> {
  const dir = await mkdtemp(path.join(tmpdir(), 'dstack-bench-server-'));
  const { options, cleanup } = await configure(dir);
  const server = await startServer({
    env: { DSTACK_SERVER_DIR: dir, DSTACK_SERVER_ADMIN_TOKEN: TOKEN },
    port: 0,
    ...options,
  });
  try {
    return await body(server);
  } finally {
    await call(server, '/api/project/main/fleets/list', {}).then(async (fleets: Array<{ name: string }>) => {
      if (fleets.length > 0)
        await call(server, '/api/project/main/fleets/delete', { names: fleets.map((f) => f.name) });
      const deadline = Date.now() + 30_000;
      while (Date.now() < deadline && (await call(server, '/api/project/main/fleets/list', {})).length > 0) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    });
    await server.close();
    await cleanup?.();
    await rm(dir, { recursive: true, force: true });
  }
}

async function localLatency(): Promise<{ warm: number[]; cold: number }> {
  return withServer(
    async (dir) => ({
      options: {
        config: {
          projects: [
            { name: 'main', backends: [{ type: 'local', instances_dir: path.join(dir, 'instances') }] },
          ],
        },
      },
    }),
    async (server) => {
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
    },
  );
}

async function throughput(): Promise<{ seconds: number; toRunning: number[]; peakRssMb: number }> {
  return withServer(
    async (dir) => {
      const backend = await createInstantBackend({ homeDir: path.join(dir, 'shim') });
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
      let peakRss = process.memoryUsage().rss;
      const sampler = setInterval(() => {
        peakRss = Math.max(peakRss, process.memoryUsage().rss);
      }, 50);
      const names = Array.from({ length: THROUGHPUT_RUNS }, (_, index) => `load-${index}`);
      const started = new Map<string, number>();
      const running = new Map<string, number>();
      const begin = performance.now();
      const queue = [...names];
      await Promise.all(
        Array.from({ length: APPLY_CONCURRENCY }, async () => {
          for (let name = queue.shift(); name; name = queue.shift())
            started.set(name, await apply(server, name, ['true']));
        }),
      );
      for (;;) {
        const rows = await server.app.db
          .selectFrom('runs')
          .select(['run_name', 'status'])
          .where('deleted', '=', 0)
          .execute();
        const now = performance.now();
        for (const row of rows) {
          if (!running.has(row.run_name) && ['running', 'terminating', 'done'].includes(row.status)) {
            running.set(row.run_name, now - (started.get(row.run_name) ?? now));
          }
        }
        const failed = rows.filter((row) => ['failed', 'terminated'].includes(row.status));
        if (failed.length > 0) throw new Error(`${failed.length} runs did not finish done`);
        if (rows.filter((row) => row.status === 'done').length === names.length) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const seconds = (performance.now() - begin) / 1000;
      clearInterval(sampler);
      return { seconds, toRunning: [...running.values()], peakRssMb: peakRss / 1024 / 1024 };
    },
  );
}

function p(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? Number.NaN;
}

export async function benchmarkServer(): Promise<void> {
  console.log('\nServer (SQLite, in-process; the shim and runner are real):');
  const latency = await localLatency();
  const warm = summarise(latency.warm);
  console.log(
    `  local apply→running, idle instance: median ${warm.medianMs.toFixed(0)} ms, p90 ${warm.p90Ms.toFixed(0)} ms (${warm.runs} runs; target p50 < 300 ms: ${warm.medianMs < 300 ? 'ok' : 'MISSED'})`,
  );
  console.log(
    `  local apply→running, new instance (shim start): ${latency.cold.toFixed(0)} ms (informational)`,
  );
  const load = await throughput();
  const rate = THROUGHPUT_RUNS / load.seconds;
  console.log(
    `  ${THROUGHPUT_RUNS} runs at once, instant backend: ${rate.toFixed(1)} runs/s to done (${load.seconds.toFixed(1)} s; target >= 50: ${rate >= 50 ? 'ok' : 'MISSED'}), apply→running p50 ${p(load.toRunning, 0.5).toFixed(0)} ms, p99 ${p(load.toRunning, 0.99).toFixed(0)} ms, peak RSS ${load.peakRssMb.toFixed(0)} MB (server and bench in one process)`,
  );
}
