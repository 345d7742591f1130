import { spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type JobProvisioningData, ProvisioningError } from '@dstack/core';
import {
  DEFAULT_JOB_IMAGE,
  deriveRunnerToken,
  shellCommandLine,
  type TaskInfo,
} from '@dstack/core/agent-protocol';
import { ShimClient } from '@dstack/shim';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  backendDataOf,
  eventually,
  findTsx,
  modestRequirements,
  shimUnavailableReason,
  TEST_AGENT_TOKEN,
  testInstanceConfiguration,
  waitUntilProvisioned,
} from './__fixtures__/local-instances.js';
import { createLocalBackend, type LocalCompute } from './local-compute.js';
import { explainOfferMismatch } from './local-offers.js';
import { isShimProcess, SHIM_ENVIRONMENT_VARIABLES } from './shim-process.js';

const here = dirname(fileURLToPath(import.meta.url));

let instancesDir: string;
let compute: LocalCompute;
/** Every instance a test created, terminated afterwards even when the test failed. */
const created: JobProvisioningData[] = [];

beforeEach(async () => {
  instancesDir = await mkdtemp(join(tmpdir(), 'dstack-local-instances-'));
  compute = createLocalBackend({ instancesDir });
});

afterEach(async () => {
  for (const provisioningData of created.splice(0)) {
    await compute.terminateInstance(provisioningData.instance_id, 'local', provisioningData.backend_data);
  }
  await rm(instancesDir, { recursive: true, force: true });
});

async function createInstance(name = 'test-run-0-0'): Promise<JobProvisioningData> {
  const [offer] = await compute.getOffers(modestRequirements());
  if (!offer) throw new Error('the host has no local offer');
  const provisioningData = await compute.createInstance(offer, testInstanceConfiguration(name));
  created.push(provisioningData);
  return provisioningData;
}

describe('LocalCompute offers on this host', () => {
  it('offers the share of the host a CPU job asks for, then the whole host', async () => {
    const offers = await compute.getOffers(modestRequirements());
    const host = await compute.hostResources();

    expect(offers.map((offer) => offer.instance.resources.cpus)).toEqual(
      host.cpuCount === 1 ? [1] : [1, host.cpuCount],
    );
    expect(offers[0]).toMatchObject({
      backend: 'local',
      region: 'local',
      price: 0,
      availability: 'available',
      instance_runtime: 'shim',
      instance: { name: 'local' },
    });
  });

  it('offers nothing for a GPU job on a GPU-less host, and says why', async (context) => {
    const resources = await compute.hostResources();
    if (resources.gpus.length > 0) context.skip('this host has GPUs');
    const wanted = modestRequirements({ count: { min: 1 } });

    expect(await compute.getOffers(wanted)).toEqual([]);
    expect(explainOfferMismatch(wanted, resources)).toEqual(['gpu: requires 1..∞ GPUs, the host has 0']);
  });
});

const skipReason = shimUnavailableReason();
if (skipReason !== null) console.warn(`Skipping the local instance tests: ${skipReason}`);

describe.skipIf(skipReason !== null)('LocalCompute instances (real shim processes)', () => {
  it('starts a shim that runs a job through its runner, then terminates it', {
    timeout: 90_000,
  }, async () => {
    const started = await createInstance();
    const { home, pid } = backendDataOf(started);
    expect(started).toMatchObject({
      backend: 'local',
      hostname: null,
      ssh_port: null,
      region: 'local',
      price: 0,
      dockerized: true,
    });
    expect(started.instance_id).toMatch(/^test-run-0-0-[0-9a-f-]{36}$/);
    expect(home).toBe(join(instancesDir, started.instance_id));

    const ready = await waitUntilProvisioned(compute, started);
    const shimPort = backendDataOf(ready).agent_ports?.shim;
    expect(ready.hostname).toBe('127.0.0.1');
    expect(shimPort).toBeGreaterThan(0);

    // The shim requires the instance's agent token; no other process on the host gets in.
    await expect(new ShimClient(`http://127.0.0.1:${shimPort}`).listTasks()).rejects.toMatchObject({
      statusCode: 401,
    });
    const shim = new ShimClient(`http://127.0.0.1:${shimPort}`, { token: TEST_AGENT_TOKEN });
    expect(await shim.healthcheck()).toMatchObject({ service: 'dstack-shim' });
    await shim.submitTask({ id: 'task-1', name: 'test-run-0-0', image_name: DEFAULT_JOB_IMAGE });
    const task = await eventually(async () => {
      const info = await shim.getTask('task-1');
      if (info?.status === 'terminated') throw new Error(`the task ended: ${info.termination_message}`);
      return info?.status === 'running' ? info : undefined;
    }, 'the task to run');
    const runnerUrl = `http://127.0.0.1:${runnerPortOf(task)}`;
    await expect(runJob(runnerUrl, ['echo hi'], null)).rejects.toThrow('answered 401');
    const output = await runJob(runnerUrl, ['echo hi'], deriveRunnerToken(TEST_AGENT_TOKEN, 'task-1'));
    expect(output.state).toBe('done');
    expect(output.logs).toContain('hi');

    await compute.terminateInstance(ready.instance_id, 'local', ready.backend_data);
    await compute.terminateInstance(ready.instance_id, 'local', ready.backend_data);

    expect(await isShimProcess(pid, home)).toBe(false);
    expect(existsSync(home)).toBe(false);
    await expect(shim.healthcheck()).rejects.toThrow();
  });

  it('creates instance homes and the instances directory for the server user only (0700)', {
    timeout: 60_000,
  }, async () => {
    // Job specs with their secrets land in the home: other users of the host must not read them.
    const nested = join(instancesDir, 'nested', 'instances');
    const own = createLocalBackend({ instancesDir: nested });
    const [offer] = await own.getOffers(modestRequirements());
    if (!offer) throw new Error('the host has no local offer');
    const started = await own.createInstance(offer, testInstanceConfiguration('modes-0-0'));
    try {
      expect(statSync(nested).mode & 0o777).toBe(0o700);
      expect(statSync(backendDataOf(started).home).mode & 0o777).toBe(0o700);
    } finally {
      await own.terminateInstance(started.instance_id, 'local', started.backend_data);
    }
  });

  it("starts the shim with the server's PATH and HOME, none of its other variables", {
    timeout: 60_000,
  }, async () => {
    // What a server holds in its environment: the shim (and the jobs beside it) must not get it.
    process.env.DSTACK_SERVER_ADMIN_TOKEN = 'server-admin-token-canary';
    process.env.LOCAL_COMPUTE_CANARY = 'server-secret-canary';
    try {
      const { pid } = backendDataOf(await createInstance('env-0-0'));
      const shimEnvironment = new Map(
        (await readFile(`/proc/${pid}/environ`, 'utf8'))
          .split('\0')
          .filter((entry) => entry !== '')
          .map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
      );
      expect(shimEnvironment.get('DSTACK_SHIM_TOKEN')).toBe(TEST_AGENT_TOKEN);
      expect(shimEnvironment.get('PATH')).toBe(process.env.PATH);
      expect(shimEnvironment.get('HOME')).toBe(process.env.HOME);
      expect(
        [...shimEnvironment.keys()].filter(
          (name) =>
            !(SHIM_ENVIRONMENT_VARIABLES as readonly string[]).includes(name) && name !== 'DSTACK_SHIM_TOKEN',
        ),
      ).toEqual([]);
    } finally {
      delete process.env.DSTACK_SERVER_ADMIN_TOKEN;
      delete process.env.LOCAL_COMPUTE_CANARY;
    }
  });

  it('keeps the shim running after the process that created it exits', { timeout: 60_000 }, async () => {
    const tsx = findTsx();
    const child = spawn(
      tsx,
      ['--conditions=source', join(here, '__fixtures__', 'create-instance-and-exit.ts'), instancesDir],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    // The creator must end by itself: a shim still tied to it would keep it alive.
    const exitCode = await new Promise<number | null>((resolvePromise) => child.once('exit', resolvePromise));
    expect(exitCode, stderr).toBe(0);
    const started = JSON.parse(stdout.trim()) as JobProvisioningData;
    created.push(started);

    const ready = await waitUntilProvisioned(compute, started);
    const shim = new ShimClient(`http://127.0.0.1:${backendDataOf(ready).agent_ports?.shim}`);
    expect(await shim.healthcheck()).toMatchObject({ service: 'dstack-shim' });
    expect(await isShimProcess(backendDataOf(ready).pid, backendDataOf(ready).home)).toBe(true);
  });

  it('returns the running shim for a second launch with the same instance id, starting no other', {
    timeout: 60_000,
  }, async () => {
    const [offer] = await compute.getOffers(modestRequirements());
    if (!offer) throw new Error('the host has no local offer');
    const configuration = testInstanceConfiguration('retried-0-0');
    const first = await compute.createInstance(offer, configuration);
    created.push(first);
    await waitUntilProvisioned(compute, first);

    // A server that died before storing `first` retries, in a fresh process (a new Compute).
    const again = await createLocalBackend({ instancesDir }).createInstance(offer, configuration);
    const concurrent = await Promise.all([
      compute.createInstance(offer, configuration),
      compute.createInstance(offer, configuration),
    ]);

    expect(again).toEqual(first);
    expect(concurrent).toEqual([first, first]);
    expect(await readdir(instancesDir)).toEqual([first.instance_id]);
    const other = await createInstance('retried-0-0');
    expect(other.instance_id).not.toBe(first.instance_id);
    expect(backendDataOf(other).pid).not.toBe(backendDataOf(first).pid);
  });

  it('fails provisioning with the shim log when the shim dies before listening', {
    timeout: 30_000,
  }, async () => {
    const broken = createLocalBackend({ instancesDir, shimBinPath: join(here, 'no-such-shim.js') });
    const [offer] = await broken.getOffers(modestRequirements());
    if (!offer) throw new Error('the host has no local offer');
    const started = await broken.createInstance(offer, testInstanceConfiguration('broken'));
    created.push(started);

    const failure = await eventually(
      () =>
        broken.updateProvisioningData(started).then(
          () => undefined,
          (error: unknown) => error,
        ),
      'provisioning to fail',
    );

    expect(ProvisioningError.isInstance(failure)).toBe(true);
    expect((failure as Error).message).toContain('Cannot find module');
  });

  it('terminates an instance that is already gone', async () => {
    await compute.terminateInstance('never-created-0-0-abc', 'local', null);
    await compute.terminateInstance(
      'gone-0-0-abc',
      'local',
      JSON.stringify({ home: join(instancesDir, 'gone-0-0-abc'), pid: 2 ** 22 + 1 }),
    );
  });

  it('leaves a process alone when its pid no longer belongs to the shim', async () => {
    // Our own pid, recorded as the shim's: the command line does not name the home, so it is not killed.
    const home = join(instancesDir, 'reused-pid-0-0-abc');
    await compute.terminateInstance(
      'reused-pid-0-0-abc',
      'local',
      JSON.stringify({ home, pid: process.pid }),
    );
    expect(await readFile(`/proc/${process.pid}/cmdline`, 'utf8')).not.toBe('');
  });
});

function runnerPortOf(task: TaskInfo): number {
  const port = task.ports.find((each) => each.container === 10999) ?? task.ports[0];
  if (!port) throw new Error(`task ${task.id} publishes no runner port`);
  return port.host;
}

/**
 * Runs commands through the runner HTTP API as dstack's server does: submit,
 * upload (empty) code, run, then pull until a final state. Plain fetch: this
 * package does not depend on @dstack/runner's client.
 */
async function runJob(
  runnerUrl: string,
  commands: string[],
  token: string | null,
): Promise<{ state: string; logs: string }> {
  const authorization: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  const post = async (path: string, body: string | Uint8Array, contentType = 'application/json') => {
    const response = await fetch(`${runnerUrl}${path}`, {
      method: 'POST',
      body,
      headers: { ...authorization, 'content-type': contentType },
    });
    if (!response.ok) throw new Error(`runner ${path} answered ${response.status}: ${await response.text()}`);
  };
  await post(
    '/api/submit',
    JSON.stringify({
      run: { id: 'run-1', run_name: 'test-run', project_name: 'main', user: 'admin' },
      job_spec: { job_name: 'test-run-0-0', job_num: 0, commands: shellCommandLine(commands), env: {} },
      job_submission: { id: 'submission-1', submission_num: 0 },
    }),
  );
  await post('/api/upload_code', new Uint8Array(), 'application/octet-stream');
  await post('/api/run', '{}');
  let timestamp = 0;
  let logs = '';
  return eventually(async () => {
    const response = await fetch(`${runnerUrl}/api/pull?timestamp=${timestamp}`, { headers: authorization });
    const answer = (await response.json()) as {
      job_states: { state: string }[];
      job_logs: { message: string }[];
      last_updated: number;
    };
    timestamp = answer.last_updated;
    logs += answer.job_logs.map((log) => Buffer.from(log.message, 'base64').toString('utf8')).join('');
    const final = answer.job_states.find((each) => ['done', 'failed', 'terminated'].includes(each.state));
    return final ? { state: final.state, logs } : undefined;
  }, 'the job to finish');
}
