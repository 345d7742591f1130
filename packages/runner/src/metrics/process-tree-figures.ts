/**
 * A job's CPU and memory figures when it has no control group of its own (the shim's process
 * runtime, where the job is a child of the shim on the host): summed over the job's processes,
 * read from `/proc`. The job's processes are its shell and every descendant, and the members
 * of its process group (a child whose parent exited is reparented away but keeps the group).
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ResourceFigures } from './cgroup-figures.js';

/**
 * How long one scan of the host's processes serves every job sampled in this process: the shim's
 * process runtime holds every job's runner, and a scan per job per sample read
 * jobs × host processes files (a thousand jobs took the shim to its open-file limit and it stopped
 * answering; `pnpm bench --only=scale`).
 */
const SCAN_REUSE_MS = 500;
/** Files read at once in a scan: a host with thousands of processes must not take as many handles. */
const SCAN_READ_CONCURRENCY = 64;

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

async function readOptional(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    // The process ended between the listing and the read.
    return null;
  }
}

/** The last scan of each `/proc`, shared by the samples taken within {@link SCAN_REUSE_MS} of it. */
const scans = new Map<string, { at: number; stats: Promise<ProcessStat[]> }>();

/** Every process's stat line on the host, from a scan at most {@link SCAN_REUSE_MS} old. */
function hostProcessStats(procDirectory: string): Promise<ProcessStat[]> {
  const now = performance.now();
  const last = scans.get(procDirectory);
  if (last && now - last.at < SCAN_REUSE_MS) return last.stats;
  const stats = scanProcessStats(procDirectory);
  scans.set(procDirectory, { at: now, stats });
  stats.catch(() => scans.delete(procDirectory));
  return stats;
}

async function scanProcessStats(procDirectory: string): Promise<ProcessStat[]> {
  const pids = (await readdir(procDirectory)).filter((name) => /^\d+$/.test(name));
  const stats: ProcessStat[] = [];
  let next = 0;
  const reader = async () => {
    for (let index = next++; index < pids.length; index = next++) {
      const text = await readOptional(join(procDirectory, pids[index]!, 'stat'));
      const stat = text === null ? null : parseProcessStat(text);
      if (stat !== null) stats.push(stat);
    }
  };
  await Promise.all(Array.from({ length: SCAN_READ_CONCURRENCY }, reader));
  return stats;
}

/** The processes of the job whose shell is `rootPid` (also its process group id). */
export function jobProcesses(stats: readonly ProcessStat[], rootPid: number): ProcessStat[] {
  const children = new Map<number, ProcessStat[]>();
  for (const stat of stats) {
    const siblings = children.get(stat.parentPid);
    if (siblings) siblings.push(stat);
    else children.set(stat.parentPid, [stat]);
  }
  const chosen = new Map<number, ProcessStat>();
  const pending = stats.filter((stat) => stat.pid === rootPid || stat.processGroupId === rootPid);
  while (pending.length > 0) {
    const stat = pending.pop()!;
    if (chosen.has(stat.pid)) continue;
    chosen.set(stat.pid, stat);
    pending.push(...(children.get(stat.pid) ?? []));
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
  const stats = await hostProcessStats(procDirectory);
  const processes = jobProcesses(stats, rootPid);
  let cpuTicks = 0;
  let rss = 0;
  let anonymous = 0;
  for (const process of processes) {
    cpuTicks += process.cpuTicks;
    const status = await readOptional(join(procDirectory, String(process.pid), 'status'));
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
