/**
 * A process's CPU and memory figures from its control group, as dstack's runner reads them
 * inside a job's container: cgroup v2 (`cpu.stat` usage_usec, `memory.current`, `memory.stat`
 * inactive_file), and cgroup v1 where the host has it (Docker's cgroupfs driver on a v1 or
 * hybrid host: `cpuacct.usage`, `memory.usage_in_bytes`, `memory.stat` total_inactive_file).
 * Each figure is looked up on its own, so a hybrid host (v2 holding only CPU, v1 the memory
 * controller) still gives both.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** What a sample reads: CPU time used so far, memory held now. */
export interface ResourceFigures {
  cpuUsageMicro: number;
  memoryUsageBytes: number;
  memoryWorkingSetBytes: number;
}

/** Where the `/proc` files of the process are (tests point them at fixtures). */
export interface CgroupSources {
  /** `/proc/self/mountinfo`. */
  mountInfoPath: string;
  /** `/proc/self/cgroup`. */
  cgroupPath: string;
}

const SELF: CgroupSources = { mountInfoPath: '/proc/self/mountinfo', cgroupPath: '/proc/self/cgroup' };

interface CgroupMount {
  /** The cgroup path mounted there (`/docker/<id>` when the container sees its own subtree). */
  root: string;
  mountPoint: string;
  /** `cgroup2`, or the v1 controllers of the hierarchy (`cpuacct`, `memory`). */
  hierarchy: 'v2' | readonly string[];
}

/** The directories of the process's control groups: the v2 one and the v1 ones by controller. */
export interface CgroupDirectories {
  v2: string | null;
  cpuacct: string | null;
  memory: string | null;
}

/** mountinfo escapes spaces and a few other characters as octal (`\040`). */
function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

export function parseMountInfo(text: string): CgroupMount[] {
  const mounts: CgroupMount[] = [];
  for (const line of text.split('\n')) {
    const separator = line.indexOf(' - ');
    if (separator < 0) continue;
    const before = line.slice(0, separator).split(' ');
    const after = line.slice(separator + 3).split(' ');
    const [fsType, , superOptions = ''] = after;
    const root = before[3];
    const mountPoint = before[4];
    if (root === undefined || mountPoint === undefined) continue;
    if (fsType === 'cgroup2') {
      mounts.push({
        root: unescapeMountField(root),
        mountPoint: unescapeMountField(mountPoint),
        hierarchy: 'v2',
      });
    } else if (fsType === 'cgroup') {
      mounts.push({
        root: unescapeMountField(root),
        mountPoint: unescapeMountField(mountPoint),
        hierarchy: superOptions.split(','),
      });
    }
  }
  return mounts;
}

/** `/proc/self/cgroup`: `0::/path` for v2, `N:controller,…:/path` for v1. */
export function parseProcCgroup(text: string): { v2: string | null; v1: Map<string, string> } {
  let v2: string | null = null;
  const v1 = new Map<string, string>();
  for (const line of text.split('\n')) {
    const first = line.indexOf(':');
    const second = line.indexOf(':', first + 1);
    if (first < 0 || second < 0) continue;
    const id = line.slice(0, first);
    const controllers = line.slice(first + 1, second);
    const path = line.slice(second + 1);
    if (id === '0' && controllers === '') v2 = path;
    else for (const controller of controllers.split(',')) v1.set(controller, path);
  }
  return { v2, v1 };
}

/** The directory of cgroup `path` under a mount of the hierarchy whose root is `mount.root`. */
function directoryOf(mount: CgroupMount, path: string): string | null {
  const root = mount.root === '/' ? '' : mount.root;
  if (root !== '' && path !== root && !path.startsWith(`${root}/`)) return null;
  return join(mount.mountPoint, path.slice(root.length));
}

export async function findCgroupDirectories(sources: CgroupSources = SELF): Promise<CgroupDirectories> {
  const [mountInfo, procCgroup] = await Promise.all([
    readFile(sources.mountInfoPath, 'utf8'),
    readFile(sources.cgroupPath, 'utf8'),
  ]);
  const mounts = parseMountInfo(mountInfo);
  const paths = parseProcCgroup(procCgroup);
  const v1Directory = (controller: string): string | null => {
    const path = paths.v1.get(controller);
    if (path === undefined) return null;
    for (const mount of mounts) {
      if (mount.hierarchy === 'v2' || !mount.hierarchy.includes(controller)) continue;
      const directory = directoryOf(mount, path);
      if (directory !== null) return directory;
    }
    return null;
  };
  let v2: string | null = null;
  if (paths.v2 !== null) {
    for (const mount of mounts) {
      if (mount.hierarchy !== 'v2') continue;
      v2 = directoryOf(mount, paths.v2);
      if (v2 !== null) break;
    }
  }
  return { v2, cpuacct: v1Directory('cpuacct'), memory: v1Directory('memory') };
}

async function readOptional(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return null;
  }
}

/** A `key value` line of a stat file (`usage_usec 123`). */
export function statValue(text: string, key: string): number | null {
  for (const line of text.split('\n')) {
    const [name, value] = line.trim().split(/\s+/);
    if (name === key && value !== undefined && /^\d+$/.test(value)) return Number(value);
  }
  return null;
}

function wholeNumber(text: string | null): number | null {
  const trimmed = text?.trim();
  return trimmed !== undefined && /^\d+$/.test(trimmed) ? Number(trimmed) : null;
}

async function cpuUsageMicro(directories: CgroupDirectories): Promise<number | null> {
  if (directories.v2 !== null) {
    const stat = await readOptional(join(directories.v2, 'cpu.stat'));
    const usage = stat === null ? null : statValue(stat, 'usage_usec');
    if (usage !== null) return usage;
  }
  if (directories.cpuacct !== null) {
    const nanoseconds = wholeNumber(await readOptional(join(directories.cpuacct, 'cpuacct.usage')));
    if (nanoseconds !== null) return Math.floor(nanoseconds / 1000);
  }
  return null;
}

async function memoryFigures(
  directories: CgroupDirectories,
): Promise<{ usage: number; workingSet: number } | null> {
  // Working set as dstack (and the kubelet) count it: usage less the inactive file cache.
  if (directories.v2 !== null) {
    const usage = wholeNumber(await readOptional(join(directories.v2, 'memory.current')));
    const stat = await readOptional(join(directories.v2, 'memory.stat'));
    const inactive = stat === null ? null : statValue(stat, 'inactive_file');
    if (usage !== null && inactive !== null) return { usage, workingSet: Math.max(0, usage - inactive) };
  }
  if (directories.memory !== null) {
    const usage = wholeNumber(await readOptional(join(directories.memory, 'memory.usage_in_bytes')));
    const stat = await readOptional(join(directories.memory, 'memory.stat'));
    const inactive = stat === null ? null : statValue(stat, 'total_inactive_file');
    if (usage !== null && inactive !== null) return { usage, workingSet: Math.max(0, usage - inactive) };
  }
  return null;
}

/** The figures of the control group the directories name; null when either cannot be read. */
export async function readCgroupFigures(directories: CgroupDirectories): Promise<ResourceFigures | null> {
  const [cpu, memory] = await Promise.all([cpuUsageMicro(directories), memoryFigures(directories)]);
  if (cpu === null || memory === null) return null;
  return { cpuUsageMicro: cpu, memoryUsageBytes: memory.usage, memoryWorkingSetBytes: memory.workingSet };
}
