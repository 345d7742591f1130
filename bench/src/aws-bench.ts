/**
 * The AWS backend against the EC2 emulator (the real AWS SDK, signing and retries run unchanged):
 * - plan latency of a GPU task (`runs/get_plan`). Cold: the first plan of a fresh `dstack-server`
 *   process, since @dstack/backend-aws keeps one module-wide catalog of the bundled snapshot's AWS
 *   rows and caches quotas and zones per Compute: only a new process has none of them loaded.
 *   Warm: the following plans of the same processes.
 * - apply → running with real emulated hosts (a Docker container per instance running the VM's
 *   user data, which downloads the shim served here): a new instance each sample, its fleet
 *   deleted before the next; the job runs in dstack's default image, pulled by the host's Docker
 *   from a local registry. Skipped, saying why, when Docker does not answer.
 * - apply → all N nodes running of a `nodes: 4` task: N new hosts in the run's cluster fleet (its
 *   placement group made first), the gang started only once every node's shim answered.
 * - the agent runtime's boot on a new host: its download size, and from the host's launch to its
 *   shim answering (the VM bootstrap downloads, checks and unpacks the runtime, then starts it).
 * dstack itself is not runnable here (no PyPI) and no target is set yet: the figures are informational.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { buildVmUserData, generateEd25519KeyPair } from '@dstack/core';
import { DSTACK_SHIM_HTTP_PORT } from '@dstack/core/agent-protocol';
import { type RunningServer, startServer } from '@dstack/server';
import {
  type AgentRuntimeServer,
  type AwsEmulator,
  type DefaultImageRegistry,
  DockerEmulatedHosts,
  serveAgentRuntime,
  serveDefaultImages,
  startAwsEmulator,
} from '@dstack/testing/emulators';
import { printTable, type Row } from './report-table.js';
import { summarise } from './stats.js';

const SERVER_BIN = fileURLToPath(new URL('../../packages/server/dist/bin/dstack-server.js', import.meta.url));
const TOKEN = 'bench-admin-token';
const REGIONS = ['us-east-1', 'us-west-2'];
/** Fresh server processes, one cold plan each. */
const COLD_SAMPLES = 5;
/** Timed plans per server process after its cold one (and one untimed). */
const WARM_PLANS_PER_SERVER = 6;
/** Runs applied one after another, each on a new emulated host. */
const APPLY_SAMPLES = 3;
/** `nodes: N` tasks applied one after another, each on N new emulated hosts (a cluster fleet of its own). */
const CLUSTER_SAMPLES = 3;
/** Nodes of the cluster samples: the 4, each a host with its own Docker daemon. */
const CLUSTER_NODES = 4;
/** New hosts booted to time the agent runtime's boot. */
const BOOT_SAMPLES = 3;
const SERVER_START_TIMEOUT_MS = 60_000;
const RUN_TIMEOUT_MS = 180_000;
const FLEET_GONE_TIMEOUT_MS = 120_000;
/** The emulator's label on its Docker hosts (and part of their names): the bench's own. */
const HOSTS_EMULATOR_NAME = 'aws-bench';

const run = promisify(execFile);

/** A GPU task (the emulated hosts have no GPU, so the shim gives the job none). */
function gpuTask(name: string) {
  return { type: 'task', name, commands: ['echo ready'], resources: { gpu: 'T4' } };
}

/**
 * The server config of a project `main` with the aws backend pointed at `emulator`, creds
 * encrypted at rest as a deployed server keeps them (building the Compute decrypts them).
 */
function awsServerConfig(emulator: AwsEmulator) {
  return {
    // The bundled snapshot: the figures must not follow gpuhunt's live catalog or the network.
    catalog: { offline: true },
    encryption: {
      keys: [{ type: 'aes' as const, name: 'bench', secret: randomBytes(32).toString('base64') }],
    },
    projects: [
      {
        name: 'main',
        backends: [
          {
            type: 'aws',
            creds: {
              type: 'access_key',
              access_key: emulator.credentials.accessKeyId,
              secret_key: emulator.credentials.secretAccessKey,
            },
            regions: REGIONS,
            endpoint_url: emulator.url,
          },
        ],
      },
    ],
  };
}

/** POSTs `body` to `route` of the server at `url` as the admin; resolves with the parsed answer. */
async function call<Answer = unknown>(url: string, route: string, body: unknown): Promise<Answer> {
  const response = await fetch(url + route, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${route}: ${response.status} ${text}`);
  return (text ? JSON.parse(text) : null) as Answer;
}

/** Milliseconds of one `runs/get_plan` of the GPU task, and how many offers it listed. */
async function timePlan(url: string): Promise<{ ms: number; offers: number }> {
  const started = performance.now();
  const plan = await call<{ job_plans: Array<{ offers: unknown[]; total_offers?: number }> }>(
    url,
    '/api/project/main/runs/get_plan',
    { run_spec: { configuration: gpuTask('plan') } },
  );
  const ms = performance.now() - started;
  const job = plan.job_plans[0];
  if (!job || job.offers.length === 0) throw new Error('the AWS plan listed no offers');
  return { ms, offers: job.total_offers ?? job.offers.length };
}

interface ServerProcess {
  child: ChildProcess;
  url: string;
  /** Milliseconds from spawn to "The server is running at". */
  startMs: number;
}

/** Starts `dstack-server` (built) as its own process on `dir` (config.yml already there). */
async function startServerProcess(dir: string): Promise<ServerProcess> {
  const started = performance.now();
  const child = spawn(process.execPath, [SERVER_BIN], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      DSTACK_SERVER_DIR: dir,
      DSTACK_SERVER_PORT: '0',
      DSTACK_SERVER_ADMIN_TOKEN: TOKEN,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => {
    // The tail is enough to say why a start failed.
    output = (output + chunk.toString()).slice(-16_384);
  };
  child.stderr?.on('data', keep);
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`dstack-server did not start in ${SERVER_START_TIMEOUT_MS} ms: ${output}`)),
        SERVER_START_TIMEOUT_MS,
      );
      child.stdout?.on('data', (chunk: Buffer) => {
        keep(chunk);
        const match = /The server is running at (\S+)/.exec(output);
        if (match?.[1]) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`dstack-server exited with ${code} before it started: ${output}`));
      });
    });
    return { child, url, startMs: performance.now() - started };
  } catch (error) {
    await stopProcess(child);
    throw error;
  }
}

/** SIGTERM, then SIGKILL if it is still there after 10 s; resolves once it exited. */
async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

interface PlanLatency {
  cold: number[];
  warm: number[];
  serverStart: number[];
  offers: number;
}

async function planLatency(): Promise<PlanLatency> {
  if (!existsSync(SERVER_BIN)) throw new Error(`${SERVER_BIN} does not exist: build first (pnpm build)`);
  // Plans touch no host: the emulator alone answers the quota and zone calls.
  const emulator = await startAwsEmulator({ regions: REGIONS });
  const result: PlanLatency = { cold: [], warm: [], serverStart: [], offers: 0 };
  try {
    for (let sample = 0; sample < COLD_SAMPLES; sample++) {
      const dir = await mkdtemp(path.join(tmpdir(), 'dstack-bench-aws-plan-'));
      let server: ServerProcess | undefined;
      try {
        // JSON is YAML: config.yml as the server reads it at start.
        await writeFile(path.join(dir, 'config.yml'), JSON.stringify(awsServerConfig(emulator)), {
          mode: 0o600,
        });
        server = await startServerProcess(dir);
        result.serverStart.push(server.startMs);
        const cold = await timePlan(server.url);
        result.cold.push(cold.ms);
        result.offers = cold.offers;
        await timePlan(server.url);
        for (let i = 0; i < WARM_PLANS_PER_SERVER; i++) result.warm.push((await timePlan(server.url)).ms);
      } finally {
        if (server) await stopProcess(server.child);
        await rm(dir, { recursive: true, force: true });
      }
    }
  } finally {
    await emulator.close();
  }
  return result;
}

/** Why Docker cannot be used, or null when `docker info` answers. */
async function dockerProblem(): Promise<string | null> {
  try {
    await run('docker', ['info'], { timeout: 20_000 });
    return null;
  } catch (error) {
    const message = ((error as { stderr?: string }).stderr || (error as Error).message).trim();
    return `Docker does not answer (docker info: ${message.split('\n')[0]})`;
  }
}

/** Resolves with `probe`'s first non-null value, polling every `pauseMs` until `timeoutMs`. */
async function until<T>(what: string, probe: () => Promise<T | null>, timeoutMs: number, pauseMs = 10) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const value = await probe();
    if (value !== null) return value;
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** Deletes the fleets named (every fleet when none is named) and waits until they are gone. */
async function deleteFleets(server: RunningServer, names?: readonly string[]): Promise<void> {
  const route = '/api/project/main/fleets/list';
  const listed = async () => (await call<Array<{ name: string }>>(server.url, route, {})).map((f) => f.name);
  const doomed = names ?? (await listed());
  if (doomed.length === 0) return;
  await call(server.url, '/api/project/main/fleets/delete', { names: doomed });
  await until(
    `fleets ${doomed.join(', ')} to be gone`,
    async () => ((await listed()).some((name) => doomed.includes(name)) ? null : true),
    FLEET_GONE_TIMEOUT_MS,
    100,
  );
}

interface ApplyLatency {
  toRunning: number[];
  instanceTypes: string[];
  /** Apply → every node of a `nodes: CLUSTER_NODES` task running (the gang started), per sample. */
  clusterToAllRunning: number[];
}

/**
 * Milliseconds from `runs/apply` of a `nodes: N` task to every node's job running; then stops the
 * run. Each node is a new instance of the run's cluster fleet (its placement group included).
 */
async function clusterApplyToAllRunning(server: RunningServer, name: string, nodes: number): Promise<number> {
  const started = performance.now();
  await call(server.url, '/api/project/main/runs/apply', {
    plan: { run_spec: { configuration: { ...gpuTask(name), commands: ['sleep 600'], nodes } } },
  });
  const ms = await until(
    `every node of ${name} to be running`,
    async () => {
      const answer = await call<{
        status: string;
        jobs: Array<{ job_submissions: Array<{ status: string }> }>;
      }>(server.url, '/api/project/main/runs/get', { run_name: name });
      if (['failed', 'terminated', 'done'].includes(answer.status))
        throw new Error(`run ${name} ended ${answer.status} before every node ran`);
      const latest = answer.jobs.map((job) => job.job_submissions.at(-1)?.status);
      return latest.length === nodes && latest.every((status) => status === 'running')
        ? performance.now() - started
        : null;
    },
    RUN_TIMEOUT_MS,
    50,
  );
  await call(server.url, '/api/project/main/runs/stop', { runs_names: [name], abort: true });
  await until(
    `run ${name} to end`,
    async () => {
      const answer = await call<{ status: string }>(server.url, '/api/project/main/runs/get', {
        run_name: name,
      });
      return ['failed', 'terminated', 'done'].includes(answer.status) ? true : null;
    },
    RUN_TIMEOUT_MS,
    100,
  );
  return ms;
}

/** Milliseconds from `runs/apply` to the run's `running` (or later, had it been quicker than a poll). */
async function applyToRunning(server: RunningServer, name: string): Promise<{ ms: number; type: string }> {
  const started = performance.now();
  await call(server.url, '/api/project/main/runs/apply', {
    plan: { run_spec: { configuration: gpuTask(name) } },
  });
  const ms = await until(
    `run ${name} to be running`,
    async () => {
      const row = await server.app.db
        .selectFrom('runs')
        .select('status')
        .where('run_name', '=', name)
        .where('deleted', '=', 0)
        .executeTakeFirst();
      if (row && ['failed', 'terminated'].includes(row.status))
        throw new Error(`run ${name} ended ${row.status} before it ran`);
      return row && ['running', 'terminating', 'done'].includes(row.status)
        ? performance.now() - started
        : null;
    },
    RUN_TIMEOUT_MS,
  );
  const finished = await until(
    `run ${name} to be done`,
    async () => {
      const answer = await call<{
        status: string;
        latest_job_submission?: { job_provisioning_data?: { instance_type: { name: string } } };
      }>(server.url, '/api/project/main/runs/get', { run_name: name });
      if (['failed', 'terminated'].includes(answer.status))
        throw new Error(`run ${name} ended ${answer.status}`);
      return answer.status === 'done' ? answer : null;
    },
    RUN_TIMEOUT_MS,
    100,
  );
  return { ms, type: finished.latest_job_submission?.job_provisioning_data?.instance_type.name ?? '?' };
}

async function applyLatency(): Promise<ApplyLatency> {
  const hosts = new DockerEmulatedHosts({ emulator: HOSTS_EMULATOR_NAME });
  let tarball: AgentRuntimeServer | undefined;
  let defaultImages: DefaultImageRegistry | undefined;
  let emulator: AwsEmulator | undefined;
  let server: RunningServer | undefined;
  const dir = await mkdtemp(path.join(tmpdir(), 'dstack-bench-aws-apply-'));
  const result: ApplyLatency = { toRunning: [], instanceTypes: [], clusterToAllRunning: [] };
  try {
    tarball = await serveAgentRuntime(hosts);
    defaultImages = await serveDefaultImages(hosts);
    emulator = await startAwsEmulator({ hosts, regions: REGIONS });
    server = await startServer({
      env: {
        DSTACK_SERVER_DIR: dir,
        DSTACK_SERVER_ADMIN_TOKEN: TOKEN,
        DSTACK_SHIM_DOWNLOAD_URL: tarball.url,
        DSTACK_BASE_IMAGE: defaultImages.baseImage,
      },
      port: 0,
      config: awsServerConfig(emulator),
    });
    // The catalog loaded before the clock starts: this figure is provisioning, not the cold plan.
    await timePlan(server.url);
    for (let sample = 0; sample < APPLY_SAMPLES; sample++) {
      const name = `aws-bench-${sample}`;
      const { ms, type } = await applyToRunning(server, name);
      result.toRunning.push(ms);
      result.instanceTypes.push(type);
      // The run's fleet goes with its instance, so the next sample boots a new host.
      await deleteFleets(server, [name]);
    }
    for (let sample = 0; sample < CLUSTER_SAMPLES; sample++) {
      const name = `aws-bench-cluster-${sample}`;
      result.clusterToAllRunning.push(await clusterApplyToAllRunning(server, name, CLUSTER_NODES));
      await deleteFleets(server, [name]);
    }
  } finally {
    if (server) {
      await deleteFleets(server).catch((error) => console.error(`  deleting the fleets: ${String(error)}`));
      await server.close();
    }
    await emulator?.close();
    await hosts.close();
    await tarball?.close();
    await defaultImages?.stop();
    await rm(dir, { recursive: true, force: true });
  }
  return result;
}

interface AgentRuntimeBoot {
  /** The runtime tarball's size in bytes, as the hosts download it. */
  bytes: number;
  /** Host launch (container, sshd) → the shim answering its healthcheck, per sample. */
  toShim: number[];
}

/**
 * Boots new emulated hosts with the VM user data the backends send (no node on them) and times
 * each from its launch to its shim answering, watched from inside the host.
 */
async function agentRuntimeBoot(): Promise<AgentRuntimeBoot> {
  const hosts = new DockerEmulatedHosts({ emulator: `${HOSTS_EMULATOR_NAME}-boot` });
  let tarball: AgentRuntimeServer | undefined;
  const result: AgentRuntimeBoot = { bytes: 0, toShim: [] };
  try {
    tarball = await serveAgentRuntime(hosts);
    const download = await fetch(tarball.url);
    result.bytes = (await download.arrayBuffer()).byteLength;
    const userData = buildVmUserData({
      ssh_keys: [{ public: generateEd25519KeyPair().publicKey }],
      agent_token: randomBytes(16).toString('hex'),
      agent_download_url: tarball.url,
      agent_download_size: result.bytes,
    });
    for (let sample = 0; sample < BOOT_SAMPLES; sample++) {
      const instanceId = `boot-${process.pid}-${sample}`;
      const started = performance.now();
      await hosts.launch({ instanceId, userData });
      await run(
        'docker',
        [
          'exec',
          `dstack-${HOSTS_EMULATOR_NAME}-boot-${instanceId}`,
          'sh',
          '-c',
          `i=0; until curl -fs -o /dev/null http://127.0.0.1:${DSTACK_SHIM_HTTP_PORT}/api/healthcheck; do i=$((i+1)); [ $i -gt 2400 ] && exit 1; sleep 0.05; done`,
        ],
        { timeout: RUN_TIMEOUT_MS },
      );
      result.toShim.push(performance.now() - started);
      await hosts.terminate(instanceId);
    }
  } finally {
    await hosts.close();
    await tarball?.close();
  }
  return result;
}

export async function benchmarkAws(): Promise<void> {
  console.log(
    '\nAWS backend on the EC2 emulator (real AWS SDK; informational: no target set, dstack not runnable here):',
  );
  const plans = await planLatency();
  const rows: Row[] = [
    {
      name: 'aws plan, cold (first of a fresh server process)',
      timing: summarise(plans.cold),
      results: plans.offers,
    },
    { name: 'aws plan, warm (same process)', timing: summarise(plans.warm), results: plans.offers },
    {
      name: 'dstack-server process start (for reference)',
      timing: summarise(plans.serverStart),
      results: '-',
    },
  ];
  const problem = await dockerProblem();
  if (problem) {
    printTable(rows);
    console.log(`  apply→running on emulated hosts skipped: ${problem}`);
    return;
  }
  const applies = await applyLatency();
  rows.push({
    name: 'aws apply→running, new emulated host',
    timing: summarise(applies.toRunning),
    results: [...new Set(applies.instanceTypes)].join(' '),
  });
  rows.push({
    name: `aws ${CLUSTER_NODES}-node task, apply→all nodes running, new emulated hosts`,
    timing: summarise(applies.clusterToAllRunning),
    results: `${CLUSTER_NODES} nodes`,
  });
  const boot = await agentRuntimeBoot();
  rows.push({
    name: 'agent runtime boot: host launch→shim answering',
    timing: summarise(boot.toShim),
    results: `${(boot.bytes / 1024 / 1024).toFixed(1)} MiB download`,
  });
  printTable(rows);
}
