/**
 * The host's capacity for local instances. Each instance takes the share of the host it was
 * launched with (its offer's CPUs, memory and GPUs); a launch that does not fit beside the live
 * ones is refused with `NoCapacityError`, as a cloud refuses it. What is taken is read from the
 * instance homes themselves (their launch records and whether their shim is alive), not from a
 * server's memory or database: several server replicas on one host, and servers restarted after
 * a crash, see the same, and a shim that died frees its share.
 */
import { open, readdir, readFile, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { type InstanceOffer, NoCapacityError } from '@dstack/core';
import type { HostResources } from './host-resources.js';
import { readLaunchRecord } from './launch-record.js';
import { isShimProcess } from './shim-process.js';

/** A local instance whose shim is alive, and what it holds of the host. */
export interface LiveLocalInstance {
  home: string;
  cpus: number;
  memoryMib: number;
  /** The NVIDIA indices of the host's GPUs it holds. */
  gpuIds: string[];
}

/**
 * The launched instances under `instancesDir` whose shim is alive. Homes without a launch record
 * (being created or removed) and those whose shim has exited hold nothing.
 */
export async function liveLocalInstances(instancesDir: string): Promise<LiveLocalInstance[]> {
  let entries: string[];
  try {
    entries = await readdir(instancesDir);
  } catch {
    return [];
  }
  const instances = await Promise.all(
    entries.map(async (entry): Promise<LiveLocalInstance | null> => {
      const record = await readLaunchRecord(join(instancesDir, entry));
      if (record === null) return null;
      const { home, pid } = JSON.parse(record.provisioning_data.backend_data ?? '{}') as {
        home?: string;
        pid?: number;
      };
      if (typeof home !== 'string' || typeof pid !== 'number' || !(await isShimProcess(pid, home)))
        return null;
      const resources = record.provisioning_data.instance_type.resources;
      return {
        home,
        cpus: resources.cpus,
        memoryMib: resources.memory_mib,
        // Records from before GPUs were assigned belong to instances that had the whole host.
        gpuIds: record.gpu_ids ?? resources.gpus.map((_, index) => String(index)),
      };
    }),
  );
  return instances.filter((instance) => instance !== null);
}

/** Local capacity frees as soon as an instance's shim ends: worth asking again this soon. */
const CAPACITY_RETRY_AFTER_MS = 1_000;

/** The NVIDIA index of each of the host's GPUs: nvidia-smi lists them in index order. */
function hostGpuIds(host: HostResources): string[] {
  return host.gpus.map((_, index) => String(index));
}

/**
 * What the host lacks for a new instance of `resources` beside the `live` ones, one phrase per
 * resource (`1 CPUs, 0 of 2 are free`); empty when it fits. GPUs are whole devices, never
 * handed to two instances.
 */
export function hostShortages(
  host: HostResources,
  live: readonly LiveLocalInstance[],
  resources: InstanceOffer['instance']['resources'],
): string[] {
  const usedCpus = live.reduce((sum, instance) => sum + instance.cpus, 0);
  const usedMemoryMib = live.reduce((sum, instance) => sum + instance.memoryMib, 0);
  const freeGpuCount = freeGpuIds(host, live).length;
  const hostMemoryMib = Math.round(host.memoryGib * 1024);
  const shortages: string[] = [];
  if (usedCpus + resources.cpus > host.cpuCount) {
    shortages.push(
      `${resources.cpus} CPUs, ${Math.max(0, host.cpuCount - usedCpus)} of ${host.cpuCount} are free`,
    );
  }
  if (usedMemoryMib + resources.memory_mib > hostMemoryMib) {
    shortages.push(
      `${formatGb(resources.memory_mib)} of memory, ${formatGb(Math.max(0, hostMemoryMib - usedMemoryMib))} of ${formatGb(hostMemoryMib)} is free`,
    );
  }
  if (resources.gpus.length > freeGpuCount) {
    shortages.push(`${resources.gpus.length} GPUs, ${freeGpuCount} of ${host.gpus.length} are free`);
  }
  return shortages;
}

function freeGpuIds(host: HostResources, live: readonly LiveLocalInstance[]): string[] {
  const usedGpuIds = new Set(live.flatMap((instance) => instance.gpuIds));
  return hostGpuIds(host).filter((id) => !usedGpuIds.has(id));
}

/**
 * The host's GPUs (NVIDIA indices) a new instance of `resources` gets beside the `live` ones.
 * Throws `NoCapacityError` naming what the host lacks when the instance's CPUs, memory or GPUs
 * do not fit in what is free (`hostShortages`).
 */
export function placeOnHost(
  host: HostResources,
  live: readonly LiveLocalInstance[],
  resources: InstanceOffer['instance']['resources'],
): string[] {
  const shortages = hostShortages(host, live, resources);
  if (shortages.length > 0) {
    throw new NoCapacityError(
      `The host has no room for another local instance (it needs ${shortages.join('; ')}): ${live.length} local instance(s) hold the rest`,
      { retryAfterMs: CAPACITY_RETRY_AFTER_MS },
    );
  }
  return freeGpuIds(host, live).slice(0, resources.gpus.length);
}

function formatGb(mib: number): string {
  return `${Number((mib / 1024).toFixed(1))}GB`;
}

/** The lock file in the instances directory that makes check-and-launch one step across processes. */
const LOCK_FILE = '.capacity.lock';
/** The lock is held for milliseconds (a directory scan and a spawn): older means its holder is stuck or gone. */
const STALE_LOCK_MS = 30_000;
const LOCK_TIMEOUT_MS = 60_000;
const LOCK_POLL_MS = 10;

/** Per directory, the end of the last queued holder in this process: one file lock per process at a time. */
const queues = new Map<string, Promise<unknown>>();

/**
 * Runs `body` holding the host's capacity lock of `instancesDir` (which must exist): launches
 * in this process queue behind each other, and other processes (server replicas) wait on the
 * lock file. A lock left by a process that died is taken over.
 */
export async function withCapacityLock<T>(instancesDir: string, body: () => Promise<T>): Promise<T> {
  const previous = queues.get(instancesDir) ?? Promise.resolve();
  const turn = previous.then(() => withLockFile(join(instancesDir, LOCK_FILE), body));
  const settled = turn.catch(() => undefined);
  queues.set(instancesDir, settled);
  try {
    return await turn;
  } finally {
    if (queues.get(instancesDir) === settled) queues.delete(instancesDir);
  }
}

async function withLockFile<T>(path: string, body: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + LOCK_TIMEOUT_MS;
  for (;;) {
    try {
      const handle = await open(path, 'wx');
      try {
        await handle.writeFile(String(process.pid));
      } finally {
        await handle.close();
      }
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (await isStaleLock(path)) {
        await unlink(path).catch(() => undefined);
        continue;
      }
      if (Date.now() > deadline) {
        throw new Error(`Timed out after ${LOCK_TIMEOUT_MS} ms waiting for the local capacity lock ${path}`);
      }
      await sleep(LOCK_POLL_MS);
    }
  }
  try {
    return await body();
  } finally {
    await unlink(path).catch(() => undefined);
  }
}

/** Whether the lock's holder has exited, or has held it far longer than a launch takes. */
async function isStaleLock(path: string): Promise<boolean> {
  try {
    const [text, stats] = await Promise.all([readFile(path, 'utf8'), stat(path)]);
    if (Date.now() - stats.mtimeMs > STALE_LOCK_MS) return true;
    const pid = Number(text);
    // Empty while its creator writes it: not stale yet.
    return text !== '' && Number.isInteger(pid) && pid > 0 && !isAlive(pid);
  } catch {
    // Gone meanwhile: try to take it again.
    return false;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive, but another user's.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
