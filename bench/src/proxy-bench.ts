/**
 * What the server's proxies add to a request: a small Node HTTP service on the local backend
 * (it answers every request at once), called directly on its port, through the service proxy
 * (`/proxy/services/main/{run}/v1/chat/completions`) and through the model endpoint
 * (`/proxy/models/main/chat/completions`), with the same small chat-completion POST. For each:
 * p50/p99 of requests sent one at a time, and requests/s with several in flight; the proxies'
 * added latency is their figure minus the direct one. The client is a process of its own (a
 * client inside the server's process would wait on the server's event loop and count that as the
 * proxy's). Each figure is the median of several runs, the targets interleaved so that load on
 * the machine falls on all of them alike. Informational: no target.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { RunningServer } from '@dstack/server';
import { findFreePort } from '@dstack/shim';
import { waitForStatus, withServer } from './server-bench.js';

const TOKEN = 'bench-admin-token';
const RUNS = 5;
/** Requests sent one at a time per target and run, after `WARMUP` untimed ones. */
const SEQUENTIAL = 300;
const WARMUP = 50;
/** Requests per target and run for the rate, `CONCURRENCY` in flight. */
const RATE_REQUESTS = 1000;
const CONCURRENCY = 16;
const MODEL = 'bench/echo';
const RUN_NAME = 'proxy-bench';
const BODY = JSON.stringify({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 8 });

/** The service: answers any request with a small chat completion once the body is read. */
const SERVICE_SCRIPT = `
const answer = JSON.stringify({ id: 'c', object: 'chat.completion', created: 1, model: 'm',
  choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'ok' } }] });
require('http').createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length });
    response.end(answer);
  });
}).listen(Number(process.env.SERVICE_PORT), '127.0.0.1');
`;

interface Target {
  name: string;
  url: string;
  headers: Record<string, string>;
}

interface TargetFigures {
  /** Milliseconds of each sequential request. */
  latencies: number[];
  requestsPerSecond: number;
}

/** The client process: for each target in turn, the sequential requests then the rate; prints JSON. */
const CLIENT_SCRIPT = `
const { targets, body, sequential, warmup, rateRequests, concurrency } = JSON.parse(process.env.LOAD);
async function send(target) {
  const response = await fetch(target.url, { method: 'POST', headers: target.headers, body });
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(target.name + ': ' + response.status);
}
const figures = {};
for (const target of targets) {
  for (let i = 0; i < warmup; i++) await send(target);
  const latencies = [];
  for (let i = 0; i < sequential; i++) {
    const started = performance.now();
    await send(target);
    latencies.push(performance.now() - started);
  }
  let left = rateRequests;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (left > 0) { left -= 1; await send(target); }
  }));
  const requestsPerSecond = rateRequests / ((performance.now() - started) / 1000);
  figures[target.name] = { latencies, requestsPerSecond };
}
process.stdout.write(JSON.stringify(figures));
`;

async function runClient(targets: readonly Target[]): Promise<Record<string, TargetFigures>> {
  const child = spawn(process.execPath, ['-e', CLIENT_SCRIPT], {
    env: {
      ...process.env,
      LOAD: JSON.stringify({
        targets,
        body: BODY,
        sequential: SEQUENTIAL,
        warmup: WARMUP,
        rateRequests: RATE_REQUESTS,
        concurrency: CONCURRENCY,
      }),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    output += chunk;
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`the proxy bench client exited with status ${code}`);
  return JSON.parse(output) as Record<string, TargetFigures>;
}

async function call(server: RunningServer, route: string, body: unknown): Promise<unknown> {
  const response = await fetch(server.url + route, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${route}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** Polls `url` with the bench's POST until it answers 200 (the service's process is up). */
async function waitUntilAnswering(target: Target): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const response = await fetch(target.url, { method: 'POST', headers: target.headers, body: BODY }).catch(
      () => null,
    );
    await response?.arrayBuffer();
    if (response?.status === 200) return;
    if (Date.now() > deadline) throw new Error(`${target.name} did not answer: ${response?.status}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function percentile(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(fraction * sorted.length))] ?? Number.NaN;
}

function median(values: readonly number[]): number {
  return percentile(values, 0.5);
}

export interface ProxyOverheadRow {
  name: string;
  p50Ms: number;
  p99Ms: number;
  requestsPerSecond: number;
}

/** The figures of each target, each the median over the runs. */
export async function measureProxyOverhead(): Promise<ProxyOverheadRow[]> {
  return withServer(
    async (dir) => ({
      options: {
        config: {
          catalog: { offline: true },
          projects: [
            { name: 'main', backends: [{ type: 'local', instances_dir: path.join(dir, 'instances') }] },
          ],
        },
      },
    }),
    async (server) => {
      const port = await findFreePort();
      await call(server, '/api/project/main/runs/apply', {
        plan: {
          run_spec: {
            configuration: {
              type: 'service',
              name: RUN_NAME,
              port,
              model: MODEL,
              env: { SERVICE_SCRIPT, SERVICE_PORT: String(port) },
              commands: [`exec '${process.execPath}' -e "$SERVICE_SCRIPT"`],
              resources: { cpu: '1..', memory: '0.5GB..', disk: '1GB..' },
            },
          },
        },
      });
      try {
        const json = { 'content-type': 'application/json' };
        const withToken = { ...json, authorization: `Bearer ${TOKEN}` };
        const targets: Target[] = [
          { name: 'direct', url: `http://127.0.0.1:${port}/v1/chat/completions`, headers: json },
          {
            name: 'service proxy',
            url: `${server.url}/proxy/services/main/${RUN_NAME}/v1/chat/completions`,
            headers: withToken,
          },
          {
            name: 'model endpoint',
            url: `${server.url}/proxy/models/main/chat/completions`,
            headers: withToken,
          },
        ];
        for (const target of targets) await waitUntilAnswering(target);
        const runs: Array<Record<string, TargetFigures>> = [];
        for (let run = 0; run < RUNS; run++) runs.push(await runClient(targets));
        return targets.map(({ name }) => {
          const figures = runs.map((run) => run[name] as TargetFigures);
          return {
            name,
            p50Ms: median(figures.map((figure) => percentile(figure.latencies, 0.5))),
            p99Ms: median(figures.map((figure) => percentile(figure.latencies, 0.99))),
            requestsPerSecond: median(figures.map((figure) => figure.requestsPerSecond)),
          };
        });
      } finally {
        // The run must end before withServer deletes the fleet holding its instance.
        await call(server, '/api/project/main/runs/stop', { runs_names: [RUN_NAME], abort: true });
        await waitForStatus(server, RUN_NAME, ['terminated', 'failed', 'done'], performance.now());
      }
    },
  );
}

export async function benchmarkProxyOverhead(): Promise<void> {
  console.log(
    `\nProxy overhead (a Node service on the local backend, client in its own process; median of ${RUNS} runs of ${SEQUENTIAL} sequential requests and ${RATE_REQUESTS} at ${CONCURRENCY} in flight; informational):`,
  );
  const rows = await measureProxyOverhead();
  const direct = rows.find((row) => row.name === 'direct') as ProxyOverheadRow;
  const ms = (value: number) => `${value.toFixed(2)} ms`;
  const signed = (value: number) => `${value >= 0 ? '+' : ''}${value.toFixed(2)} ms`;
  const header = ['', 'p50', 'p99', 'requests/s', 'added p50', 'added p99'];
  const lines = rows.map((row) => [
    row.name,
    ms(row.p50Ms),
    ms(row.p99Ms),
    row.requestsPerSecond.toFixed(0),
    row === direct ? '-' : signed(row.p50Ms - direct.p50Ms),
    row === direct ? '-' : signed(row.p99Ms - direct.p99Ms),
  ]);
  const widths = header.map((title, column) =>
    Math.max(title.length, ...lines.map((line) => (line[column] as string).length)),
  );
  const format = (cells: readonly string[]) =>
    `  ${cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[0] as number) : cell.padStart(widths[column] as number))).join('  ')}`;
  console.log(format(header));
  for (const line of lines) console.log(format(line));
}
