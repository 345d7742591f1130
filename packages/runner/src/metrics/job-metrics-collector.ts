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

export interface JobMetricsCollectorOptions {
  source: MetricsSource;
  /** The job's shell (its process group id), undefined before it starts. */
  jobPid(): number | undefined;
  /** Reads the GPUs (tests give their own). Default: nvidia-smi, else amd-smi. */
  readGpus?: () => Promise<GpuFigures>;
}

export class JobMetricsCollector {
  private cgroupDirectories: Promise<CgroupDirectories | null> | undefined;
  private lastCpuMicro = 0;

  constructor(private readonly options: JobMetricsCollectorOptions) {}

  async sample(): Promise<RunnerMetricsResponse> {
    const timestampMicro = Date.now() * 1000;
    const [figures, gpus] = await Promise.all([
      this.resourceFigures(),
      (this.options.readGpus ?? readGpuFigures)(),
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
