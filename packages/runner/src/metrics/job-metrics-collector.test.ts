import { type ChildProcess, spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  findCgroupDirectories,
  parseMountInfo,
  parseProcCgroup,
  readCgroupFigures,
} from './cgroup-figures.js';
import { parseAmdSmi, parseNvidiaSmi, readGpuFigures } from './gpu-figures.js';
import { JobMetricsCollector, visibleGpusOf } from './job-metrics-collector.js';
import {
  indexProcessStats,
  jobProcesses,
  parseProcessStat,
  readProcessTreeFigures,
} from './process-tree-figures.js';

const MIB = 1024 * 1024;

/**
 * A job's shell whose child burns CPU and holds `mebibytes` of memory it wrote to (so it is
 * resident), until killed. Resolves once the memory is held.
 */
async function startBusyJob(mebibytes: number): Promise<ChildProcess> {
  const script = `const b = Buffer.alloc(${mebibytes} * 1024 * 1024, 1); console.log('ready'); for (;;) { b[0]++; }`;
  // The shell forks the busy process (`&& true` keeps sh from exec-ing it), so the figures come from a descendant.
  const child = spawn('/bin/sh', ['-c', `"${process.execPath}" -e "${script}" && true`], {
    detached: true,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      if (chunk.toString().includes('ready')) resolve();
    });
    child.once('exit', () => reject(new Error('the busy job exited')));
  });
  return child;
}

const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) if (child.pid) process.kill(-child.pid, 'SIGKILL');
});

describe('cgroup files', () => {
  it("finds a Docker container's own cgroup under the subtree Docker mounted (cgroup v1)", () => {
    const id = '/docker/4854cdd4ed06';
    const mounts = parseMountInfo(
      [
        '77 76 0:46 / /sys/fs/cgroup rw,nosuid - tmpfs tmpfs rw,mode=755',
        `79 77 0:30 ${id} /sys/fs/cgroup/cpuacct ro,nosuid - cgroup cgroup rw,cpuacct`,
        `81 77 0:32 ${id} /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory`,
      ].join('\n'),
    );
    expect(mounts.map((mount) => mount.mountPoint)).toEqual([
      '/sys/fs/cgroup/cpuacct',
      '/sys/fs/cgroup/memory',
    ]);
    const paths = parseProcCgroup(`4:memory:${id}\n2:cpuacct:${id}\n0::${id}\n`);
    expect(paths.v2).toBe(id);
    expect(paths.v1.get('memory')).toBe(id);
  });

  it('reads v2 files, usage less inactive file cache as the working set', async () => {
    const directory = await mkdtemp(join(tmpdir(), 'cgroup-v2-'));
    try {
      await writeFile(
        join(directory, 'cpu.stat'),
        'usage_usec 1500000\nuser_usec 1000000\nsystem_usec 500000\n',
      );
      await writeFile(join(directory, 'memory.current'), `${300 * MIB}\n`);
      await writeFile(
        join(directory, 'memory.stat'),
        `anon ${200 * MIB}\nactive_file 1\ninactive_file ${100 * MIB}\n`,
      );
      expect(await readCgroupFigures({ v2: directory, cpuacct: null, memory: null })).toEqual({
        cpuUsageMicro: 1_500_000,
        memoryUsageBytes: 300 * MIB,
        memoryWorkingSetBytes: 200 * MIB,
      });
      // No memory controller in v2 and no v1 one: no figures rather than a made-up zero.
      await rm(join(directory, 'memory.current'));
      expect(await readCgroupFigures({ v2: directory, cpuacct: null, memory: null })).toBeNull();
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it("reads this process's own control group: CPU time grows as it works", async () => {
    const directories = await findCgroupDirectories();
    const before = await readCgroupFigures(directories);
    if (before === null) {
      // Only a machine without a readable cgroup CPU and memory controller lands here.
      expect(process.env.CI).toBeFalsy();
      return;
    }
    const until = Date.now() + 300;
    let spin = 0;
    while (Date.now() < until) spin++;
    const after = await readCgroupFigures(directories);
    expect(spin).toBeGreaterThan(0);
    expect(after!.cpuUsageMicro).toBeGreaterThan(before.cpuUsageMicro);
    expect(after!.memoryUsageBytes).toBeGreaterThan(0);
    expect(after!.memoryWorkingSetBytes).toBeLessThanOrEqual(after!.memoryUsageBytes);
  });
});

describe("a job's processes", () => {
  it('parses /proc/<pid>/stat whose command holds spaces and parentheses', () => {
    const line = '4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 7 3 20 0 1 0 12345 0 0';
    expect(parseProcessStat(line)).toEqual({ pid: 4242, parentPid: 1, processGroupId: 4242, cpuTicks: 310 });
  });

  it("finds a job's processes from one indexed scan: its descendants and its group's members, no one else's", () => {
    const stat = (pid: number, parentPid: number, processGroupId: number) => ({
      pid,
      parentPid,
      processGroupId,
      cpuTicks: 0,
    });
    const scan = indexProcessStats([
      stat(1, 0, 1),
      stat(100, 1, 100), // the job's shell
      stat(101, 100, 100),
      stat(102, 101, 102), // a grandchild that made a group of its own
      stat(103, 1, 100), // reparented to init, still in the job's group
      stat(104, 103, 104), // a child of the reparented one
      stat(200, 1, 200), // another job
      stat(201, 200, 200),
    ]);
    const pids = (root: number) =>
      jobProcesses(scan, root)
        .map((process) => process.pid)
        .sort((a, b) => a - b);
    expect(pids(100)).toEqual([100, 101, 102, 103, 104]);
    expect(pids(200)).toEqual([200, 201]);
    expect(pids(300)).toEqual([]);
  });

  it("sums a job's descendants: CPU rises while it burns, memory holds what it wrote", async () => {
    const job = await startBusyJob(96);
    started.push(job);
    const first = await readProcessTreeFigures(job.pid, 0);
    // On a loaded machine the job gets the CPU when it gets it: read until it has burnt some.
    const second = await vi.waitFor(
      async () => {
        const figures = await readProcessTreeFigures(job.pid, 0);
        expect(figures.cpuUsageMicro).toBeGreaterThan(first.cpuUsageMicro);
        return figures;
      },
      { timeout: 30_000, interval: 100 },
    );
    expect(second.memoryUsageBytes).toBeGreaterThanOrEqual(96 * MIB);
    expect(second.memoryWorkingSetBytes).toBeGreaterThanOrEqual(96 * MIB);
    // Another process's figures are not the job's.
    const none = await readProcessTreeFigures(2 ** 22 + 1, 0);
    expect(none).toEqual({ cpuUsageMicro: 0, memoryUsageBytes: 0, memoryWorkingSetBytes: 0 });
  });

  it("the collector answers dstack's MetricsResponse; CPU never goes back when a process vanishes", async () => {
    const job = await startBusyJob(16);
    started.push(job);
    const collector = new JobMetricsCollector({
      source: 'job-processes',
      jobPid: () => job.pid,
      readGpus: async () => ({ gpus: [], error: null }),
    });
    const busy = await vi.waitFor(
      async () => {
        const sample = await collector.sample();
        expect(sample.cpu_usage_micro).toBeGreaterThan(0);
        return sample;
      },
      { timeout: 30_000, interval: 100 },
    );
    expect(busy).toMatchObject({ gpus: [] });
    expect(busy.gpus_error).toBeUndefined();
    process.kill(-job.pid!, 'SIGKILL');
    await new Promise((resolve) => job.once('exit', resolve));
    // The shell is reaped first; its child may take a moment more to be gone from /proc.
    let gone = await collector.sample();
    for (let tries = 0; gone.memory_usage_bytes > 0 && tries < 50; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      gone = await collector.sample();
    }
    expect(gone.memory_usage_bytes).toBe(0);
    expect(gone.cpu_usage_micro).toBeGreaterThanOrEqual(busy.cpu_usage_micro);
    expect(gone.timestamp_micro).toBeGreaterThan(busy.timestamp_micro);
  });
});

describe('GPU figures', () => {
  it("parses nvidia-smi's and amd-smi's output as dstack does", () => {
    expect(parseNvidiaSmi('1024, 37\n0, 0\n')).toEqual([
      { gpu_memory_usage_bytes: 1024 * MIB, gpu_util_percent: 37 },
      { gpu_memory_usage_bytes: 0, gpu_util_percent: 0 },
    ]);
    expect(() => parseNvidiaSmi('[N/A], [N/A]\n')).toThrow(/unreadable/);
    expect(parseAmdSmi('gpu,gfx,vram_used\n0,12,2048\n')).toEqual([
      { gpu_memory_usage_bytes: 2048 * MIB, gpu_util_percent: 12 },
    ]);
  });

  it('a failing nvidia-smi gives an error and no figures, never zeros; no tool at all, no GPUs', async () => {
    const bin = await mkdtemp(join(tmpdir(), 'fake-smi-'));
    const path = process.env.PATH;
    try {
      await writeFile(
        join(bin, 'nvidia-smi'),
        '#!/bin/sh\necho "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver" >&2\nexit 9\n',
      );
      await chmod(join(bin, 'nvidia-smi'), 0o755);
      process.env.PATH = `${bin}:${path}`;
      const failed = await readGpuFigures();
      expect(failed.gpus).toEqual([]);
      expect(failed.error).toMatch(/nvidia-smi: NVIDIA-SMI has failed/);
      process.env.PATH = bin;
      await rm(join(bin, 'nvidia-smi'));
      expect(await readGpuFigures()).toEqual({ gpus: [], error: null });
    } finally {
      process.env.PATH = path;
      await rm(bin, { recursive: true, force: true });
    }
  });

  it("reads only the job's GPUs on a shared host, and none for a job that holds none", async () => {
    const bin = await mkdtemp(join(tmpdir(), 'fake-smi-'));
    const path = process.env.PATH;
    try {
      // Two GPUs on the host; `--id=1` narrows to the second.
      await writeFile(
        join(bin, 'nvidia-smi'),
        '#!/bin/sh\ncase "$1" in --id=1) echo "2048, 75" ;; --id=*) exit 6 ;; *) printf "1024, 10\\n2048, 75\\n" ;; esac\n',
      );
      await chmod(join(bin, 'nvidia-smi'), 0o755);
      process.env.PATH = `${bin}:${path}`;
      expect((await readGpuFigures(null)).gpus).toHaveLength(2);
      expect(await readGpuFigures(['1'])).toEqual({
        gpus: [{ gpu_memory_usage_bytes: 2048 * MIB, gpu_util_percent: 75 }],
        error: null,
      });
      expect(await readGpuFigures([])).toEqual({ gpus: [], error: null });
    } finally {
      process.env.PATH = path;
      await rm(bin, { recursive: true, force: true });
    }
    expect(visibleGpusOf({})).toBeNull();
    expect(visibleGpusOf({ CUDA_VISIBLE_DEVICES: '0,2' })).toEqual(['0', '2']);
    expect(visibleGpusOf({ CUDA_VISIBLE_DEVICES: '', NVIDIA_VISIBLE_DEVICES: 'void' })).toEqual([]);
  });
});
