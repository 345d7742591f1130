/**
 * A job's CPU and memory figures when it has no control group of its own (the shim's process
 * runtime, where the job is a child of the shim on the host): summed over the job's processes,
 * read from `/proc`. The job's processes are its shell and every descendant, and the members
 * of its process group (a child whose parent exited is reparented away but keeps the group).
 */
import { closeSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';
import type { ResourceFigures } from './cgroup-figures.js';

/**
 * How long one scan of the host's processes serves every job sampled in this process: the shim's
 * process runtime holds every job's runner, and a scan per job per sample read
 * jobs × host processes files (a thousand jobs took the shim to its open-file limit and it stopped
 * answering; `pnpm bench --only=scale`).
 */
const SCAN_REUSE_MS = 500;
/**
 * Files a scan reads before it gives the event loop back. The kernel answers `/proc` from memory,
 * so each is read synchronously: a few microseconds, where `fs.promises.readFile` made four trips
 * through the thread pool (open, fstat, read, close) and took most of a shim's CPU at 2,000 jobs.
 */
const SCAN_SLICE = 256;
/** Room for a `/proc/<pid>/stat` or `status` (a few hundred bytes to 2 KB); longer ones are read in several reads. */
const PROC_FILE_BUFFER_BYTES = 16 * 1024;

/** Linux reports process times in USER_HZ, 100 on every architecture it runs on. */
const CLOCK_TICKS_PER_SECOND = 100;
const MICROSECONDS_PER_TICK = 1_000_000 / CLOCK_TICKS_PER_SECOND;

export interface ProcessStat {
  pid: number;
  parentPid: number;
  processGroupId: number;
  /**
   * utime + stime + cutime + cstime, in ticks: its own CPU time and that of the children it has
   * waited for, so a job's finished commands still count through the shell that ran them.
   */
  cpuTicks: number;
}

/** `/proc/<pid>/stat`; the command name (field 2) may hold spaces and parentheses. */
export function parseProcessStat(text: string): ProcessStat | null {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  const pid = Number(text.slice(0, open).trim());
  // Fields from 3 on: state, ppid, pgrp, session, tty_nr, tpgid, flags, minflt, cminflt,
  // majflt, cmajflt, utime, stime, cutime, cstime, …
  const fields = text.slice(close + 2).split(' ');
  const numbers = [1, 2, 11, 12, 13, 14].map((index) => Number(fields[index]));
  if (!Number.isSafeInteger(pid) || numbers.some((value) => !Number.isFinite(value))) return null;
  const [parentPid, processGroupId, utime, stime, cutime, cstime] = numbers as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return { pid, parentPid, processGroupId, cpuTicks: utime + stime + cutime + cstime };
}

/** `VmRSS`, `RssAnon` and `RssShmem` of `/proc/<pid>/status`, in bytes (0 when absent: a kernel thread, a zombie). */
export function parseProcessMemory(text: string): { rss: number; anonymous: number } {
  const kib = (key: string) => {
    const match = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
    return match ? Number(match[1]) * 1024 : 0;
  };
  return { rss: kib('VmRSS'), anonymous: kib('RssAnon') + kib('RssShmem') };
}

const procFileBuffer = Buffer.allocUnsafe(PROC_FILE_BUFFER_BYTES);

/** A `/proc` file's text, or null when its process ended between the listing and the read. */
function readProcFile(path: string): string | null {
  let descriptor: number;
  try {
    descriptor = openSync(path, 'r');
  } catch {
    return null;
  }
  try {
    const chunks: string[] = [];
    for (;;) {
      const read = readSync(descriptor, procFileBuffer, 0, procFileBuffer.length, null);
      if (read === 0) break;
      chunks.push(procFileBuffer.toString('utf8', 0, read));
    }
    return chunks.join('');
  } catch {
    return null;
  } finally {
    closeSync(descriptor);
  }
}

/** One scan of the host's processes, indexed for finding a job's processes without going over all of them. */
export interface ProcessScan {
  readonly byPid: ReadonlyMap<number, ProcessStat>;
  readonly childrenOf: ReadonlyMap<number, readonly ProcessStat[]>;
  readonly groupMembers: ReadonlyMap<number, readonly ProcessStat[]>;
}

export function indexProcessStats(stats: readonly ProcessStat[]): ProcessScan {
  const byPid = new Map<number, ProcessStat>();
  const childrenOf = new Map<number, ProcessStat[]>();
  const groupMembers = new Map<number, ProcessStat[]>();
  const add = (index: Map<number, ProcessStat[]>, key: number, stat: ProcessStat) => {
    const list = index.get(key);
    if (list) list.push(stat);
    else index.set(key, [stat]);
  };
  for (const stat of stats) {
    byPid.set(stat.pid, stat);
    add(childrenOf, stat.parentPid, stat);
    add(groupMembers, stat.processGroupId, stat);
  }
  return { byPid, childrenOf, groupMembers };
}

/** The last scan of each `/proc`, shared by the samples taken within {@link SCAN_REUSE_MS} of it. */
const scans = new Map<string, { at: number; scan: Promise<ProcessScan> }>();

/** The host's processes, from a scan at most {@link SCAN_REUSE_MS} old. */
function hostProcesses(procDirectory: string): Promise<ProcessScan> {
  const now = performance.now();
  const last = scans.get(procDirectory);
  if (last && now - last.at < SCAN_REUSE_MS) return last.scan;
  const scan = scanProcesses(procDirectory);
  scans.set(procDirectory, { at: now, scan });
  scan.catch(() => scans.delete(procDirectory));
  return scan;
}

async function scanProcesses(procDirectory: string): Promise<ProcessScan> {
  const pids = readdirSync(procDirectory).filter((name) => /^\d+$/.test(name));
  const stats: ProcessStat[] = [];
  for (let start = 0; start < pids.length; start += SCAN_SLICE) {
    if (start > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    for (const pid of pids.slice(start, start + SCAN_SLICE)) {
      const text = readProcFile(join(procDirectory, pid, 'stat'));
      const stat = text === null ? null : parseProcessStat(text);
      if (stat !== null) stats.push(stat);
    }
  }
  return indexProcessStats(stats);
}

/** The processes of the job whose shell is `rootPid` (also its process group id). */
export function jobProcesses(scan: ProcessScan, rootPid: number): ProcessStat[] {
  const chosen = new Map<number, ProcessStat>();
  const root = scan.byPid.get(rootPid);
  const pending = [...(root ? [root] : []), ...(scan.groupMembers.get(rootPid) ?? [])];
  while (pending.length > 0) {
    const stat = pending.pop()!;
    if (chosen.has(stat.pid)) continue;
    chosen.set(stat.pid, stat);
    pending.push(...(scan.childrenOf.get(stat.pid) ?? []));
  }
  return [...chosen.values()];
}

/**
 * The job's figures now. Memory: usage is the resident set of its processes (VmRSS), the working
 * set their anonymous and shared memory (what cannot be dropped like file cache). CPU: the
 * processes' CPU time; it can fall when a process exits before anything of the job waited for
 * it, so `floorCpuMicro` (the last answer) keeps the series from going back.
 */
export async function readProcessTreeFigures(
  rootPid: number | undefined,
  floorCpuMicro: number,
  procDirectory = '/proc',
): Promise<ResourceFigures> {
  if (rootPid === undefined) {
    return { cpuUsageMicro: floorCpuMicro, memoryUsageBytes: 0, memoryWorkingSetBytes: 0 };
  }
  const processes = jobProcesses(await hostProcesses(procDirectory), rootPid);
  let cpuTicks = 0;
  let rss = 0;
  let anonymous = 0;
  for (const process of processes) {
    cpuTicks += process.cpuTicks;
    const status = readProcFile(join(procDirectory, String(process.pid), 'status'));
    if (status === null) continue;
    const memory = parseProcessMemory(status);
    rss += memory.rss;
    anonymous += memory.anonymous;
  }
  return {
    cpuUsageMicro: Math.max(floorCpuMicro, cpuTicks * MICROSECONDS_PER_TICK),
    memoryUsageBytes: rss,
    memoryWorkingSetBytes: anonymous,
  };
}
