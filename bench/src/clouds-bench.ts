/**
 * Plan latency of a GPU task (`runs/get_plan`) with each cloud backend alone and with AWS, GCP and
 * Vast.ai in one project, on their emulators (the real AWS SDK, google-auth-library and undici
 * against them; no host is started: a plan touches none). AWS and GCP plan from the bundled
 * catalog plus quota and zone calls; Vast.ai asks its marketplace live on every plan, so its
 * figure is the emulator's search round trip plus the server's work on the answer. First: the
 * first plan of a fresh in-process server; then the median of the next ones. dstack is not
 * runnable here (no PyPI): no reference.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type RunningServer, startServer } from '@dstack/server';
import {
  awsEmulatorBackend,
  gcpEmulatorBackend,
  startAwsEmulator,
  startGcpEmulator,
  startVastaiEmulator,
  vastaiEmulatorBackend,
} from '@dstack/testing/emulators';
import { printTable, type Row } from './report-table.js';
import { summarise } from './stats.js';

const TOKEN = 'bench-admin-token';
/** Plans timed per server after its first (and one untimed). */
const PLANS = 10;
/** A task every emulated cloud has offers for. */
const GPU_TASK = { type: 'task', name: 'plan', commands: ['echo ready'], resources: { gpu: '1..' } };

async function timePlan(server: RunningServer): Promise<{ ms: number; offers: number }> {
  const started = performance.now();
  const response = await fetch(`${server.url}/api/project/main/runs/get_plan`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ run_spec: { configuration: GPU_TASK } }),
  });
  const text = await response.text();
  const ms = performance.now() - started;
  if (!response.ok) throw new Error(`runs/get_plan: ${response.status} ${text}`);
  const job = (JSON.parse(text) as { job_plans: Array<{ offers: unknown[]; total_offers?: number }> })
    .job_plans[0];
  if (!job || job.offers.length === 0) throw new Error('the plan listed no offers');
  return { ms, offers: job.total_offers ?? job.offers.length };
}

/** The first plan and the next `PLANS` of a fresh server whose project has `backends`. */
async function planLatency(label: string, backends: Array<{ type: string }>): Promise<Row[]> {
  const dir = await mkdtemp(path.join(tmpdir(), 'dstack-bench-clouds-'));
  const server = await startServer({
    env: { DSTACK_SERVER_DIR: dir, DSTACK_SERVER_ADMIN_TOKEN: TOKEN },
    port: 0,
    // The bundled snapshot: the figures must not follow gpuhunt's live catalog or the network.
    config: { catalog: { offline: true }, projects: [{ name: 'main', backends }] },
  });
  try {
    const first = await timePlan(server);
    await timePlan(server);
    const next: number[] = [];
    for (let i = 0; i < PLANS; i++) next.push((await timePlan(server)).ms);
    return [
      { name: `plan, ${label}: first`, timing: summarise([first.ms]), results: `${first.offers} offers` },
      { name: `plan, ${label}: next`, timing: summarise(next), results: `${first.offers} offers` },
    ];
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

export async function benchmarkClouds(): Promise<void> {
  const aws = await startAwsEmulator({ regions: ['us-east-1', 'us-west-2'] });
  const gcp = await startGcpEmulator({ regions: ['us-central1', 'europe-west4'] });
  const vastai = await startVastaiEmulator();
  try {
    const backends = {
      aws: awsEmulatorBackend(aws),
      gcp: gcpEmulatorBackend(gcp),
      vastai: vastaiEmulatorBackend(vastai),
    };
    const rows: Row[] = [];
    for (const [name, backend] of Object.entries(backends))
      rows.push(...(await planLatency(name, [backend])));
    rows.push(...(await planLatency('aws + gcp + vastai', Object.values(backends))));
    console.log('\nCloud backends on their emulators (informational; no target yet):');
    printTable(rows);
  } finally {
    await aws.close();
    await gcp.close();
    await vastai.close();
  }
}
