/**
 * How the CLI shows values: ages, prices, durations, instance resources and resource
 * requirements, following dstack's wording.
 */
import {
  formatRange,
  type Gpu,
  type JobSubmission,
  type Resources,
  type ResourcesSpec,
  type Run,
} from '@dstack/core';

const MINUTE = 60;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const WEEK = 7 * DAY;

function plural(count: number, unit: string): string {
  return `${count} ${unit}${count === 1 ? '' : 's'} ago`;
}

/**
 * An age as dstack shows it: `now`, `12 secs ago`, `1 min ago`, `3 hours ago`, `yesterday`,
 * `4 days ago`, `2 weeks ago`, then the date (`2024-05-01`). Future times read `now`.
 */
export function formatRelativeTime(time: Date | string, now: Date = new Date()): string {
  const date = typeof time === 'string' ? new Date(time) : time;
  if (Number.isNaN(date.getTime())) return '-';
  const seconds = Math.floor((now.getTime() - date.getTime()) / 1000);
  if (seconds < 10) return 'now';
  if (seconds < MINUTE) return plural(seconds, 'sec');
  if (seconds < HOUR) return plural(Math.floor(seconds / MINUTE), 'min');
  if (seconds < DAY) return plural(Math.floor(seconds / HOUR), 'hour');
  if (seconds < 2 * DAY) return 'yesterday';
  if (seconds < WEEK) return plural(Math.floor(seconds / DAY), 'day');
  if (seconds < 5 * WEEK) return plural(Math.floor(seconds / WEEK), 'week');
  return date.toISOString().slice(0, 10);
}

/** USD per hour: `$0.1624`, `$2`, `$0`; `-` when unknown. */
export function formatPrice(price: number | null | undefined): string {
  if (price === null || price === undefined) return '-';
  return `$${Number(price.toFixed(4))}`;
}

/** Seconds as `90s`, `30m`, `1h`, `1h30m`, `2d`; `off` stays `off`; unset is `-`. */
export function formatDuration(value: number | 'off' | null | undefined): string {
  if (value === null || value === undefined) return '-';
  if (value === 'off') return 'off';
  if (value === 0) return '0s';
  const parts: string[] = [];
  let rest = value;
  for (const [unit, size] of [
    ['d', DAY],
    ['h', HOUR],
    ['m', MINUTE],
    ['s', 1],
  ] as const) {
    const amount = Math.floor(rest / size);
    if (amount > 0) parts.push(`${amount}${unit}`);
    rest -= amount * size;
  }
  return parts.join('');
}

/** Gigabytes from MiB without needless decimals: 81920 → `80GB`, 512 → `0.5GB`. */
export function formatMebibytes(mebibytes: number): string {
  return `${Number((mebibytes / 1024).toFixed(1))}GB`;
}

interface GpuGroup {
  name: string;
  /** Empty when the memory is unknown (TPUs). */
  memory: string;
  count: number;
}

/** Identical GPUs counted together, in order of first appearance. */
function groupGpus(gpus: readonly Gpu[]): GpuGroup[] {
  const groups = new Map<string, GpuGroup>();
  for (const gpu of gpus) {
    const memory = gpu.memory_mib > 0 ? formatMebibytes(gpu.memory_mib) : '';
    const key = `${gpu.name}:${memory}`;
    const group = groups.get(key) ?? { name: gpu.name, memory, count: 0 };
    group.count += 1;
    groups.set(key, group);
  }
  return [...groups.values()];
}

/** GPUs as `A100:80GB:2`; `-` when there are none. */
export function formatGpus(gpus: readonly Gpu[]): string {
  if (gpus.length === 0) return '-';
  return groupGpus(gpus)
    .map((group) => [group.name, group.memory, String(group.count)].filter(Boolean).join(':'))
    .join(', ');
}

/** An instance's resources: `4xCPU, 16GB, 2xA100 (80GB), 100GB (disk), SPOT`. */
export function formatResources(resources: Resources): string {
  const parts = [`${resources.cpus}xCPU`, formatMebibytes(resources.memory_mib)];
  for (const group of groupGpus(resources.gpus)) {
    parts.push(`${group.count}x${group.name}${group.memory ? ` (${group.memory})` : ''}`);
  }
  if (resources.disk.size_mib > 0) parts.push(`${formatMebibytes(resources.disk.size_mib)} (disk)`);
  if (resources.spot) parts.push('SPOT');
  return parts.join(', ');
}

const formatGigabytes = (value: number) => `${value}GB`;

/** A requirement as the user writes it: `cpu=2.. mem=8GB.. gpu=A100:80GB:2 disk=100GB..`. */
export function formatResourcesSpec(spec: ResourcesSpec): string {
  const parts: string[] = [];
  const cpuCount = formatRange(spec.cpu.count);
  parts.push(`cpu=${spec.cpu.arch ? `${spec.cpu.arch}:${cpuCount}` : cpuCount}`);
  parts.push(`mem=${formatRange(spec.memory, formatGigabytes)}`);
  const gpu = spec.gpu;
  const requestsGpu = (gpu.count.max ?? 1) > 0 && (gpu.count.min ?? 0) > 0;
  if (requestsGpu || gpu.name || gpu.memory) {
    const gpuParts = [
      ...(gpu.vendor && !gpu.name ? [gpu.vendor] : []),
      ...(gpu.name ? [gpu.name.join(',')] : []),
      ...(gpu.memory ? [formatRange(gpu.memory, formatGigabytes)] : []),
      formatRange(gpu.count),
    ];
    parts.push(`gpu=${gpuParts.join(':')}`);
  }
  parts.push(`disk=${formatRange(spec.disk.size, formatGigabytes)}`);
  return parts.join(' ');
}

/** The submission that tells where and how the run is going. */
export function latestSubmission(run: Run): JobSubmission | undefined {
  return run.latest_job_submission ?? run.jobs[0]?.job_submissions.at(-1) ?? undefined;
}

/** `local`, `aws (us-east-1)`; `-` before provisioning. */
export function formatBackend(submission: JobSubmission | undefined): string {
  const data = submission?.job_provisioning_data;
  if (!data) return '-';
  return data.region && data.region !== data.backend ? `${data.backend} (${data.region})` : data.backend;
}

/** The run's name; the server always assigns one, the spec may omit it before that. */
export function runName(run: Run): string {
  return run.run_spec.run_name ?? run.jobs[0]?.job_spec.job_name ?? run.id;
}
