import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type JobProvisioningData, NoCapacityError } from '@dstack/core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  backendDataOf,
  eventually,
  findTsx,
  modestRequirements,
  shimUnavailableReason,
  smallHost,
  testInstanceConfiguration,
} from './__fixtures__/local-instances.js';
import type { HostResources } from './host-resources.js';
import type { LaunchRecord } from './launch-record.js';
import { createLocalBackend, type LocalCompute } from './local-compute.js';
import { isShimProcess } from './shim-process.js';

const here = dirname(fileURLToPath(import.meta.url));

let instancesDir: string;
/** Every instance a test created, terminated afterwards even when the test failed. */
const created: JobProvisioningData[] = [];

beforeEach(async () => {
  instancesDir = await mkdtemp(join(tmpdir(), 'dstack-local-capacity-'));
});

afterEach(async () => {
  const terminator = createLocalBackend({ instancesDir, terminationGraceMs: 2_000 });
  await Promise.all(
    created
      .splice(0)
      .map((launched) => terminator.terminateInstance(launched.instance_id, 'local', launched.backend_data)),
  );
  await rm(instancesDir, { recursive: true, force: true });
});

function computeOn(host: HostResources): LocalCompute {
  return createLocalBackend({ instancesDir, hostResources: host, terminationGraceMs: 2_000 });
}

/** Launches an instance of the first (smallest) offer for `gpu`; records it for clean-up. */
async function launch(compute: LocalCompute, name: string, gpu?: Record<string, unknown>) {
  const [offer] = await compute.getOffers(modestRequirements(gpu));
  if (!offer) throw new Error('the host has no local offer');
  const launched = await compute.createInstance(offer, testInstanceConfiguration(name));
  created.push(launched);
  return launched;
}

async function noCapacityOf(attempt: Promise<unknown>): Promise<NoCapacityError> {
  const error = await attempt.then(
    () => null,
    (failure: unknown) => failure,
  );
  if (!NoCapacityError.isInstance(error)) throw new Error(`expected a NoCapacityError, got ${String(error)}`);
  return error;
}

async function launchRecordOf(launched: JobProvisioningData): Promise<LaunchRecord> {
  return JSON.parse(await readFile(join(backendDataOf(launched).home, 'launch.json'), 'utf8'));
}

const skipReason = shimUnavailableReason();

describe.skipIf(skipReason !== null)('LocalCompute capacity (real shim processes)', () => {
  it('refuses a launch with NoCapacityError while live instances hold the host, and takes it once one is terminated', {
    timeout: 60_000,
  }, async () => {
    const compute = computeOn(smallHost({ cpuCount: 2 }));
    // Another server replica on the same host and instances directory.
    const replica = computeOn(smallHost({ cpuCount: 2 }));
    const first = await launch(compute, 'first');
    await launch(replica, 'second');
    expect(first.instance_type.resources.cpus).toBe(1);

    const refused = await noCapacityOf(launch(compute, 'third'));
    expect(refused.message).toContain('it needs 1 CPUs, 0 of 2 are free');
    // The host's capacity frees as the instances' jobs end: worth asking again soon.
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    await noCapacityOf(launch(replica, 'third'));

    await compute.terminateInstance(first.instance_id, 'local', first.backend_data);
    const third = await launch(replica, 'third');
    expect(await isShimProcess(backendDataOf(third).pid, backendDataOf(third).home)).toBe(true);
  });

  it('counts memory as well as CPUs', { timeout: 60_000 }, async () => {
    // Room for one instance of 0.1GB.
    const compute = computeOn(smallHost({ cpuCount: 8, memoryGib: 0.15 }));
    await launch(compute, 'first');

    const refused = await noCapacityOf(launch(compute, 'second'));
    expect(refused.message).toMatch(/it needs 0\.1GB of memory, [\d.]+GB of 0\.2GB is free/);
    expect(refused.message).not.toContain('CPUs');
  });

  it('frees the share of an instance whose shim died', { timeout: 60_000 }, async () => {
    const compute = computeOn(smallHost({ cpuCount: 1 }));
    const crashed = await launch(compute, 'crashed');
    await noCapacityOf(launch(compute, 'blocked'));

    const { pid, home } = backendDataOf(crashed);
    process.kill(-pid, 'SIGKILL');
    await eventually(async () => ((await isShimProcess(pid, home)) ? undefined : true), 'the shim to die');

    await launch(compute, 'after-crash');
  });

  it('hands each instance whole GPUs of its own, and refuses one when none is free', {
    timeout: 60_000,
  }, async () => {
    const a100 = { name: 'A100', memoryGib: 80, vendor: 'nvidia' as const };
    const compute = computeOn(smallHost({ cpuCount: 8, gpus: [a100, a100] }));
    const oneGpu = { count: { min: 1, max: 1 } };
    const first = await launch(compute, 'gpu-a', oneGpu);
    const second = await launch(compute, 'gpu-b', oneGpu);
    const cpuOnly = await launch(compute, 'cpu-only');

    expect((await launchRecordOf(first)).gpu_ids).toEqual(['0']);
    expect((await launchRecordOf(second)).gpu_ids).toEqual(['1']);
    expect((await launchRecordOf(cpuOnly)).gpu_ids).toEqual([]);
    // The shim hands out only its instance's GPUs: none for the CPU-only one.
    const commandLine = async (launched: JobProvisioningData) =>
      (await readFile(`/proc/${backendDataOf(launched).pid}/cmdline`, 'utf8')).split('\0');
    expect(await commandLine(first)).toContain('--gpu-ids=0');
    expect(await commandLine(cpuOnly)).toContain('--gpu-ids=');
    const refused = await noCapacityOf(launch(compute, 'gpu-c', oneGpu));
    expect(refused.message).toContain('1 GPUs, 0 of 2 are free');
  });

  it('lets two server processes on one host launch no more than it holds', { timeout: 90_000 }, async () => {
    const goFile = join(instancesDir, 'go');
    const servers = [launchFromAnotherProcess(2, 3, goFile), launchFromAnotherProcess(2, 3, goFile)];
    await Promise.all(servers.map((server) => server.ready));
    await writeFile(goFile, '');
    const outcomes = (await Promise.all(servers.map((server) => server.outcomes))).flat();
    for (const outcome of outcomes) if ('launched' in outcome) created.push(outcome.launched);

    expect(outcomes.filter((outcome) => 'launched' in outcome)).toHaveLength(2);
    expect(outcomes.filter((outcome) => 'noCapacity' in outcome && outcome.noCapacity)).toHaveLength(4);
  });

  it('takes over the lock a crashed server left behind', { timeout: 30_000 }, async () => {
    const gone = spawnSync(process.execPath, ['-e', '0']).pid;
    await writeFile(join(instancesDir, '.capacity.lock'), String(gone));

    await launch(computeOn(smallHost()), 'after-stale-lock');
    expect(existsSync(join(instancesDir, '.capacity.lock'))).toBe(false);
  });
});

type LaunchOutcome = { launched: JobProvisioningData } | { noCapacity: boolean; message: string };

/**
 * Runs `__fixtures__/launch-on-small-host.ts` in a process of its own, another server replica:
 * `ready` once it waits for `goFile`, then its launches' outcomes.
 */
function launchFromAnotherProcess(
  cpus: number,
  count: number,
  goFile: string,
): { ready: Promise<void>; outcomes: Promise<LaunchOutcome[]> } {
  const child = spawn(
    findTsx(),
    [
      '--conditions=source',
      join(here, '__fixtures__', 'launch-on-small-host.ts'),
      ...[instancesDir, String(cpus), String(count), goFile],
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolvePromise) => child.once('exit', resolvePromise));
  const ready = new Promise<void>((resolvePromise, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.startsWith('ready\n')) resolvePromise();
    });
    exited.then((code) =>
      reject(new Error(`the other server exited (${code}) before it was ready: ${stderr}`)),
    );
  });
  const outcomes = exited.then((exitCode) => {
    if (exitCode !== 0) throw new Error(`the other server failed (${exitCode}): ${stderr}`);
    return JSON.parse(stdout.slice('ready\n'.length).trim()) as LaunchOutcome[];
  });
  return { ready, outcomes };
}
