import { execFile } from 'node:child_process';
import { statfs } from 'node:fs/promises';
import { arch, availableParallelism, totalmem } from 'node:os';
import { dirname } from 'node:path';
import { type CpuArchitecture, correctGpuMemoryGib, KNOWN_NVIDIA_GPUS } from '@dstack/catalog';

/** One GPU of the host. */
export interface HostGpu {
  /** dstack's name for it (`A100`, `RTX4090`), as in offers and `resources.gpu`. */
  name: string;
  /** GiB, rounded to the model's known size. */
  memoryGib: number;
  vendor: 'nvidia';
}

/** What the host offers to jobs; the one local offer is built from it. */
export interface HostResources {
  cpuCount: number;
  cpuArch: CpuArchitecture;
  /** GiB of RAM. */
  memoryGib: number;
  /**
   * GiB of the file system holding the instances. The total size, not the free
   * space, as a VM's disk size (and dstack's shim on SSH fleets) reports it.
   */
  diskGib: number;
  gpus: HostGpu[];
}

export interface DetectHostResourcesOptions {
  /** The directory whose file system gives the disk size; its nearest existing parent is used. */
  instancesDir: string;
  /** Command that lists NVIDIA GPUs; default `nvidia-smi`. Absent or failing means no GPUs. */
  nvidiaSmiCommand?: string;
}

const GIB = 1024 ** 3;

/** Reads the host's CPUs, memory, disk and NVIDIA GPUs. */
export async function detectHostResources(options: DetectHostResourcesOptions): Promise<HostResources> {
  const [diskGib, gpus] = await Promise.all([
    fileSystemSizeGib(options.instancesDir),
    detectNvidiaGpus(options.nvidiaSmiCommand ?? 'nvidia-smi'),
  ]);
  return {
    cpuCount: availableParallelism(),
    cpuArch: arch() === 'arm64' ? 'arm' : 'x86',
    memoryGib: totalmem() / GIB,
    diskGib,
    gpus,
  };
}

async function fileSystemSizeGib(path: string): Promise<number> {
  let candidate = path;
  for (;;) {
    try {
      const stats = await statfs(candidate);
      return (stats.blocks * stats.bsize) / GIB;
    } catch (error) {
      const parent = dirname(candidate);
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || parent === candidate) throw error;
      candidate = parent;
    }
  }
}

function detectNvidiaGpus(command: string): Promise<HostGpu[]> {
  return new Promise((resolve) => {
    execFile(
      command,
      ['--query-gpu=name,memory.total', '--format=csv,noheader,nounits'],
      { timeout: 10_000 },
      (error, stdout) => resolve(error ? [] : parseNvidiaSmiGpus(stdout)),
    );
  });
}

/**
 * GPUs from `nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits`
 * (`NVIDIA A100-SXM4-80GB, 81920` per line, memory in MiB). Lines that do not
 * parse are skipped.
 */
export function parseNvidiaSmiGpus(output: string): HostGpu[] {
  const gpus: HostGpu[] = [];
  for (const line of output.split('\n')) {
    const separator = line.lastIndexOf(',');
    if (separator < 0) continue;
    const reportedName = line.slice(0, separator).trim();
    const memoryMib = Number(line.slice(separator + 1).trim());
    if (reportedName === '' || !Number.isFinite(memoryMib)) continue;
    const name = normalizeNvidiaGpuName(reportedName);
    gpus.push({ name, memoryGib: correctGpuMemoryGib(name, memoryMib), vendor: 'nvidia' });
  }
  return gpus;
}

/** The longest known names first, so `H100NVL` wins over `H100`. */
const KNOWN_NAMES_LONGEST_FIRST = [...new Set(KNOWN_NVIDIA_GPUS.map((gpu) => gpu.name))].sort(
  (left, right) => right.length - left.length,
);

/**
 * dstack's name for a GPU as nvidia-smi reports it: `NVIDIA A100-SXM4-80GB` →
 * `A100`, `NVIDIA GeForce RTX 4090` → `RTX4090`, `NVIDIA RTX A6000` → `A6000`,
 * `NVIDIA H100 NVL` → `H100NVL`.
 * Unknown models keep their reported name without the vendor words and spaces.
 */
export function normalizeNvidiaGpuName(reportedName: string): string {
  const compact = reportedName
    .replace(/\b(NVIDIA|Tesla|GeForce|Quadro)\b/gi, '')
    .replace(/[\s_]+/g, '')
    // Ampere workstation cards are `RTX A6000` to nvidia-smi and `A6000` to dstack.
    .replace(/^RTX(?=A\d)/i, '');
  const upper = compact.toUpperCase();
  const known = KNOWN_NAMES_LONGEST_FIRST.find((name) => upper.startsWith(name.toUpperCase()));
  return known ?? compact;
}
