/**
 * The runner's `GET /api/metrics`: one sample of the job's resource use (dstack's
 * `MetricsResponse`). Where the figures come from depends on where the runner lives:
 * - `cgroup`: the runner shares the job's container, so its own control group is the job's
 *   (dstack's way; the runner binary in a container);
 * - `job-processes`: the runner lives in the shim on the host (the process runtime), so the
 *   figures are summed over the job's processes.
 * A `cgroup` collector whose control group cannot be read falls back to the job's processes.
 */
import type { RunnerMetricsResponse } from '@dstack/core/agent-protocol';
import {
  type CgroupDirectories,
  findCgroupDirectories,
  type ResourceFigures,
  readCgroupFigures,
} from './cgroup-figures.js';
import { type GpuFigures, readGpuFigures } from './gpu-figures.js';
import { readProcessTreeFigures } from './process-tree-figures.js';

export type MetricsSource = 'cgroup' | 'job-processes';

/**
 * The GPUs a job environment limits CUDA to: `CUDA_VISIBLE_DEVICES` as a list (empty: none;
 * `NVIDIA_VISIBLE_DEVICES=void` also none); null when unset (every GPU).
 */
export function visibleGpusOf(env: Readonly<Record<string, string | undefined>>): string[] | null {
  if (env.NVIDIA_VISIBLE_DEVICES === 'void' || env.NVIDIA_VISIBLE_DEVICES === 'none') return [];
  const cuda = env.CUDA_VISIBLE_DEVICES;
  if (cuda === undefined) return null;
  return cuda
    .split(',')
    .map((device) => device.trim())
    .filter((device) => device !== '');
}

export interface JobMetricsCollectorOptions {
  source: MetricsSource;
  /** The job's shell (its process group id), undefined before it starts. */
  jobPid(): number | undefined;
  /**
   * The GPUs the job holds (indices or UUIDs), when the runner shares a host whose other GPUs are
   * not the job's (the process runtime: the shim's `CUDA_VISIBLE_DEVICES`). Default null: every
   * GPU the tool sees, which in a container are the container's.
   */
  visibleGpus?: readonly string[] | null;
  /** Reads the GPUs (tests give their own). Default: nvidia-smi, else amd-smi. */
  readGpus?: (devices: readonly string[] | null) => Promise<GpuFigures>;
}

export class JobMetricsCollector {
  private cgroupDirectories: Promise<CgroupDirectories | null> | undefined;
  private lastCpuMicro = 0;

  constructor(private readonly options: JobMetricsCollectorOptions) {}

  async sample(): Promise<RunnerMetricsResponse> {
    const timestampMicro = Date.now() * 1000;
    const [figures, gpus] = await Promise.all([
      this.resourceFigures(),
      (this.options.readGpus ?? readGpuFigures)(this.options.visibleGpus ?? null),
    ]);
    this.lastCpuMicro = figures.cpuUsageMicro;
    return {
      timestamp_micro: timestampMicro,
      cpu_usage_micro: figures.cpuUsageMicro,
      memory_usage_bytes: figures.memoryUsageBytes,
      memory_working_set_bytes: figures.memoryWorkingSetBytes,
      gpus: gpus.gpus,
      ...(gpus.error === null ? {} : { gpus_error: gpus.error }),
    };
  }

  private async resourceFigures(): Promise<ResourceFigures> {
    if (this.options.source === 'cgroup') {
      // A process stays in its control group (as dstack assumes): found once.
      this.cgroupDirectories ??= findCgroupDirectories().catch(() => null);
      const directories = await this.cgroupDirectories;
      const figures = directories === null ? null : await readCgroupFigures(directories);
      if (figures !== null) return figures;
    }
    return readProcessTreeFigures(this.options.jobPid(), this.lastCpuMicro);
  }
}
